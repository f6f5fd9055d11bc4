"""Multi-head self-attention with a fused query/key/value projection and a padding mask.

Shape legend: B batch, T tokens, N heads, D head size (hidden_dim = N * D).
"""

import math

import keras
from keras import ops

from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.utils.constructor_config import constructor_config


def few_queries_are_cheaper(num_queries, sequence_length, hidden_dim, num_heads, quantized=False):
    """Whether `BertSelfAttention` attends `num_queries` query rows without projecting keys and values.

    The few-query path (`_attend_few_queries`) maps the queries into input space instead of projecting keys
    and values: about `P (H + N T)` multiplies per head width instead of `T H`. Its einsums run slower than
    the projection matmuls, so it needs a 4x margin ([CLS] alone at T=128 qualifies; 21 pretraining rows
    measured neutral). Symbolic sizes and quantized projections take the projection path. FLOP counters
    (`benchmarks/flops.py`) call this function as the layer does.

    Args:
        num_queries: int. `P`, the query rows per sequence.
        sequence_length: int. `T`, the tokens (keys) per sequence.
        hidden_dim: int. `H`.
        num_heads: int. `N`.
        quantized: bool. Whether the query/key/value projection is quantized. Defaults to False.

    Returns:
        bool. True when the layer takes the few-query path.

    Example:
    >>> few_queries_are_cheaper(1, 128, hidden_dim=256, num_heads=4)  # [CLS] alone, mini
    True
    >>> few_queries_are_cheaper(21, 128, hidden_dim=256, num_heads=4)  # [CLS] + 20 masked slots
    False
    """
    if quantized or not isinstance(num_queries, int) or not isinstance(sequence_length, int):
        return False
    return 4 * num_queries * (hidden_dim + num_heads * sequence_length) <= sequence_length * hidden_dim


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSelfAttention(keras.layers.Layer):
    """BERT's scaled dot-product self-attention (Vaswani et al., 2017; Devlin et al., 2018).

    One Dense layer projects to queries, keys and values at once (kernel `(H, 3H)`, `[query | key | value]`).
    Without active attention dropout the attention is `keras.ops.dot_product_attention` (fused kernels on
    GPUs); with it, it is computed explicitly with a float32 softmax and dropout on the probabilities.

    Args:
        hidden_dim: int. Model width `H`.
        num_heads: int. Number of heads `N`; must divide `hidden_dim`.
        attention_dropout: float. Dropout on the attention probabilities. Defaults to 0.1.
        initializer_range: float. Stddev of the truncated-normal kernel initializer. Defaults to 0.02.

    Inputs: `x` float `(B, T, H)`; `padding_mask` bool `(B, T)`, True for real tokens; optional `queries`
    float `(B, P, H)`, rows gathered from `x` whose outputs alone are wanted (keys and values still come
    from all of `x`).
    Output: float `(B, T, H)`, or `(B, P, H)` with `queries` (before the residual and LayerNorm, which the
    encoder block applies).

    Example:
    >>> import numpy as np
    >>> layer = BertSelfAttention(hidden_dim=8, num_heads=2)
    >>> layer(np.ones((1, 3, 8), "float32"), np.array([[True, True, False]])).shape
    (1, 3, 8)
    """

    def __init__(self, hidden_dim, num_heads, attention_dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(f"hidden_dim ({hidden_dim}) must be divisible by num_heads ({num_heads}).")
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.head_dim = hidden_dim // num_heads

    def build(self, x_shape):
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.query_key_value = keras.layers.Dense(3 * self.hidden_dim, kernel_initializer=initializer,
                                                  dtype=self.dtype_policy, name="query_key_value")
        self.query_key_value.build(x_shape)
        self.attention_output = keras.layers.Dense(self.hidden_dim, kernel_initializer=initializer,
                                                   dtype=self.dtype_policy, name="attention_output")
        self.attention_output.build(tuple(x_shape[:-1]) + (self.hidden_dim,))
        self.probability_dropout = BertDropout(self.attention_dropout, dtype=self.dtype_policy,
                                               name="probability_dropout")
        self.built = True

    def call(self, x, padding_mask, training=None, queries=None):
        batch_size, sequence_length = ops.shape(x)[0], ops.shape(x)[1]
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (B, 1, 1, T) over keys
        scale = 1.0 / math.sqrt(self.head_dim)
        if queries is not None and self._few_queries_are_cheaper(ops.shape(queries)[1], sequence_length):
            context = self._attend_few_queries(queries, x, mask, scale, training)  # (B, P, N, D)
        else:
            if queries is None:
                query, key, value = self._split_query_key_value(x)  # (B, T, N, D) each
            else:
                query, key, value = self._project_queries_keys_values(queries, x)  # (B, P, N, D), (B, T, N, D) x2
            if training and self.attention_dropout > 0:
                scores = ops.einsum("btnd,bsnd->bnts", query, key)  # (B, N, T or P, T)
                probabilities = ops.cast(self._probabilities(scores, mask, scale), self.compute_dtype)
                probabilities = self.probability_dropout(probabilities, training=training)
                context = ops.einsum("bnts,bsnd->btnd", probabilities, value)  # (B, T or P, N, D)
            else:
                # (B, N, T or P, T): cuDNN's fused attention (JAX on GPU) takes no (B, 1, 1, T) mask (2x slower).
                mask = ops.broadcast_to(mask, (batch_size, self.num_heads, ops.shape(query)[1], sequence_length))
                # cuDNN's fused kernel rejects P != T; asking would log a traceback at every trace.
                flash_attention = None if queries is None else False
                context = ops.dot_product_attention(query, key, value, mask=mask, scale=scale,
                                                    flash_attention=flash_attention)
        num_queries = ops.shape(context)[1]
        context = ops.reshape(context, (-1, self.hidden_dim))  # (B*T or B*P, H)
        output = self.attention_output(context)
        return ops.reshape(output, (batch_size, num_queries, self.hidden_dim))  # (B, T or P, H)

    def attention_probabilities(self, x, padding_mask):
        """Every head's attention probabilities, for inspection (`call` keeps them inside the fused kernel).

        Args:
            x: float `(B, T, H)`, the layer's input.
            padding_mask: bool `(B, T)`, True for real tokens.

        Returns:
            float32 `(B, N, T, T)`: row `t` of head `n` is query token `t`'s distribution over the keys
            (0 on padded keys), before attention dropout.
        """
        query, key, _ = self._split_query_key_value(x)
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (B, 1, 1, T) over keys
        scores = ops.einsum("btnd,bsnd->bnts", query, key)  # (B, N, T, T)
        return self._probabilities(scores, mask, 1.0 / math.sqrt(self.head_dim))

    def _split_query_key_value(self, x):
        batch_size, sequence_length = ops.shape(x)[0], ops.shape(x)[1]
        # (B*T, H) rows, not (B, T, H): JAX's kernel gradient of a 3-D `x @ W` is slower on XLA:CPU (RESULTS.md).
        qkv = self.query_key_value(ops.reshape(x, (-1, self.hidden_dim)))  # (B*T, 3H)
        qkv = ops.reshape(qkv, (batch_size, sequence_length, 3, self.num_heads, self.head_dim))
        return qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]

    def _float_projection(self):
        """The fused projection's kernel `(H, 3H)`, laid out `[query | key | value]`, and bias `(3H,)`."""
        return (ops.cast(self.query_key_value.kernel, self.compute_dtype),
                ops.cast(self.query_key_value.bias, self.compute_dtype))

    def _project_queries(self, queries, kernel, bias):
        """`(B, P, H)` rows -> their queries `(B, P, N, D)`, through the kernel's query block."""
        h = self.hidden_dim
        query = ops.matmul(ops.reshape(queries, (-1, h)), kernel[:, :h]) + bias[:h]  # (B*P, H)
        return ops.reshape(query, (ops.shape(queries)[0], ops.shape(queries)[1], self.num_heads, self.head_dim))

    def _project_queries_keys_values(self, queries, x):
        """Queries of the `queries` rows, keys and values of all of `x`, from the fused kernel's column blocks."""
        batch_size, sequence_length = ops.shape(x)[0], ops.shape(x)[1]
        h = self.hidden_dim
        rows = ops.reshape(x, (-1, h))  # (B*T, H)
        if self.query_key_value.quantization_mode is None:
            kernel, bias = self._float_projection()
            query = self._project_queries(queries, kernel, bias)  # (B, P, N, D)
            key_value = ops.matmul(rows, kernel[:, h:]) + bias[h:]  # (B*T, 2H)
        else:  # a quantized kernel is not the weights: the layer dequantizes, and unused columns are dropped
            query = self.query_key_value(ops.reshape(queries, (-1, h)))[:, :h]  # (B*P, H)
            query = ops.reshape(query, (batch_size, ops.shape(queries)[1], self.num_heads, self.head_dim))
            key_value = self.query_key_value(rows)[:, h:]  # (B*T, 2H)
        key_value = ops.reshape(key_value, (batch_size, sequence_length, 2, self.num_heads, self.head_dim))
        return query, key_value[:, :, 0], key_value[:, :, 1]

    def _few_queries_are_cheaper(self, num_queries, sequence_length):
        """`few_queries_are_cheaper` for this layer's sizes and quantization."""
        projection = getattr(self, "query_key_value", None)  # None before `build`: a float layer
        quantized = projection is not None and projection.quantization_mode is not None
        return few_queries_are_cheaper(num_queries, sequence_length, self.hidden_dim, self.num_heads, quantized)

    def _attend_few_queries(self, queries, x, mask, scale, training):
        """Attention of a few query rows over all of `x` without projecting keys and values: per head,
        `q . (x W_k + b_k)` is `(W_k q) . x` plus a constant the softmax ignores, and `sum_t p_t (x_t W_v + b_v)`
        is `(sum_t p_t x_t) W_v + (sum_t p_t) b_v`."""
        h, heads, head_dim = self.hidden_dim, self.num_heads, self.head_dim
        kernel, bias = self._float_projection()
        query = self._project_queries(queries, kernel, bias)  # (B, P, N, D)
        key_kernel = ops.reshape(kernel[:, h : 2 * h], (h, heads, head_dim))  # (H, N, D)
        value_kernel = ops.reshape(kernel[:, 2 * h :], (h, heads, head_dim))  # (H, N, D)
        query_in_input_space = ops.einsum("bpnd,hnd->bpnh", query, key_kernel)  # (B, P, N, H)
        scores = ops.einsum("bpnh,bth->bnpt", query_in_input_space, x)  # (B, N, P, T)
        probabilities = ops.cast(self._probabilities(scores, mask, scale), self.compute_dtype)
        if training and self.attention_dropout > 0:
            probabilities = self.probability_dropout(probabilities, training=training)
        mixed_inputs = ops.einsum("bnpt,bth->bpnh", probabilities, x)  # (B, P, N, H)
        context = ops.einsum("bpnh,hnd->bpnd", mixed_inputs, value_kernel)  # (B, P, N, D)
        weight_sums = ops.transpose(ops.sum(probabilities, axis=-1), (0, 2, 1))[..., None]  # (B, P, N, 1)
        return context + weight_sums * ops.reshape(bias[2 * h :], (heads, head_dim))

    @staticmethod
    def _probabilities(scores, mask, scale):
        """Softmax over the keys of `scores` `(B, N, T or P, T)` scaled, padded keys masked out: float32."""
        scores = ops.cast(scores, "float32") * scale
        scores = ops.where(mask, scores, ops.convert_to_tensor(-1e9, "float32"))
        return ops.softmax(scores, axis=-1)  # float32, whatever the dtype policy

    def compute_output_shape(self, x_shape, queries_shape=None):
        return tuple(x_shape) if queries_shape is None else tuple(queries_shape)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}
