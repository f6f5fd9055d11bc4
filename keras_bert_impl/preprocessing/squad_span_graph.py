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
- Per feature, only the `n_best_size` highest start and end logits are candidates (ties: lower index
  first); a span is valid when both ends are context tokens of the window, the start is at max context,
  `start <= end` and it holds at most `max_answer_length` tokens. The answer is the valid span with the
  largest `start_logit + end_logit` over all windows of the example.
- Exact ties of the summed logits are broken as `squad.decode_squad_predictions` breaks them (its stable
  sort of candidates listed window by window, start rank then end rank): the earlier window, then the
  higher start logit, then the lower start position, then the lower end position. SQuAD v2.0 null odds are
  computed as there, `(null score - start logit) - end logit`, and with `n_best_size=1` a null answer that
  outranks every span hides the span (odds +inf), as the one-entry n-best list does there. So the served
  answer is the offline one (pinned on the SQuAD sample by `tests/preprocessing/test_squad_span_graph.py`); only
  the n-best list (and its softmax probabilities) is not built: `score` is the summed logit.

Shape legend: B examples, F features (windows, all examples together), T `sequence_length`,
A `max_answer_length`, N context tokens of all examples together.
"""

import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker


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


def decode_best_spans(
    start_logits,
    end_logits,
    windows,
    context_starts,
    context_ends,
    n_best_size,
    max_answer_length,
):
    """Best valid answer span of every example over all its windows (see the module docstring).

    Args:
        start_logits: float `(F, T)`. Start logits of the features `squad_windows` describes.
        end_logits: float `(F, T)`. End logits.
        windows: dict from `squad_windows`.
        context_starts: int64 RaggedTensor `(B, None)`. Byte offset where each context token starts.
        context_ends: int64 RaggedTensor `(B, None)`. Byte offset where each context token ends (exclusive).
        n_best_size: int. Start and end candidates per feature.
        max_answer_length: int. Longest answer in tokens.

    Returns:
        dict of `found` bool `(B,)` (a valid span exists), `score` float64 `(B,)` (start + end logit of the
        best span, -inf when none), `start_logit` and `end_logit` float64 `(B,)` (its two logits, -inf when
        none), `byte_start` and `byte_end` int64 `(B,)` (its context bytes, 0 when
        none), and `null_score` float64 `(B,)` (the smallest `start_logits[f, 0] + end_logits[f, 0]` over the
        example's features, the SQuAD v2.0 no-answer score).
    """
    start_logits = tf.cast(start_logits, tf.float64)  # Python decoding sums float32 logits in float64
    end_logits = tf.cast(end_logits, tf.float64)
    sequence_length = start_logits.shape[1]
    example_index = windows["example_index"]
    length = windows["window_length"]
    doc_offset = windows["question_ids"].row_lengths() + 2  # [CLS] question [SEP]
    is_max_context, in_document = _place_in_sequence(
        windows["is_max_context"], doc_offset, length, sequence_length, False
    )  # (F, T) each
    window_index = windows["window_index"]
    byte_starts, _ = _place_in_sequence(
        window_index.with_flat_values(tf.gather(context_starts.flat_values, window_index.flat_values)),
        doc_offset, length, sequence_length, tf.constant(-1, tf.int64),
    )
    byte_ends, _ = _place_in_sequence(
        window_index.with_flat_values(tf.gather(context_ends.flat_values, window_index.flat_values)),
        doc_offset, length, sequence_length, tf.constant(-1, tf.int64),
    )

    k = min(n_best_size, sequence_length)

    def in_top_k(logits):
        # top_k puts the lower index first among equal values, as the stable argsort of the original.
        indices = tf.math.top_k(logits, k=k, sorted=True).indices  # (F, k)
        return tf.reduce_any(tf.one_hot(indices, sequence_length, on_value=True, off_value=False), axis=1)

    valid_start = in_top_k(start_logits) & in_document & is_max_context  # (F, T)
    valid_end = in_top_k(end_logits) & in_document  # (F, T)

    # Pair (start s, end s + d) for d < A: a band instead of all T x T pairs.
    end_position = tf.range(sequence_length)[:, tf.newaxis] + tf.range(max_answer_length)[tf.newaxis]  # (T, A)
    end_inside = end_position < sequence_length
    end_clipped = tf.minimum(end_position, sequence_length - 1)
    end_logit_band = tf.gather(end_logits, end_clipped, axis=1)  # (F, T, A)
    valid_end_band = tf.gather(valid_end, end_clipped, axis=1) & end_inside  # (F, T, A)
    valid = valid_start[:, :, tf.newaxis] & valid_end_band
    start_logit_band = tf.broadcast_to(start_logits[:, :, tf.newaxis], tf.shape(end_logit_band))  # (F, T, A)
    pair_score = tf.where(valid, start_logit_band + end_logit_band, -float("inf"))
    num_features = tf.shape(pair_score)[0]
    flat_score = tf.reshape(pair_score, [num_features, -1])  # (F, T * A)
    feature_score = tf.reduce_max(flat_score, axis=1)  # (F,)
    # Ties of the summed logit, as decode_squad_predictions: higher start logit, then lower start, lower end.
    at_best = tf.reshape(valid, [num_features, -1]) & tf.equal(flat_score, feature_score[:, tf.newaxis])
    flat_start_logit = tf.where(at_best, tf.reshape(start_logit_band, [num_features, -1]), -float("inf"))
    at_best &= tf.equal(flat_start_logit, tf.reduce_max(flat_start_logit, axis=1, keepdims=True))
    num_pairs = sequence_length * max_answer_length
    pair_index = tf.range(num_pairs, dtype=tf.int32)[tf.newaxis]  # row-major (start, length): lowest first
    best_pair = tf.reduce_min(tf.where(at_best, pair_index, num_pairs), axis=1)  # (F,)
    best_pair = tf.where(best_pair < num_pairs, best_pair, 0)  # no valid span: (0, 0), never read
    best_start = best_pair // max_answer_length
    best_end = best_start + best_pair % max_answer_length

    # Best window of each example: the first one on ties (a stable sort keeps window order).
    num_examples = tf.shape(windows["num_windows"], out_type=tf.int64)[0]
    by_example = tf.RaggedTensor.from_value_rowids(feature_score, example_index, nrows=num_examples)
    # One -inf column more than the longest row keeps the reductions defined for an empty batch.
    dense = by_example.to_tensor(default_value=-float("inf"))  # (B, W_max)
    dense = tf.concat([dense, tf.fill([tf.shape(dense)[0], 1], tf.constant(-float("inf"), dense.dtype))], axis=1)
    example_score = tf.reduce_max(dense, axis=1)  # (B,)
    column = tf.range(tf.shape(dense, out_type=tf.int64)[1], dtype=tf.int64)[tf.newaxis]
    best_window = tf.reduce_min(
        tf.where(tf.equal(dense, example_score[:, tf.newaxis]), column, tf.shape(dense, out_type=tf.int64)[1]),
        axis=1,
    )  # (B,); every example has a window, so column 0 when none has a valid span
    feature = by_example.row_starts() + best_window  # (B,)
    found = example_score > -float("inf")
    safe_feature = tf.where(found, feature, 0)
    position = tf.stack([safe_feature, tf.cast(tf.gather(best_start, safe_feature), tf.int64)], axis=1)
    end_pos = tf.stack([safe_feature, tf.cast(tf.gather(best_end, safe_feature), tf.int64)], axis=1)
    # With B > 0 there is a feature 0; an example without a valid span reads it and is masked.
    byte_start = tf.where(found, tf.gather_nd(byte_starts, position), 0)
    byte_end = tf.where(found, tf.gather_nd(byte_ends, end_pos), 0)
    start_logit = tf.where(found, tf.gather_nd(start_logits, position), -float("inf"))
    end_logit = tf.where(found, tf.gather_nd(end_logits, end_pos), -float("inf"))

    null_by_example = tf.RaggedTensor.from_value_rowids(
        start_logits[:, 0] + end_logits[:, 0], example_index, nrows=num_examples
    )
    null_score = tf.reduce_min(null_by_example, axis=1)
    return {
        "found": found,
        "score": example_score,
        "start_logit": start_logit,
        "end_logit": end_logit,
        "byte_start": byte_start,
        "byte_end": byte_end,
        "null_score": null_score,
    }


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


def select_answers(
    context, best, n_best_size, version_2_with_negative=False, null_score_diff_threshold=0.0
):
    """The answers `decode_squad_predictions` predicts, from `decode_best_spans`' best spans.

    v1.1: the best span ("" when there is none). v2.0: "" iff the null odds
    `(null score - start logit) - end logit` exceed `null_score_diff_threshold` (+inf without a span, and
    with `n_best_size=1` when the null score outranks the span: the one-entry n-best list then holds only
    the null answer).

    Args:
        context: tf.string `(B,)`, the repaired contexts (`windowed_features(...)["context"]`).
        best: dict from `decode_best_spans`.
        n_best_size: int.
        version_2_with_negative: bool. Defaults to False.
        null_score_diff_threshold: float. Defaults to 0.0.

    Returns:
        dict of `answer` tf.string `(B,)`, `start_char` / `end_char` int64 `(B,)` (code point offsets in the
        context, -1 for ""), `score` float32 `(B,)` (the best span's summed logit, -inf when none), and for
        v2.0 `null_odds` float32 `(B,)`.
    """
    found = best["found"]
    null_odds = None
    if version_2_with_negative:
        infinity = tf.constant(float("inf"), best["null_score"].dtype)
        null_odds = tf.where(found, (best["null_score"] - best["start_logit"]) - best["end_logit"], infinity)
        if n_best_size == 1:
            null_odds = tf.where(best["null_score"] > best["score"], infinity, null_odds)
        found &= ~(null_odds > null_score_diff_threshold)
    answer, start_char, end_char = byte_span_to_answer(context, best["byte_start"], best["byte_end"])
    outputs = {
        "answer": tf.where(found, answer, ""),
        "start_char": tf.where(found, start_char, -1),
        "end_char": tf.where(found, end_char, -1),
        "score": tf.cast(best["score"], tf.float32),
    }
    if null_odds is not None:
        outputs["null_odds"] = tf.cast(null_odds, tf.float32)
    return outputs
