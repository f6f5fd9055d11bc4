import json
import logging

import keras
import numpy as np
import pytest

from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from tests.helpers import assert_config_round_trip, random_batch, tiny_backbone, to_numpy
from tests.models.task_test_utils import CLS, FILLER_LOW, SEP, as_huggingface_inputs, tiny_huggingface_config

HEAD_PATHS = ["multiple_choice_dense/kernel", "multiple_choice_dense/bias"]


def deterministic_backbone(**overrides):
    return tiny_backbone(**{"dropout": 0.0, "attention_dropout": 0.0, **overrides})


def choice_batch(batch_size=2, num_choices=3, sequence_length=10, seed=0):
    """`(B, C, T)` inputs: `random_batch`'s varied lengths and segments, `C` rows per example."""
    flat = random_batch(batch_size * num_choices, sequence_length, seed=seed)
    return {key: value.reshape(batch_size, num_choices, sequence_length) for key, value in flat.items()}


def flattened(x):
    return {key: value.reshape(-1, value.shape[-1]) for key, value in x.items()}


def test_each_choice_is_scored_by_the_dense_layer_on_its_pooled_output():
    backbone = deterministic_backbone()
    model = BertMultipleChoice(backbone, dropout=0.5)
    x = choice_batch(2, 3)
    logits = to_numpy(model(x))
    assert logits.shape == (2, 3) and logits.dtype == np.float32
    pooled = to_numpy(backbone(flattened(x))["pooled_output"])  # (6, H)
    dense = model.get_layer("multiple_choice_dense")
    expected = (pooled @ to_numpy(dense.kernel) + to_numpy(dense.bias)).reshape(2, 3)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    assert [v.path for v in model.weights][-2:] == HEAD_PATHS


def test_the_number_of_choices_may_change_between_calls():
    model = BertMultipleChoice(deterministic_backbone())
    x = choice_batch(2, 4)
    four = to_numpy(model(x))
    two = to_numpy(model({key: value[:, :2] for key, value in x.items()}))
    assert four.shape == (2, 4) and two.shape == (2, 2)
    np.testing.assert_allclose(two, four[:, :2], rtol=1e-5, atol=1e-6)


def test_dropout_applies_only_in_training_and_bad_dropout_is_rejected():
    model = BertMultipleChoice(deterministic_backbone(), dropout=0.5)
    x = choice_batch()
    np.testing.assert_array_equal(to_numpy(model(x)), to_numpy(model(x, training=False)))
    assert not np.allclose(to_numpy(model(x, training=True)), to_numpy(model(x, training=False)))
    with pytest.raises(ValueError, match="dropout"):
        BertMultipleChoice(tiny_backbone(), dropout=1.0)


@pytest.mark.slow
def test_config_round_trip_and_one_step_fit_with_the_default_compile():
    model = BertMultipleChoice(tiny_backbone(), dropout=0.2)
    restored = assert_config_round_trip(model)
    assert restored.dropout == 0.2
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    before = to_numpy(model.get_layer("multiple_choice_dense").kernel).copy()
    history = model.fit(choice_batch(4, 3), np.array([0, 2, 1, 2]), epochs=1, verbose=0).history
    assert sorted(history) == ["accuracy", "loss"] and np.isfinite(history["loss"][0])
    assert not np.allclose(before, to_numpy(model.get_layer("multiple_choice_dense").kernel))


def matching_key_task(num_examples, num_choices=4, seed=0):
    """Multiple choice on token ids: the context holds key token A or B; the right ending holds the same
    key, the others the other one. Each choice is `[CLS] f f k f [SEP] f k' f [SEP]` with random filler tokens
    f, so only the pair (context, ending) tells the right choice: an ending alone does not.

    Returns `(x, y)`: inputs `(N, C, 10)` and int32 labels `(N,)`, uniform over the choices.
    """
    rng = np.random.default_rng(seed)
    keys = np.array([FILLER_LOW, FILLER_LOW + 1])  # fillers are drawn above them
    token_ids = rng.integers(FILLER_LOW + 2, 50, (num_examples, num_choices, 10)).astype("int32")
    token_ids[:, :, 0] = CLS
    token_ids[:, :, 5] = token_ids[:, :, 9] = SEP
    labels = rng.integers(0, num_choices, num_examples).astype("int32")
    context_keys = rng.integers(0, 2, num_examples)
    token_ids[:, :, 3] = keys[context_keys][:, None]  # the same context in every choice
    token_ids[:, :, 7] = keys[1 - context_keys][:, None]
    token_ids[np.arange(num_examples), labels, 7] = keys[context_keys]
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, :, 6:] = 1
    x = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": np.ones_like(token_ids, bool)}
    return x, labels


@pytest.mark.slow
def test_tiny_model_learns_which_ending_repeats_the_context_key():
    x, y = matching_key_task(512, seed=0)
    x_test, y_test = matching_key_task(128, seed=1)
    model = BertMultipleChoice(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0), dropout=0.0)
    # The loss sits at ln 4 for a few epochs, then drops within one or two (at 3e-3 it sometimes fell back).
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    accuracy = np.mean(np.argmax(to_numpy(model.predict(x_test, verbose=0)), -1) == y_test)
    assert accuracy >= 0.9, accuracy  # chance: 1 / 4


# -- checkpoints ------------------------------------------------------------------------------------------


def test_save_pretrained_round_trip_restores_weights_and_dropout(tmp_path):
    model = BertMultipleChoice(tiny_backbone(), dropout=0.3)
    model.save_pretrained(tmp_path / "mc")
    restored = BertMultipleChoice.from_pretrained(str(tmp_path / "mc"))
    assert restored.dropout == 0.3
    assert restored.load_report.missing == [] and restored.load_report.unused == []
    x = choice_batch()
    np.testing.assert_array_equal(to_numpy(restored(x)), to_numpy(model(x)))


def test_encoder_checkpoint_loads_the_encoder_and_reports_the_missing_head(tmp_path, caplog):
    backbone = tiny_backbone()
    backbone.save_pretrained(tmp_path / "encoder")
    with caplog.at_level(logging.WARNING):
        model = BertMultipleChoice.from_pretrained(str(tmp_path / "encoder"))
    assert model.load_report.missing == HEAD_PATHS and "multiple_choice_dense/kernel" in caplog.text
    x = choice_batch()
    np.testing.assert_array_equal(to_numpy(model.backbone(flattened(x))["pooled_output"]),
                                  to_numpy(backbone(flattened(x))["pooled_output"]))


# -- Hugging Face parity -----------------------------------------------------------------------------------


def random_huggingface_multiple_choice(**config_overrides):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.BertForMultipleChoice(tiny_huggingface_config(**config_overrides)).eval()


def huggingface_logits(model, x):
    import torch

    # BertForMultipleChoice takes (B, C, T) inputs and folds the choices itself.
    inputs = {key: value.reshape(x["token_ids"].shape) for key, value in as_huggingface_inputs(flattened(x)).items()}
    with torch.no_grad():
        return model(**inputs).logits.numpy()


def test_huggingface_multiple_choice_logits_match(tmp_path):
    reference = random_huggingface_multiple_choice(classifier_dropout=0.2)
    reference.save_pretrained(tmp_path / "hf")
    model = BertMultipleChoice.from_pretrained(str(tmp_path / "hf"))
    assert model.dropout == 0.2
    assert model.load_report.missing == [] and model.load_report.unused == []
    x = choice_batch(3, 4)
    np.testing.assert_allclose(to_numpy(model(x)), huggingface_logits(reference, x), atol=1e-5, rtol=0)


def test_round_trip_ours_to_huggingface_to_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = BertMultipleChoice(tiny_backbone(hidden_activation="gelu"), dropout=0.2)
    model.save_huggingface(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertForMultipleChoice"] and config["classifier_dropout"] == 0.2
    reference = transformers.BertForMultipleChoice.from_pretrained(str(tmp_path / "hf")).eval()
    x = choice_batch(2, 4)
    np.testing.assert_allclose(huggingface_logits(reference, x), to_numpy(model(x)), atol=1e-5, rtol=0)
    reloaded = BertMultipleChoice.from_pretrained(str(tmp_path / "hf"))
    assert reloaded.dropout == 0.2 and reloaded.load_report.missing == []
    np.testing.assert_allclose(to_numpy(reloaded(x)), to_numpy(model(x)), atol=1e-6)


def test_a_sequence_classification_head_is_reinitialised_not_loaded(tmp_path, caplog):
    transformers = pytest.importorskip("transformers")
    transformers.BertForSequenceClassification(tiny_huggingface_config(num_labels=3)).save_pretrained(tmp_path / "hf")
    with caplog.at_level(logging.WARNING):
        model = BertMultipleChoice.from_pretrained(str(tmp_path / "hf"))
    assert model.load_report.missing == HEAD_PATHS and "does not fit" in caplog.text


@pytest.mark.backend_independent
def test_saved_model_export_is_refused_with_what_to_use_instead(tmp_path):
    from keras_bert_impl.export import ExportError, export_saved_model

    with pytest.raises(ExportError, match=r"BertMultipleChoice has no SavedModel export: .*save_huggingface"):
        export_saved_model(BertMultipleChoice(tiny_backbone()), str(tmp_path / "exported"))
    assert not (tmp_path / "exported").exists()
