"""Eager-only checks on concrete input values: compiled steps cannot see an out-of-range id (GPUs and JAX
silently clamp it), but a model called eagerly can name it."""

import numpy as np
from keras import ops


def check_token_ids_in_range(token_ids, vocabulary_size, name="token_ids"):
    """Raise ValueError naming the offending id when any eager id is outside `[0, vocabulary_size)`."""
    try:
        values = np.asarray(ops.convert_to_numpy(token_ids))
    except Exception:  # noqa: BLE001 - symbolic tensors of every backend raise their own error types
        return
    if values.size == 0:
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
