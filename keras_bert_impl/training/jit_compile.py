"""The `jit_compile` value for `Model.compile` that means "compile with XLA where the backend has it"."""

import keras


def xla_jit_compile(requested=True):
    """The `jit_compile` value for `Model.compile` that means "compile with XLA where the backend has it".

    True on TensorFlow and JAX when `requested`. False on torch: its `jit_compile=True` is `torch.compile`
    (TorchDynamo), not XLA, and it cannot trace the tf.data-fed Keras steps this package uses (it fails on
    predict and retraces on every new bucket shape), so torch steps run eagerly.

    Args:
        requested: bool. Whether XLA is wanted at all. Defaults to True.

    Example:
    >>> import keras
    >>> xla_jit_compile() == (keras.backend.backend() in ("tensorflow", "jax"))
    True
    >>> xla_jit_compile(False)
    False
    """
    return bool(requested) and keras.backend.backend() in ("tensorflow", "jax")
