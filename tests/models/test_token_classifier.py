import json
import logging

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.token_classifier import IGNORED_LABEL, BertTokenClassifier, masked_token_cross_entropy
from tests.helpers import assert_config_round_trip, random_batch, tiny_backbone, to_numpy
from tests.models.task_test_utils import MARKER, as_huggingface_inputs, tiny_huggingface_config, token_presence_task

HEAD_PATHS = ["token_classifier_dense/kernel", "token_classifier_dense/bias"]
TAGS = ["O", "B-PER", "I-PER"]


def deterministic_backbone(**overrides):
    return tiny_backbone(**{"dropout": 0.0, "attention_dropout": 0.0, **overrides})


def ignored_labels(x, rng, num_classes=3):
    """Random tag ids on the real tokens after [CLS], IGNORED_LABEL on [CLS] and padding."""
    labels = rng.integers(0, num_classes, x["token_ids"].shape).astype("int32")
    labels[:, 0] = IGNORED_LABEL
    return np.where(x["padding_mask"], labels, IGNORED_LABEL).astype("int32")


def test_logits_are_the_dense_layer_on_every_token():
    backbone = deterministic_backbone()
    model = BertTokenClassifier(backbone, num_classes=3, dropout=0.5)
    x = random_batch()
    logits = to_numpy(model(x))
    assert logits.shape == (3, 10, 3) and logits.dtype == np.float32
    dense = model.get_layer("token_classifier_dense")
    expected = to_numpy(backbone(x)["sequence_output"]) @ to_numpy(dense.kernel) + to_numpy(dense.bias)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert [v.path for v in model.weights][-2:] == HEAD_PATHS
    assert not backbone.pooler.trainable


@pytest.mark.parametrize("kwargs,message", [
    ({"num_classes": 0}, "positive integer"),
    ({"num_classes": 2, "dropout": 1.0}, "dropout"),
    ({"num_classes": 2, "labels": TAGS}, "3 labels"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertTokenClassifier(tiny_backbone(), **kwargs)


def test_loss_averages_over_labelled_tokens_only(rng):
    model = BertTokenClassifier(deterministic_backbone(), num_classes=3, dropout=0.0)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    x = random_batch(4)
    labels = ignored_labels(x, rng)
    history = model.fit(x, labels, batch_size=4, epochs=1, verbose=0).history
    logits = to_numpy(model(x))
    keep = labels != IGNORED_LABEL
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, np.where(keep, labels, 0)[..., None], -1)[..., 0][keep].mean()
    np.testing.assert_allclose(history["loss"][0], expected, rtol=1e-3)
    accuracy = np.mean(np.argmax(logits, -1)[keep] == labels[keep])
    np.testing.assert_allclose(history["accuracy"][0], accuracy, rtol=1e-5)


@pytest.mark.slow
def test_targets_longer_than_the_batch_are_cut_at_the_padding(rng):
    """Length-bucketed batches cut the inputs to the batch's length but not the targets."""
    x = random_batch(2, 6, lengths=[6, 4])
    labels = np.pad(ignored_labels(x, rng), [[0, 0], [0, 4]], constant_values=IGNORED_LABEL)
    model = BertTokenClassifier(deterministic_backbone(), num_classes=3)
    model.compile(optimizer="adam")
    assert np.isfinite(model.fit(x, labels, epochs=1, verbose=0).history["loss"][0])
    loss = masked_token_cross_entropy(np.zeros((1, 2), "int32"), np.zeros((1, 2, 3), "float32"),
                                      np.zeros((1, 2), "float32"))
    assert float(to_numpy(loss)) == 0.0  # no labelled token: no loss, no NaN


@pytest.mark.slow
def test_config_and_keras_file_round_trip(tmp_path, rng):
    model = BertTokenClassifier(tiny_backbone(), num_classes=3, dropout=0.2, labels=TAGS)
    restored = assert_config_round_trip(model)
    assert (restored.num_classes, restored.dropout, restored.labels) == (3, 0.2, tuple(TAGS))
    model.compile(optimizer="adam")
    x = random_batch()
    model.fit(x, ignored_labels(x, rng), epochs=1, verbose=0)
    model.save(tmp_path / "tagger.keras")
    loaded = keras.saving.load_model(tmp_path / "tagger.keras")
    assert isinstance(loaded, BertTokenClassifier) and loaded.uses_default_loss
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)


@pytest.mark.slow
def test_tiny_model_learns_to_tag_a_marker_token():
    # Tag 1 on the MARKER token, 0 on every other real token: learnable from the token alone.
    x, _ = token_presence_task(96, seed=0)
    labels = np.where(x["token_ids"] == MARKER, 1, 0).astype("int32")
    labels = np.where(x["padding_mask"], labels, IGNORED_LABEL)
    x_test, _ = token_presence_task(64, seed=1)
    model = BertTokenClassifier(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0), num_classes=2,
                                dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(x, labels, batch_size=16, epochs=6, verbose=0)
    predicted = np.argmax(to_numpy(model.predict(x_test, verbose=0)), -1) == 1
    is_marker = x_test["token_ids"] == MARKER
    real = x_test["padding_mask"]
    # The marker is 1 token in ~8; always answering "not a marker" recalls none of them.
    assert predicted[is_marker & real].mean() >= 0.9 and (~predicted[~is_marker & real]).mean() >= 0.95


# -- checkpoints ------------------------------------------------------------------------------------------


def test_save_pretrained_round_trip_restores_weights_and_labels(tmp_path):
    model = BertTokenClassifier(tiny_backbone(), num_classes=3, dropout=0.3, labels=TAGS)
    model.save_pretrained(tmp_path / "tagger")
    restored = BertTokenClassifier.from_pretrained(str(tmp_path / "tagger"))
    assert (restored.num_classes, restored.dropout, restored.labels) == (3, 0.3, tuple(TAGS))
    assert restored.load_report.missing == [] and restored.load_report.unused == []
    x = random_batch()
    np.testing.assert_array_equal(to_numpy(restored(x)), to_numpy(model(x)))


def test_encoder_or_other_task_checkpoint_loads_the_encoder_and_reports_the_head(tmp_path, caplog):
    BertClassifier(tiny_backbone(), num_classes=3).save_pretrained(tmp_path / "classifier")
    with pytest.raises(ValueError, match="num_classes"):
        BertTokenClassifier.from_pretrained(str(tmp_path / "classifier"))
    with caplog.at_level(logging.WARNING):
        model = BertTokenClassifier.from_pretrained(str(tmp_path / "classifier"), num_classes=3, labels=TAGS)
    assert model.load_report.missing == HEAD_PATHS and "token_classifier_dense" in caplog.text


def random_huggingface_tagger(**config_overrides):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.BertForTokenClassification(tiny_huggingface_config(**config_overrides)).eval()


def huggingface_logits(model, x):
    import torch

    with torch.no_grad():
        return model(**as_huggingface_inputs(x)).logits.numpy()


def assert_close_on_real_tokens(ours, reference, x):
    # Padded positions are not meaningful (and amplify rounding, see test_huggingface_checkpoints).
    real = x["padding_mask"]
    np.testing.assert_allclose(ours[real], reference[real], atol=1e-5, rtol=0)


def test_huggingface_token_classification_logits_match(tmp_path):
    tags = dict(enumerate(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]))
    reference = random_huggingface_tagger(num_labels=5, id2label=tags, label2id={v: k for k, v in tags.items()})
    reference.save_pretrained(tmp_path / "hf")
    model = BertTokenClassifier.from_pretrained(str(tmp_path / "hf"))
    assert model.num_classes == 5 and model.labels == tuple(tags.values())
    # BertForTokenClassification has no pooler; the token model does not use it.
    assert model.load_report.missing == ["pooler_dense/kernel", "pooler_dense/bias"]
    assert model.load_report.unused == []
    x = random_batch(4, 10, vocabulary_size=50)
    assert_close_on_real_tokens(to_numpy(model(x)), huggingface_logits(reference, x), x)


def test_round_trip_ours_to_huggingface_to_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = BertTokenClassifier(tiny_backbone(hidden_activation="gelu"), num_classes=3, dropout=0.2, labels=TAGS)
    model.save_huggingface(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"] and config["id2label"]["1"] == "B-PER"
    reference = transformers.BertForTokenClassification.from_pretrained(str(tmp_path / "hf")).eval()
    x = random_batch(3, 9, vocabulary_size=50)
    assert_close_on_real_tokens(huggingface_logits(reference, x), to_numpy(model(x)), x)
    reloaded = BertTokenClassifier.from_pretrained(str(tmp_path / "hf"))
    assert (reloaded.labels, reloaded.dropout) == (tuple(TAGS), 0.2)
    np.testing.assert_allclose(to_numpy(reloaded(x)), to_numpy(model(x)), atol=1e-6)


def test_huggingface_sequence_classifier_head_is_not_taken_for_a_token_head(tmp_path, caplog):
    transformers = pytest.importorskip("transformers")
    transformers.BertForSequenceClassification(tiny_huggingface_config(num_labels=3)).save_pretrained(tmp_path / "hf")
    with caplog.at_level(logging.WARNING):
        model = BertTokenClassifier.from_pretrained(str(tmp_path / "hf"), num_classes=3)
    assert model.load_report.missing[-2:] == HEAD_PATHS
    assert sorted(model.load_report.unused) == ["classifier.bias", "classifier.weight"]
