"""Words or raw text to windowed BERT token-classification features, and per-token logits back to words and entities.

Labels sit on the first sub-token of each word, as the BERT paper (section 5.3) and Hugging Face do; other
sub-tokens, `[CLS]`, `[SEP]` and padding get `IGNORED_LABEL` (-100), which `BertTokenClassifier`'s loss skips.

What a word is: for pre-split words (a CoNLL sentence), each given word, joined with one space into the text the
tokenizer sees (offsets index that text); for raw text, the tokenizer's words: one starts at every token that is
not a `##` continuation piece.

Windows: a sentence longer than `sequence_length - 2` tokens is cut into windows of that many tokens, `stride`
apart, each packed `[CLS] window [SEP]`. Every token belongs to the one window where it sits nearest the middle
(window k owns the tokens from `k * stride + (window - stride) // 2` on), and only there carries a label and a
prediction: each word is labelled and predicted once, with at least `(window - stride) // 2` tokens of context.

Featurization (`window_features`) and decoding (`entity_span_graph`) are TensorFlow ops, the one implementation
that `tf.data` training, eager `predict` and the exported SavedModel's `serve_text` run.

Shape legend: B examples, W windows (feature rows, all examples together), T `sequence_length`,
C tags (`num_classes`).
"""

import itertools

import keras
import numpy as np
import tensorflow as tf

from keras_bert_impl.data.token_classification_data import IGNORED_LABEL
from keras_bert_impl.preprocessing import entity_span_graph
from keras_bert_impl.preprocessing.squad_span_graph import byte_span_to_answer, repair_utf8
from keras_bert_impl.preprocessing.preprocessor import Preprocessor, as_text_batch
from keras_bert_impl.tokenization.bert_tokenizer import CONTINUATION_PREFIX

WORD_SEPARATOR = " "


def first_piece_table(tokenizer):
    """bool `(V,)`: token id -> the token can start a word (it is not a `##` continuation piece)."""
    return tf.constant([not token.startswith(CONTINUATION_PREFIX) for token in tokenizer.get_vocabulary()])


def _join_words(words):
    """Pre-split words `(B, None)` -> the joined text `(B,)` and each word's byte start and end in it."""
    words = words.with_flat_values(repair_utf8(words.flat_values))
    text = tf.strings.reduce_join(words, axis=1, separator=WORD_SEPARATOR)
    lengths = words.with_flat_values(tf.cast(tf.strings.length(words.flat_values), tf.int64))
    steps = lengths + len(WORD_SEPARATOR)
    starts = tf.math.cumsum(steps, axis=1, exclusive=True)
    return text, starts, starts + lengths


def window_features(tokenizer, packer, sequence_length, stride, texts=None, words=None, tag_ids=None,
                    first_pieces=None):
    """Texts or pre-split words (exactly one) -> windowed model inputs, labels and each scored token's word.

    Args:
        tokenizer: `BertTokenizer`.
        packer: `SegmentPacker` packing `[CLS] window [SEP]` (fixed or dynamic padding).
        sequence_length: int. T.
        stride: int. Distance between window starts, in tokens; at most `sequence_length - 2`.
        texts, words: tf.string `(B,)` raw texts, or a tf.string RaggedTensor `(B, None)` of words; the other None.
        tag_ids: int RaggedTensor `(B, None)`, one tag id per word (only with `words`), or None.
        first_pieces: bool `(V,)` from `first_piece_table(tokenizer)` (raw texts only), or None.

    Returns:
        dict of `inputs` (`token_ids`, `segment_ids` int32, `padding_mask` bool, `(W, T)`), `word_index` int32
        `(W, T)` (the word a scored token starts, -1 elsewhere), `labels` int32 `(W, T)` (with `tag_ids`:
        the word's tag at scored tokens, `IGNORED_LABEL` elsewhere), `example_index` int64 `(W,)`, `text`
        tf.string `(B,)` (what the tokenizer saw, invalid UTF-8 repaired) and `word_starts` / `word_ends`
        int64 RaggedTensors `(B, None)`: each word's byte span in `text`.
    """
    if words is not None:
        text, word_starts, word_ends = _join_words(words)
    else:
        text = repair_utf8(texts)
    ids, token_starts, token_ends = tokenizer.tokenize_with_offsets_tensor(text)
    token_row = ids.value_rowids()  # (N,) N tokens of all examples
    if words is not None:
        # (B,) an offset per row that makes byte offsets of different rows one increasing sequence
        bases = tf.math.cumsum(tf.cast(tf.strings.length(text), tf.int64) + 1, exclusive=True)
        global_word_starts = word_starts.flat_values + tf.gather(bases, word_starts.value_rowids())
        global_token_starts = token_starts.flat_values + tf.gather(bases, token_row)
        token_word = tf.searchsorted(global_word_starts, global_token_starts, side="right", out_type=tf.int64) - 1
        previous_word = tf.concat([tf.constant([-1], tf.int64), token_word[:-1]], axis=0)
        is_first = tf.not_equal(token_word, previous_word)
        word_row_starts = word_starts.row_starts()
    else:
        is_first = tf.gather(first_pieces, ids.flat_values)
        token_word = tf.math.cumsum(tf.cast(is_first, tf.int64)) - 1
        num_words = tf.math.unsorted_segment_sum(tf.cast(is_first, tf.int64), token_row, tf.shape(text)[0])
        word_row_splits = tf.concat([[0], tf.math.cumsum(num_words)], axis=0)
        word_row_starts = word_row_splits[:-1]
        total_words = word_row_splits[-1]
        word_starts = tf.RaggedTensor.from_row_splits(tf.boolean_mask(token_starts.flat_values, is_first),
                                                      word_row_splits, validate=False)
        word_ends = tf.RaggedTensor.from_row_splits(
            tf.math.unsorted_segment_max(token_ends.flat_values, token_word, total_words), word_row_splits,
            validate=False)
    local_word = token_word - tf.gather(word_row_starts, token_row)  # (N,)

    # Windows of `room` tokens, `stride` apart; token p of an example belongs to window home(p).
    room = sequence_length - 2
    num_tokens = ids.row_lengths()  # (B,)
    num_windows = 1 + (tf.maximum(num_tokens - room, 0) + stride - 1) // stride  # (B,)
    windows = tf.ragged.range(num_windows)  # (B, None)
    example_index = windows.value_rowids()  # (W,)
    window_start = windows.flat_values * stride  # (W,)
    window_length = tf.minimum(tf.gather(num_tokens, example_index) - window_start, room)
    position = tf.ragged.range(window_length)  # (W, None) position inside the window
    window_of_position = position.value_rowids()
    in_example = position.flat_values + tf.gather(window_start, window_of_position)  # (P,) position in example
    token = in_example + tf.gather(ids.row_starts(), tf.gather(example_index, window_of_position))  # (P,)
    home = tf.clip_by_value((in_example - (room - stride) // 2) // stride, 0,
                            tf.gather(num_windows, tf.gather(example_index, window_of_position)) - 1)
    scored = tf.logical_and(tf.equal(home, tf.gather(windows.flat_values, window_of_position)),
                            tf.gather(is_first, token))

    inputs = packer(position.with_flat_values(tf.gather(ids.flat_values, token)))
    width = tf.shape(inputs["token_ids"])[1]  # T, or the longest row with dynamic padding

    def aligned(values, fill):
        """Per-window-token values `(P,)` at the packed positions (after [CLS]) of a `(W, T)` tensor."""
        rows = position.with_flat_values(tf.where(scored, values, tf.cast(fill, values.dtype)))
        column = tf.RaggedTensor.from_tensor(tf.fill([rows.nrows(), 1], tf.cast(fill, values.dtype)))
        dense = tf.concat([column, rows], axis=1).to_tensor(default_value=fill)  # at most width - 1 wide
        return tf.pad(dense, [[0, 0], [0, width - tf.shape(dense)[1]]], constant_values=fill)

    features = {"inputs": inputs, "word_index": aligned(tf.cast(tf.gather(local_word, token), tf.int32), -1),
                "example_index": example_index, "text": text, "word_starts": word_starts, "word_ends": word_ends}
    if tag_ids is not None:
        word_tags = tf.cast(tag_ids.flat_values, tf.int32)
        features["labels"] = aligned(tf.gather(word_tags, tf.gather(token_word, token)), IGNORED_LABEL)
    return features


def _is_word_lists(x):
    return isinstance(x, tf.RaggedTensor) or (isinstance(x, (list, tuple)) and bool(x)
                                              and isinstance(x[0], (list, tuple)))


def _as_words(words):
    """A tf.string RaggedTensor `(B, None)` from a list of word lists (or a RaggedTensor)."""
    if isinstance(words, tf.RaggedTensor):
        return words
    for index, sentence in enumerate(words):
        for word in sentence:
            if not isinstance(word, str):
                raise TypeError(f"words[{index}] holds {type(word).__name__} {word!r:.40}; give str words.")
    return tf.ragged.constant([list(sentence) for sentence in words], dtype=tf.string, ragged_rank=1,
                              inner_shape=())


def _as_tags(tag_ids):
    """An int32 RaggedTensor `(B, None)` from a list of tag id lists (a RaggedTensor or None passes through)."""
    if tag_ids is None or isinstance(tag_ids, tf.RaggedTensor):
        return tag_ids
    return tf.ragged.constant([list(row) for row in tag_ids], dtype=tf.int32, ragged_rank=1)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassificationPreprocessor(Preprocessor):
    """Words or raw text to windowed token-classification (NER) features, and logits back to words and entities.

    Words, labels and windows: the module docstring. A `BertTokenClassifier` holding it tags raw text: per text,
    its `words` (`{"text", "start", "end", "tag", "score"}`) and `entities` (`{"text", "type", "start", "end",
    "score"}`, read as conlleval reads them; `score`: the mean probability of its tags), with character offsets.
    `make_dataset` batches `batch_size` sentences (with `bucket_width` or `epochs`, `batch_size` windows).

    Args:
        tokenizer: `BertTokenizer`.
        sequence_length: int. `T`, the window length including `[CLS]` and `[SEP]`. Defaults to 128.
        stride: int or None. Tokens between window starts, in [1, `sequence_length - 2`]; None: half a window.
            Defaults to None.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        x: raw texts (a str, a list / array / tf.string tensor `(B,)`), or pre-split words (a list of lists of
            str, or a tf.string RaggedTensor `(B, None)`).
        y: with words only: their tag ids, int lists (or an int RaggedTensor) parallel to `x`. Defaults to None.
        sample_weight: not supported.

    Returns:
        the model inputs dict (`token_ids`, `segment_ids` int32, `padding_mask` bool, `(W, T)`, W >= B windows
        in example order), and with `y` the labels int32 `(W, T)` as `(x, y)`.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "lives", "in", "par",
    ...                            "##is"])
    >>> preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=8)
    >>> x, y = preprocessor([["Peter", "lives", "in", "Paris"]], [[1, 0, 0, 3]])
    >>> x["token_ids"].tolist(), y.tolist()
    ([[2, 5, 6, 7, 8, 9, 3, 0]], [[-100, 1, 0, 0, 3, -100, -100, -100]])
    """

    _config_keys = ("stride",)

    def __init__(self, tokenizer, sequence_length=128, stride=None, **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        room = self.sequence_length - 2
        stride = max(1, room // 2) if stride is None else stride
        if not isinstance(stride, (int, np.integer)) or isinstance(stride, bool) or not 1 <= stride <= room:
            raise ValueError(f"stride must be an int in [1, sequence_length - 2 = {room}] (tokens between window "
                             f"starts), got {stride!r}.")
        self.stride = int(stride)
        self.packer = self.segment_packer()
        self._first_pieces = None

    def _features(self, x, y=None):
        if y is not None and not _is_word_lists(x):
            raise ValueError("Tags (y) go with pre-split words: give x as a list of word lists, one tag id per word.")
        if _is_word_lists(x):
            return window_features(self.tokenizer, self.packer, self.sequence_length, self.stride, words=_as_words(x),
                                   tag_ids=_as_tags(y))
        if self._first_pieces is None:
            self._first_pieces = first_piece_table(self.tokenizer)
        return window_features(self.tokenizer, self.packer, self.sequence_length, self.stride,
                               texts=as_text_batch(x, "x"), first_pieces=self._first_pieces)

    def call(self, x, y=None, sample_weight=None):
        if sample_weight is not None:
            raise ValueError("BertTokenClassificationPreprocessor takes no sample_weight (windows are not examples).")
        features = self._features(x, y)
        return features["inputs"] if y is None else (features["inputs"], features["labels"])

    def _slices(self, x, y, sample_weight):
        if sample_weight is not None:
            self.call(x, y, sample_weight)  # the error
        x, y = (_as_words(x), _as_tags(y)) if _is_word_lists(x) else (as_text_batch(x, "x"), y)
        return keras.utils.pack_x_y_sample_weight(x, y)

    @staticmethod
    def _batch(dataset, batch_size):
        return dataset.ragged_batch(batch_size)

    def featurize(self, x, y=None):
        """`window_features` of `x` (and tag ids `y`) as NumPy: arrays, and lists of arrays for the ragged
        word offsets. `features["inputs"]` equals `self(x)`."""
        features = self._features(x, y)
        numpy = {key: features[key].numpy() for key in ("word_index", "example_index", "labels") if key in features}
        numpy["inputs"] = {key: value.numpy() for key, value in features["inputs"].items()}
        numpy["text"] = [text.decode("utf-8") for text in features["text"].numpy()]
        numpy.update({key: [np.asarray(row, dtype=np.int64) for row in features[key].to_list()]
                      for key in ("word_starts", "word_ends")})
        return numpy

    def decode(self, features, logits, labels):
        """Tagged words and entities of each example from the model's `logits` on `features` (`entity_span_graph`,
        what a SavedModel's `serve_text` runs, run eagerly).

        Args:
            features: dict from `featurize`.
            logits: array `(W, T, C)`.
            labels: sequence of str. The tag of each class id (IOB2: "O", "B-PER", ...).

        Returns:
            list (one per example) of dicts `{"words": [...], "entities": [...]}` as the class docstring says.
        """
        labels = list(labels)
        graph_features = dict(features, text=tf.constant(features["text"], tf.string))
        for key in ("word_starts", "word_ends"):
            rows = features[key]
            graph_features[key] = tf.RaggedTensor.from_row_lengths(
                np.concatenate([np.zeros(0, np.int64), *rows]), [len(row) for row in rows])
        word_tag, word_score = entity_span_graph.word_tags(graph_features, logits, labels)
        word_text, word_start, word_end = byte_span_to_answer(
            tf.gather(graph_features["text"], graph_features["word_starts"].value_rowids()),
            graph_features["word_starts"].flat_values, graph_features["word_ends"].flat_values)
        entities = {key: value.numpy() for key, value in entity_span_graph.decode_entities(
            graph_features, logits, labels).items()}
        words = zip(word_text.numpy(), word_start.numpy(), word_end.numpy(), word_tag.numpy(), word_score.numpy())
        results = []
        for example, num_words in enumerate(graph_features["word_starts"].row_lengths().numpy()):
            results.append({
                "words": [{"text": text.decode("utf-8"), "start": int(start), "end": int(end), "tag": labels[tag],
                           "score": float(score)}
                          for text, start, end, tag, score in itertools.islice(words, num_words)],
                "entities": [{"text": entities["entity_text"][example, i].decode("utf-8"),
                              "type": entities["entity_type"][example, i].decode("utf-8"),
                              "start": int(entities["entity_start"][example, i]),
                              "end": int(entities["entity_end"][example, i]),
                              "score": float(entities["entity_score"][example, i])}
                             for i in range(entities["num_entities"][example])]})
        return results
