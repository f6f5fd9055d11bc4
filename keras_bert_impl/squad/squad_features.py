"""SQuAD examples -> fixed-length model features (sliding document windows), after `run_squad.py`.

Each example becomes one or more features `[CLS] question [SEP] document window [SEP]`:

- The question is cut to `max_query_length` tokens (an over-long question is truncated, never an error).
- The document (context) is tokenized once; windows hold `max_tokens_for_doc = sequence_length -
  len(question) - 3` tokens. With `stride_semantics="step"` (the original) the next window starts
  `min(window length, doc_stride)` tokens after the previous one; with `"overlap"` (Hugging Face's tokenizer
  `stride`) consecutive windows share `doc_stride` tokens, i.e. the step is `max_tokens_for_doc -
  doc_stride`. The last window ends at the document's last token.
- A document token seen by several windows is "at max context" in the window where
  `min(left context, right context) + 0.01 * window length` is largest (the first such window on ties);
  decoding only starts answers at such tokens.
- Instead of the original's whitespace-word bookkeeping, every document token carries the character span
  (`token_char_starts`, `token_char_ends`) it covers in the context, from the tokenizer's
  `tokenize_with_offsets`; decoding slices the context with them.
- Training labels: the answer's characters `[answer_start, answer_start + len(text))` become the tightest
  token span covering them (first token ending after answer_start, last token starting before the answer's
  end) - the character-offset form of the original's `_improve_answer_span`. Impossible questions and
  windows that do not contain the whole answer get start = end = 0 ([CLS]).

The arrays follow the backbone input contract (`token_ids`, `segment_ids`, `padding_mask`) and the QA label
contract (`start_positions`, `end_positions`). `SquadFeatures.to_dataset` builds a `tf.data.Dataset`; this
is the only TensorFlow use here (data edge).
"""

import dataclasses
import logging

import numpy as np


logger = logging.getLogger(__name__)

STRIDE_SEMANTICS = ("step", "overlap")


@dataclasses.dataclass(frozen=True)
class DocumentWindow:
    """A window over the tokenized document.

    Args:
        start: int. Index of the window's first document token.
        length: int. Number of document tokens in the window.
    """

    start: int
    length: int

    @property
    def end(self):
        """Index one past the window's last document token."""
        return self.start + self.length


def document_windows(num_tokens, max_tokens_for_doc, doc_stride, stride_semantics="step"):
    """Splits `num_tokens` document tokens into windows, as `run_squad.py` does.

    Args:
        num_tokens: int. Number of document tokens.
        max_tokens_for_doc: int. Most document tokens per window (>= 1).
        doc_stride: int. With "step": the distance between window starts (the original's `doc_stride`),
            shortened for a last window that is shorter. With "overlap": how many tokens consecutive windows
            share (Hugging Face's `stride`); must be smaller than `max_tokens_for_doc`.
        stride_semantics: str. "step" or "overlap". Defaults to "step".

    Returns:
        list of `DocumentWindow`; one empty window for an empty document, so that every example has a
        feature.

    Example:
    >>> [(w.start, w.length) for w in document_windows(10, 4, 2)]
    [(0, 4), (2, 4), (4, 4), (6, 4)]
    >>> [(w.start, w.length) for w in document_windows(10, 4, 1, "overlap")]
    [(0, 4), (3, 4), (6, 4)]
    """
    if max_tokens_for_doc < 1:
        raise ValueError(f"max_tokens_for_doc must be at least 1, got {max_tokens_for_doc}.")
    if stride_semantics == "step":
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be at least 1 with stride_semantics='step', got {doc_stride}.")
        step = doc_stride
    elif stride_semantics == "overlap":
        if not 0 <= doc_stride < max_tokens_for_doc:
            raise ValueError(
                f"With stride_semantics='overlap', doc_stride ({doc_stride}) must be in [0, "
                f"max_tokens_for_doc={max_tokens_for_doc})."
            )
        step = max_tokens_for_doc - doc_stride
    else:
        raise ValueError(f"stride_semantics must be one of {STRIDE_SEMANTICS}, got {stride_semantics!r}.")
    if num_tokens == 0:
        return [DocumentWindow(0, 0)]
    windows = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        windows.append(DocumentWindow(start, length))
        if start + length == num_tokens:
            break
        start += min(length, step)
    return windows


def max_context_score(window, position):
    """The original's max-context score of document token `position` inside `window`.

    Args:
        window: `DocumentWindow`.
        position: int. Document token index inside the window.

    Returns:
        float. `min(tokens to the left, tokens to the right) + 0.01 * window.length`.
    """
    left = position - window.start
    right = window.end - 1 - position
    return min(left, right) + 0.01 * window.length


def best_window_per_token(windows, num_tokens):
    """For every document token, the index of the window where it has the most context.

    Args:
        windows: list of `DocumentWindow`.
        num_tokens: int. Number of document tokens.

    Returns:
        int array `(num_tokens,)`: the first window (in order) with the highest `max_context_score`.
    """
    best_score = np.full((num_tokens,), -np.inf)
    best_window = np.full((num_tokens,), -1, dtype=np.int64)
    for window_index, window in enumerate(windows):
        positions = np.arange(window.start, window.end)
        # Same float arithmetic as the original: min(left, right) + 0.01 * length.
        scores = np.minimum(positions - window.start, window.end - 1 - positions) + 0.01 * window.length
        better = scores > best_score[positions]
        best_score[positions[better]] = scores[better]
        best_window[positions[better]] = window_index
    return best_window


def answer_token_span(token_starts, token_ends, answer_start, answer_end):
    """The tightest token span covering the characters `[answer_start, answer_end)`.

    Args:
        token_starts: sequence of int. Character start of each document token.
        token_ends: sequence of int. Character end (exclusive) of each document token.
        answer_start: int. First character of the answer.
        answer_end: int. One past the answer's last character.

    Returns:
        (first, last) token indices (inclusive), or None if no token overlaps the answer.

    Example:
    >>> answer_token_span([0, 4, 10], [3, 9, 12], 4, 9)
    (1, 1)
    """
    first = next((i for i, end in enumerate(token_ends) if end > answer_start), None)
    last = next((i for i in range(len(token_starts) - 1, -1, -1) if token_starts[i] < answer_end), None)
    if first is None or last is None or first > last:
        return None
    return first, last


@dataclasses.dataclass
class SquadFeatures:
    """Packed SQuAD features (one row per document window) plus what decoding needs.

    `F` features, `T` = sequence_length.

    Args:
        token_ids: int32 `(F, T)`. `[CLS] question [SEP] window [SEP]`, then padding.
        segment_ids: int32 `(F, T)`. 0 for `[CLS] question [SEP]`, 1 for the window and its `[SEP]`.
        padding_mask: bool `(F, T)`. True on real tokens.
        start_positions: int32 `(F,)`. Answer start token (0 = [CLS] for impossible / out of window); 0 when
            the features were built without labels.
        end_positions: int32 `(F,)`. Answer end token (inclusive).
        example_index: int32 `(F,)`. Index of the example (in the list given) this feature came from.
        window_start: int32 `(F,)`. Document token index of the window's first token.
        token_char_starts: int32 `(F, T)`. Context character where each window token starts; -1 for
            tokens outside the window ([CLS], question, [SEP], padding).
        token_char_ends: int32 `(F, T)`. Context character one past each window token's end; -1 outside.
        token_is_max_context: bool `(F, T)`. True where this window is the token's max-context window.
        skipped_example_indices: list of int. Training examples left out because their answer covers no
            token (e.g. only characters the tokenizer drops).
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    window_start: np.ndarray
    token_char_starts: np.ndarray
    token_char_ends: np.ndarray
    token_is_max_context: np.ndarray
    skipped_example_indices: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.token_ids)

    @property
    def sequence_length(self):
        """T, the padded sequence length."""
        return self.token_ids.shape[1]

    def inputs(self):
        """The backbone inputs: `{"token_ids", "segment_ids", "padding_mask"}` NumPy arrays."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids, "padding_mask": self.padding_mask}

    def labels(self):
        """The QA labels: `{"start_positions", "end_positions"}` NumPy arrays."""
        return {"start_positions": self.start_positions, "end_positions": self.end_positions}

    def to_dataset(self, batch_size=32, include_labels=True, shuffle=False, seed=None, drop_remainder=False):
        """A `tf.data.Dataset` of batches `(x, y)` (or `x` alone without labels).

        Args:
            batch_size: int. Batch size. Defaults to 32.
            include_labels: bool. Yield `(x, y)` if True, `x` if False (prediction). Defaults to True.
            shuffle: bool. Shuffle all features each epoch (keep False for prediction so logits line up
                with features). Defaults to False.
            seed: int or None. Shuffle seed. Defaults to None.
            drop_remainder: bool. Drop a last partial batch. Defaults to False.

        Returns:
            `tf.data.Dataset`.
        """
        # Imported here so that decoding and evaluation (which import this module) stay TensorFlow-free.
        import tensorflow as tf

        elements = (self.inputs(), self.labels()) if include_labels else self.inputs()
        dataset = tf.data.Dataset.from_tensor_slices(elements)
        if shuffle:
            dataset = dataset.shuffle(len(self), seed=seed, reshuffle_each_iteration=True)
        return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def _validate_lengths(sequence_length, max_query_length, doc_stride, stride_semantics):
    # The longest question leaves sequence_length - max_query_length - 3 document tokens per window.
    min_doc_tokens = sequence_length - max_query_length - 3
    if min_doc_tokens < 1:
        raise ValueError(
            f"sequence_length ({sequence_length}) must exceed max_query_length ({max_query_length}) + 3 so "
            f"that a window holds at least one document token."
        )
    if stride_semantics == "overlap" and doc_stride >= min_doc_tokens:
        raise ValueError(
            f"With stride_semantics='overlap', doc_stride ({doc_stride}) must be smaller than "
            f"sequence_length - max_query_length - 3 = {min_doc_tokens} (the smallest window)."
        )
    document_windows(1, min_doc_tokens, doc_stride, stride_semantics)


def convert_examples_to_features(
    examples,
    tokenizer,
    sequence_length=384,
    doc_stride=128,
    max_query_length=64,
    is_training=False,
    stride_semantics="step",
):
    """Turns SQuAD examples into windowed features, as `run_squad.py`'s `convert_examples_to_features`.

    Args:
        examples: sequence of `SquadExample` (e.g. from `read_squad_examples`).
        tokenizer: `keras_bert_impl.tokenization.BertTokenizer` or anything with `tokenize(list[str])`,
            `tokenize_with_offsets(list[str])`, `cls_token_id`, `sep_token_id` and `pad_token_id`.
        sequence_length: int. T, the packed length (`max_seq_length`, its old name, still works, deprecated).
            Defaults to 384.
        doc_stride: int. Window stride; see `stride_semantics`. Defaults to 128.
        max_query_length: int. Questions are truncated to this many tokens. Defaults to 64.
        is_training: bool. Compute `start_positions` / `end_positions` from the first answer. Defaults to
            False.
        stride_semantics: str. "step" (the original: doc_stride is the distance between window starts) or
            "overlap" (Hugging Face: doc_stride tokens are shared by consecutive windows). Defaults to
            "step".

    Returns:
        `SquadFeatures`.

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
    _validate_lengths(sequence_length, max_query_length, doc_stride, stride_semantics)
    examples = list(examples)
    question_ids = tokenizer.tokenize([example.question_text for example in examples])
    document_tokens = tokenizer.tokenize_with_offsets([example.context_text for example in examples])
    cls_id, sep_id, pad_id = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id

    rows = []
    skipped = []
    for example_index, example in enumerate(examples):
        query = list(question_ids[example_index])[:max_query_length]
        doc_ids, doc_starts, doc_ends = (list(part) for part in document_tokens[example_index])
        answer_span = None
        if is_training and not example.is_impossible:
            if not example.answers or example.answers[0].answer_start is None:
                raise ValueError(
                    f"Training example {example.qas_id!r} needs an answer with answer_start (or "
                    f"is_impossible=True); read training files with read_squad_examples(path, is_training=True)."
                )
            answer = example.answers[0]
            answer_span = answer_token_span(doc_starts, doc_ends, answer.answer_start, answer.answer_end)
            if answer_span is None:
                skipped.append(example_index)
                logger.warning(
                    "Skipping training example %r: its answer %r covers no token of the tokenized context.",
                    example.qas_id,
                    answer.text,
                )
                continue
        max_tokens_for_doc = sequence_length - len(query) - 3
        windows = document_windows(len(doc_ids), max_tokens_for_doc, doc_stride, stride_semantics)
        best_window = best_window_per_token(windows, len(doc_ids))
        doc_offset = len(query) + 2
        for window_index, window in enumerate(windows):
            start_position = end_position = 0
            if answer_span is not None and window.start <= answer_span[0] and answer_span[1] < window.end:
                start_position = answer_span[0] - window.start + doc_offset
                end_position = answer_span[1] - window.start + doc_offset
            rows.append(
                (
                    example_index,
                    query,
                    window,
                    doc_ids[window.start : window.end],
                    doc_starts[window.start : window.end],
                    doc_ends[window.start : window.end],
                    best_window[window.start : window.end] == window_index,
                    start_position,
                    end_position,
                )
            )
    if skipped:
        logger.warning("Skipped %d training examples whose answer covers no token.", len(skipped))
    return _pack_rows(rows, sequence_length, cls_id, sep_id, pad_id, skipped)


def _pack_rows(rows, sequence_length, cls_id, sep_id, pad_id, skipped):
    num_features = len(rows)
    shape = (num_features, sequence_length)
    token_ids = np.full(shape, pad_id, dtype=np.int32)
    segment_ids = np.zeros(shape, dtype=np.int32)
    padding_mask = np.zeros(shape, dtype=bool)
    token_char_starts = np.full(shape, -1, dtype=np.int32)
    token_char_ends = np.full(shape, -1, dtype=np.int32)
    token_is_max_context = np.zeros(shape, dtype=bool)
    start_positions = np.zeros((num_features,), dtype=np.int32)
    end_positions = np.zeros((num_features,), dtype=np.int32)
    example_index = np.zeros((num_features,), dtype=np.int32)
    window_start = np.zeros((num_features,), dtype=np.int32)
    for row, (index, query, window, ids, starts, ends, is_max, start, end) in enumerate(rows):
        sequence = [cls_id, *query, sep_id, *ids, sep_id]
        doc_offset = len(query) + 2
        doc_slice = slice(doc_offset, doc_offset + len(ids))
        token_ids[row, : len(sequence)] = sequence
        segment_ids[row, doc_offset : len(sequence)] = 1
        padding_mask[row, : len(sequence)] = True
        token_char_starts[row, doc_slice] = starts
        token_char_ends[row, doc_slice] = ends
        token_is_max_context[row, doc_slice] = is_max
        start_positions[row], end_positions[row] = start, end
        example_index[row] = index
        window_start[row] = window.start
    return SquadFeatures(
        token_ids=token_ids,
        segment_ids=segment_ids,
        padding_mask=padding_mask,
        start_positions=start_positions,
        end_positions=end_positions,
        example_index=example_index,
        window_start=window_start,
        token_char_starts=token_char_starts,
        token_char_ends=token_char_ends,
        token_is_max_context=token_is_max_context,
        skipped_example_indices=skipped,
    )
