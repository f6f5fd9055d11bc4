import json
import logging
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints.name_map import backbone_weight_specs
from keras_bert_impl.models.losses import SpanCrossEntropy, sparse_cross_entropy_from_logits
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from tests.helpers import assert_config_round_trip, random_batch, tiny_backbone, to_numpy
from tests.models.task_test_utils import (
    as_huggingface_inputs,
    marker_span_task,
    tiny_huggingface_config,
    write_original_checkpoint,
)

HEAD_PATHS = ["span_dense/kernel", "span_dense/bias"]


def deterministic_backbone(**overrides):
    return tiny_backbone(**{"dropout": 0.0, "attention_dropout": 0.0, **overrides})


def span_labels(batch_size=3):
    return {"start_positions": np.arange(batch_size, dtype="int32") + 1,
            "end_positions": np.arange(batch_size, dtype="int32") + 2}


def numpy_nll(logits, labels):
    logits = np.float64(logits)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels]


def test_outputs_are_the_span_layer_on_every_token():
    backbone = deterministic_backbone()
    model = BertQuestionAnswerer(backbone)
    x = random_batch()
    outputs = {name: to_numpy(value) for name, value in model(x).items()}
    assert sorted(outputs) == ["end_logits", "start_logits"]
    assert outputs["start_logits"].shape == (3, 10) and outputs["start_logits"].dtype == np.float32
    sequence = to_numpy(backbone(x)["sequence_output"])
    dense = model.get_layer("span_dense")
    expected = sequence @ to_numpy(dense.kernel) + to_numpy(dense.bias)  # (B, T, 2)
    np.testing.assert_allclose(outputs["start_logits"], expected[..., 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs["end_logits"], expected[..., 1], rtol=1e-5, atol=1e-6)
    assert [v.path for v in model.weights][-2:] == HEAD_PATHS
    assert not backbone.pooler.trainable


def test_span_loss_is_the_mean_of_start_and_end_cross_entropy():
    rng = np.random.default_rng(0)
    y_pred = {"start_logits": rng.normal(size=(4, 7)).astype("float32"),
              "end_logits": rng.normal(size=(4, 7)).astype("float32")}
    y_true = {"start_positions": np.array([0, 3, 6, 2]), "end_positions": np.array([0, 4, 6, 5])}
    expected = (numpy_nll(y_pred["start_logits"], y_true["start_positions"])
                + numpy_nll(y_pred["end_logits"], y_true["end_positions"])) / 2
    np.testing.assert_allclose(float(SpanCrossEntropy()(y_true, y_pred)), expected.mean(), rtol=1e-6)
    weights = np.array([1.0, 0.0, 2.0, 1.0], "float32")
    np.testing.assert_allclose(float(SpanCrossEntropy()(y_true, y_pred, sample_weight=weights)),
                               (expected * weights).sum() / 4, rtol=1e-6)
    np.testing.assert_allclose(
        to_numpy(sparse_cross_entropy_from_logits(y_true["start_positions"][:, None], y_pred["start_logits"])),
        numpy_nll(y_pred["start_logits"], y_true["start_positions"]), rtol=1e-6)


@pytest.mark.slow
def test_config_and_keras_file_round_trip(tmp_path):
    model = BertQuestionAnswerer(tiny_backbone())
    assert_config_round_trip(model)
    model.compile(optimizer="adam")
    x = random_batch()
    model.fit(x, span_labels(), epochs=1, verbose=0)
    path = os.path.join(tmp_path, "qa.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertQuestionAnswerer) and restored.span_loss is not None
    for name, value in model(x).items():
        np.testing.assert_allclose(to_numpy(restored(x)[name]), to_numpy(value), atol=1e-6)


def test_one_step_fit_with_the_default_span_loss():
    model = BertQuestionAnswerer(deterministic_backbone())
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    x, y = random_batch(), span_labels()
    history = model.fit(x, y, epochs=1, verbose=0).history
    assert sorted(history) == ["end_logits_accuracy", "loss", "start_logits_accuracy"]
    outputs = {name: to_numpy(value) for name, value in model(x).items()}
    expected = (numpy_nll(outputs["start_logits"], y["start_positions"])
                + numpy_nll(outputs["end_logits"], y["end_positions"])).mean() / 2
    np.testing.assert_allclose(history["loss"][0], expected, rtol=1e-4)


def test_user_losses_per_output_receive_the_position_labels():
    model = BertQuestionAnswerer(deterministic_backbone())
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss={"start_logits": loss, "end_logits": loss})
    history = model.fit(random_batch(), span_labels(), epochs=1, verbose=0).history
    assert {"start_logits_loss", "end_logits_loss"} <= set(history)
    np.testing.assert_allclose(history["loss"][0],
                               history["start_logits_loss"][0] + history["end_logits_loss"][0], rtol=1e-5)


@pytest.mark.slow
def test_tiny_model_learns_to_point_at_a_marker_token():
    x, y = marker_span_task(128, seed=0)
    x_test, y_test = marker_span_task(128, seed=1)
    model = BertQuestionAnswerer(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, batch_size=32, epochs=6, verbose=0)
    outputs = model.predict(x_test, verbose=0)
    start_accuracy = np.mean(np.argmax(outputs["start_logits"], -1) == y_test["start_positions"])
    end_accuracy = np.mean(np.argmax(outputs["end_logits"], -1) == y_test["end_positions"])
    assert start_accuracy >= 0.85 and end_accuracy >= 0.85, (start_accuracy, end_accuracy)  # chance < 0.2


# -- checkpoints ------------------------------------------------------------------------------------------


def test_save_pretrained_round_trip(tmp_path):
    model = BertQuestionAnswerer(tiny_backbone())
    model.save_pretrained(tmp_path / "qa")
    restored = BertQuestionAnswerer.from_pretrained(str(tmp_path / "qa"))
    assert restored.load_report.missing == [] and restored.load_report.unused == []
    x = random_batch()
    np.testing.assert_array_equal(to_numpy(restored(x)["end_logits"]), to_numpy(model(x)["end_logits"]))


def test_other_native_task_directory_loads_the_encoder_and_reports_the_head(tmp_path, caplog):
    from keras_bert_impl.models.classifier import BertClassifier

    classifier = BertClassifier(tiny_backbone(), num_classes=2)
    classifier.save_pretrained(tmp_path / "clf")
    with caplog.at_level(logging.WARNING):
        model = BertQuestionAnswerer.from_pretrained(str(tmp_path / "clf"))
    assert model.load_report.missing == HEAD_PATHS
    assert model.load_report.unused == ["classifier_dense/bias", "classifier_dense/kernel"]
    assert "span_dense/kernel" in caplog.text and "classifier_dense" in caplog.text


def random_huggingface_question_answerer():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.BertForQuestionAnswering(tiny_huggingface_config()).eval()


def huggingface_span_logits(model, x):
    import torch

    with torch.no_grad():
        out = model(**as_huggingface_inputs(x))
    return out.start_logits.numpy(), out.end_logits.numpy()


def test_huggingface_question_answering_logits_match(tmp_path):
    reference = random_huggingface_question_answerer()
    reference.save_pretrained(tmp_path / "hf")
    model = BertQuestionAnswerer.from_pretrained(str(tmp_path / "hf"))
    # BertForQuestionAnswering has no pooler; the span model does not use it.
    assert model.load_report.missing == ["pooler_dense/kernel", "pooler_dense/bias"]
    assert model.load_report.unused == []
    x = random_batch(4, 10, vocabulary_size=50)
    start, end = huggingface_span_logits(reference, x)
    outputs = model(x)
    np.testing.assert_allclose(to_numpy(outputs["start_logits"]), start, atol=1e-5, rtol=0)
    np.testing.assert_allclose(to_numpy(outputs["end_logits"]), end, atol=1e-5, rtol=0)


def test_round_trip_ours_to_huggingface_to_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = BertQuestionAnswerer(tiny_backbone(hidden_activation="gelu"))
    model.save_huggingface(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertForQuestionAnswering"]
    reference = transformers.BertForQuestionAnswering.from_pretrained(str(tmp_path / "hf")).eval()
    x = random_batch(3, 9, vocabulary_size=50)
    start, end = huggingface_span_logits(reference, x)
    np.testing.assert_allclose(start, to_numpy(model(x)["start_logits"]), atol=1e-5, rtol=0)
    np.testing.assert_allclose(end, to_numpy(model(x)["end_logits"]), atol=1e-5, rtol=0)
    reloaded = BertQuestionAnswerer.from_pretrained(str(tmp_path / "hf"))
    assert reloaded.load_report.missing == []
    np.testing.assert_allclose(to_numpy(reloaded(x)["start_logits"]), to_numpy(model(x)["start_logits"]),
                               atol=1e-6)


@pytest.mark.backend_independent
def test_original_run_squad_checkpoint_loads_the_squad_head(tmp_path):
    backbone = deterministic_backbone()
    model = BertQuestionAnswerer(backbone)
    specs = backbone_weight_specs(backbone.num_layers) + BertQuestionAnswerer.head_specs()
    write_original_checkpoint(tmp_path / "original", model, specs, backbone)
    restored = BertQuestionAnswerer.from_pretrained(str(tmp_path / "original"))
    assert restored.load_report.missing == []
    x = random_batch()
    np.testing.assert_allclose(to_numpy(restored(x)["start_logits"]), to_numpy(model(x)["start_logits"]),
                               atol=1e-6)


# -- raw text: the preprocessor ---------------------------------------------------------------------------

QA_QUESTIONS = ["where is the cat ?", "who walked home ?", "", "what did the dog do ?"]
QA_CONTEXTS = [
    "the cat sat in paris today . the dog ran far away .",
    "the old man walked home today",
    "",
    "a red house , a blue tree and the old city river walked home today . the dog ran home .",
]


def qa_preprocessor(**settings):
    from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.training.finetuning_test_utils import VOCABULARY

    settings = {"sequence_length": 14, "doc_stride": 3, "max_query_length": 4, "n_best_size": 5,
                "max_answer_length": 6, **settings}
    return BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY), **settings)


def assert_same_answers(answers, expected):
    """Same texts and offsets; scores equal up to float noise (batches of other sizes)."""
    if isinstance(expected, dict):
        answers, expected = [answers], [expected]
    assert [{k: v for k, v in a.items() if k not in ("score", "null_odds")} for a in answers] == [
        {k: v for k, v in a.items() if k not in ("score", "null_odds")} for a in expected]
    for key in ("score", "null_odds"):
        np.testing.assert_allclose([a.get(key, 0.0) for a in answers], [a.get(key, 0.0) for a in expected],
                                   rtol=1e-5, atol=1e-5)


def qa_model(**settings):
    return BertQuestionAnswerer(deterministic_backbone(), preprocessor=qa_preprocessor(**settings))


def test_predict_answers_raw_questions_with_offsets_into_the_context():
    model = qa_model()
    answers = model.predict(QA_QUESTIONS, QA_CONTEXTS, verbose=0)
    assert len(answers) == len(QA_QUESTIONS)
    for answer, context in zip(answers, QA_CONTEXTS):
        assert set(answer) == {"text", "start", "end", "score"}
        assert context[answer["start"]:answer["end"]] == answer["text"]
        assert (answer["text"] == "") == (answer["start"] == -1)
    assert all(answer["text"] for index, answer in enumerate(answers) if index != 2)
    assert answers[2]["text"] == ""  # the empty context has no span
    assert_same_answers(model.predict((QA_QUESTIONS, QA_CONTEXTS), verbose=0), answers)
    assert_same_answers(model.predict(QA_QUESTIONS[0], QA_CONTEXTS[0], verbose=0), answers[0])
    assert_same_answers(model.predict((np.array(QA_QUESTIONS), np.array(QA_CONTEXTS)), batch_size=2, verbose=0),
                        answers)


@pytest.mark.slow
def test_predict_on_raw_text_is_decoding_of_predict_on_the_preprocessor_ids():
    model = qa_model()
    x = (QA_QUESTIONS, QA_CONTEXTS)
    ids = model.preprocessor(x)
    assert len(ids["token_ids"]) > len(QA_QUESTIONS)  # windowed
    outputs = model.predict(ids, verbose=0)  # model inputs: logits, as without a preprocessor
    assert outputs["start_logits"].shape == ids["token_ids"].shape
    assert_same_answers(model.predict(x, verbose=0), model.preprocessor.answers(x, outputs))
    dataset_outputs = model.predict(model.preprocessor.make_dataset(x, batch_size=3), verbose=0)
    np.testing.assert_allclose(dataset_outputs["start_logits"], outputs["start_logits"], atol=1e-5)


def test_version_2_model_answers_empty_text_for_no_answer():
    answers = qa_model(version_2_with_negative=True, null_score_diff_threshold=-1e9).predict(
        QA_QUESTIONS, QA_CONTEXTS, verbose=0)
    assert [answer["text"] for answer in answers] == [""] * 4
    assert all(answer["start"] == -1 and "null_odds" in answer for answer in answers)


def test_without_a_preprocessor_predict_takes_ids_only():
    model = BertQuestionAnswerer(tiny_backbone())
    assert model.preprocessor is None
    assert sorted(model.predict(random_batch(), verbose=0)) == ["end_logits", "start_logits"]
    with pytest.raises(ValueError, match="needs a preprocessor"):
        model.predict(QA_QUESTIONS, QA_CONTEXTS, verbose=0)


def test_fit_on_token_ids_with_a_preprocessor_attached():
    model = qa_model()
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    history = model.fit(random_batch(sequence_length=14), span_labels(), batch_size=2, epochs=1, verbose=0)
    assert sorted(history.history) == ["end_logits_accuracy", "loss", "start_logits_accuracy"]


QA_ANSWERS = {"text": ["paris", "the old man", "", "ran home"], "answer_start": [15, 0, -1, 77]}


@pytest.mark.slow
def test_fit_on_raw_text_trains_on_the_offline_features_labels():
    """One SGD step on raw questions and answers moves the weights as one step on the offline features
    (`convert_examples_to_features(..., is_training=True)`): the same rows and labels."""
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import SquadAnswer, SquadExample

    examples = [SquadExample(str(i), question, context, (SquadAnswer(text, start),) if start >= 0 else (),
                             is_impossible=start < 0)
                for i, (question, context, text, start) in enumerate(zip(QA_QUESTIONS, QA_CONTEXTS,
                                                                         *QA_ANSWERS.values()))]
    assert all(e.context_text[a.answer_start:a.answer_end] == a.text for e in examples for a in e.answers)
    preprocessor = qa_preprocessor()
    features = convert_examples_to_features(examples, preprocessor.tokenizer, is_training=True,
                                             sequence_length=14, doc_stride=3, max_query_length=4)
    assert features.start_positions.any()
    _, labels = preprocessor((QA_QUESTIONS, QA_CONTEXTS), QA_ANSWERS)
    for key, value in features.labels().items():
        np.testing.assert_array_equal(labels[key], value)
    weights = []
    for x, y, batch_size in (((QA_QUESTIONS, QA_CONTEXTS), QA_ANSWERS, 4),
                             (features.inputs(), features.labels(), len(features))):
        keras.utils.set_random_seed(0)
        model = qa_model()
        model.compile(optimizer=keras.optimizers.SGD(0.1))
        history = model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        weights.append(model.get_weights())
    for raw, offline in zip(*weights):
        np.testing.assert_allclose(raw, offline, rtol=1e-5, atol=1e-6)


def test_save_pretrained_and_keras_file_keep_the_preprocessor(tmp_path):
    model = qa_model(version_2_with_negative=True, null_score_diff_threshold=0.5)
    expected = model.predict(QA_QUESTIONS, QA_CONTEXTS, verbose=0)
    assert_config_round_trip(model)
    model.save_pretrained(tmp_path / "qa")
    assert (tmp_path / "qa" / "preprocessor.json").is_file() and (tmp_path / "qa" / "vocab.txt").is_file()
    restored = BertQuestionAnswerer.from_pretrained(str(tmp_path / "qa"))
    assert restored.preprocessor.get_config() == model.preprocessor.get_config()
    assert_same_answers(restored.predict(QA_QUESTIONS, QA_CONTEXTS, verbose=0), expected)
    assert BertQuestionAnswerer.from_pretrained(str(tmp_path / "qa"), preprocessor=None).preprocessor is None
    assert BertQuestionAnswerer.from_pretrained(str(tmp_path / "qa"), sequence_length=20).preprocessor.sequence_length == 20

    path = os.path.join(tmp_path, "qa.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.preprocessor.get_config() == model.preprocessor.get_config()
    assert_same_answers(loaded.predict(QA_QUESTIONS, QA_CONTEXTS, verbose=0), expected)


def test_from_pretrained_without_preprocessor_json_gets_run_squad_settings(tmp_path):
    model = BertQuestionAnswerer(tiny_backbone())
    model.save_pretrained(tmp_path / "qa")
    qa_preprocessor().tokenizer.save_pretrained(str(tmp_path / "qa"))  # a vocabulary, no preprocessor.json
    preprocessor = BertQuestionAnswerer.from_pretrained(str(tmp_path / "qa")).preprocessor
    assert type(preprocessor).__name__ == "BertQuestionAnsweringPreprocessor"
    # min(384, max_sequence_length=24), and a question length that leaves context room.
    assert (preprocessor.sequence_length, preprocessor.doc_stride, preprocessor.max_query_length) == (24, 128, 10)


def test_from_scratch_attaches_a_preprocessor_on_the_vocabulary():
    from tests.training.finetuning_test_utils import VOCABULARY

    model = BertQuestionAnswerer.from_scratch("tiny", vocabulary=VOCABULARY, max_sequence_length=32)
    assert model.backbone.vocabulary_size == len(VOCABULARY)
    assert model.preprocessor.sequence_length == 32
    answer = model.predict(QA_QUESTIONS[0], QA_CONTEXTS[0], verbose=0)
    assert QA_CONTEXTS[0][answer["start"]:answer["end"]] == answer["text"]
    assert BertQuestionAnswerer.from_scratch("tiny", max_sequence_length=32).preprocessor is None
