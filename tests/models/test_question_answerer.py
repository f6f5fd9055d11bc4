import json
import logging
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints.name_map import backbone_weight_specs, question_answering_head_specs
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


@pytest.mark.tensorflow_only
def test_original_run_squad_checkpoint_loads_the_squad_head(tmp_path):
    backbone = deterministic_backbone()
    model = BertQuestionAnswerer(backbone)
    specs = backbone_weight_specs(backbone.num_layers) + question_answering_head_specs()
    write_original_checkpoint(tmp_path / "original", model, specs, backbone)
    restored = BertQuestionAnswerer.from_pretrained(str(tmp_path / "original"))
    assert restored.load_report.missing == []
    x = random_batch()
    np.testing.assert_allclose(to_numpy(restored(x)["start_logits"]), to_numpy(model(x)["start_logits"]),
                               atol=1e-6)
