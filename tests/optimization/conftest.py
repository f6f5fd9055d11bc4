"""Fixtures for the optimizer tests."""

import keras
import pytest


@pytest.fixture
def dtype_policy():
    """Sets a global dtype policy for one test and restores float32 afterwards."""
    previous = keras.config.dtype_policy()
    yield keras.config.set_dtype_policy
    keras.config.set_dtype_policy(previous)
