"""Shared pytest configuration.

The suite runs once per Keras backend (`KERAS_BACKEND=tensorflow|jax|torch`, see the Makefile). Tests whose result
cannot depend on the Keras backend carry `@pytest.mark.backend_independent` (a module: `pytestmark`) and run once, in
the TensorFlow pass: readers, the tokenizer, tf.data pipelines, SQuAD windows/decoding/scores, metrics, flag
parsing, file safety, SavedModel/ONNX export (TensorFlow under every backend), the benchmarks' and examples' scripts.
The JAX and torch passes deselect them (not skip: they are not reported). Tests that build, train or run Keras models
or layers stay in every pass, since their numerics and compiled paths differ per backend.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


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
    # Files that hold slow tests first; the sort is stable, so each file keeps its order. pytest-xdist hands whole
    # files to its workers in this order (`make test`), so the long files start early and the short ones fill the
    # end, instead of one worker finishing a long file alone.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(autouse=True)
def _seed_everything():
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
