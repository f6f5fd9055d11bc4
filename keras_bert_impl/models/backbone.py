"""The BERT encoder: embeddings -> N post-LN transformer blocks -> tanh pooler on [CLS]."""

import logging
import os

import keras
from keras import ops

from keras_bert_impl.checkpoints import (HUGGINGFACE, CheckpointError, backbone_config, load_weights, native,
                                         read_checkpoint, resolve_checkpoint)
from keras_bert_impl.checkpoints.conversion import check_fits_in_memory
from keras_bert_impl.checkpoints.keras_hub_presets import read_keras_hub_preset, write_keras_hub_preset
from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.utils.constructor_config import constructor_config
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.encoder_block import BertEncoderBlock
from keras_bert_impl.models.presets import preset_config, refuse_size_as_preset

logger = logging.getLogger(__name__)


def _encode(embeddings, blocks, inputs, training=None, output_positions=None):
    """The encoder's forward pass: `(sequence_output, cls_row)` for the functional graph or `output_positions`."""
    padding_mask = inputs["padding_mask"]
    x = embeddings(inputs["token_ids"], inputs["segment_ids"], training=training)  # (B, T, H)
    for block in blocks[:-1]:
        x = block(x, padding_mask, training=training)
    if output_positions is None:
        x = blocks[-1](x, padding_mask, training=training)
        return x, x[:, 0, :]  # (B, T, H), (B, H)
    # Nothing after the last block mixes positions: its queries are [CLS] (for the pooler) and the requested rows.
    cls_position = ops.zeros_like(ops.cast(inputs["token_ids"][:, :1], "int32"))  # (B, 1)
    query_positions = ops.concatenate([cls_position, ops.cast(output_positions, "int32")], axis=1)  # (B, 1 + P)
    x = blocks[-1](x, padding_mask, training=training, query_positions=query_positions)  # (B, 1 + P, H)
    return x[:, 1:, :], x[:, 0, :]  # (B, P, H), (B, H)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertBackbone(keras.Model):
    """BERT encoder network (Devlin et al., 2018), shared by every task model; the arguments are the config.

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        num_layers: int. Transformer blocks `L`.
        num_heads: int. Attention heads `A`.
        hidden_dim: int. Width `H`.
        intermediate_dim: int. Feed-forward width (4H in the paper).
        max_sequence_length: int. Learned position table size. Defaults to 512.
        num_segments: int. Segment (token type) vocabulary. Defaults to 2.
        dropout: float. Hidden dropout. Defaults to 0.1.
        attention_dropout: float. Attention-probability dropout. Defaults to 0.1.
        hidden_activation: str. `"gelu"` (exact erf, Hugging Face) or `"gelu_approximate"` (tanh,
            the original BERT), `"relu"`, `"silu"`. Defaults to `"gelu_approximate"`.
        layer_norm_epsilon: float. Defaults to 1e-12.
        initializer_range: float. Truncated-normal stddev. Defaults to 0.02.
        dtype: str or `keras.DTypePolicy`. E.g. `"mixed_bfloat16"`; LayerNorm and softmax compute in
            float32 whatever the policy. Defaults to the global policy.

    Inputs (dict): `token_ids` int `(B, T)`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`,
    any `T <= max_sequence_length`.
    Outputs (dict): `sequence_output` `(B, T, H)`, `pooled_output` `(B, H)`.

    Calling it with `output_positions` (int `(B, P)`) returns `sequence_output` at those positions only,
    `(B, P, H)`, equal to gathering them from the full output, with the last block computing only those rows
    and [CLS] (the MLM head's use; a `(B, 0)` array asks for `pooled_output` alone).

    Example:
    >>> import numpy as np
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=100, num_layers=1)
    >>> batch = {"token_ids": np.array([[2, 5, 3, 0]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...          "padding_mask": np.array([[1, 1, 1, 0]], bool)}
    >>> backbone(batch)["pooled_output"].shape
    (1, 128)
    >>> backbone(batch, output_positions=np.array([[2]]))["sequence_output"].shape
    (1, 1, 128)
    """

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, max_sequence_length=512,
                 num_segments=2, dropout=0.1, attention_dropout=0.1, hidden_activation="gelu_approximate",
                 layer_norm_epsilon=1e-12, initializer_range=0.02, dtype=None, **kwargs):
        get_activation(hidden_activation)  # an unknown name fails before any layer is built
        sizes = {"vocabulary_size": vocabulary_size, "num_layers": num_layers, "hidden_dim": hidden_dim,
                 "intermediate_dim": intermediate_dim, "max_sequence_length": max_sequence_length,
                 "num_segments": num_segments}
        for arg, value in {**sizes, "num_heads": num_heads}.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"BertBackbone `{arg}` must be a positive integer, got {value!r}.")
        if hidden_dim % num_heads:
            raise ValueError(f"BertBackbone `hidden_dim` ({hidden_dim}) must be divisible by `num_heads` "
                             f"({num_heads}).")
        check_fits_in_memory(sizes, type(self).__name__)  # before any weight is allocated

        inputs = {name: keras.Input(shape=(None,), dtype=dtype_name, name=name)
                  for name, dtype_name in (("token_ids", "int32"), ("segment_ids", "int32"), ("padding_mask", "bool"))}
        # The settings the embeddings and every block share.
        shared = dict(dropout=dropout, layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
                      dtype=dtype)
        embeddings = BertEmbeddings(vocabulary_size, hidden_dim, max_sequence_length=max_sequence_length,
                                    num_segments=num_segments, name="embeddings", **shared)
        blocks = [
            BertEncoderBlock(hidden_dim, num_heads, intermediate_dim, attention_dropout=attention_dropout,
                             hidden_activation=hidden_activation, name=f"encoder_layer_{index}", **shared)
            for index in range(num_layers)
        ]
        sequence_output, cls_row = _encode(embeddings, blocks, inputs)
        # Created after the blocks: unseeded initializers draw their seeds in creation order.
        pooler = keras.layers.Dense(hidden_dim, activation="tanh", dtype=dtype, name="pooler_dense",
                                    kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))
        outputs = {"sequence_output": sequence_output, "pooled_output": pooler(cls_row)}  # (B, T, H), (B, H)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def call(self, inputs, training=None, mask=None, output_positions=None):
        if output_positions is None:
            return super().call(inputs, training=training, mask=mask)
        sequence_output, cls_row = _encode(self.embeddings, self.encoder_layers, inputs, training, output_positions)
        return {"sequence_output": sequence_output, "pooled_output": self.pooler(cls_row)}  # (B, P, H), (B, H)

    def compute_output_spec(self, inputs, training=None, mask=None, output_positions=None):
        spec = super().compute_output_spec(inputs)
        if output_positions is None:
            return spec
        sequence_output = spec["sequence_output"]
        spec["sequence_output"] = keras.KerasTensor(tuple(output_positions.shape) + (sequence_output.shape[-1],),
                                                    dtype=sequence_output.dtype)
        return spec

    @property
    def embeddings(self):
        return self.get_layer("embeddings")

    @property
    def token_embedding(self):
        """The token `keras.layers.Embedding`; the MLM head ties its output projection to it."""
        return self.embeddings.token_embedding

    @property
    def encoder_layers(self):
        return [self.get_layer(f"encoder_layer_{index}") for index in range(self.num_layers)]

    @property
    def pooler(self):
        return self.get_layer("pooler_dense")

    def get_config(self):
        dtype = keras.dtype_policies.serialize(self.dtype_policy)
        return {"name": self.name, "trainable": self.trainable, "dtype": dtype, **constructor_config(self, ("dtype",))}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_preset(cls, name, **overrides):
        """A backbone from a keras-hub BERT preset directory or handle (e.g. "bert_base_en_uncased"), with its
        weights (`checkpoints.keras_hub_presets`); outputs equal keras-hub's. `overrides` change config values."""
        refuse_size_as_preset(cls.__name__, name)
        try:
            config, tensors = read_keras_hub_preset(name)
        except CheckpointError as error:
            raise ValueError(f"Unknown preset {name!r}: {error}.") from error
        backbone = cls(**{**config, **overrides})
        backbone.load_report = load_weights(backbone, backbone, HUGGINGFACE, tensors, name)
        return backbone

    @classmethod
    def from_scratch(cls, size, **overrides):
        """A randomly initialised backbone of a published size (`models.presets.PRESETS`: "tiny" ... "large").

        Args:
            size: str. The size.
            **overrides: config values to change (e.g. `vocabulary_size=100`, `max_sequence_length=128`).

        Example:
        >>> BertBackbone.from_scratch("mini", vocabulary_size=100).hidden_dim
        256
        """
        return cls(**preset_config(size, **overrides))

    def save_to_preset(self, path, tokenizer=None):
        """Write this backbone (and `tokenizer`) as a keras-hub preset directory, atomically."""
        write_keras_hub_preset(self, path, tokenizer=tokenizer)

    @classmethod
    def from_pretrained(cls, path, revision=None, **overrides):
        """Load a Hugging Face, original TF or our own checkpoint (a task model's gives its encoder), or a Hugging
        Face Hub model id at `revision` (`checkpoints.hub_cache`). `overrides` change config values (e.g.
        `dtype="mixed_bfloat16"`); `load_report` (a `checkpoints.LoadReport`) says what was loaded."""
        path = resolve_checkpoint(path, revision)
        fmt, config, tensors, extra = read_checkpoint(path)
        backbone = cls(**{**backbone_config(fmt, config, extra), **overrides})
        backbone.load_report = load_weights(backbone, backbone, fmt, tensors, path)
        logger.info("Loaded %s from %s (%s): %s", cls.__name__, path, fmt, backbone.load_report.summary())
        return backbone

    def save_pretrained(self, path):
        """Write `config.json` + `model.safetensors` to directory `path`, atomically."""
        native.write_native(os.fspath(path), self, self.get_config())
