"""Lamb against a NumPy transcription of Algorithm 2 of You et al. (2019), with BERT's decay exclusions."""

import re

import keras
import numpy as np
import pytest

from keras_bert_impl.optimization import Lamb, WarmupLinearDecay
from tests.optimization.optimization_test_utils import (
    BERT_LIKE_VARIABLES,
    apply_steps,
    bert_like_values,
    global_norm,
    gradient_steps,
    make_variable,
)

ORIGINAL_EXCLUDE = ("layer_norm", "LayerNorm", "bias")


def reference_lamb(
    params, steps, learning_rate, bias_correction=True, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
    epsilon=1e-6, clip_norm=1.0, exclude=ORIGINAL_EXCLUDE, exclude_from_adaptation=ORIGINAL_EXCLUDE,
):
    """float64 LAMB with global-norm clipping first; trust ratio 1 when a norm is 0 or the variable is excluded."""
    params = {name: value.astype("float64") for name, value in params.items()}
    m = {name: np.zeros_like(value) for name, value in params.items()}
    v = {name: np.zeros_like(value) for name, value in params.items()}
    for t, gradients in enumerate(steps, start=1):
        gradients = [g.astype("float64") for g in gradients]
        norm = np.sqrt(sum(np.sum(g * g) for g in gradients))
        gradients = [g * clip_norm / max(norm, clip_norm) for g in gradients]
        for (name, param), grad in zip(list(params.items()), gradients):
            m[name] = beta_1 * m[name] + (1 - beta_1) * grad
            v[name] = beta_2 * v[name] + (1 - beta_2) * grad**2
            m_hat, v_hat = (m[name] / (1 - beta_1**t), v[name] / (1 - beta_2**t)) if bias_correction else (
                m[name], v[name])
            update = m_hat / (np.sqrt(v_hat) + epsilon)
            if not any(re.search(pattern, name) for pattern in exclude):
                update = update + weight_decay_rate * param
            ratio = 1.0
            if not any(re.search(pattern, name) for pattern in exclude_from_adaptation):
                weight_norm, update_norm = np.linalg.norm(param), np.linalg.norm(update)
                if weight_norm > 0 and update_norm > 0:
                    ratio = weight_norm / update_norm
            params[name] = param - learning_rate * ratio * update
    return params


@pytest.mark.parametrize("bias_correction", [True, False])
@pytest.mark.parametrize("exclude_from_layer_adaptation", [None, ()], ids=["adapt_decayed", "adapt_all"])
def test_matches_paper_update_rule(rng, bias_correction, exclude_from_layer_adaptation):
    initial = bert_like_values(rng)
    paths = list(BERT_LIKE_VARIABLES)
    variables = [make_variable(path, initial[path]) for path in paths]
    steps = gradient_steps(rng, BERT_LIKE_VARIABLES.values(), num_steps=5, scale=4.0)
    assert min(global_norm(gradients) for gradients in steps) > 1.0
    optimizer = Lamb(
        learning_rate=0.02,
        bias_correction=bias_correction,
        exclude_from_layer_adaptation=exclude_from_layer_adaptation,
    )

    updated = apply_steps(optimizer, variables, steps)

    expected = reference_lamb(
        initial, steps, 0.02, bias_correction=bias_correction,
        exclude_from_adaptation=ORIGINAL_EXCLUDE if exclude_from_layer_adaptation is None else (),
    )
    for path, value in zip(paths, updated):
        np.testing.assert_allclose(value, expected[path], rtol=1e-6, atol=1e-6, err_msg=path)


def test_zero_weight_norm_uses_trust_ratio_one():
    # A zero-initialised variable that is decayed and adapted: ||p|| = 0, so the step is a plain Adam step.
    variable = make_variable("dense/kernel", np.zeros(4))
    optimizer = Lamb(learning_rate=0.1, exclude_from_weight_decay=(), exclude_from_layer_adaptation=())
    [updated] = apply_steps(optimizer, [variable], [[np.array([0.1, -0.2, 0.3, 0.0], "float32")]])
    # Step 1 with bias correction: m_hat / sqrt(v_hat) = sign(g) up to epsilon.
    np.testing.assert_allclose(updated, -0.1 * np.sign([0.1, -0.2, 0.3, 0.0]), atol=1e-5)


def test_agrees_with_keras_lamb_without_weight_decay(rng):
    initial = bert_like_values(rng)
    paths = list(BERT_LIKE_VARIABLES)
    ours = [make_variable(path, initial[path]) for path in paths]
    theirs = [make_variable(path, initial[path]) for path in paths]
    steps = gradient_steps(rng, BERT_LIKE_VARIABLES.values(), num_steps=4, scale=4.0)
    ours_updated = apply_steps(
        Lamb(0.01, weight_decay_rate=0.0, exclude_from_layer_adaptation=()), ours, steps
    )
    theirs_updated = apply_steps(keras.optimizers.Lamb(0.01, epsilon=1e-6, global_clipnorm=1.0), theirs, steps)
    for path, mine, keras_value in zip(paths, ours_updated, theirs_updated):
        np.testing.assert_allclose(mine, keras_value, rtol=1e-5, atol=1e-6, err_msg=path)


def test_gradient_accumulation_counts_updates_for_bias_correction(rng):
    initial = bert_like_values(rng)
    paths = list(BERT_LIKE_VARIABLES)
    accumulating = [make_variable(path, initial[path]) for path in paths]
    micro_steps = gradient_steps(rng, BERT_LIKE_VARIABLES.values(), num_steps=4, scale=4.0)
    mean_steps = [[(a + b) / 2 for a, b in zip(micro_steps[i], micro_steps[i + 1])] for i in (0, 2)]
    updated = apply_steps(Lamb(0.02, gradient_accumulation_steps=2), accumulating, micro_steps)
    expected = reference_lamb(initial, mean_steps, 0.02)
    for path, value in zip(paths, updated):
        np.testing.assert_allclose(value, expected[path], rtol=1e-6, atol=1e-6, err_msg=path)


def test_config_round_trip():
    optimizer = Lamb(
        WarmupLinearDecay(1e-3, 5, 50), bias_correction=False, exclude_from_layer_adaptation=["bias"],
        weight_decay_rate=0.1, name="lamb_bert",
    )
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(optimizer))
    assert type(restored) is Lamb
    assert restored.get_config() == optimizer.get_config()
    assert restored.get_config()["exclude_from_layer_adaptation"] == ["bias"]
    assert Lamb.from_config(Lamb().get_config()).exclude_from_layer_adaptation is None


def test_bad_layer_adaptation_patterns():
    with pytest.raises(ValueError, match="exclude_from_layer_adaptation"):
        Lamb(exclude_from_layer_adaptation="bias")
