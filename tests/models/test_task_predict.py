"""`BertTask.predict` on raw text that fits one batch: one traced preprocessing function and Keras' compiled
predict step instead of a `tf.data` pipeline per call, with the outputs of the streaming path (which a `callbacks`
argument, a dataset or more rows than `batch_size` take)."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from keras_bert_impl.models.task import _fits_one_batch, _raw_rows
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.preprocessing import (BertPreprocessor, BertQuestionAnsweringPreprocessor,
                                           BertTokenClassificationPreprocessor)
from keras_bert_impl.tokenization import BertTokenizer
from tests.helpers import tiny_backbone

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "the", "cat", "sat", "in",
              "paris", "where", "is", "peter", "lives", "."]
PAIRS = (["good film", "the bad cat sat", "paris"], ["bad", "good good film", "the cat sat in paris"])
TAGS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


class Spy:
    """Counts the calls of a function it wraps."""

    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


@pytest.mark.slow
def test_classifier_one_batch_predict_traces_once_skips_tf_data_and_equals_the_stream(monkeypatch):
    model = BertClassifier.from_scratch("tiny", num_classes=2, vocabulary=VOCABULARY, sequence_length=10,
                                        max_sequence_length=16, num_layers=1)
    preprocessor = model.preprocessor
    make_dataset, call = Spy(preprocessor.make_dataset), Spy(preprocessor.call)
    monkeypatch.setattr(preprocessor, "make_dataset", make_dataset)
    monkeypatch.setattr(preprocessor, "call", call)  # runs in Python only while a function traces it
    fast = model.predict(PAIRS, verbose=0)
    assert (make_dataset.calls, call.calls) == (0, 1)
    np.testing.assert_array_equal(model.predict(PAIRS, verbose=0), fast)
    assert (make_dataset.calls, call.calls) == (0, 1)  # the second call reuses the traced function
    streamed = model.predict(PAIRS, callbacks=[], verbose=0)  # `callbacks` need Keras' loop: tf.data
    assert make_dataset.calls == 1
    np.testing.assert_array_equal(fast, streamed)


@pytest.mark.backend_independent
def test_only_in_memory_text_of_one_batch_without_loop_arguments_skips_the_stream():
    assert _raw_rows(PAIRS) == _raw_rows(np.array(PAIRS[0])) == 3
    assert _raw_rows("one text") is _raw_rows(np.array("one text")) is _raw_rows(iter(PAIRS)) is None
    assert _fits_one_batch(3, None, {"verbose": 0}) and _fits_one_batch(32, None, {})
    assert not _fits_one_batch(33, None, {}) and not _fits_one_batch(3, 2, {})
    assert not _fits_one_batch(0, None, {}) and not _fits_one_batch(None, None, {})
    assert not _fits_one_batch(3, None, {"callbacks": []}) and not _fits_one_batch(3, None, {"steps": 1})


def _same_without_keras_predict(monkeypatch, predict, x):
    """`predict(x)` (one batch: no `keras.Model.predict`) and `predict(x, callbacks=[])` (Keras' loop)."""
    keras_predict = Spy(keras.Model.predict)
    monkeypatch.setattr(keras.Model, "predict", keras_predict)
    fast = predict(x, verbose=0)
    assert keras_predict.calls == 0
    streamed = predict(x, callbacks=[], verbose=0)
    assert keras_predict.calls == 1
    return fast, streamed


@pytest.mark.slow
def test_question_answerer_one_batch_predict_equals_the_stream(monkeypatch):
    preprocessor = BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12, doc_stride=3,
                                                     max_query_length=4, n_best_size=5, max_answer_length=4)
    model = BertQuestionAnswerer(tiny_backbone(vocabulary_size=len(VOCABULARY)), preprocessor=preprocessor)
    x = (["where is the cat ?", "where is peter ?"], ["the cat sat in paris .", "peter lives in paris . " * 3])
    fast, streamed = _same_without_keras_predict(monkeypatch, model.predict, x)
    assert fast == streamed and len(fast) == 2


def test_token_classifier_one_batch_predict_equals_the_stream(monkeypatch):
    preprocessor = BertTokenClassificationPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8, stride=3)
    model = BertTokenClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), num_classes=len(TAGS), labels=TAGS,
                                preprocessor=preprocessor)
    fast, streamed = _same_without_keras_predict(monkeypatch, model.predict,
                                                 ["peter lives in paris .", "the cat sat in paris . " * 3])
    assert fast == streamed and len(fast) == 2


@pytest.mark.backend_independent
def test_eager_calls_and_preprocess_batch_equal_a_make_dataset_batch_and_trace_once(monkeypatch):
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=10)
    (batch,) = list(preprocessor.make_dataset(PAIRS))
    call = Spy(preprocessor.call)
    monkeypatch.setattr(preprocessor, "call", call)
    for outputs in (preprocessor(PAIRS), preprocessor(PAIRS), preprocessor.preprocess_batch(PAIRS)):
        assert set(outputs) == set(batch)
        for name, value in outputs.items():
            np.testing.assert_array_equal(value, batch[name].numpy())
    assert call.calls == 1  # traced by the first eager call, reused by the others
