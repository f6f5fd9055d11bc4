"""Losses of the fine-tuning task models, written once in `keras.ops` (every backend, XLA-compilable).

Shape legend: B batch, T tokens, C classes.
"""

import keras
from keras import ops


def sparse_cross_entropy_from_logits(labels, logits):
    """Negative log-likelihood of each integer label under `logits`, in float32 (every task model's cross-entropy).

    Args:
        labels: int tensor `(...)` (or `(B, 1)` for `(B, C)` logits). Class ids in `[0, C)`.
        logits: float tensor `(..., C)`. Unnormalised scores.

    Returns:
        float32 tensor `(...)`, the shape of `logits` without its last axis.

    Example:
    >>> import numpy as np
    >>> loss = sparse_cross_entropy_from_logits(np.array([1]), np.zeros((1, 4), "float32"))
    >>> round(float(loss[0]), 4)  # ln 4
    1.3863
    """
    labels = ops.reshape(ops.cast(labels, "int32"), ops.shape(logits)[:-1])  # (...)
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)  # (..., C)
    return -ops.squeeze(ops.take_along_axis(log_probs, labels[..., None], axis=-1), axis=-1)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class SpanCrossEntropy(keras.losses.Loss):
    """The SQuAD span loss of `run_squad.py`: `(CE(start) + CE(end)) / 2`, averaged over the batch.

    Start and end are each a softmax over the window's `T` positions; position 0 ([CLS]) labels windows
    without the answer. Padded positions keep their raw logits, as in the original and Hugging Face.

    Args:
        name: str. Defaults to "span_cross_entropy".
        reduction: str. Keras loss reduction. Defaults to "sum_over_batch_size" (the batch mean).
        dtype: str or None. Dtype of the loss computation. Defaults to None (float32).

    Inputs: `y_true` dict `start_positions` int `(B,)`, `end_positions` int `(B,)`; `y_pred` dict
    `start_logits` float `(B, T)`, `end_logits` float `(B, T)`.

    Example:
    >>> import numpy as np
    >>> loss = SpanCrossEntropy()
    >>> y_true = {"start_positions": np.array([1]), "end_positions": np.array([2])}
    >>> y_pred = {"start_logits": np.zeros((1, 4), "float32"), "end_logits": np.zeros((1, 4), "float32")}
    >>> round(float(loss(y_true, y_pred)), 4)  # (ln 4 + ln 4) / 2
    1.3863
    """

    def __init__(self, name="span_cross_entropy", reduction="sum_over_batch_size", dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        start_loss = sparse_cross_entropy_from_logits(y_true["start_positions"], y_pred["start_logits"])  # (B,)
        end_loss = sparse_cross_entropy_from_logits(y_true["end_positions"], y_pred["end_logits"])  # (B,)
        return (start_loss + end_loss) / 2.0

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, "dtype": self.dtype}
