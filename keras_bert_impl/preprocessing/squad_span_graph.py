"""SQuAD windowing and answer decoding as TensorFlow graph ops (in `tf.data` and an exported SavedModel), after
`run_squad.py`: the featurizer of `BertQuestionAnsweringPreprocessor` and `convert_examples_to_features`, and the
exported `serve_text`, which decodes with `squad.span_ranking` as `squad.decode_squad_predictions` does.

Shape legend: B examples, F features (windows, all examples together), T `sequence_length`,
N context tokens of all examples together.
"""

import itertools
import logging

import numpy as np
import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.squad import span_ranking
from keras_bert_impl.squad.squad_decoding import SquadFeatures

logger = logging.getLogger(__name__)


def repair_utf8(text):
    """Replace invalid UTF-8 byte sequences in a tf.string tensor by U+FFFD (what the tokenizer sees)."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD,
                                        replace_control_characters=False)


STRIDE_SEMANTICS = ("step", "overlap")


def check_window_settings(sequence_length, max_query_length, doc_stride, stride_semantics="step"):
    """Raise a clear `ValueError` unless every question leaves windows of context tokens that `doc_stride` advances."""
    min_doc_tokens = sequence_length - max_query_length - 3  # what the longest question leaves per window
    if min_doc_tokens < 1:
        raise ValueError(f"sequence_length ({sequence_length}) must exceed max_query_length ({max_query_length}) + 3 "
                         f"so that a window holds at least one document token.")
    if stride_semantics not in STRIDE_SEMANTICS:
        raise ValueError(f"stride_semantics must be one of {STRIDE_SEMANTICS}, got {stride_semantics!r}.")
    if stride_semantics == "step" and doc_stride < 1:
        raise ValueError(f"doc_stride must be at least 1 with stride_semantics='step', got {doc_stride}.")
    if stride_semantics == "overlap" and not 0 <= doc_stride < min_doc_tokens:
        raise ValueError(f"With stride_semantics='overlap', doc_stride ({doc_stride}) must be >= 0 and smaller than "
                         f"sequence_length - max_query_length - 3 = {min_doc_tokens} (the smallest window).")


def _answer_token_spans(token_starts, token_ends, answer_start, answer_end):
    """The tightest token span `(first, last)` `(B,)` covering each answer `[answer_start, answer_end)`: the first
    token ending after its start, the last starting before its end; `first > last` where no token overlaps it."""
    example = token_starts.value_rowids()  # (N,)
    position = tf.ragged.range(token_starts.row_lengths()).flat_values  # (N,) token index within its context
    num_examples = token_starts.nrows()
    first = tf.math.unsorted_segment_min(  # int64 max for an example without such a token
        tf.where(token_ends.flat_values > tf.gather(answer_start, example), position, position.dtype.max),
        example, num_examples)
    last = tf.math.unsorted_segment_max(
        tf.where(token_starts.flat_values < tf.gather(answer_end, example), position, -1), example, num_examples)
    return first, last


def squad_windows(question_ids, context_ids, sequence_length, doc_stride, max_query_length, stride_semantics="step",
                  answer_spans=None):
    """Cut each example's context tokens into windows with max-context flags (and training labels), as
    `run_squad.py`'s `convert_examples_to_features`.

    Windows hold `max_tokens_for_doc = sequence_length - len(question) - 3` context tokens; their starts are
    `min(max_tokens_for_doc, doc_stride)` apart ("step", the original), or they share `doc_stride` tokens
    ("overlap", Hugging Face's). An empty context gets one empty window. A token is "at max context" in the first
    window with the largest `min(left, right) + 0.01 * window length`. Training labels (`answer_spans`): the
    answer's tightest token span in `[CLS] question [SEP] window [SEP]`, 0 ([CLS]) for a window that does not
    hold all of it or no answer (`answer_start < 0`); an example whose answer covers no token gets no window.

    Args:
        question_ids, context_ids: int RaggedTensors `(B, None)`. Question and context token ids.
        sequence_length: int. T, the packed length.
        doc_stride: int. See `stride_semantics` (checked by `check_window_settings`).
        max_query_length: int. Questions are cut to this many tokens.
        stride_semantics: str. "step" or "overlap". Defaults to "step".
        answer_spans: None, or `(token_starts, token_ends, answer_start, answer_end)`: int64 RaggedTensors
            `(B, None)` of each context token's offsets (end exclusive) and int64 `(B,)` answer offsets in the
            same unit (characters or bytes). Defaults to None (no labels).

    Returns:
        dict of `example_index` int64 `(F,)`, `question_ids` ragged `(F, None)` (the truncated question of
        each feature's example), `window_start` int64 `(F,)` (its first context token), `window_index` ragged
        int64 `(F, None)` (index of every window token in `context_ids.flat_values`), `window_length` int64
        `(F,)`, `is_max_context` ragged bool `(F, None)`, and `num_windows` int64 `(B,)`; with `answer_spans`
        also `start_positions`, `end_positions` int32 `(F,)` and `skipped` bool `(B,)`.
    """
    question_ids = question_ids[:, :max_query_length]
    question_length = question_ids.row_lengths()  # (B,)
    num_tokens = context_ids.row_lengths()  # (B,)
    max_tokens_for_doc = sequence_length - question_length - 3  # (B,) >= 1, see check_window_settings
    step = doc_stride if stride_semantics == "step" else max_tokens_for_doc - doc_stride
    step = tf.minimum(max_tokens_for_doc, step)
    excess = tf.maximum(num_tokens - max_tokens_for_doc, 0)
    num_windows = 1 + (excess + step - 1) // step  # (B,); one empty window for an empty context
    if answer_spans is not None:
        has_answer = answer_spans[2] >= 0
        first, last = _answer_token_spans(*answer_spans)
        skipped = has_answer & (first > last)
        num_windows = tf.where(skipped, tf.zeros_like(num_windows), num_windows)

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
    score = (tf.cast(tf.minimum(i, token_window_length - 1 - i), tf.float64)
             + 0.01 * tf.cast(token_window_length, tf.float64))
    num_context_tokens = tf.shape(context_ids.flat_values, out_type=tf.int64)[0]
    token = window_index.flat_values  # (W,) which context token
    best_score = tf.math.unsorted_segment_max(score, token, num_context_tokens)
    has_best = tf.equal(score, tf.gather(best_score, token))
    no_feature = tf.shape(start, out_type=tf.int64)[0]
    first_best = tf.math.unsorted_segment_min(tf.where(has_best, feature_of_token, no_feature), token,
                                              num_context_tokens)
    is_max_context = position.with_flat_values(tf.equal(feature_of_token, tf.gather(first_best, token)))
    windows = {"example_index": example_index, "question_ids": tf.gather(question_ids, example_index),
               "window_start": start, "window_index": window_index, "window_length": length,
               "is_max_context": is_max_context, "num_windows": num_windows}
    if answer_spans is not None:
        # Window-relative span; inside the window it moves by the [CLS] question [SEP] before the window.
        span_first, span_last = (tf.gather(value, example_index) - start for value in (first, last))
        inside = tf.gather(has_answer, example_index) & (span_first >= 0) & (span_last < length)
        doc_offset = tf.gather(question_length, example_index) + 2
        for name, value in (("start_positions", span_first), ("end_positions", span_last)):
            windows[name] = tf.cast(tf.where(inside, value + doc_offset, 0), tf.int32)
        windows["skipped"] = skipped
    return windows


def _answer_bytes(context, answers):
    """`{"text", "answer_start"}` (code points, -1 for no answer) -> UTF-8 byte offsets `(B,)` in `context`."""
    char_start = tf.cast(answers["answer_start"], tf.int64)
    has_answer = char_start >= 0
    char_start = tf.maximum(char_start, 0)
    char_length = tf.strings.length(answers["text"], unit="UTF8_CHAR")
    byte_start = tf.strings.length(tf.strings.substr(context, tf.zeros_like(char_start), char_start, unit="UTF8_CHAR"))
    byte_length = tf.strings.length(tf.strings.substr(context, char_start, tf.cast(char_length, tf.int64),
                                                      unit="UTF8_CHAR"))
    byte_start = tf.cast(byte_start, tf.int64)
    return tf.where(has_answer, byte_start, -1), byte_start + tf.cast(byte_length, tf.int64)


def windowed_features(tokenizer, question, context, sequence_length, doc_stride, max_query_length, answers=None):
    """Raw `(question, context)` batches -> the packed window features, their labels and what decoding needs.

    Args:
        tokenizer: `BertTokenizer`.
        question, context: tf.string `(B,)`.
        sequence_length: int. T.
        doc_stride: int. Distance between window starts.
        max_query_length: int. Questions are cut to this many tokens.
        answers: None, or a dict of `text` tf.string `(B,)` and `answer_start` int `(B,)` (the answer's first
            code point in the context, -1 for no answer): training labels. Defaults to None.

    Returns:
        dict of `inputs` (the model inputs, `(F, T)` each), `windows` (from `squad_windows`, with the labels
        when `answers` is given), `context` (tf.string `(B,)`, invalid UTF-8 repaired: what the byte offsets
        index), `context_starts` and `context_ends` (int64 ragged `(B, None)` byte offsets of the context tokens).
    """
    context = repair_utf8(context)
    question_ids = tokenizer.tokenize_tensor(question)
    context_ids, context_starts, context_ends = tokenizer.tokenize_with_offsets_tensor(context)
    answer_spans = None if answers is None else (context_starts, context_ends, *_answer_bytes(context, answers))
    windows = squad_windows(question_ids, context_ids, sequence_length, doc_stride, max_query_length,
                            answer_spans=answer_spans)
    return {"inputs": _pack_windows(tokenizer, sequence_length, windows, context_ids), "windows": windows,
            "context": context, "context_starts": context_starts, "context_ends": context_ends}


def _pack_windows(tokenizer, sequence_length, windows, context_ids):
    """The SQuAD features `[CLS] question [SEP] window [SEP]`, padded to `sequence_length` as the original's (padded
    positions take part in the top-n choice): `(F, T)` each."""
    packer = SegmentPacker(sequence_length, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    window_ids = tf.gather(context_ids.flat_values, windows["window_index"])  # (F, None)
    return packer(windows["question_ids"], window_ids)  # (F, T) each; windows always fit


def _ragged(rows):
    """Python lists of ints -> an int64 RaggedTensor `(len(rows), None)` (also for no rows)."""
    lengths = np.array([len(row) for row in rows], np.int64)
    return tf.RaggedTensor.from_row_lengths(np.fromiter(itertools.chain.from_iterable(rows), np.int64), lengths)


def convert_examples_to_features(examples, tokenizer, sequence_length=384, doc_stride=128, max_query_length=64,
                                 is_training=False, stride_semantics="step"):
    """Turns SQuAD examples into windowed features, as `run_squad.py`'s `convert_examples_to_features`.

    `squad_windows` runs eagerly on the tokenizer's character offsets (not the original's whitespace words), which
    decoding slices. Training labels come from each example's first answer; one that covers no token is skipped
    (logged, and listed in `skipped_example_indices`).

    Args:
        examples: sequence of `SquadExample` (e.g. from `read_squad_examples`).
        tokenizer: `BertTokenizer`, or anything with its `tokenize`, `tokenize_with_offsets` and special ids.
        sequence_length: int. T, the packed length. Defaults to 384.
        doc_stride: int. Window stride; see `stride_semantics`. Defaults to 128.
        max_query_length: int. Questions are truncated to this many tokens. Defaults to 64.
        is_training: bool. Labels (`start_positions`, `end_positions`) from the first answer. Defaults to False.
        stride_semantics: str. "step" (the original: `doc_stride` between window starts) or "overlap" (Hugging
            Face: `doc_stride` tokens shared by consecutive windows). Defaults to "step".

    Returns:
        `squad.SquadFeatures`.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> from keras_bert_impl.squad import SquadAnswer, SquadExample
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "paris", "?",
    ...                            "is", "in", "france", "."])
    >>> example = SquadExample("q", "Where is Paris?", "Paris is in France.", (SquadAnswer("France", 12),))
    >>> features = convert_examples_to_features([example], tokenizer, sequence_length=10, doc_stride=2,
    ...                                         max_query_length=4, is_training=True)
    >>> features.start_positions.tolist(), features.end_positions.tolist()
    ([0, 7], [0, 7])
    """
    check_window_settings(sequence_length, max_query_length, doc_stride, stride_semantics)
    examples = list(examples)
    question_ids = _ragged(tokenizer.tokenize([example.question_text for example in examples]))
    context_tokens = tokenizer.tokenize_with_offsets([example.context_text for example in examples])
    context_ids, char_starts, char_ends = (_ragged([tokens[part] for tokens in context_tokens]) for part in range(3))
    answer_spans = None
    if is_training:
        for example in examples:
            if not example.is_impossible and (not example.answers or example.answers[0].answer_start is None):
                raise ValueError(f"Training example {example.qas_id!r} needs an answer with answer_start (or "
                                 f"is_impossible=True); read training files with read_squad_examples(path, "
                                 f"is_training=True).")
        answer_offsets = [(-1, -1) if example.is_impossible else (example.answers[0].answer_start,
                                                                  example.answers[0].answer_end)
                          for example in examples]
        answer_start, answer_end = np.array(answer_offsets, np.int64).reshape(-1, 2).T
        answer_spans = (char_starts, char_ends, tf.constant(answer_start), tf.constant(answer_end))
    windows = squad_windows(question_ids, context_ids, sequence_length, doc_stride, max_query_length,
                            stride_semantics, answer_spans)
    inputs = _pack_windows(tokenizer, sequence_length, windows, context_ids)
    window_offsets = {name: _in_sequence(windows, offsets.flat_values, sequence_length, -1)[0]
                      for name, offsets in (("token_char_starts", char_starts), ("token_char_ends", char_ends))}
    is_max_context, _ = _in_sequence(windows, windows["is_max_context"], sequence_length, False)
    skipped = np.flatnonzero(windows["skipped"].numpy()).tolist() if is_training else []
    for index in skipped:
        logger.warning("Skipping training example %r: its answer %r covers no token of the tokenized context.",
                       examples[index].qas_id, examples[index].answers[0].text)
    no_labels = tf.zeros_like(windows["window_length"], tf.int32)
    return SquadFeatures(
        **{name: value.numpy() for name, value in inputs.items()},
        start_positions=windows.get("start_positions", no_labels).numpy(),
        end_positions=windows.get("end_positions", no_labels).numpy(),
        example_index=windows["example_index"].numpy().astype(np.int32),
        window_start=windows["window_start"].numpy().astype(np.int32),
        token_char_starts=window_offsets["token_char_starts"].numpy().astype(np.int32),
        token_char_ends=window_offsets["token_char_ends"].numpy().astype(np.int32),
        token_is_max_context=is_max_context.numpy(), skipped_example_indices=skipped)


def _in_sequence(windows, values, sequence_length, fill):
    """Values of the window tokens at their columns of `[CLS] question [SEP] window [SEP]`: dense `(F, T)` with
    `fill` elsewhere, and bool `(F, T)` where the window is. `values`: ragged `(F, None)` per window token, or
    `(N,)` per context token (gathered by `windows["window_index"]`)."""
    window_index = windows["window_index"]
    if not isinstance(values, tf.RaggedTensor):
        values = window_index.with_flat_values(tf.gather(values, window_index.flat_values))
    offset = windows["question_ids"].row_lengths() + 2  # (F,) [CLS] question [SEP]
    fill = tf.cast(fill, values.dtype)
    dense = values.to_tensor(default_value=fill)  # (F, L_max)
    dense = tf.concat([dense, tf.fill([tf.shape(dense)[0], 1], fill)], axis=1)  # width >= 1 even if all empty
    column = tf.range(sequence_length, dtype=tf.int64)[tf.newaxis] - offset[:, tf.newaxis]  # (F, T)
    inside = (column >= 0) & (column < windows["window_length"][:, tf.newaxis])
    width = tf.shape(dense, out_type=tf.int64)[1]
    gathered = tf.gather(dense, tf.clip_by_value(column, 0, width - 1), batch_dims=1)
    return tf.where(inside, gathered, fill), inside


def decode_best_spans(start_logits, end_logits, windows, context_starts, context_ends, n_best_size, max_answer_length,
                      version_2_with_negative=False):
    """Best valid answer span of every example over all its windows, by `squad.span_ranking` (the decoder of
    `squad.decode_squad_predictions`).

    Args:
        start_logits, end_logits: float `(F, T)`. The logits of the features `windows` describes.
        windows: dict from `squad_windows`.
        context_starts, context_ends: int64 RaggedTensors `(B, None)`. Each context token's byte span.
        n_best_size, max_answer_length: int. Start and end candidates per feature; longest answer in tokens.
        version_2_with_negative: bool. SQuAD v2.0 (the `n_best_size=1` null rule). Defaults to False.

    Returns:
        dict of `(B,)` tensors: `squad.span_ranking.best_spans`' (`found`, `score`, `start_logit`,
        `end_logit`, `null_score`, `null_odds`, ...) plus `byte_start` and `byte_end` int64 (the best span's
        context bytes, 0 when none).
    """
    sequence_length = start_logits.shape[1]
    is_max_context, in_document = _in_sequence(windows, windows["is_max_context"], sequence_length, False)  # (F, T)
    example_index = windows["example_index"]
    ranked = span_ranking.rank_spans(start_logits, end_logits, example_index, in_document & is_max_context,
                                     in_document, n_best_size, max_answer_length)
    num_examples = tf.shape(windows["num_windows"], out_type=tf.int64)[0]
    best = span_ranking.best_spans(ranked, start_logits, end_logits, example_index, num_examples, n_best_size,
                                   version_2_with_negative)
    found = best["found"]
    for name, position, offsets in (("byte_start", "start", context_starts), ("byte_end", "end", context_ends)):
        dense, _ = _in_sequence(windows, offsets.flat_values, sequence_length, -1)
        # With B > 0 there is a feature 0; an example without a valid span reads (0, 0) and is masked.
        best[name] = tf.where(found, tf.gather_nd(dense, tf.stack([best["feature"], best[position]], axis=1)), 0)
    return best


def byte_span_to_answer(context, byte_start, byte_end):
    """Context bytes `[byte_start, byte_end)` -> (answer text, character start, character end).

    Args:
        context: tf.string `(B,)`, valid UTF-8 (see `repair_utf8`).
        byte_start, byte_end: int64 `(B,)`, end exclusive.

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
        version_2_with_negative, null_score_diff_threshold: bool and float. Default to False and 0.0.

    Returns:
        dict of `answer` tf.string `(B,)`, `start_char` / `end_char` int64 `(B,)` (code point offsets in the
        context, -1 for ""), `score` float32 `(B,)` (the best span's summed logit, -inf when none), and for
        v2.0 `null_odds` float32 `(B,)`.
    """
    found = best["found"]
    if version_2_with_negative:
        found &= ~(best["null_odds"] > null_score_diff_threshold)
    answer, start_char, end_char = byte_span_to_answer(context, best["byte_start"], best["byte_end"])
    outputs = {"answer": tf.where(found, answer, ""), "start_char": tf.where(found, start_char, -1),
               "end_char": tf.where(found, end_char, -1), "score": tf.cast(best["score"], tf.float32)}
    if version_2_with_negative:
        outputs["null_odds"] = tf.cast(best["null_odds"], tf.float32)
    return outputs


def answers_from_logits(start_logits, end_logits, features, n_best_size, max_answer_length,
                        version_2_with_negative=False, null_score_diff_threshold=0.0):
    """`select_answers` of `decode_best_spans` on the logits of `windowed_features`' windows: the answer of every
    question, as `export_saved_model`'s `serve_text` returns it.

    Args:
        start_logits, end_logits: float `(F, T)`. The model's logits on `features["inputs"]`.
        features: dict from `windowed_features`.
        n_best_size, max_answer_length, version_2_with_negative: as in `decode_best_spans`.
        null_score_diff_threshold: float. As in `select_answers`. Defaults to 0.0.

    Returns:
        dict from `select_answers` (`answer` tf.string `(B,)`, ...).
    """
    best = decode_best_spans(start_logits, end_logits, features["windows"], features["context_starts"],
                             features["context_ends"], n_best_size, max_answer_length, version_2_with_negative)
    return select_answers(features["context"], best, version_2_with_negative, null_score_diff_threshold)
