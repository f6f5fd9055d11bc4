"""Activation names accepted by BERT configs, and how each is computed.

The original BERT's `gelu` is the tanh approximation, Hugging Face's the exact erf form (a ~2e-3 gap on real
checkpoints), so every config names its activation and converted checkpoints keep their source's.
"""

from keras import ops

# Our name -> what it computes. Names follow keras-hub / Hugging Face where they agree.
ACTIVATIONS = {
    "gelu": "exact GELU, x * Phi(x) with erf (Hugging Face 'gelu')",
    "gelu_approximate": "tanh-approximated GELU (original google-research/bert 'gelu', HF 'gelu_new')",
    "relu": "max(x, 0)",
    "silu": "x * sigmoid(x)",
}


def get_activation(name):
    """Return the callable for `name`, a key of `ACTIVATIONS`; a clear error for an unknown name.

    Example:
    >>> import keras
    >>> fn = get_activation("gelu")
    >>> float(fn(keras.ops.convert_to_tensor(0.0)))
    0.0
    """
    if name == "gelu":
        return lambda x: ops.gelu(x, approximate=False)
    if name == "gelu_approximate":
        return lambda x: ops.gelu(x, approximate=True)
    if name == "relu":
        return ops.relu
    if name == "silu":
        return ops.silu
    raise ValueError(f"Unsupported activation {name!r}. Supported: {sorted(ACTIVATIONS)} "
                     f"({'; '.join(f'{k}: {v}' for k, v in ACTIVATIONS.items())}).")


__all__ = ["ACTIVATIONS", "get_activation"]
