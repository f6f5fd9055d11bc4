"""WarmupLinearDecay (original and Hugging Face variants) and create_optimizer."""

import keras
import numpy as np
import pytest

from keras_bert_impl.optimization import AdamWeightDecay, Lamb, WarmupLinearDecay, create_optimizer
from keras_bert_impl.optimization.schedules import resolve_warmup_steps
from tests.optimization.optimization_test_utils import apply_steps, make_variable


def learning_rates(schedule, steps):
    return [float(keras.ops.convert_to_numpy(schedule(step))) for step in steps]


# peak 1e-3, 10 warmup of 100 total. Original: decay from step 0, so 0.9e-3 right after warmup.
# Hugging Face: the peak at step 10, then (100 - s) / 90 of it.
@pytest.mark.parametrize(
    "variant, end, expected",
    [
        ("original", 0.0, {0: 0.0, 5: 5e-4, 9: 9e-4, 10: 9e-4, 50: 5e-4, 99: 1e-5, 100: 0.0, 150: 0.0}),
        ("huggingface", 0.0, {0: 0.0, 5: 5e-4, 9: 9e-4, 10: 1e-3, 55: 5e-4, 91: 1e-4, 100: 0.0, 150: 0.0}),
        ("original", 1e-4, {5: 5e-4, 10: 9.1e-4, 50: 5.5e-4, 100: 1e-4, 200: 1e-4}),
        ("huggingface", 1e-4, {5: 5e-4, 10: 1e-3, 55: 5.5e-4, 100: 1e-4, 200: 1e-4}),
    ],
)
def test_values_at_chosen_steps(variant, end, expected):
    schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=100, variant=variant, end_learning_rate=end)
    np.testing.assert_allclose(learning_rates(schedule, expected), list(expected.values()), rtol=1e-6, atol=1e-12)


def test_without_warmup_starts_at_the_peak():
    for variant in ("original", "huggingface"):
        schedule = WarmupLinearDecay(2e-5, warmup_steps=0, total_steps=4, variant=variant)
        np.testing.assert_allclose(learning_rates(schedule, range(5)), [2e-5, 1.5e-5, 1e-5, 5e-6, 0.0], rtol=1e-6)


def test_step_tensors_of_any_integer_dtype():
    schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=100)
    counter = keras.Variable(5, dtype="int", trainable=False)  # like the optimizer's iteration variable
    for step in (np.int32(5), np.int64(5), keras.ops.convert_to_tensor(5, "int32"), counter):
        assert learning_rates(schedule, [step]) == pytest.approx([5e-4])
    assert keras.ops.convert_to_numpy(schedule(3)).dtype == np.float32


def test_gradient_accumulation_counts_updates():
    schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=100, gradient_accumulation_steps=4)
    # Micro-steps 20..23 are update 5.
    assert learning_rates(schedule, [3, 20, 23, 24]) == pytest.approx([0.0, 5e-4, 5e-4, 6e-4])


def test_optimizer_evaluates_the_schedule_at_its_update_count():
    variable = make_variable("dense/kernel", np.ones(2))
    optimizer = AdamWeightDecay(WarmupLinearDecay(1e-3, warmup_steps=4, total_steps=8))
    for step in range(6):
        assert float(keras.ops.convert_to_numpy(optimizer.learning_rate)) == pytest.approx(
            learning_rates(optimizer._learning_rate, [step])[0]
        )
        apply_steps(optimizer, [variable], [[np.ones(2, "float32")]])
    assert float(keras.ops.convert_to_numpy(optimizer.learning_rate)) == pytest.approx(1e-3 * (1 - 6 / 8))


def test_huggingface_variant_matches_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    parameter = torch.nn.Parameter(torch.zeros(1))
    torch_optimizer = torch.optim.SGD([parameter], lr=3e-5)
    reference = transformers.get_linear_schedule_with_warmup(torch_optimizer, 7, 40)
    expected = []
    for _ in range(45):
        expected.append(torch_optimizer.param_groups[0]["lr"])
        torch_optimizer.step()
        reference.step()
    schedule = WarmupLinearDecay(3e-5, warmup_steps=7, total_steps=40, variant="huggingface")
    np.testing.assert_allclose(learning_rates(schedule, range(45)), expected, rtol=1e-6, atol=1e-12)


def test_config_round_trip():
    schedule = WarmupLinearDecay(
        5e-5, 3, 30, variant="huggingface", end_learning_rate=1e-6, gradient_accumulation_steps=2
    )
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert type(restored) is WarmupLinearDecay and restored.get_config() == schedule.get_config()
    assert learning_rates(restored, range(0, 70, 7)) == learning_rates(schedule, range(0, 70, 7))


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"variant": "cosine"}, "variant"),
        ({"total_steps": 0}, "total_steps"),
        ({"warmup_steps": 200}, "warmup_steps"),
        ({"warmup_steps": 2.5}, "warmup_steps"),
        ({"peak_learning_rate": -1.0}, "Learning rates"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps"),
    ],
)
def test_bad_schedule_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        WarmupLinearDecay(**{"peak_learning_rate": 1e-3, "warmup_steps": 10, "total_steps": 100, **arguments})


def test_warmup_from_fraction_or_count():
    assert resolve_warmup_steps(1000, warmup_fraction=0.1) == 100
    assert resolve_warmup_steps(999, warmup_fraction=0.1) == 99  # int() truncates, as run_classifier.py
    assert resolve_warmup_steps(1000, warmup_steps=7) == 7
    assert resolve_warmup_steps(1000) == 0
    with pytest.raises(ValueError, match="not both"):
        resolve_warmup_steps(1000, warmup_steps=7, warmup_fraction=0.1)
    with pytest.raises(ValueError, match="warmup_fraction"):
        resolve_warmup_steps(1000, warmup_fraction=1.5)


@pytest.mark.parametrize(
    "name, optimizer_class",
    [("adamw_original", AdamWeightDecay), ("lamb", Lamb), ("keras_adamw", keras.optimizers.AdamW)],
)
def test_create_optimizer(name, optimizer_class):
    optimizer = create_optimizer(
        name=name, learning_rate=2e-5, total_steps=100, warmup_fraction=0.1, weight_decay=0.02,
        gradient_accumulation_steps=2, schedule_variant="huggingface",
    )
    assert isinstance(optimizer, optimizer_class)
    config = optimizer.get_config()
    assert config["global_clipnorm"] == 1.0 and config["gradient_accumulation_steps"] == 2
    assert config["learning_rate"]["config"] == {
        "peak_learning_rate": 2e-5, "warmup_steps": 10, "total_steps": 100, "variant": "huggingface",
        "end_learning_rate": 0.0, "gradient_accumulation_steps": 2,
    }
    assert config["weight_decay_rate" if name != "keras_adamw" else "weight_decay"] == 0.02


@pytest.mark.parametrize("name", ["adamw_original", "lamb", "keras_adamw"])
def test_create_optimizer_excludes_layer_norm_and_biases(name):
    paths = ["encoder/layer_norm/gamma", "encoder/layer_norm/beta", "encoder/dense/bias", "mlm_head/output_bias",
             "encoder/dense/kernel"]
    variables = [make_variable(path, np.full(2, 2.0)) for path in paths]
    optimizer = create_optimizer(name=name, learning_rate=0.5, total_steps=10, weight_decay=0.1)
    updated = apply_steps(optimizer, variables, [[np.zeros(2, "float32")] * len(paths)])
    # A zero gradient leaves only the decay wd * p; LAMB scales it by ||p|| / ||wd * p|| = 1 / wd: p - lr * p.
    kernel_after = 2.0 * (1 - 0.5) if name == "lamb" else 2.0 * (1 - 0.5 * 0.1)
    expected = {**{path: 2.0 for path in paths}, "encoder/dense/kernel": kernel_after}
    assert {path: float(value[0]) for path, value in zip(paths, updated)} == pytest.approx(expected)


def test_create_optimizer_loss_scale_and_errors():
    wrapped = create_optimizer(learning_rate=1e-4, total_steps=10, loss_scale=True)
    assert isinstance(wrapped, keras.optimizers.LossScaleOptimizer)
    assert isinstance(wrapped.inner_optimizer, AdamWeightDecay)
    with pytest.raises(ValueError, match="name"):
        create_optimizer(name="sgd", learning_rate=1e-4, total_steps=10)
    with pytest.raises(ValueError, match="learning_rate"):
        create_optimizer(learning_rate=0.0, total_steps=10)
