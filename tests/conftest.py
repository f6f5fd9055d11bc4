"""Shared pytest configuration.

The suite runs once per Keras backend (`KERAS_BACKEND=tensorflow|jax|torch`, see the Makefile). Tests whose result
cannot depend on the Keras backend carry `@pytest.mark.backend_independent` (a module: `pytestmark`) and run once, in
the TensorFlow pass: readers, the tokenizer, tf.data pipelines, SQuAD windows/decoding/scores, metrics, flag
parsing, file safety, SavedModel/ONNX export (TensorFlow under every backend), the benchmarks' and examples' scripts.
The JAX and torch passes deselect them (not skip: they are not reported). Tests that build, train or run Keras models
or layers stay in every pass, since their numerics and compiled paths differ per backend.
"""

import fcntl
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite compiles hundreds of small XLA programs (JAX runs every eager op and every step through XLA) on tiny
# models, so compiling, not running, is most of the JAX pass: LLVM's lowest optimisation level compiles each one
# faster and changes no result the tests check (a user's run keeps XLA's defaults). Subprocesses inherit it.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tests.helpers import SMALL_MAIN_JOB, user_environment  # noqa: E402


def pytest_report_header(config):
    return f"keras backend: {keras.backend.backend()}"


def pytest_collection_modifyitems(config, items):
    if keras.backend.backend() != "tensorflow":
        kept, deselected = [], []
        for item in items:
            (deselected if item.get_closest_marker("backend_independent") else kept).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept


@pytest.fixture(autouse=True)
def _seed_everything():
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def small_main_job(tmp_path_factory, worker_id):
    """`(output directory, stdout, stderr)` of one `keras-bert quickstart` at `SMALL_MAIN_JOB` settings, run as a
    user runs it (a fresh process, stdout to a pipe), once per pass: pytest-xdist's workers share it (the first to
    ask runs it under a file lock). Its directory has a space in its name. A test that writes writes elsewhere."""
    root = tmp_path_factory.getbasetemp()
    root = root if worker_id == "master" else root.parent  # shared by the workers of this session only
    output, record = root / "small main job" / "runs" / "quickstart", root / "small_main_job.json"
    with open(root / "small_main_job.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            result = subprocess.run([sys.executable, "-m", "keras_bert_impl.cli", "quickstart", "--output-dir",
                                     str(output), *SMALL_MAIN_JOB], env=user_environment(), capture_output=True,
                                    text=True, timeout=2400, cwd=os.path.dirname(os.path.dirname(__file__)))
            assert result.returncode == 0, result.stderr[-4000:]
            record.write_text(json.dumps({"stdout": result.stdout, "stderr": result.stderr}))
    streams = json.loads(record.read_text())
    return output, streams["stdout"], streams["stderr"]
