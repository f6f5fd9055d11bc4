"""SQuAD windowing and answer decoding as TensorFlow graph ops: `BertQuestionAnsweringPreprocessor`'s featurizer
and the exported question answerer's `serve_text`.

TensorFlow at the preprocessing edge: this module builds graph code that runs in `tf.data` and inside an
exported SavedModel (`export.serving_signatures` imports it from here); it is the in-graph counterpart of
`squad.squad_features` (windows, max context) and `squad.squad_decoding` (span selection), following
`run_squad.py`:

- The question is cut to `max_query_length` tokens; the context is split into windows of
  `max_tokens_for_doc = sequence_length - len(question) - 3` tokens whose starts are
  `min(max_tokens_for_doc, doc_stride)` apart (the original's "step" stride), the last window ending at the
  last context token. Every window is one feature `[CLS] question [SEP] window [SEP]`, padded to
  `sequence_length` like the original's features.
- A context token is "at max context" in the first window with the largest
  `min(left, right) + 0.01 * window length`.
- Decoding is `squad.span_ranking`, the decoder of `squad.decode_squad_predictions`, on the windows' token
  offsets: the served answer is the offline one (only the n-best list and its probabilities are not built).

Shape legend: B examples, F features (windows, all examples together), T `sequence_length`,
N context tokens of all examples together.
"""

import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.squad import span_ranking


def repair_utf8(text):
    """Replace invalid UTF-8 byte sequences in a tf.string tensor by U+FFFD (what the tokenizer sees)."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD, replace_control_characters=False
    )


def squad_windows(question_ids, context_ids, sequence_length, doc_stride, max_query_length):
    """Cut each example's context tokens into overlapping windows, as `squad.document_windows` ("step").

    Args:
        question_ids: int RaggedTensor `(B, None)`. Question token ids.
        context_ids: int RaggedTensor `(B, None)`. Context token ids.
        sequence_length: int. T, the packed length.
        doc_stride: int. Distance between window starts.
        max_query_length: int. Questions are cut to this many tokens.

    Returns:
        dict of `example_index` int64 `(F,)`, `question_ids` ragged `(F, None)` (the truncated question of
        each feature's example), `window_index` ragged int64 `(F, None)` (index of every window token in
        `context_ids.flat_values`), `window_length` int64 `(F,)`, `is_max_context` ragged bool `(F, None)`,
        and `num_windows` int64 `(B,)`.
    """
    question_ids = question_ids[:, :max_query_length]
    question_length = question_ids.row_lengths()  # (B,)
    num_tokens = context_ids.row_lengths()  # (B,)
    max_tokens_for_doc = sequence_length - question_length - 3  # (B,) >= 1, checked at export
    step = tf.minimum(max_tokens_for_doc, doc_stride)
    excess = tf.maximum(num_tokens - max_tokens_for_doc, 0)
    num_windows = 1 + (excess + step - 1) // step  # (B,); one empty window for an empty context

    windows = tf.ragged.range(num_windows)  # (B, None) window number k within its example
    example_index = windows.value_rowids()  # (F,)
    start = windows.flat_values * tf.gather(step, example_index)  # (F,)
    length = tf.minimum(tf.gather(num_tokens, example_index) - start, tf.gather(max_tokens_for_doc, example_index))
    position = tf.ragged.range(length)  # (F, None) position i inside the window
    feature_of_token = position.value_rowids()  # (W,) W = window tokens of all features
    base = tf.gather(context_ids.row_starts(), example_index) + start  # (F,)
    window_index = position.with_flat_values(position.flat_values + tf.gather(base, feature_of_token))

    # Max context: the original's score, in float64 as Python computes it; first window wins ties.
    i = position.flat_values
    token_window_length = tf.gather(length, feature_of_token)
    score = tf.cast(tf.minimum(i, token_window_length - 1 - i), tf.float64) + 0.01 * tf.cast(
        token_window_length, tf.float64
    )
    num_context_tokens = tf.shape(context_ids.flat_values, out_type=tf.int64)[0]
    token = window_index.flat_values  # (W,) which context token
    best_score = tf.math.unsorted_segment_max(score, token, num_context_tokens)
    has_best = tf.equal(score, tf.gather(best_score, token))
    no_feature = tf.shape(start, out_type=tf.int64)[0]
    first_best = tf.math.unsorted_segment_min(
        tf.where(has_best, feature_of_token, no_feature), token, num_context_tokens
    )
    is_max_context = position.with_flat_values(tf.equal(feature_of_token, tf.gather(first_best, token)))
    return {
        "example_index": example_index,
        "question_ids": tf.gather(question_ids, example_index),
        "window_index": window_index,
        "window_length": length,
        "is_max_context": is_max_context,
        "num_windows": num_windows,
    }


def window_packer(tokenizer, sequence_length):
    """The `SegmentPacker` of SQuAD features: `[CLS] question [SEP] window [SEP]` padded to
    `sequence_length` (the original's features: padded positions take part in the top-n choice)."""
    return SegmentPacker(
        sequence_length=sequence_length,
        cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id,
        padding="fixed",
    )


def windowed_features(tokenizer, packer, question, context, sequence_length, doc_stride, max_query_length):
    """Raw `(question, context)` batches -> the packed window features and what decoding needs.

    The one in-graph SQuAD featurization: the exported `serve_text` signature and
    `preprocessing.BertQuestionAnsweringPreprocessor` both call it. Row for row it equals
    `squad.convert_examples_to_features` (stride "step") on the same texts.

    Args:
        tokenizer: `BertTokenizer`.
        packer: `SegmentPacker` from `window_packer(tokenizer, sequence_length)`.
        question: tf.string `(B,)`.
        context: tf.string `(B,)`.
        sequence_length: int. T.
        doc_stride: int. Distance between window starts.
        max_query_length: int. Questions are cut to this many tokens.

    Returns:
        dict of `inputs` (the model inputs, `(F, T)` each), `windows` (from `squad_windows`), `context`
        (tf.string `(B,)`, invalid UTF-8 repaired: what the byte offsets index), `context_starts` and
        `context_ends` (int64 ragged `(B, None)` byte offsets of the context tokens).
    """
    context = repair_utf8(context)
    question_ids = tokenizer.tokenize_tensor(question)
    context_ids, context_starts, context_ends = tokenizer.tokenize_with_offsets_tensor(context)
    windows = squad_windows(question_ids, context_ids, sequence_length, doc_stride, max_query_length)
    window_ids = tf.gather(context_ids.flat_values, windows["window_index"])  # (F, None)
    inputs = packer(windows["question_ids"], window_ids)  # (F, T) each; windows always fit
    return {
        "inputs": inputs,
        "windows": windows,
        "context": context,
        "context_starts": context_starts,
        "context_ends": context_ends,
    }


def _place_in_sequence(values, offset, length, sequence_length, fill):
    """Ragged per-feature values `(F, None)` -> dense `(F, T)` with row f's values at columns
    `offset[f] .. offset[f] + length[f] - 1` and `fill` elsewhere."""
    fill = tf.cast(fill, values.dtype)
    dense = values.to_tensor(default_value=fill)  # (F, L_max)
    dense = tf.concat([dense, tf.fill([tf.shape(dense)[0], 1], fill)], axis=1)  # width >= 1 even if all empty
    column = tf.range(sequence_length, dtype=tf.int64)[tf.newaxis] - offset[:, tf.newaxis]  # (F, T)
    inside = (column >= 0) & (column < length[:, tf.newaxis])
    width = tf.shape(dense, out_type=tf.int64)[1]
    gathered = tf.gather(dense, tf.clip_by_value(column, 0, width - 1), batch_dims=1)
    return tf.where(inside, gathered, fill), inside


def decode_best_spans(start_logits, end_logits, windows, context_starts, context_ends, n_best_size, max_answer_length,
                      version_2_with_negative=False):
    """Best valid answer span of every example over all its windows, by `squad.span_ranking` (the decoder of
    `squad.decode_squad_predictions`).

    Args:
        start_logits: float `(F, T)`. Start logits of the features `squad_windows` describes.
        end_logits: float `(F, T)`. End logits.
        windows: dict from `squad_windows`.
        context_starts: int64 RaggedTensor `(B, None)`. Byte offset where each context token starts.
        context_ends: int64 RaggedTensor `(B, None)`. Byte offset where each context token ends (exclusive).
        n_best_size: int. Start and end candidates per feature.
        max_answer_length: int. Longest answer in tokens.
        version_2_with_negative: bool. SQuAD v2.0 (the `n_best_size=1` null rule). Defaults to False.

    Returns:
        dict of `(B,)` tensors: `squad.span_ranking.best_spans`' (`found`, `score`, `start_logit`,
        `end_logit`, `null_score`, `null_odds`, ...) plus `byte_start` and `byte_end` int64 (the best span's
        context bytes, 0 when none).
    """
    sequence_length = start_logits.shape[1]
    doc_offset = windows["question_ids"].row_lengths() + 2  # [CLS] question [SEP]
    length = windows["window_length"]
    is_max_context, in_document = _place_in_sequence(
        windows["is_max_context"], doc_offset, length, sequence_length, False
    )  # (F, T) each
    example_index = windows["example_index"]
    ranked = span_ranking.rank_spans(start_logits, end_logits, example_index, in_document & is_max_context,
                                     in_document, n_best_size, max_answer_length)
    num_examples = tf.shape(windows["num_windows"], out_type=tf.int64)[0]
    best = span_ranking.best_spans(ranked, start_logits, end_logits, example_index, num_examples, n_best_size,
                                   version_2_with_negative)
    window_index = windows["window_index"]
    found = best["found"]
    for name, position, offsets in (("byte_start", "start", context_starts), ("byte_end", "end", context_ends)):
        window_offsets = window_index.with_flat_values(tf.gather(offsets.flat_values, window_index.flat_values))
        dense, _ = _place_in_sequence(window_offsets, doc_offset, length, sequence_length, tf.constant(-1, tf.int64))
        # With B > 0 there is a feature 0; an example without a valid span reads (0, 0) and is masked.
        best[name] = tf.where(found, tf.gather_nd(dense, tf.stack([best["feature"], best[position]], axis=1)), 0)
    return best


def byte_span_to_answer(context, byte_start, byte_end):
    """Context bytes `[byte_start, byte_end)` -> (answer text, character start, character end).

    Args:
        context: tf.string `(B,)`, valid UTF-8 (see `repair_utf8`).
        byte_start: int64 `(B,)`.
        byte_end: int64 `(B,)`, exclusive.

    Returns:
        (tf.string `(B,)`, int64 `(B,)`, int64 `(B,)`): the answer and its Unicode code point offsets.
    """
    answer = tf.strings.substr(context, byte_start, byte_end - byte_start, unit="BYTE")
    prefix = tf.strings.substr(context, tf.zeros_like(byte_start), byte_start, unit="BYTE")
    start_char = tf.cast(tf.strings.length(prefix, unit="UTF8_CHAR"), tf.int64)
    end_char = start_char + tf.cast(tf.strings.length(answer, unit="UTF8_CHAR"), tf.int64)
    return answer, start_char, end_char


def select_answers(context, best, version_2_with_negative=False, null_score_diff_threshold=0.0):
    """The answers `decode_squad_predictions` predicts, from `decode_best_spans`' best spans: v1.1 the best
    span ("" when there is none); v2.0 "" iff the null odds exceed `null_score_diff_threshold`.

    Args:
        context: tf.string `(B,)`, the repaired contexts (`windowed_features(...)["context"]`).
        best: dict from `decode_best_spans`.
        version_2_with_negative: bool. Defaults to False.
        null_score_diff_threshold: float. Defaults to 0.0.

    Returns:
        dict of `answer` tf.string `(B,)`, `start_char` / `end_char` int64 `(B,)` (code point offsets in the
        context, -1 for ""), `score` float32 `(B,)` (the best span's summed logit, -inf when none), and for
        v2.0 `null_odds` float32 `(B,)`.
    """
    found = best["found"]
    if version_2_with_negative:
        found &= ~(best["null_odds"] > null_score_diff_threshold)
    answer, start_char, end_char = byte_span_to_answer(context, best["byte_start"], best["byte_end"])
    outputs = {
        "answer": tf.where(found, answer, ""),
        "start_char": tf.where(found, start_char, -1),
        "end_char": tf.where(found, end_char, -1),
        "score": tf.cast(best["score"], tf.float32),
    }
    if version_2_with_negative:
        outputs["null_odds"] = tf.cast(best["null_odds"], tf.float32)
    return outputs
