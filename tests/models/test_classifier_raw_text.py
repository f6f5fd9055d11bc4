"""A `BertClassifier` with a preprocessor: `fit`, `evaluate` and `predict` on raw strings, on every backend."""

import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.preprocessing import BertPreprocessor
from keras_bert_impl.tokenization import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "great", "awful", "plot", "a"]
TEXTS = ["a good film", "an awful plot", "great film", "bad plot", "good plot", "awful film"] * 2
LABELS = np.array([1, 0, 1, 0, 1, 0] * 2)


def _classifier(**settings):
    return BertClassifier.from_scratch(
        "tiny", num_classes=2, vocabulary=VOCABULARY, sequence_length=8, max_sequence_length=16,
        num_layers=1, **settings,
    )


def test_from_scratch_attaches_a_preprocessor_on_the_vocabulary():
    model = _classifier()
    assert isinstance(model.preprocessor, BertPreprocessor)
    assert model.preprocessor.sequence_length == 8
    assert model.backbone.vocabulary_size == len(VOCABULARY)
    assert BertClassifier.from_scratch("tiny", num_classes=3, num_layers=1).preprocessor is None


@pytest.mark.slow
def test_raw_text_fit_moves_the_loss_and_predict_equals_ids():
    model = _classifier(dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(TEXTS, LABELS, batch_size=4, epochs=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    raw = model.predict(["good film", "awful plot"], verbose=0)
    ids = model.predict(model.preprocessor(["good film", "awful plot"]), verbose=0)
    assert raw.shape == (2, 2)
    np.testing.assert_allclose(raw, ids, atol=1e-6)
    loss, accuracy = model.evaluate(TEXTS, LABELS, batch_size=5, verbose=0)
    assert np.isfinite(loss) and 0.0 <= accuracy <= 1.0


@pytest.mark.slow
def test_text_pairs_and_validation_split():
    model = _classifier()
    model.compile(optimizer="adam")
    first, second = TEXTS, list(reversed(TEXTS))
    history = model.fit((first, second), LABELS, batch_size=4, epochs=1, validation_split=0.25, verbose=0)
    assert {"loss", "val_loss"} <= set(history.history)
    assert model.predict((["good"], ["bad film"]), verbose=0).shape == (1, 2)


def test_calling_the_model_on_strings_says_to_use_predict():
    with pytest.raises(ValueError, match="predict"):
        _classifier()(["good film"])


@pytest.mark.slow
def test_save_pretrained_and_keras_file_keep_the_preprocessor(tmp_path):
    model = _classifier()
    expected = model.predict(["great plot"], verbose=0)
    model.save_pretrained(tmp_path / "checkpoint")
    assert {"vocab.txt", "tokenizer_config.json", "preprocessor.json"} <= set(os.listdir(tmp_path / "checkpoint"))
    restored = BertClassifier.from_pretrained(tmp_path / "checkpoint")
    assert restored.preprocessor.get_config() == model.preprocessor.get_config()
    np.testing.assert_allclose(restored.predict(["great plot"], verbose=0), expected, atol=1e-6)
    assert BertClassifier.from_pretrained(tmp_path / "checkpoint", preprocessor=None).preprocessor is None
    longer = BertClassifier.from_pretrained(tmp_path / "checkpoint", sequence_length=12)
    assert longer.preprocessor.sequence_length == 12

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.preprocessor.get_config() == model.preprocessor.get_config()
    np.testing.assert_allclose(loaded.predict(["great plot"], verbose=0), expected, atol=1e-6)


def test_explicit_preprocessor_object(tmp_path):
    tokenizer = BertTokenizer(VOCABULARY)
    model = _classifier()
    model.save_pretrained(tmp_path / "checkpoint")
    mine = BertPreprocessor(tokenizer, sequence_length=6)
    assert BertClassifier.from_pretrained(tmp_path / "checkpoint", preprocessor=mine).preprocessor is mine
