import json
import logging
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError
from keras_bert_impl.checkpoints.name_map import backbone_weight_specs
from keras_bert_impl.data.label_vocabulary import LABEL_VOCABULARY_FILENAME
from keras_bert_impl.models.classifier import BertClassifier
from tests.helpers import assert_config_round_trip, random_batch, tiny_backbone, to_numpy
from tests.models.task_test_utils import (
    as_huggingface_inputs,
    tiny_huggingface_config,
    token_presence_task,
    write_original_checkpoint,
)

HEAD_PATHS = ["classifier_dense/kernel", "classifier_dense/bias"]


def deterministic_backbone(**overrides):
    return tiny_backbone(**{"dropout": 0.0, "attention_dropout": 0.0, **overrides})


def test_logits_are_the_dense_layer_on_the_pooled_output():
    backbone = deterministic_backbone()
    model = BertClassifier(backbone, num_classes=3, dropout=0.5)
    x = random_batch()
    logits = to_numpy(model(x))
    assert logits.shape == (3, 3) and logits.dtype == np.float32
    pooled = to_numpy(backbone(x)["pooled_output"])
    dense = model.get_layer("classifier_dense")
    expected = pooled @ to_numpy(dense.kernel) + to_numpy(dense.bias)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    assert [v.path for v in model.weights][-2:] == HEAD_PATHS
    assert [v.path for v in model.weights][: len(backbone.weights)] == [v.path for v in backbone.weights]


def test_dropout_applies_only_in_training():
    model = BertClassifier(deterministic_backbone(), num_classes=2, dropout=0.5)
    x = random_batch()
    np.testing.assert_array_equal(to_numpy(model(x)), to_numpy(model(x, training=False)))
    assert not np.allclose(to_numpy(model(x, training=True)), to_numpy(model(x, training=False)))


def test_pairs_and_single_sentences_give_different_logits():
    model = BertClassifier(deterministic_backbone(), num_classes=2)
    x = random_batch()
    single = dict(x, segment_ids=np.zeros_like(x["segment_ids"]))
    assert not np.allclose(to_numpy(model(x)), to_numpy(model(single)))


@pytest.mark.parametrize("kwargs,message", [
    ({"num_classes": 0}, "positive integer"),
    ({"num_classes": 2, "dropout": 1.0}, "dropout"),
    ({"num_classes": 2, "labels": ["a", "b", "c"]}, "3 labels"),
    ({"num_classes": 1, "labels": ["score"]}, "regression"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertClassifier(tiny_backbone(), **kwargs)


def test_config_round_trip_keeps_head_arguments():
    model = BertClassifier(tiny_backbone(), num_classes=3, dropout=0.2, labels=["neg", "neu", "pos"])
    restored = assert_config_round_trip(model)
    assert (restored.num_classes, restored.dropout, restored.labels) == (3, 0.2, ("neg", "neu", "pos"))
    assert restored.label_vocabulary.label_to_id("pos") == 2


@pytest.mark.slow
def test_keras_file_save_load_gives_equal_logits(tmp_path):
    model = BertClassifier(tiny_backbone(), num_classes=2, labels=["no", "yes"])
    model.compile(optimizer="adam")
    x = random_batch()
    model.fit(x, np.array([0, 1, 1]), epochs=1, verbose=0)
    path = os.path.join(tmp_path, "classifier.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertClassifier) and restored.labels == ("no", "yes")
    assert restored.compiled and isinstance(restored.loss, keras.losses.SparseCategoricalCrossentropy)
    assert int(to_numpy(restored.optimizer.iterations)) == 1
    np.testing.assert_allclose(to_numpy(restored(x)), to_numpy(model(x)), atol=1e-6)


@pytest.mark.slow
def test_one_step_fit_classification_and_default_compile():
    model = BertClassifier(tiny_backbone(), num_classes=3)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    before = to_numpy(model.get_layer("classifier_dense").kernel).copy()
    history = model.fit(random_batch(4), np.array([0, 1, 2, 1]), epochs=1, verbose=0).history
    assert sorted(history) == ["accuracy", "loss"]
    assert np.isfinite(history["loss"][0]) and history["loss"][0] > 0
    assert not np.allclose(before, to_numpy(model.get_layer("classifier_dense").kernel))


def test_regression_uses_mean_squared_error():
    model = BertClassifier(deterministic_backbone(), num_classes=1)
    assert model.is_regression
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    x, scores = random_batch(4), np.array([0.5, 1.0, 2.5, 4.0], "float32")
    history = model.fit(x, scores, epochs=1, verbose=0).history
    assert sorted(history) == ["loss"]
    predictions = model.predict(x, verbose=0)[:, 0]
    # Compiled steps (XLA's fast tanh on CPU) differ from eager calls in the 4th digit.
    np.testing.assert_allclose(history["loss"][0], np.mean((predictions - scores) ** 2), rtol=1e-3)


@pytest.mark.slow
def test_tiny_model_learns_whether_a_token_occurs():
    x, y = token_presence_task(128, seed=0)
    x_test, y_test = token_presence_task(128, seed=1)
    model = BertClassifier(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0), num_classes=2,
                           dropout=0.0)
    # Loss plateaus at ln 2 for a few epochs before the marker is found; 96 small steps at a moderate rate
    # get there on every backend and seed tried (1e-2 x 24 steps did not, on some).
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(x, y, batch_size=16, epochs=12, verbose=0)
    accuracy = np.mean(np.argmax(to_numpy(model.predict(x_test, verbose=0)), -1) == y_test)
    assert accuracy >= 0.85, accuracy  # chance: 0.5


# -- checkpoints ------------------------------------------------------------------------------------------


def test_save_pretrained_round_trip_restores_weights_and_labels(tmp_path):
    model = BertClassifier(tiny_backbone(), num_classes=3, dropout=0.3, labels=["b", "a", "c"])
    model.save_pretrained(tmp_path / "clf")
    with open(tmp_path / "clf" / LABEL_VOCABULARY_FILENAME, encoding="utf-8") as handle:
        assert json.load(handle) == {"labels": ["b", "a", "c"]}
    restored = BertClassifier.from_pretrained(str(tmp_path / "clf"))
    assert (restored.num_classes, restored.dropout, restored.labels) == (3, 0.3, ("b", "a", "c"))
    assert restored.load_report.missing == [] and restored.load_report.unused == []
    x = random_batch()
    np.testing.assert_array_equal(to_numpy(restored(x)), to_numpy(model(x)))


def test_encoder_checkpoint_needs_num_classes_and_reports_the_missing_head(tmp_path, caplog):
    backbone = tiny_backbone()
    backbone.save_pretrained(tmp_path / "encoder")
    with pytest.raises(ValueError, match="num_classes"):
        BertClassifier.from_pretrained(str(tmp_path / "encoder"))
    with caplog.at_level(logging.WARNING):
        model = BertClassifier.from_pretrained(str(tmp_path / "encoder"), num_classes=4, labels=list("abcd"))
    assert model.load_report.missing == HEAD_PATHS
    assert "classifier_dense/kernel" in caplog.text
    x = random_batch()
    np.testing.assert_array_equal(to_numpy(model.backbone(x)["pooled_output"]),
                                  to_numpy(backbone(x)["pooled_output"]))


def test_a_head_with_another_number_of_classes_is_reinitialised_not_dropped(tmp_path, caplog):
    BertClassifier(tiny_backbone(), num_classes=3).save_pretrained(tmp_path / "three")
    with caplog.at_level(logging.WARNING):
        model = BertClassifier.from_pretrained(str(tmp_path / "three"), num_classes=2)
    assert model.load_report.missing == HEAD_PATHS
    assert sorted(model.load_report.unused) == sorted(HEAD_PATHS)
    assert "does not fit" in caplog.text


# -- Hugging Face parity -----------------------------------------------------------------------------------


def random_huggingface_classifier(**config_overrides):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(tiny_huggingface_config(**config_overrides))
    return model.eval()


def huggingface_logits(model, x):
    import torch

    with torch.no_grad():
        return model(**as_huggingface_inputs(x)).logits.numpy()


def test_huggingface_sequence_classification_logits_match(tmp_path):
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    reference = random_huggingface_classifier(num_labels=3, id2label=labels,
                                              label2id={v: k for k, v in labels.items()})
    reference.save_pretrained(tmp_path / "hf")
    model = BertClassifier.from_pretrained(str(tmp_path / "hf"))
    assert model.num_classes == 3 and model.labels == ("contradiction", "entailment", "neutral")
    assert model.load_report.missing == [] and model.load_report.unused == []
    x = random_batch(4, 10, vocabulary_size=50)
    np.testing.assert_allclose(to_numpy(model(x)), huggingface_logits(reference, x), atol=1e-5, rtol=0)


def test_huggingface_regression_head_matches(tmp_path):
    reference = random_huggingface_classifier(num_labels=1)
    reference.save_pretrained(tmp_path / "hf")
    model = BertClassifier.from_pretrained(str(tmp_path / "hf"))
    assert model.is_regression and model.labels is None
    x = random_batch(3, 9, vocabulary_size=50)
    np.testing.assert_allclose(to_numpy(model(x)), huggingface_logits(reference, x), atol=1e-5, rtol=0)


def test_round_trip_ours_to_huggingface_to_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = BertClassifier(tiny_backbone(hidden_activation="gelu"), num_classes=3, dropout=0.2,
                           labels=["x", "y", "z"])
    model.save_huggingface(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["num_labels"] == 3 and config["id2label"] == {"0": "x", "1": "y", "2": "z"}
    reference = transformers.BertForSequenceClassification.from_pretrained(str(tmp_path / "hf")).eval()
    assert reference.config.id2label == {0: "x", 1: "y", 2: "z"}
    x = random_batch(3, 9, vocabulary_size=50)
    np.testing.assert_allclose(huggingface_logits(reference, x), to_numpy(model(x)), atol=1e-5, rtol=0)
    reloaded = BertClassifier.from_pretrained(str(tmp_path / "hf"))
    assert (reloaded.labels, reloaded.dropout) == (("x", "y", "z"), 0.2)
    np.testing.assert_allclose(to_numpy(reloaded(x)), to_numpy(model(x)), atol=1e-6)


def test_huggingface_encoder_only_checkpoint_loads_the_encoder(tmp_path, caplog):
    transformers = pytest.importorskip("transformers")
    transformers.BertModel(tiny_huggingface_config()).save_pretrained(tmp_path / "hf")
    with caplog.at_level(logging.WARNING):
        model = BertClassifier.from_pretrained(str(tmp_path / "hf"), num_classes=2)
    assert model.load_report.missing == HEAD_PATHS and model.labels is None


@pytest.mark.backend_independent
def test_original_run_classifier_checkpoint_loads_output_weights(tmp_path):
    backbone = deterministic_backbone()
    model = BertClassifier(backbone, num_classes=3)
    specs = backbone_weight_specs(backbone.num_layers) + BertClassifier.head_specs()
    write_original_checkpoint(tmp_path / "original", model, specs, backbone)
    restored = BertClassifier.from_pretrained(str(tmp_path / "original"))
    assert restored.num_classes == 3 and restored.load_report.missing == []
    x = random_batch()
    np.testing.assert_allclose(to_numpy(restored(x)), to_numpy(model(x)), atol=1e-6)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        BertClassifier.from_pretrained(str(tmp_path / "nowhere"), num_classes=2)
