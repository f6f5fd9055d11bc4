"""Eager-only checks on concrete input values.

Inside a compiled step (tf.function, jax.jit, torch.compile) token ids are symbolic and an out-of-range id
silently gathers garbage (TF on CPU raises, GPUs and JAX clamp). On eager calls we can afford to look at the
values, so users calling a model directly get a clear error instead.
"""

import numpy as np
from keras import ops


def concrete_values(x):
    """Return `x` as a NumPy array when its values are available now, else None (traced/symbolic)."""
    if isinstance(x, np.ndarray):
        return x
    try:
        return ops.convert_to_numpy(x)
    except Exception:  # noqa: BLE001 - symbolic tensors of every backend raise their own error types
        return None


def check_token_ids_in_range(token_ids, vocabulary_size, name="token_ids"):
    """Raise ValueError naming the offending id when any eager id is outside `[0, vocabulary_size)`."""
    values = concrete_values(token_ids)
    if values is None or values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= vocabulary_size:
        bad = low if low < 0 else high
        where = tuple(int(i) for i in np.argwhere(values == bad)[0])
        raise ValueError(
            f"`{name}` contains id {bad} at index {where}, outside the vocabulary "
            f"[0, {vocabulary_size}). Check that the tokenizer's vocab matches the model's "
            f"`vocabulary_size`."
        )
