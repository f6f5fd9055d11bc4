"""AdamWeightDecay against a NumPy transcription of the original BERT update rule (optimization.py)."""

import re

import keras
import numpy as np
import pytest
from tests.optimization.optimization_test_utils import (
    BERT_LIKE_VARIABLES,
    DECAYED_PATHS,
    apply_steps,
    bert_like_values,
    global_norm,
    gradient_steps,
    make_variable,
)

from keras_bert_impl.optimization import AdamWeightDecay, WarmupLinearDecay, create_optimizer

ORIGINAL_EXCLUDE = ("layer_norm", "LayerNorm", "bias")


def reference_adam_weight_decay(
    params, steps, learning_rates, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
    clip_norm=1.0, exclude=ORIGINAL_EXCLUDE,
):
    """float64 NumPy version of `AdamWeightDecayOptimizer.apply_gradients` after `tf.clip_by_global_norm`."""
    params = {name: value.astype("float64") for name, value in params.items()}
    m = {name: np.zeros_like(value) for name, value in params.items()}
    v = {name: np.zeros_like(value) for name, value in params.items()}
    for gradients, learning_rate in zip(steps, learning_rates):
        gradients = [g.astype("float64") for g in gradients]
        norm = np.sqrt(sum(np.sum(g * g) for g in gradients))
        gradients = [g * clip_norm / max(norm, clip_norm) for g in gradients]
        for (name, param), grad in zip(list(params.items()), gradients):
            m[name] = beta_1 * m[name] + (1.0 - beta_1) * grad
            v[name] = beta_2 * v[name] + (1.0 - beta_2) * np.square(grad)
            update = m[name] / (np.sqrt(v[name]) + epsilon)
            if not any(re.search(pattern, name) for pattern in exclude):
                update += weight_decay_rate * param
            params[name] = param - learning_rate * update
    return params


def original_schedule(step, peak, warmup_steps, total_steps):
    """The learning rate `optimization.create_optimizer` feeds the optimizer at `global_step = step`."""
    decayed = peak * (1.0 - min(step, total_steps) / total_steps)
    return peak * step / warmup_steps if step < warmup_steps else decayed


@pytest.mark.parametrize("gradient_scale", [0.01, 5.0], ids=["unclipped", "clipped"])
def test_matches_original_update_rule(rng, gradient_scale):
    initial = bert_like_values(rng)
    paths = list(BERT_LIKE_VARIABLES)
    variables = [make_variable(path, initial[path]) for path in paths]
    steps = gradient_steps(rng, BERT_LIKE_VARIABLES.values(), num_steps=6, scale=gradient_scale)
    norms = [global_norm(gradients) for gradients in steps]
    assert (min(norms) > 1.0) if gradient_scale > 1 else (max(norms) < 1.0)
    optimizer = AdamWeightDecay(WarmupLinearDecay(0.05, warmup_steps=2, total_steps=10))

    updated = apply_steps(optimizer, variables, steps)

    rates = [original_schedule(step, 0.05, 2, 10) for step in range(len(steps))]
    expected = reference_adam_weight_decay(initial, steps, rates)
    for path, value in zip(paths, updated):
        np.testing.assert_allclose(value, expected[path], rtol=1e-6, atol=1e-6, err_msg=path)
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == len(steps)


def test_no_bias_correction_on_first_step():
    # Step 1 without bias correction: m / sqrt(v) = 0.1 / sqrt(0.001) = 3.16 up to epsilon (Keras AdamW: 1).
    variable = make_variable("dense/bias", np.zeros(3))
    optimizer = AdamWeightDecay(learning_rate=0.1, global_clipnorm=None)
    [updated] = apply_steps(optimizer, [variable], [[np.array([1e-3, 2.0, -50.0], "float32")]])
    gradient = np.array([1e-3, 2.0, -50.0])
    expected = -0.1 * (0.1 * gradient) / (np.sqrt(0.001) * np.abs(gradient) + 1e-6)
    np.testing.assert_allclose(updated, expected, rtol=1e-5)


def test_exclusion_by_path_and_added_patterns():
    paths = ["encoder/layer_norm/gamma", "encoder/LayerNorm/beta", "mlm_head/output_bias", "encoder/dense/kernel",
             "pooler/dense/kernel"]
    variables = [make_variable(path, np.full(2, 2.0)) for path in paths]
    optimizer = AdamWeightDecay(learning_rate=0.5, weight_decay_rate=0.1)
    # The base-class method adds exclusions on top of the constructor patterns.
    optimizer.exclude_from_weight_decay(var_list=[variables[4]])
    zero_gradients = [np.zeros(2, "float32") for _ in paths]

    updated = apply_steps(optimizer, variables, [zero_gradients])

    # A zero gradient leaves only the decay: p * (1 - lr * wd) = 2 * 0.95 on decayed variables.
    decayed = {path: float(value[0]) for path, value in zip(paths, updated)}
    assert decayed == pytest.approx({**{path: 2.0 for path in paths}, "encoder/dense/kernel": 1.9})


def test_regular_expression_patterns():
    variables = [make_variable(path, np.ones(2)) for path in ("mlm_head/dense/kernel", "encoder/dense/kernel")]
    optimizer = AdamWeightDecay(
        learning_rate=1.0, weight_decay_rate=0.5, exclude_from_weight_decay=[r"^mlm_head/"]
    )
    updated = apply_steps(optimizer, variables, [[np.zeros(2, "float32")] * 2])
    np.testing.assert_allclose(np.stack(updated)[:, 0], [1.0, 0.5])


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"exclude_from_weight_decay": "bias"}, "list or tuple"),
        ({"exclude_from_weight_decay": ["("]}, "not a valid regular expression"),
        ({"weight_decay": 0.01}, "weight_decay_rate"),
        ({"beta_2": 1.0}, "beta_2"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"weight_decay_rate": -1.0}, "weight_decay_rate"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        AdamWeightDecay(**arguments)


def test_gradient_accumulation_equals_one_step_on_mean_gradient(rng):
    initial = bert_like_values(rng)
    accumulation = 3
    paths = list(BERT_LIKE_VARIABLES)
    accumulating = [make_variable(path, initial[path]) for path in paths]
    single = [make_variable(path, initial[path]) for path in paths]
    micro_steps = gradient_steps(rng, BERT_LIKE_VARIABLES.values(), num_steps=2 * accumulation, scale=3.0)
    mean_steps = [
        [np.mean(group, axis=0) for group in zip(*micro_steps[start:start + accumulation])]
        for start in range(0, len(micro_steps), accumulation)
    ]
    assert min(global_norm(gradients) for gradients in mean_steps) > 1.0  # clipping acts on the mean
    accumulating_optimizer = AdamWeightDecay(
        WarmupLinearDecay(0.05, 0, 4, gradient_accumulation_steps=accumulation),
        gradient_accumulation_steps=accumulation,
    )
    single_optimizer = AdamWeightDecay(WarmupLinearDecay(0.05, 0, 4))

    after_partial = apply_steps(accumulating_optimizer, accumulating, micro_steps[: accumulation - 1])
    for path, value in zip(paths, after_partial):
        np.testing.assert_array_equal(value, initial[path], err_msg=f"{path} moved before the update")
    accumulated = apply_steps(accumulating_optimizer, accumulating, micro_steps[accumulation - 1:])
    expected = apply_steps(single_optimizer, single, mean_steps)

    for path, value, reference in zip(paths, accumulated, expected):
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-6, err_msg=path)
    assert int(keras.ops.convert_to_numpy(accumulating_optimizer.iterations)) == len(mean_steps)


def tiny_model():
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8, activation="tanh", name="dense")(inputs)
    hidden = keras.layers.LayerNormalization(epsilon=1e-12, name="layer_norm")(hidden)
    outputs = keras.layers.Dense(1, name="output", dtype="float32")(hidden)
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize(
    "policy, optimizer_name",
    [("mixed_bfloat16", "adamw_original"), ("mixed_float16", "adamw_original"), ("mixed_float16", "lamb")],
)
def test_mixed_precision_training_step(dtype_policy, rng, policy, optimizer_name):
    dtype_policy(policy)
    model = tiny_model()
    initial = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    optimizer = create_optimizer(
        name=optimizer_name, learning_rate=1e-2, total_steps=10, warmup_steps=0,
        loss_scale=policy == "mixed_float16",
    )
    model.compile(optimizer=optimizer, loss="mse")
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 1)).astype("float32")

    history = model.fit(x, y, batch_size=2, epochs=1, verbose=0)

    assert np.isfinite(history.history["loss"]).all()
    if policy == "mixed_float16":
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        inner = model.optimizer.inner_optimizer
        # Dynamic loss scaling skips the first steps whose scaled fp16 gradients overflow.
        assert 1 <= int(keras.ops.convert_to_numpy(inner.iterations)) <= 8
    else:
        inner = model.optimizer
        assert int(keras.ops.convert_to_numpy(inner.iterations)) == 8
    slots = [v for v in inner.variables if v.path.endswith(("_momentum", "_velocity"))]
    assert len(slots) == 2 * len(model.trainable_weights)
    assert {v.dtype for v in slots} == {"float32"}
    for before, weight in zip(initial, model.trainable_weights):
        after = keras.ops.convert_to_numpy(weight)
        assert weight.dtype == "float32" and np.isfinite(after).all()
        assert not np.array_equal(before, after), weight.path


def test_config_round_trip():
    optimizer = AdamWeightDecay(
        WarmupLinearDecay(1e-4, 10, 100, variant="huggingface"), beta_2=0.98, weight_decay_rate=0.02,
        exclude_from_weight_decay=["LayerNorm", "bias"], gradient_accumulation_steps=2, name="bert_adam",
    )
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(optimizer))
    assert type(restored) is AdamWeightDecay
    assert restored.get_config() == optimizer.get_config()
    assert restored.get_config()["learning_rate"]["config"]["variant"] == "huggingface"
    wrapped = keras.optimizers.LossScaleOptimizer(AdamWeightDecay(1e-3))
    wrapped_restored = keras.optimizers.LossScaleOptimizer.from_config(wrapped.get_config())
    assert wrapped_restored.inner_optimizer.get_config() == wrapped.inner_optimizer.get_config()


def test_model_save_and_load_keeps_optimizer_state(tmp_path, rng):
    model = tiny_model()
    model.compile(optimizer=AdamWeightDecay(WarmupLinearDecay(1e-2, 1, 10)), loss="mse")
    model.fit(rng.normal(size=(8, 4)), rng.normal(size=(8, 1)), batch_size=4, verbose=0)
    model.save(tmp_path / "model.keras")

    restored = keras.models.load_model(tmp_path / "model.keras")

    assert type(restored.optimizer) is AdamWeightDecay
    assert restored.optimizer.get_config() == model.optimizer.get_config()
    for saved, loaded in zip(model.optimizer.variables, restored.optimizer.variables):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded), keras.ops.convert_to_numpy(saved))


def test_decayed_paths_are_the_kernels_and_embeddings(rng):
    initial = bert_like_values(rng)
    variables = [make_variable(path, value) for path, value in initial.items()]
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.1)
    updated = apply_steps(optimizer, variables, [[np.zeros_like(value) for value in initial.values()]])
    moved = {path for path, before, after in zip(initial, initial.values(), updated)
             if not np.array_equal(before, after)}
    assert moved == set(DECAYED_PATHS)
