"""Shared helpers for the fine-tuning task-model tests: synthetic learnable tasks, HF batches, TF checkpoints."""

import numpy as np

CLS, SEP, PAD = 2, 3, 0
MARKER = 7  # the token the synthetic tasks are about
END_MARKER = 6  # the last token of the synthetic answer span (unless the span is one token)
FILLER_LOW = 8  # ordinary tokens are drawn from [FILLER_LOW, vocabulary_size)


def token_presence_task(num_examples, sequence_length=12, vocabulary_size=50, seed=0):
    """Classification: label 1 iff token `MARKER` occurs in the sequence (half the examples have it).

    Returns `(x, y)`: backbone inputs (varied lengths, padding after) and int32 labels `(N,)`.
    """
    rng = np.random.default_rng(seed)
    token_ids = np.zeros((num_examples, sequence_length), "int32")
    padding_mask = np.zeros((num_examples, sequence_length), bool)
    labels = (np.arange(num_examples) % 2).astype("int32")
    rng.shuffle(labels)
    for row in range(num_examples):
        length = int(rng.integers(4, sequence_length + 1))
        token_ids[row, :length] = rng.integers(FILLER_LOW, vocabulary_size, length)
        token_ids[row, 0], token_ids[row, length - 1] = CLS, SEP
        if labels[row]:
            token_ids[row, int(rng.integers(1, length - 1))] = MARKER
        padding_mask[row, :length] = True
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
    return x, labels


def marker_span_task(num_examples, sequence_length=12, vocabulary_size=50, seed=0):
    """Span extraction: the answer starts at the `MARKER` token and ends at the `END_MARKER` token 0-2 tokens
    later (a span of 1-3 tokens).

    Returns `(x, y)`: backbone inputs and `{"start_positions", "end_positions"}` int32 `(N,)`.
    """
    rng = np.random.default_rng(seed)
    token_ids = np.zeros((num_examples, sequence_length), "int32")
    padding_mask = np.zeros((num_examples, sequence_length), bool)
    starts = np.zeros((num_examples,), "int32")
    ends = np.zeros((num_examples,), "int32")
    for row in range(num_examples):
        length = int(rng.integers(6, sequence_length + 1))
        token_ids[row, :length] = rng.integers(FILLER_LOW, vocabulary_size, length)
        token_ids[row, 0], token_ids[row, length - 1] = CLS, SEP
        starts[row] = int(rng.integers(1, length - 3))
        ends[row] = starts[row] + int(rng.integers(0, 3))
        token_ids[row, ends[row]] = END_MARKER
        token_ids[row, starts[row]] = MARKER
        padding_mask[row, :length] = True
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
    return x, {"start_positions": starts, "end_positions": ends}


def as_huggingface_inputs(x):
    import torch

    return {
        "input_ids": torch.tensor(x["token_ids"].astype("int64")),
        "token_type_ids": torch.tensor(x["segment_ids"].astype("int64")),
        "attention_mask": torch.tensor(x["padding_mask"].astype("int64")),
    }


def tiny_huggingface_config(**overrides):
    """A tiny `transformers.BertConfig` (exact GELU, as ours maps "gelu")."""
    import transformers

    return transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=24, hidden_act="gelu", **overrides,
    )


def write_original_checkpoint(directory, model, specs, backbone):
    """Write `model`'s weights as an original google-research/bert checkpoint (`bert_config.json` +
    `bert_model.ckpt.*`) with the foreign names of `specs`. TensorFlow only."""
    from keras_bert_impl.checkpoints.conversion import ORIGINAL, export_tensors
    from tests.helpers import original_bert_config, write_original_tf_checkpoint

    write_original_tf_checkpoint(directory, export_tensors(model, specs, ORIGINAL), original_bert_config(backbone))
