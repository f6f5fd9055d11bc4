"""BERT input embeddings: token + segment + learned absolute position, then LayerNorm and dropout."""

import keras
import numpy as np
from keras import ops

from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.utils.constructor_config import constructor_config


def check_token_ids_in_range(token_ids, vocabulary_size, name="token_ids"):
    """Raise ValueError naming the offending id when any eager id is outside `[0, vocabulary_size)` (compiled
    steps cannot see one: GPUs and JAX silently clamp it)."""
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
        raise ValueError(f"`{name}` contains id {bad} at index {where}, outside the vocabulary [0, {vocabulary_size}). "
                         f"Check that the tokenizer's vocab matches the model's `vocabulary_size`.")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEmbeddings(keras.layers.Layer):
    """Sum of token, segment and position embeddings, normalised (Devlin et al., 2018, section 3).

    Args:
        vocabulary_size: int. Number of token ids.
        hidden_dim: int. Embedding width `H`.
        max_sequence_length: int. Size of the learned position table. Defaults to 512.
        num_segments: int. Number of segment (token type) ids. Defaults to 2.
        dropout: float. Dropout rate after the LayerNorm. Defaults to 0.1.
        layer_norm_epsilon: float. LayerNorm epsilon. Defaults to 1e-12.
        initializer_range: float. Stddev of the truncated-normal initializer. Defaults to 0.02.

    Inputs: `token_ids` and `segment_ids`, int `(B, T)` with `T <= max_sequence_length`.
    Output: float `(B, T, H)`.

    Example:
    >>> import numpy as np
    >>> layer = BertEmbeddings(vocabulary_size=10, hidden_dim=4, max_sequence_length=8)
    >>> layer(np.array([[1, 2, 3]]), np.zeros((1, 3), "int32")).shape
    (1, 3, 4)
    """

    def __init__(self, vocabulary_size, hidden_dim, max_sequence_length=512, num_segments=2, dropout=0.1,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def _initializer(self):
        return keras.initializers.TruncatedNormal(stddev=self.initializer_range)

    def _embedding(self, rows, name, token_ids_shape):
        layer = keras.layers.Embedding(rows, self.hidden_dim, embeddings_initializer=self._initializer(),
                                       dtype=self.dtype_policy, name=name)
        layer.build(token_ids_shape)
        return layer

    def build(self, token_ids_shape):
        self.token_embedding = self._embedding(self.vocabulary_size, "token_embedding", token_ids_shape)
        self.segment_embedding = self._embedding(self.num_segments, "segment_embedding", token_ids_shape)
        self.position_embeddings = self.add_weight(name="position_embeddings", initializer=self._initializer(),
                                                   shape=(self.max_sequence_length, self.hidden_dim))
        self.layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm")
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.dropout_layer = BertDropout(self.dropout, dtype=self.dtype_policy, name="dropout")
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = token_ids.shape[1]
        if sequence_length is not None and sequence_length > self.max_sequence_length:
            raise ValueError(f"Sequence length {sequence_length} exceeds the position table "
                             f"(max_sequence_length={self.max_sequence_length}); truncate or window the inputs.")
        check_token_ids_in_range(token_ids, self.vocabulary_size, "token_ids")
        check_token_ids_in_range(segment_ids, self.num_segments, "segment_ids")
        positions = ops.cast(self.position_embeddings, self.compute_dtype)[: ops.shape(token_ids)[1]]  # (T, H)
        x = self.token_embedding(token_ids) + self.segment_embedding(segment_ids) + positions[None]  # (B, T, H)
        return self.dropout_layer(self.layer_norm(x), training=training)

    def compute_output_shape(self, token_ids_shape):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}
