"""`BertQuestionAnsweringPreprocessor`: raw (question, context) to run_squad.py's windowed features, in tf.data
and eagerly, equal to the offline `squad.convert_examples_to_features`; its decoding is
`squad.decode_squad_predictions`."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor
from keras_bert_impl.squad import decode_squad_predictions
from keras_bert_impl.tokenization import BertTokenizer
from tests.training.finetuning_test_utils import VOCABULARY

QUESTIONS = ["where is the cat ?", "Who", "", "what did the dog do ?", "Où est le café ?"]
CONTEXTS = [
    "the cat sat in paris today . the dog ran far away .",
    "the mat",
    "",
    "a red house , a blue tree and the old city river walked home today . the dog ran home .",
    "Le café est à Paris, près du fleuve — the river.",
]
SETTINGS = dict(sequence_length=14, doc_stride=2, max_query_length=3)


def _preprocessor(**settings):
    return BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY), **{**SETTINGS, **settings})


@pytest.mark.backend_independent
def test_features_equal_the_offline_windowing_row_for_row():
    preprocessor = _preprocessor()
    out = preprocessor((QUESTIONS, CONTEXTS))
    examples, features = preprocessor.featurize((QUESTIONS, CONTEXTS))
    assert [example.context_text for example in examples] == CONTEXTS
    assert np.bincount(features.example_index)[3] >= 5  # long contexts are really windowed
    assert set(out) == {"token_ids", "segment_ids", "padding_mask"}
    for key, value in features.inputs().items():
        assert isinstance(out[key], np.ndarray)
        np.testing.assert_array_equal(out[key], value)
    # Arrays and tensors of strings, and one str pair (still (F, T): one row per window).
    np.testing.assert_array_equal(
        preprocessor((np.array(QUESTIONS), tf.constant(CONTEXTS)))["token_ids"], features.token_ids)
    single = preprocessor((QUESTIONS[0], CONTEXTS[0]))["token_ids"]
    np.testing.assert_array_equal(single, features.token_ids[features.example_index == 0])


def test_runs_inside_tf_data_and_make_dataset():
    preprocessor = _preprocessor()
    _, features = preprocessor.featurize((QUESTIONS, CONTEXTS))
    dataset = preprocessor.make_dataset((QUESTIONS, CONTEXTS), batch_size=2)
    rows = np.concatenate([batch["token_ids"].numpy() for batch in dataset])
    np.testing.assert_array_equal(rows, features.token_ids)
    mapped = tf.data.Dataset.from_tensor_slices((QUESTIONS, CONTEXTS)).batch(3).map(
        lambda question, context: preprocessor((question, context)))
    np.testing.assert_array_equal(np.concatenate([b["token_ids"].numpy() for b in mapped]), features.token_ids)
    # Model inputs (token ids, with or without labels) pass through.
    passed = next(iter(preprocessor.make_dataset(features.inputs(), batch_size=100)))
    np.testing.assert_array_equal(passed["token_ids"].numpy(), features.token_ids)
    labelled = tf.data.Dataset.from_tensor_slices((features.inputs(), features.labels())).batch(4)
    assert preprocessor.make_dataset(labelled) is labelled
    with pytest.raises(ValueError, match="y must be the answers as a dict of `text`"):
        preprocessor((QUESTIONS, CONTEXTS), np.zeros(len(QUESTIONS)))
    with pytest.raises(ValueError, match="sample_weight needs the answers"):
        preprocessor((QUESTIONS, CONTEXTS), None, np.ones(len(QUESTIONS)))


# Answers (text, first code point): a multi-byte context, a window boundary, no answer, and a zero-width space
# that the tokenizer drops (no token: the example gets no rows, as offline).
ANSWERS = [("paris today", 15), ("the mat", 0), ("", -1), ("the old city river", 30), ("the river", 38)]
LABELED_QUESTIONS = QUESTIONS + ["where ?"]
LABELED_CONTEXTS = CONTEXTS + ["the \u200b mat"]
LABELED_ANSWERS = ANSWERS + [("\u200b", 4)]


@pytest.mark.backend_independent
def test_answers_become_the_offline_training_labels():
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import SquadAnswer, SquadExample

    preprocessor = _preprocessor()
    examples = [SquadExample(str(index), question, context, (SquadAnswer(*answer),) if answer[1] >= 0 else (),
                             is_impossible=answer[1] < 0)
                for index, (question, context, answer) in enumerate(zip(LABELED_QUESTIONS, LABELED_CONTEXTS,
                                                                        LABELED_ANSWERS))]
    assert all(example.context_text[a.answer_start:a.answer_end] == a.text for example in examples
               for a in example.answers)
    features = convert_examples_to_features(examples, preprocessor.tokenizer, is_training=True, **SETTINGS)
    assert features.skipped_example_indices == [5]
    assert features.start_positions[features.example_index == 4].any()  # after multi-byte characters
    answers = {"text": [text for text, _ in LABELED_ANSWERS], "answer_start": [start for _, start in LABELED_ANSWERS]}
    x, y, weights = preprocessor((LABELED_QUESTIONS, LABELED_CONTEXTS), answers, np.arange(6.0))
    for key, value in features.inputs().items():
        np.testing.assert_array_equal(x[key], value)
    for key, value in features.labels().items():
        np.testing.assert_array_equal(y[key], value)
    np.testing.assert_array_equal(weights, features.example_index)
    batches = list(preprocessor.make_dataset((LABELED_QUESTIONS, LABELED_CONTEXTS), answers, batch_size=4))
    np.testing.assert_array_equal(np.concatenate([batch[1]["start_positions"] for batch in batches]),
                                  features.start_positions)
    # A dataset of ((question, context), answers) elements, and one str pair with its answer.
    dataset = tf.data.Dataset.from_tensor_slices(((LABELED_QUESTIONS, LABELED_CONTEXTS), answers)).batch(2)
    np.testing.assert_array_equal(
        np.concatenate([batch[1]["end_positions"] for batch in preprocessor.make_dataset(dataset)]),
        features.end_positions)
    _, single = preprocessor((QUESTIONS[0], CONTEXTS[0]), {"text": "paris today", "answer_start": 15})
    np.testing.assert_array_equal(single["start_positions"], features.start_positions[features.example_index == 0])


@pytest.mark.backend_independent
def test_answers_are_decode_squad_predictions():
    preprocessor = _preprocessor(n_best_size=3, max_answer_length=4)
    x = (QUESTIONS, CONTEXTS)
    examples, features = preprocessor.featurize(x)
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(2, len(features), 14)).astype("float32")
    answers = preprocessor.answers(x, {"start_logits": start, "end_logits": end})
    expected = decode_squad_predictions(examples, features, start, end, n_best_size=3, max_answer_length=4)
    assert [answer["text"] for answer in answers] == [expected.predictions[str(i)] for i in range(5)]
    for answer, context in zip(answers, CONTEXTS):
        if answer["text"]:
            assert context[answer["start"]:answer["end"]] == answer["text"]
        else:
            assert (answer["start"], answer["end"]) == (-1, -1)
    assert answers[2] == {"text": "", "start": -1, "end": -1, "score": -np.inf}  # empty context
    assert any(answer["text"] for answer in answers)


@pytest.mark.backend_independent
def test_version_2_answers_follow_the_null_threshold():
    x = (QUESTIONS[:2], CONTEXTS[:2])
    _, features = _preprocessor().featurize(x)
    rng = np.random.default_rng(1)
    outputs = dict(zip(("start_logits", "end_logits"), rng.normal(size=(2, len(features), 14)).astype("float32")))
    never = _preprocessor(version_2_with_negative=True, null_score_diff_threshold=1e9).answers(x, outputs)
    always = _preprocessor(version_2_with_negative=True, null_score_diff_threshold=-1e9).answers(x, outputs)
    assert all(answer["text"] for answer in never) and "null_odds" in never[0]
    assert [answer["text"] for answer in always] == ["", ""]
    assert [answer["start"] for answer in always] == [-1, -1]


@pytest.mark.backend_independent
def test_config_round_trip_and_serialization():
    preprocessor = _preprocessor(n_best_size=5, max_answer_length=7, version_2_with_negative=True,
                                 null_score_diff_threshold=-1.5, name="qa_preprocessor")
    config = preprocessor.get_config()
    assert {key: config[key] for key in ("sequence_length", "doc_stride", "max_query_length", "n_best_size",
                                         "max_answer_length", "version_2_with_negative",
                                         "null_score_diff_threshold")} == dict(
        sequence_length=14, doc_stride=2, max_query_length=3, n_best_size=5, max_answer_length=7,
        version_2_with_negative=True, null_score_diff_threshold=-1.5)
    restored = BertQuestionAnsweringPreprocessor.from_config(config)
    assert restored.get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(preprocessor))
    assert isinstance(revived, BertQuestionAnsweringPreprocessor) and revived.get_config() == config


@pytest.mark.backend_independent
def test_defaults_and_invalid_settings():
    preprocessor = BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY))
    assert (preprocessor.sequence_length, preprocessor.doc_stride, preprocessor.max_query_length,
            preprocessor.n_best_size, preprocessor.max_answer_length, preprocessor.version_2_with_negative,
            preprocessor.null_score_diff_threshold) == (384, 128, 64, 20, 30, False, 0.0)
    # A short model keeps room for the context by default.
    assert BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY), sequence_length=24).max_query_length == 10
    with pytest.raises(ValueError, match="max_query_length"):
        _preprocessor(max_query_length=11)
    with pytest.raises(ValueError, match="doc_stride"):
        _preprocessor(doc_stride=0)
    with pytest.raises(TypeError, match="tuple"):
        _preprocessor()(QUESTIONS)
    with pytest.raises(ValueError, match="one context per question"):
        _preprocessor().featurize((QUESTIONS, CONTEXTS[:2]))
