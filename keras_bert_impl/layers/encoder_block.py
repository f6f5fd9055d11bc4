"""One post-LayerNorm transformer encoder block, as in BERT."""

import keras
from keras import ops

from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.self_attention import BertSelfAttention
from keras_bert_impl.utils.constructor_config import constructor_config


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEncoderBlock(keras.layers.Layer):
    """Self-attention and feed-forward sublayers, each followed by dropout, residual and LayerNorm.

    `y = LN(x + Dropout(Attention(x)))`, then `out = LN(y + Dropout(W2 act(W1 y)))` (post-LN, as the
    original BERT and Vaswani et al., 2017).

    Args:
        hidden_dim: int. Model width `H`.
        num_heads: int. Attention heads.
        intermediate_dim: int. Feed-forward width (4H in the paper).
        dropout: float. Dropout after each sublayer. Defaults to 0.1.
        attention_dropout: float. Dropout on attention probabilities. Defaults to 0.1.
        hidden_activation: str. Feed-forward activation, see `layers.activations.ACTIVATIONS`.
            Defaults to `"gelu_approximate"` (the original BERT's).
        layer_norm_epsilon: float. Defaults to 1e-12.
        initializer_range: float. Truncated-normal stddev. Defaults to 0.02.

    Inputs: `x` float `(B, T, H)`, `padding_mask` bool `(B, T)`; optional `query_positions` int `(B, P)`.
    Output: float `(B, T, H)`, or `(B, P, H)` with `query_positions`: the rows at those positions only (they
    attend to all of `x`), equal to gathering them from the full output at a fraction of the cost.

    Example:
    >>> import numpy as np
    >>> block = BertEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16)
    >>> block(np.ones((2, 3, 8), "float32"), np.ones((2, 3), bool)).shape
    (2, 3, 8)
    """

    def __init__(self, hidden_dim, num_heads, intermediate_dim, dropout=0.1, attention_dropout=0.1,
                 hidden_activation="gelu_approximate", layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        get_activation(hidden_activation)  # an unknown name fails here, not in `build`
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, x_shape):
        x_shape = tuple(x_shape)
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        policy = self.dtype_policy
        self.self_attention = BertSelfAttention(self.hidden_dim, self.num_heads, self.attention_dropout,
                                                self.initializer_range, dtype=policy, name="self_attention")
        self.self_attention.build(x_shape)
        self.attention_dropout_layer = BertDropout(self.dropout, dtype=policy, name="attention_output_dropout")
        self.attention_layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype=policy,
                                                                    name="attention_layer_norm")
        self.attention_layer_norm.build(x_shape)
        self.intermediate_dense = keras.layers.Dense(self.intermediate_dim, get_activation(self.hidden_activation),
                                                     kernel_initializer=initializer, dtype=policy,
                                                     name="intermediate_dense")
        self.intermediate_dense.build(x_shape)
        self.output_dense = keras.layers.Dense(self.hidden_dim, kernel_initializer=initializer, dtype=policy,
                                               name="output_dense")
        self.output_dense.build(x_shape[:-1] + (self.intermediate_dim,))
        self.output_dropout = BertDropout(self.dropout, dtype=policy, name="output_dropout")
        self.output_layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype=policy,
                                                                 name="output_layer_norm")
        self.output_layer_norm.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, training=None, query_positions=None):
        queries = None
        if query_positions is not None:
            queries = ops.take_along_axis(x, ops.cast(query_positions, "int32")[:, :, None], axis=1)  # (B, P, H)
        attention = self.self_attention(x, padding_mask, training=training, queries=queries)  # (B, T or P, H)
        attention = self.attention_dropout_layer(attention, training=training)
        x = self.attention_layer_norm((x if queries is None else queries) + attention)
        # The feed-forward matmuls see 2-D rows: see `BertSelfAttention._split_query_key_value` for why.
        rows = ops.reshape(x, (-1, self.hidden_dim))  # (B*T or B*P, H)
        feed_forward = self.output_dense(self.intermediate_dense(rows))
        feed_forward = ops.reshape(feed_forward, ops.shape(x))  # (B, T or P, H)
        feed_forward = self.output_dropout(feed_forward, training=training)
        return self.output_layer_norm(x + feed_forward)

    def compute_output_shape(self, x_shape, query_positions_shape=None):
        return tuple(x_shape) if query_positions_shape is None else tuple(query_positions_shape) + (x_shape[-1],)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}
