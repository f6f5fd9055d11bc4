import logging
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl.models.pretrainer import METRIC_NAMES, BertPretrainer, pretraining_losses
from tests.helpers import assert_config_round_trip, random_batch, real_checkpoint_dir, tiny_backbone, to_numpy

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO_ROOT, "tests", "models", "pretrainer_step_worker.py")
HEAD_PATHS = [
    "masked_lm_head/output_bias",
    "masked_lm_head/transform_dense/kernel",
    "masked_lm_head/transform_dense/bias",
    "masked_lm_head/transform_layer_norm/gamma",
    "masked_lm_head/transform_layer_norm/beta",
    "next_sentence_head/kernel",
    "next_sentence_head/bias",
]


def pretraining_batch(batch_size=4, sequence_length=10, predictions=4, vocabulary_size=50, seed=0,
                      weights_per_row=(3, 2, 1, 4)):
    """A pretraining batch in the layout of docs/data-formats.md; row r has `weights_per_row[r]` real mask slots.

    The default row weights sum to 5 in each half of the batch, so a 2-replica split normalises the MLM
    loss the same way as the whole batch does (see test_distribution).
    """
    rng = np.random.default_rng(seed)
    x = random_batch(batch_size, sequence_length, vocabulary_size, seed=seed,
                     lengths=[sequence_length] * batch_size)
    positions = np.zeros((batch_size, predictions), "int32")
    weights = np.zeros((batch_size, predictions), "float32")
    ids = np.zeros((batch_size, predictions), "int32")
    for row in range(batch_size):
        count = weights_per_row[row % len(weights_per_row)]
        positions[row, :count] = np.sort(rng.choice(np.arange(1, sequence_length - 1), count, replace=False))
        weights[row, :count] = 1.0
        ids[row, :count] = rng.integers(5, vocabulary_size, count)
    x["mask_positions"] = positions
    y = {"mask_ids": ids, "mask_weights": weights,
         "next_sentence_labels": (np.arange(batch_size) % 2).astype("int32")}
    return x, y


def deterministic_pretrainer(**overrides):
    """A one-layer pretrainer without dropout (one layer keeps tracing / XLA compilation short)."""
    return BertPretrainer(tiny_backbone(**{"num_layers": 1, "dropout": 0.0, "attention_dropout": 0.0, **overrides}))


def numpy_log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def numpy_pretraining_losses(y, mlm_logits, nsp_logits):
    """Independent reference of the original run_pretraining.py loss, in float64."""
    mlm_logits, nsp_logits = np.float64(mlm_logits), np.float64(nsp_logits)
    w = y["mask_weights"].astype("float64")
    nll = -np.take_along_axis(numpy_log_softmax(mlm_logits), y["mask_ids"][..., None], -1)[..., 0]
    mlm_loss = (w * nll).sum() / (w.sum() + 1e-5)
    labels = y["next_sentence_labels"]
    nsp_loss = -numpy_log_softmax(nsp_logits)[np.arange(len(labels)), labels].mean()
    return {
        "loss": mlm_loss + nsp_loss,
        "mlm_loss": mlm_loss,
        "nsp_loss": nsp_loss,
        "mlm_accuracy": (w * (mlm_logits.argmax(-1) == y["mask_ids"])).sum() / w.sum(),
        "nsp_accuracy": (nsp_logits.argmax(-1) == labels).mean(),
    }


def test_outputs_shapes_dtypes_and_variable_paths():
    model = deterministic_pretrainer()
    x, _ = pretraining_batch()
    outputs = model(x)
    assert tuple(outputs["mlm_logits"].shape) == (4, 4, 50)
    assert tuple(outputs["nsp_logits"].shape) == (4, 2)
    assert all(keras.backend.standardize_dtype(v.dtype) == "float32" for v in outputs.values())
    paths = [v.path for v in model.weights]
    assert paths[: len(model.backbone.weights)] == [v.path for v in model.backbone.weights]
    assert sorted(paths[len(model.backbone.weights):]) == sorted(HEAD_PATHS)
    assert sum(tuple(v.shape) == (50, 16) for v in model.weights) == 1  # the MLM projection is tied


def test_losses_match_numpy_reference():
    model = deterministic_pretrainer()
    x, y = pretraining_batch()
    model.get_layer("masked_lm_head").output_bias.assign(np.linspace(-1, 1, 50).astype("float32"))
    outputs = model(x)
    expected = numpy_pretraining_losses(y, to_numpy(outputs["mlm_logits"]), to_numpy(outputs["nsp_logits"]))
    computed = {name: float(to_numpy(v)) for name, v in pretraining_losses(y, outputs).items()}
    for name in METRIC_NAMES:
        assert computed[name] == pytest.approx(expected[name], abs=1e-5), name
    model.compile(optimizer="sgd")
    evaluated = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    for name in METRIC_NAMES:
        assert evaluated[name] == pytest.approx(expected[name], abs=1e-5), name


def test_masked_lm_loss_ignores_padding_slots_and_survives_no_masks():
    x, y = pretraining_batch()
    logits = np.random.default_rng(0).normal(size=(4, 4, 50)).astype("float32")
    y_pred = {"mlm_logits": logits, "nsp_logits": np.zeros((4, 2), "float32")}
    changed = dict(y, mask_ids=np.where(y["mask_weights"] > 0, y["mask_ids"], 7))
    base = to_numpy(pretraining_losses(y, y_pred)["mlm_loss"])
    assert to_numpy(pretraining_losses(changed, y_pred)["mlm_loss"]) == pytest.approx(base, abs=1e-6)
    empty = pretraining_losses(dict(y, mask_weights=np.zeros((4, 4), "float32")), y_pred)
    assert float(to_numpy(empty["mlm_loss"])) == 0.0 and float(to_numpy(empty["mlm_accuracy"])) == 0.0
    labels_column = dict(y, next_sentence_labels=y["next_sentence_labels"][:, None])  # original (B, 1)
    assert to_numpy(pretraining_losses(labels_column, y_pred)["nsp_loss"]) == pytest.approx(np.log(2), abs=1e-6)


@pytest.mark.slow
def test_fit_logs_the_five_metrics_and_losses_fall_on_a_fixed_batch():
    model = BertPretrainer(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0))
    x, y = pretraining_batch()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = model.fit(x, y, batch_size=4, epochs=30, verbose=0).history
    assert sorted(history) == sorted(METRIC_NAMES)
    first, last = {k: v[0] for k, v in history.items()}, {k: v[-1] for k, v in history.items()}
    assert last["mlm_loss"] < 0.5 * first["mlm_loss"] and last["nsp_loss"] < 0.4 < first["nsp_loss"], history
    assert last["loss"] == pytest.approx(last["mlm_loss"] + last["nsp_loss"], abs=1e-5)
    assert last["mlm_accuracy"] >= 0.8 and last["nsp_accuracy"] == 1.0, history


def test_compile_rejects_loss_and_metrics_and_fit_rejects_sample_weight():
    model = deterministic_pretrainer()
    for refused in ({"loss": "mse"}, {"metrics": ["accuracy"]}, {"weighted_metrics": ["accuracy"]},
                    {"loss_weights": [1.0, 1.0]}):
        with pytest.raises(ValueError, match="computes its own MLM \\+ NSP loss"):
            model.compile(optimizer="sgd", **refused)
    model.compile(optimizer="sgd")
    x, y = pretraining_batch()
    with pytest.raises(ValueError, match="sample_weight"):
        model.fit(x, y, sample_weight=np.ones(4), verbose=0)
    # A fresh model: Keras' JAX fit detaches the variable values before its first (failing) step.
    model = deterministic_pretrainer()
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="sample_weight"):
        model.evaluate(x, y, sample_weight=np.ones(4), verbose=0)


def test_keras_own_step_runs_training_and_metrics_are_keras_loss_tracker_plus_ours():
    """No step of our own: Keras' `Model.train_step` / `test_step` run it through the `compute_loss` hook."""
    for method in ("train_step", "test_step", "compute_metrics", "metrics"):
        assert method not in vars(BertPretrainer), method
    assert "compute_loss" in vars(BertPretrainer)
    model = deterministic_pretrainer()
    model.compile(optimizer="sgd")
    assert [metric.name for metric in model.metrics] == list(METRIC_NAMES)  # "loss" is Keras' own tracker
    x, y = pretraining_batch()
    logs = model.train_on_batch(x, y, return_dict=True)
    assert sorted(logs) == sorted(METRIC_NAMES)


def _same_weights_model(source):
    clone = deterministic_pretrainer()
    clone.set_weights(source.get_weights())
    return clone


@pytest.mark.skipif(keras.backend.backend() == "torch", reason="XLA compilation is a TensorFlow / JAX feature")
@pytest.mark.slow
def test_jit_compile_gives_the_same_steps_as_without():
    x, y = pretraining_batch()
    eager = deterministic_pretrainer()
    compiled = _same_weights_model(eager)
    results = []
    for model, jit_compile in ((eager, False), (compiled, True)):
        model.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=jit_compile)
        logs = [model.train_on_batch(x, y, return_dict=True) for _ in range(2)]
        results.append((logs, [to_numpy(w) for w in model.weights]))
    assert compiled.jit_compile and not eager.jit_compile
    (eager_logs, eager_weights), (jit_logs, jit_weights) = results
    for step in range(2):
        for name in METRIC_NAMES:
            assert jit_logs[step][name] == pytest.approx(eager_logs[step][name], abs=1e-5)
    for a, b in zip(eager_weights, jit_weights):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.slow
def test_gradient_accumulation_and_loss_scaling_go_through_the_optimizer():
    x, y = pretraining_batch()
    model = deterministic_pretrainer()
    before = [to_numpy(w) for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.SGD(0.5, gradient_accumulation_steps=2))
    model.train_on_batch(x, y)
    after_one = [to_numpy(w) for w in model.trainable_weights]
    assert all(np.array_equal(a, b) for a, b in zip(before, after_one))  # accumulated, not applied
    model.train_on_batch(x, y)
    assert any(not np.array_equal(a, to_numpy(b)) for a, b in zip(before, model.trainable_weights))

    scaled = deterministic_pretrainer()
    plain = _same_weights_model(scaled)
    scaled.compile(optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.5)))
    plain.compile(optimizer=keras.optimizers.SGD(0.5))
    scaled_logs = scaled.train_on_batch(x, y, return_dict=True)
    plain_logs = plain.train_on_batch(x, y, return_dict=True)
    assert scaled_logs["loss"] == pytest.approx(plain_logs["loss"], abs=1e-6)  # logs are unscaled
    for a, b in zip(scaled.trainable_weights, plain.trainable_weights):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)


def hand_computed_bias_gradients(y, mlm_logits, nsp_logits):
    """d loss / d (MLM output bias, NSP bias) from the logits, in float64: both biases are added last."""
    mlm_logits, nsp_logits = np.float64(mlm_logits), np.float64(nsp_logits)
    w = y["mask_weights"].astype("float64")[..., None]  # (B, P, 1)
    mlm_error = np.exp(numpy_log_softmax(mlm_logits)) - np.eye(mlm_logits.shape[-1])[y["mask_ids"]]
    nsp_error = np.exp(numpy_log_softmax(nsp_logits)) - np.eye(2)[y["next_sentence_labels"]]
    return (w * mlm_error).sum((0, 1)) / (w.sum() + 1e-5), nsp_error.mean(0)


def sgd_gradients(model, x, y):
    """All trainable gradients of one batch, read off one plain SGD(1.0) step of Keras' trainer on a copy."""
    probe = _same_weights_model(model)
    before = [to_numpy(v).astype("float64") for v in probe.trainable_variables]
    probe.compile(optimizer=keras.optimizers.SGD(1.0))
    probe.train_on_batch(x, y)
    return [b - to_numpy(v) for b, v in zip(before, probe.trainable_variables)]


@pytest.mark.slow
def test_loss_scaling_clipping_and_accumulation_equal_a_hand_computed_step():
    """`LossScaleOptimizer(SGD(global_clipnorm, gradient_accumulation_steps=2))` through Keras' trainer:
    the second step applies `lr * clip(mean(g1, g2))`, with the gradients of the two batches checked
    against the hand-computed bias gradients, and the logs are the unscaled losses."""
    learning_rate, clip_norm = 0.1, 0.05
    model = deterministic_pretrainer()
    model.get_layer("masked_lm_head").output_bias.assign(np.linspace(-1, 1, 50).astype("float32"))
    batches = [pretraining_batch(seed=0), pretraining_batch(seed=1)]
    paths = [v.path for v in model.trainable_variables]
    mlm_bias, nsp_bias = paths.index("masked_lm_head/output_bias"), paths.index("next_sentence_head/bias")
    gradients, expected_losses = [], []
    for x, y in batches:
        outputs = model(x)
        mlm_logits, nsp_logits = to_numpy(outputs["mlm_logits"]), to_numpy(outputs["nsp_logits"])
        expected_losses.append(numpy_pretraining_losses(y, mlm_logits, nsp_logits))
        gradient = sgd_gradients(model, x, y)
        mlm_bias_gradient, nsp_bias_gradient = hand_computed_bias_gradients(y, mlm_logits, nsp_logits)
        np.testing.assert_allclose(gradient[mlm_bias], mlm_bias_gradient, atol=2e-6)
        np.testing.assert_allclose(gradient[nsp_bias], nsp_bias_gradient, atol=2e-6)
        gradients.append(gradient)
    mean = [(a + b) / 2 for a, b in zip(*gradients)]
    norm = np.sqrt(sum((g ** 2).sum() for g in mean))
    assert norm > 2 * clip_norm  # the clipping is active
    expected = [to_numpy(v) - learning_rate * g * (clip_norm / norm)
                for v, g in zip(model.trainable_variables, mean)]

    before = [to_numpy(v) for v in model.trainable_variables]
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(learning_rate, global_clipnorm=clip_norm, gradient_accumulation_steps=2)
    )
    model.compile(optimizer=optimizer)
    logs = [model.train_on_batch(*batches[0], return_dict=True)]
    for variable, value in zip(model.trainable_variables, before):
        np.testing.assert_array_equal(to_numpy(variable), value)  # accumulated, not applied
    logs.append(model.train_on_batch(*batches[1], return_dict=True))
    assert float(to_numpy(optimizer.dynamic_scale)) == 2.0 ** 15  # finite scaled gradients, scale kept
    for step in range(2):
        for name in METRIC_NAMES:
            assert logs[step][name] == pytest.approx(expected_losses[step][name], abs=1e-5), (step, name)
    for variable, value in zip(model.trainable_variables, expected):
        np.testing.assert_allclose(to_numpy(variable), value, atol=1e-6, err_msg=variable.path)


def test_evaluate_logs_are_weighted_means_over_uneven_batches():
    """`evaluate` (Keras' test step) averages `loss`, `mlm_loss`, `nsp_loss`, `nsp_accuracy` by batch size and
    `mlm_accuracy` by mask-weight sum; here over batches of 3 and 1 rows with mask weights 6 and 4."""
    model = deterministic_pretrainer()
    model.get_layer("masked_lm_head").output_bias.assign(np.linspace(-1, 1, 50).astype("float32"))
    model.compile(optimizer="sgd")
    x, y = pretraining_batch()
    outputs = model.predict(x, batch_size=4, verbose=0)
    parts = [slice(0, 3), slice(3, 4)]
    per_batch = [numpy_pretraining_losses({k: v[part] for k, v in y.items()}, outputs["mlm_logits"][part],
                                          outputs["nsp_logits"][part]) for part in parts]
    sizes = np.array([3.0, 1.0])
    mask_sums = np.array([y["mask_weights"][part].sum() for part in parts])
    expected = {name: (sizes * [b[name] for b in per_batch]).sum() / sizes.sum() for name in METRIC_NAMES}
    expected["mlm_accuracy"] = (mask_sums * [b["mlm_accuracy"] for b in per_batch]).sum() / mask_sums.sum()
    for _ in range(2):  # the trackers are reset between runs
        evaluated = model.evaluate(x, y, batch_size=3, verbose=0, return_dict=True)
        assert sorted(evaluated) == sorted(METRIC_NAMES)
        for name in METRIC_NAMES:
            assert evaluated[name] == pytest.approx(expected[name], abs=1e-5), name


@pytest.mark.slow
def test_mixed_bfloat16_trains_with_float32_logits():
    model = BertPretrainer(tiny_backbone(num_layers=1, dtype="mixed_bfloat16"))
    x, y = pretraining_batch()
    outputs = model(x)
    assert keras.backend.standardize_dtype(outputs["mlm_logits"].dtype) == "float32"
    model.compile(optimizer="adam")
    logs = model.train_on_batch(x, y, return_dict=True)
    assert np.isfinite(logs["loss"])


def test_config_and_keras_file_round_trip(tmp_path):
    model = deterministic_pretrainer()
    restored = assert_config_round_trip(model)
    assert restored.backbone.hidden_dim == 16
    x, _ = pretraining_batch()
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertPretrainer)
    for key in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(to_numpy(loaded(x)[key]), to_numpy(model(x)[key]), atol=1e-6)


@pytest.mark.slow
def test_compiled_keras_file_loads_compiled(tmp_path):
    """`compile_from_config`: Keras' default skips models with their own `compile` and leaves no optimizer."""
    model = deterministic_pretrainer()
    model.compile(optimizer=keras.optimizers.Adam(1e-3, global_clipnorm=1.0))
    x, y = pretraining_batch()
    model.train_on_batch(x, y)
    model.save(tmp_path / "compiled.keras")
    loaded = keras.saving.load_model(tmp_path / "compiled.keras")
    assert isinstance(loaded.optimizer, keras.optimizers.Adam) and loaded.optimizer.global_clipnorm == 1.0
    expected = model.evaluate(x, y, verbose=0, return_dict=True)
    evaluated = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(evaluated) == sorted(METRIC_NAMES)
    for name in METRIC_NAMES:
        assert evaluated[name] == pytest.approx(expected[name], abs=1e-6), name


# -- checkpoints ------------------------------------------------------------------------------------------


def test_save_pretrained_round_trip_and_backbone_only_checkpoints(tmp_path, caplog):
    model = deterministic_pretrainer()
    model.get_layer("masked_lm_head").output_bias.assign(np.arange(50, dtype="float32"))
    model.save_pretrained(tmp_path / "pretrainer")
    loaded = BertPretrainer.from_pretrained(str(tmp_path / "pretrainer"))
    assert loaded.load_report.missing == [] and loaded.load_report.unused == []
    for a, b in zip(model.weights, loaded.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))

    model.backbone.save_pretrained(tmp_path / "backbone")
    with caplog.at_level(logging.WARNING, logger="keras_bert_impl.models.pretrainer"):
        from_backbone = BertPretrainer.from_pretrained(str(tmp_path / "backbone"))
    assert sorted(from_backbone.load_report.missing) == sorted(HEAD_PATHS)
    assert "masked_lm_head/output_bias" in caplog.text and "random initial values" in caplog.text
    np.testing.assert_array_equal(
        to_numpy(from_backbone.backbone.token_embedding.embeddings), to_numpy(model.backbone.token_embedding.embeddings)
    )


@pytest.mark.backend_independent
def test_original_tensorflow_checkpoint_names_load_heads(tmp_path):
    import json

    import tensorflow as tf

    from keras_bert_impl.checkpoints.conversion import ORIGINAL, export_tensors
    from keras_bert_impl.checkpoints.name_map import backbone_weight_specs, pretraining_head_specs

    model = deterministic_pretrainer(num_segments=2)
    model.get_layer("masked_lm_head").output_bias.assign(np.linspace(0, 1, 50).astype("float32"))
    specs = backbone_weight_specs(model.backbone.num_layers) + pretraining_head_specs()
    tensors = export_tensors(model, specs, ORIGINAL)
    assert tensors["cls/seq_relationship/output_weights"].shape == (2, 16)  # stored [2, H] as the original
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in tensors.items()]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, str(tmp_path / "bert_model.ckpt"))
    (tmp_path / "bert_config.json").write_text(json.dumps({
        "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": model.backbone.num_layers, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 24, "type_vocab_size": 2, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
    }))
    loaded = BertPretrainer.from_pretrained(str(tmp_path))
    assert loaded.load_report.missing == [] and loaded.load_report.unused == []
    x, _ = pretraining_batch()
    for key in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(to_numpy(loaded(x)[key]), to_numpy(model(x)[key]), atol=1e-5)


def huggingface_pretraining_logits(hf_model, x):
    import torch

    with torch.no_grad():
        out = hf_model(
            input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
            token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
            attention_mask=torch.tensor(x["padding_mask"].astype("int64")),
        )
    full = out.prediction_logits.numpy()  # (B, T, V)
    return np.take_along_axis(full, x["mask_positions"][:, :, None].astype("int64"), axis=1), \
        out.seq_relationship_logits.numpy()


def assert_logits_match(model, hf_model, x):
    mlm, nsp = huggingface_pretraining_logits(hf_model, x)
    outputs = model(x)
    assert np.abs(to_numpy(outputs["mlm_logits"]) - mlm).max() <= 1e-5
    assert np.abs(to_numpy(outputs["nsp_logits"]) - nsp).max() <= 1e-5


def test_huggingface_bert_for_pretraining_heads_load_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=24, hidden_act="gelu",
    )
    torch.manual_seed(0)
    hf_model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():  # non-trivial head values, so a head left at init would be caught
        hf_model.cls.predictions.bias.normal_()
        hf_model.cls.predictions.transform.LayerNorm.bias.normal_()
        hf_model.cls.seq_relationship.bias.normal_()
    hf_model.save_pretrained(tmp_path)
    model = BertPretrainer.from_pretrained(str(tmp_path))
    assert model.load_report.missing == [] and model.load_report.unused == []
    x, _ = pretraining_batch()
    assert_logits_match(model, hf_model, x)


@pytest.mark.slow
def test_real_checkpoint_body_heads_reported_and_export_matches_transformers(tmp_path, caplog):
    """The real all-MiniLM-L6-v2 checkpoint is a BertModel (no cls.* heads): the heads stay at init and the
    report says so. Parity: our model (real encoder + initial heads) exported with save_huggingface and
    loaded by transformers' BertForPreTraining gives the same MLM and NSP logits."""
    transformers = pytest.importorskip("transformers")
    with caplog.at_level(logging.WARNING, logger="keras_bert_impl.models.pretrainer"):
        model = BertPretrainer.from_pretrained(real_checkpoint_dir())
    assert sorted(model.load_report.missing) == sorted(HEAD_PATHS)
    assert model.load_report.unused == []
    assert "next_sentence_head/kernel" in caplog.text
    model.save_huggingface(tmp_path / "hf")
    hf_model, info = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert info["missing_keys"] == set() or not info["missing_keys"], info
    assert hf_model.config.architectures == ["BertForPreTraining"]
    x, _ = pretraining_batch(batch_size=2, sequence_length=12, predictions=5, vocabulary_size=30000,
                             weights_per_row=(5, 3))
    assert_logits_match(model, hf_model.eval(), x)


# -- the same step on every backend ---------------------------------------------------------------------


def run_in_this_process(model_dir, batch_path, *extra_args):
    """The worker's steps on this pytest process's backend (saves a subprocess start)."""
    from tests.models.pretrainer_step_worker import run_steps

    def value(flag, default, kind):
        return kind(extra_args[extra_args.index(flag) + 1]) if flag in extra_args else default

    return run_steps(str(model_dir), str(batch_path), steps=value("--steps", 1, int),
                     learning_rate=value("--learning-rate", 0.5, float), optimizer=value("--optimizer", "sgd", str))


def run_worker(model_dir, batch_path, out_path, backend, *extra_args, extra_env=None):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.update(extra_env or {})
    completed = subprocess.run(
        [sys.executable, WORKER, str(model_dir), str(batch_path), str(out_path), *extra_args],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return dict(np.load(out_path))


def save_model_and_batch(tmp_path, batch_size=4):
    model = deterministic_pretrainer()
    model.get_layer("masked_lm_head").output_bias.assign(np.linspace(-1, 1, 50).astype("float32"))
    model.save_pretrained(tmp_path / "model")
    x, y = pretraining_batch(batch_size=batch_size)
    np.savez(tmp_path / "batch.npz", **{f"x_{k}": v for k, v in x.items()}, **{f"y_{k}": v for k, v in y.items()})
    return model, y


def assert_same_step(results, reference_name, atol=1e-5):
    reference = results[reference_name]
    for name, result in results.items():
        assert set(result) == set(reference), name
        for key, value in result.items():
            np.testing.assert_allclose(value, reference[key], atol=atol, err_msg=f"{name} vs {reference_name}: {key}")


@pytest.mark.slow
@pytest.mark.backend_independent  # one run covers all three backends (each in its own process)
def test_one_step_is_identical_on_tensorflow_jax_and_torch(tmp_path):
    model, y = save_model_and_batch(tmp_path)
    results = {"tensorflow": run_in_this_process(tmp_path / "model", tmp_path / "batch.npz")}
    for backend in ("jax", "torch"):
        results[backend] = run_worker(tmp_path / "model", tmp_path / "batch.npz", tmp_path / f"{backend}.npz", backend)
    assert_same_step(results, "tensorflow")
    expected = numpy_pretraining_losses(y, results["torch"]["logits_mlm"], results["torch"]["logits_nsp"])
    for backend, result in results.items():
        for name in METRIC_NAMES:
            assert float(result[f"loss_{name}"]) == pytest.approx(expected[name], abs=1e-5), (backend, name)
    moved = [v.path for v in model.weights
             if not np.allclose(to_numpy(v), results["jax"][f"weight_{v.path.replace('/', '|')}"], atol=1e-4)]
    assert "masked_lm_head/output_bias" in moved and "next_sentence_head/kernel" in moved  # a real step
