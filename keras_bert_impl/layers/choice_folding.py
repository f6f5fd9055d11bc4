"""Fold the choices of multiple-choice inputs `(B, C, T)` into the batch, and unfold one score per choice back
out, for dynamic `B`, `C` and `T` (which `keras.ops.reshape` on symbolic tensors cannot express).

Shape legend: B batch, C choices, T tokens.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class FoldChoices(keras.layers.Layer):
    """`(B, C, T)` -> `(B * C, T)`: every choice of every example becomes a row, example 0's choices first.

    Example:
    >>> import numpy as np
    >>> x = np.arange(12).reshape(1, 3, 4)
    >>> np.asarray(FoldChoices()(x)).tolist()
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    """

    def call(self, inputs):
        return ops.reshape(inputs, (-1, ops.shape(inputs)[-1]))  # (B * C, T)

    def compute_output_shape(self, input_shape):
        return (None, input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class UnfoldChoices(keras.layers.Layer):
    """`(B * C, 1)` (or `(B * C,)`) scores, one per `FoldChoices` row -> `(B, C)`, the layout of the `(B, C, T)`
    `choices` they were computed from (only their shape is read).

    Example:
    >>> import numpy as np
    >>> scores = np.arange(6, dtype="float32").reshape(6, 1)
    >>> np.asarray(UnfoldChoices()(scores, np.zeros((2, 3, 5)))).tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """

    def call(self, scores, choices):
        return ops.reshape(scores, ops.shape(choices)[:2])  # (B, C)

    def compute_output_shape(self, scores_shape, choices_shape):
        return tuple(choices_shape[:2])
