"""BERT pretraining heads: the masked-LM head (tied to the token embedding) and the next-sentence head.

Shape legend: B batch, T tokens, P predictions per sequence (masked slots), H hidden width, V vocabulary.

Both heads return float32 logits whatever the dtype policy; their own weights are float32 (`autocast=False`).
"""

import keras
from keras import ops

from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.utils.constructor_config import constructor_config


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original ids of masked tokens (Devlin et al., 2018, section 3.1, task #1).

    As the original `get_masked_lm_output`: the masked positions' hidden states are gathered, transformed by
    Dense(H) + activation + LayerNorm, and scored against the tied token embedding matrix plus an output bias.

    Args:
        token_embedding: `keras.layers.Embedding`. The backbone's token embedding (`backbone.token_embedding`);
            its `(V, H)` matrix is the output projection.
        hidden_activation: str. Activation of the transform, see `layers.activations.ACTIVATIONS`; use the
            backbone's. Defaults to `"gelu_approximate"` (the original).
        layer_norm_epsilon: float. Defaults to 1e-12.
        initializer_range: float. Stddev of the truncated-normal transform kernel initializer. Defaults to 0.02.

    Inputs: `sequence_output` float `(B, T, H)`; `mask_positions` int `(B, P)` indices into `T` (padding slots
    hold any valid index). Without `mask_positions`, `sequence_output` holds those rows already, `(B, P, H)`.
    Output: float32 logits `(B, P, V)`.

    Example:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(20, 8)
    >>> embedding.build((None,))
    >>> head = MaskedLMHead(embedding)
    >>> head(np.ones((2, 5, 8), "float32"), np.array([[1, 3], [0, 0]])).shape
    (2, 2, 20)
    """

    def __init__(self, token_embedding, hidden_activation="gelu_approximate", layer_norm_epsilon=1e-12,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        get_activation(hidden_activation)  # an unknown name fails here, not in `build`
        self.token_embedding = token_embedding
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, sequence_output_shape, mask_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        if not self.token_embedding.built:
            self.token_embedding.build((None,))
        vocabulary_size = self.token_embedding.input_dim
        if self.token_embedding.output_dim != hidden_dim:
            raise ValueError(f"MaskedLMHead: the token embedding width ({self.token_embedding.output_dim}) must equal "
                             f"the sequence output width ({hidden_dim}) for weight tying.")
        gathered_shape = (sequence_output_shape[0], None, hidden_dim)  # (B, P, H)
        self.transform_dense = keras.layers.Dense(
            hidden_dim, get_activation(self.hidden_activation), dtype=self.dtype_policy, name="transform_dense",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.transform_dense.build(gathered_shape)
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="transform_layer_norm")
        self.transform_layer_norm.build(gathered_shape)
        self.output_bias = self.add_weight(name="output_bias", shape=(vocabulary_size,), initializer="zeros",
                                           autocast=False)
        self.built = True

    def call(self, sequence_output, mask_positions=None):
        x = sequence_output  # (B, P, H) when already gathered
        if mask_positions is not None:
            mask_positions = ops.cast(mask_positions, "int32")
            x = ops.take_along_axis(sequence_output, mask_positions[:, :, None], axis=1)  # (B, P, H)
        batch_size, num_predictions = ops.shape(x)[0], ops.shape(x)[1]
        # 2-D (B*P, H) rows for the matmuls, as in `BertSelfAttention`: faster kernel gradients under JAX.
        x = self.transform_layer_norm(self.transform_dense(ops.reshape(x, (-1, ops.shape(x)[-1]))))  # (B*P, H)
        embeddings = ops.cast(self.token_embedding.embeddings, "float32")  # (V, H)
        logits = ops.matmul(ops.cast(x, "float32"), ops.transpose(embeddings)) + self.output_bias  # (B*P, V)
        return ops.reshape(logits, (batch_size, num_predictions, ops.shape(logits)[-1]))  # (B, P, V)

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape=None):
        rows_shape = sequence_output_shape[:-1] if mask_positions_shape is None else mask_positions_shape
        return tuple(rows_shape) + (self.token_embedding.input_dim,)

    def compute_output_spec(self, sequence_output, mask_positions=None):
        positions_shape = None if mask_positions is None else mask_positions.shape
        return keras.KerasTensor(self.compute_output_shape(sequence_output.shape, positions_shape), dtype="float32")

    def get_config(self):
        config = {**super().get_config(), **constructor_config(self)}
        config["token_embedding"] = keras.layers.serialize(self.token_embedding)
        return config

    @classmethod
    def from_config(cls, config):
        # A standalone round trip gets its own embedding; task models pass their backbone's instead.
        config = dict(config)
        config["token_embedding"] = keras.layers.deserialize(config["token_embedding"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class NextSentenceHead(keras.layers.Layer):
    """Classifies whether segment B follows segment A (Devlin et al., 2018, section 3.1, task #2).

    A `(H, 2)` kernel and `(2,)` bias on the pooled `[CLS]` output. Class 0 = IsNext, 1 = random next.

    Args:
        initializer_range: float. Stddev of the truncated-normal kernel initializer. Defaults to 0.02.

    Input: `pooled_output` float `(B, H)`. Output: float32 logits `(B, 2)`.

    Example:
    >>> import numpy as np
    >>> NextSentenceHead()(np.ones((3, 8), "float32")).shape
    (3, 2)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, pooled_output_shape):
        self.kernel = self.add_weight(name="kernel", shape=(pooled_output_shape[-1], 2), autocast=False,
                                      initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.bias = self.add_weight(name="bias", shape=(2,), initializer="zeros", autocast=False)
        self.built = True

    def call(self, pooled_output):
        return ops.matmul(ops.cast(pooled_output, "float32"), self.kernel) + self.bias  # (B, 2)

    def compute_output_spec(self, pooled_output):
        return keras.KerasTensor((pooled_output.shape[0], 2), dtype="float32")

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}
