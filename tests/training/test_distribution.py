"""Data-parallel steps give the single-device step's losses and weights on the same global batch.

The distributed runs use fresh processes (tests/models/pretrainer_step_worker.py): two logical CPU devices
for tf.distribute and two host devices for JAX must be configured before the framework initialises. The
single-device reference runs in the pytest process.
The batch's two halves carry equal mask-weight sums (5 and 5), because under tf.distribute each replica
normalises the MLM loss by its own weights, as the original's per-core TPU loss does.
"""

import re

import keras
import pytest

from keras_bert_impl.training.distribution import JAX_PROCESS_VARIABLES, make_distribution
from tests.models.test_pretrainer import assert_same_step, run_in_this_process, run_worker, save_model_and_batch

pytestmark = pytest.mark.slow


def assert_default_optimizer_steps_match_one_device(tmp_path, distribution, backend):
    """5 steps of the default optimizer (clipping on) under `distribution` equal one device to 1e-5."""
    save_model_and_batch(tmp_path)
    flags = ("--steps", "5", "--optimizer", "default", "--learning-rate", "1e-2")
    results = {
        "none": run_in_this_process(tmp_path / "model", tmp_path / "batch.npz", *flags),
        distribution: run_worker(tmp_path / "model", tmp_path / "batch.npz", tmp_path / f"{distribution}.npz", backend,
                                 "--distribution", distribution, *flags),
    }
    assert_same_step(results, "none")
    moved = max(float(abs(results["none"][key] - results[distribution][key]).max()) for key in results["none"])
    print(f"max |{distribution} - one device| after 5 steps: {moved:.2e}")


@pytest.mark.backend_independent
def test_mirrored_strategy_on_two_cpu_devices_matches_one_device(tmp_path):
    save_model_and_batch(tmp_path)
    results = {
        "none": run_in_this_process(tmp_path / "model", tmp_path / "batch.npz", "--steps", "2"),
        "mirrored": run_worker(tmp_path / "model", tmp_path / "batch.npz", tmp_path / "mirrored.npz", "tensorflow",
                               "--distribution", "mirrored", "--steps", "2"),
    }
    assert_same_step(results, "none")


@pytest.mark.backend_independent
def test_mirrored_strategy_with_the_default_optimizer_and_clipping_matches_one_device(tmp_path):
    """AdamWeightDecay with global_clipnorm=1.0 (pretrain's default): the clip factor must come from the
    global, all-reduced gradient as in the original, not from each replica's own (5.7e-3 apart after one
    step when Keras clipped per replica)."""
    assert_default_optimizer_steps_match_one_device(tmp_path, "mirrored", "tensorflow")


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the Keras distribution API is tested in the JAX pass")
def test_jax_data_parallel_on_two_host_devices_matches_one_device(tmp_path):
    save_model_and_batch(tmp_path)
    results = {
        "none": run_in_this_process(tmp_path / "model", tmp_path / "batch.npz", "--steps", "2"),
        "jax_data_parallel": run_worker(tmp_path / "model", tmp_path / "batch.npz", tmp_path / "dp.npz", "jax",
                                        "--distribution", "jax_data_parallel", "--steps", "2"),
    }
    assert_same_step(results, "none")


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the Keras distribution API is tested in the JAX pass")
def test_jax_data_parallel_with_the_default_optimizer_and_clipping_matches_one_device(tmp_path):
    """AdamWeightDecay with global_clipnorm=1.0 under `DataParallel` on 2 host devices: the step is traced
    over the global batch, so the clip factor is the global gradient's, as on one device."""
    assert_default_optimizer_steps_match_one_device(tmp_path, "jax_data_parallel", "jax")


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the multi-host JAX settings are read in the JAX pass")
@pytest.mark.parametrize("variables, message", [
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234"},
     "A multi-host JAX run needs all of KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, "
     "KERAS_DISTRIBUTION_PROCESS_ID; KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID are not set."),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234", "KERAS_DISTRIBUTION_NUM_PROCESSES": "two",
      "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "KERAS_DISTRIBUTION_NUM_PROCESSES='two' is not a non-negative integer."),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
      "KERAS_DISTRIBUTION_PROCESS_ID": "2"},
     "KERAS_DISTRIBUTION_PROCESS_ID=2 must be below KERAS_DISTRIBUTION_NUM_PROCESSES=2 (ids count from 0)."),
])
def test_jax_multi_host_settings_that_do_not_fit_are_one_clear_line(monkeypatch, variables, message):
    """Caught before `jax.distributed.initialize`, which would wait minutes for a coordinator."""
    for variable in JAX_PROCESS_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        make_distribution("jax_data_parallel")
    assert keras.distribution.distribution() is None
