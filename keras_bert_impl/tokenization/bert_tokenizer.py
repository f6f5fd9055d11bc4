"""BERT's WordPiece tokenizer (Devlin et al., 2018), on tensorflow-text's fast WordPiece op.

TensorFlow at the data edge: the tokenizer runs inside `tf.data.Dataset.map`, `tf.function` and exported
SavedModels whatever the Keras backend; models never import it.

The algorithm is the original `tokenization.py` of google-research/bert, expressed as TF string ops:
1. Invalid UTF-8 is dropped; control/format characters, NUL and U+FFFD are deleted ("nation\\u00adal" -> "national").
2. Words split on whitespace; every punctuation character and CJK ideograph is a word of its own.
3. Uncased: lowercase, NFD, drop combining marks (Mn).
4. WordPiece (`FastWordpieceTokenizer`), greedy longest match first; a word longer than
   `max_input_chars_per_word` characters, or one not matched completely, becomes one [UNK].
(tensorflow-text's own BERT tokenizers differ: NFKC case folding, control characters as spaces, a 100-byte limit.)
Lines of printable ASCII take a fast path: one end-to-end `FastWordpieceTokenizer` op, the same ids at a third of
the cost.
"""

import functools
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_impl.utils.atomic_io import atomic_write_json, atomic_write_text, ensure_directory
from keras_bert_impl.utils.file_patterns import read_json, utf8_error_message

VOCABULARY_FILENAME = "vocab.txt"
CONFIG_FILENAME = "tokenizer_config.json"

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

CONTINUATION_PREFIX = "##"
# `tokenizer_config.json` keys (Hugging Face's names) -> constructor arguments.
_CONFIG_ARGUMENTS = {
    "do_lower_case": "lowercase",
    "strip_accents": "strip_accents",
    "tokenize_chinese_chars": "tokenize_chinese_chars",
    "max_input_chars_per_word": "max_input_chars_per_word",
}

# RE2 character classes; whitespace is spelled out because RE2's `\s` includes \f and \v, which the original deletes.
_DELETED_CHARACTERS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\x{fffd}]"
_WHITESPACE = r"\t\n\r\p{Zs}\x{2028}\x{2029}"
_PUNCTUATION = r"!-/:-@\[-`{-~\p{P}"
# The original's `_is_chinese_char` ranges (not Hiragana, Katakana or Hangul, which are written with spaces).
_CJK_IDEOGRAPHS = (
    r"\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}\x{2a700}-\x{2b73f}\x{2b740}-\x{2b81f}"
    r"\x{2b820}-\x{2ceaf}\x{f900}-\x{faff}\x{2f800}-\x{2fa1f}"
)
_COMBINING_MARKS = r"\p{Mn}"
# Lines the fast path takes: printable ASCII and \t \n \r only.
_FAST_PATH_LINE = r"[\x20-\x7e\t\n\r]*"

# A word is at most 200 characters of at most 4 UTF-8 bytes each; FastWordpiece's own limit is in bytes,
# so it is set above any word that can reach it and the character limit is applied here.
_BYTES_PER_CHARACTER = 4


def _read_vocabulary_file(path):
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            lines = handle.read().split("\n")
    except FileNotFoundError as error:
        raise FileNotFoundError(f"Vocabulary file {path!r} does not exist.") from error
    except UnicodeDecodeError:
        raise ValueError(f"Vocabulary file {utf8_error_message(path)}") from None
    if lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _check_vocabulary(tokens, source):
    if not tokens:
        raise ValueError(f"Vocabulary {source} is empty.")
    first_index = {}
    for index, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"Vocabulary {source}: entry {index} is {type(token).__name__}, expected str.")
        if token == "":
            raise ValueError(f"Vocabulary {source}: entry {index} (line {index + 1}) is an empty token.")
        if token in first_index:
            raise ValueError(
                f"Vocabulary {source}: token {token!r} appears twice, at lines {first_index[token] + 1} "
                f"and {index + 1}; every token must be unique."
            )
        first_index[token] = index
    for token in SPECIAL_TOKENS:
        if token not in first_index:
            raise ValueError(
                f"Vocabulary {source} has no {token} token; BERT needs all of {', '.join(SPECIAL_TOKENS)}."
            )
    return first_index


def _normalize(strings, lowercase, strip_accents):
    """Clean, and optionally lowercase / strip accents from, a flat tf.string tensor, elementwise."""
    strings = tf.strings.regex_replace(strings, _DELETED_CHARACTERS, "")
    if lowercase:
        strings = tf.strings.lower(strings, encoding="utf-8")
    if strip_accents:
        strings = tf_text.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, _COMBINING_MARKS, "")
    return strings


def _split_and_normalize(text, lowercase, strip_accents, tokenize_chinese_chars):
    """Text `(B,)` -> flat words, normalized words, word byte starts, and row splits `(B + 1,)`."""
    # Invalid sequences become U+FFFD, which cleaning then deletes. tensorflow-text's regex split stops at
    # a NUL byte, so NUL (deleted by cleaning) becomes \x01 (also deleted), keeping byte offsets intact.
    text = tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD, replace_control_characters=False
    )
    text = tf.strings.regex_replace(text, r"\x00", "\x01")
    kept = _PUNCTUATION + (_CJK_IDEOGRAPHS if tokenize_chinese_chars else "")
    words, starts, _ = tf_text.regex_split_with_offsets(text, f"[{_WHITESPACE}{kept}]", f"[{kept}]")
    words, starts, word_splits = words.flat_values, starts.flat_values, words.row_splits
    normalized = _normalize(words, lowercase, strip_accents)
    keep = tf.strings.length(normalized) > 0  # words made only of deleted characters vanish
    kept_words = tf.where(keep)[:, 0]
    kept_before = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(keep, tf.int64))], axis=0)
    return (
        tf.gather(words, kept_words),
        tf.gather(normalized, kept_words),
        tf.gather(starts, kept_words),
        tf.gather(kept_before, word_splits),
    )


def split_words(text, lowercase=True, strip_accents=None, tokenize_chinese_chars=True):
    """BERT's "basic tokenizer": clean, split and normalize text into words, exactly as `BertTokenizer` does.

    Args:
        text: tf.string Tensor `(B,)` (or a list of str).
        lowercase: bool. Lowercase the words. Defaults to True.
        strip_accents: bool or None. NFD and drop combining marks; None follows `lowercase`. Defaults to None.
        tokenize_chinese_chars: bool. Make each CJK ideograph a word. Defaults to True.

    Returns:
        tf.string RaggedTensor `(B, None)` of normalized words.

    Example:
    >>> split_words(["Héllo, wörld!"]).to_list()
    [[b'hello', b',', b'world', b'!']]
    """
    text = tf.convert_to_tensor(text, dtype=tf.string)
    strip_accents = lowercase if strip_accents is None else strip_accents
    _, normalized, _, row_splits = _split_and_normalize(text, lowercase, strip_accents, tokenize_chinese_chars)
    return tf.RaggedTensor.from_row_splits(normalized, row_splits, validate=False)


def _long_words_as_unk(normalized_words, max_chars):
    """Words longer than `max_chars` characters become "[UNK]", which FastWordpiece maps to one [UNK] id."""
    too_long = tf.strings.length(normalized_words, unit="UTF8_CHAR") > max_chars
    return tf.where(too_long, tf.constant(UNK_TOKEN), normalized_words), too_long


def _tokenize_general(batch, wordpiece, max_chars, lowercase, strip_accents, tokenize_chinese_chars):
    """Text `(B,)` -> flat int32 ids and their row splits `(B + 1,)`, by all steps of the module docstring."""
    _, normalized, _, row_splits = _split_and_normalize(batch, lowercase, strip_accents, tokenize_chinese_chars)
    ids = wordpiece.tokenize(_long_words_as_unk(normalized, max_chars)[0])
    return ids.flat_values, tf.gather(ids.row_splits, row_splits)


def _tokenize_fast(batch, fast_wordpiece, lowercase):
    """Printable-ASCII text `(B,)` -> flat int32 ids and row splits, with one end-to-end WordPiece op."""
    if lowercase:
        batch = tf.strings.lower(batch)  # ASCII-only lowercasing, exact on these lines
    ids = fast_wordpiece.tokenize(batch)
    return ids.flat_values, ids.row_splits


def _tokenize_batch(batch, wordpiece, fast_wordpiece, max_chars, lowercase, strip_accents, tokenize_chinese_chars):
    """Text `(B,)` -> int32 ids `(B, None)`; printable-ASCII lines take the fast path.

    Written for few graph nodes: in `tf.data` every node, taken or not, costs about a microsecond per batch.
    """
    settings = (max_chars, lowercase, strip_accents, tokenize_chinese_chars)
    is_fast = tf.strings.regex_full_match(batch, _FAST_PATH_LINE)

    def mixed():
        fast_rows = tf.cast(tf.where(is_fast)[:, 0], tf.int32)
        general_rows = tf.cast(tf.where(~is_fast)[:, 0], tf.int32)
        fast_values, fast_splits = _tokenize_fast(tf.gather(batch, fast_rows), fast_wordpiece, lowercase)
        general_values, general_splits = _tokenize_general(tf.gather(batch, general_rows), wordpiece, *settings)
        # Rows in (fast rows, general rows) order, gathered back into input order.
        splits = tf.concat([fast_splits, general_splits[1:] + fast_splits[-1]], axis=0)
        order = tf.math.invert_permutation(tf.concat([fast_rows, general_rows], axis=0))
        (row_splits,), values = tf.raw_ops.RaggedGather(params_nested_splits=[splits], params_dense_values=tf.concat(
            [fast_values, general_values], axis=0), indices=order, OUTPUT_RAGGED_RANK=1)
        return values, row_splits

    all_fast = tf.reduce_all(is_fast)
    values, row_splits = tf.cond(all_fast, lambda: _tokenize_fast(batch, fast_wordpiece, lowercase), mixed)
    return tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)


def _tokenize_with_offsets_batch(batch, wordpiece, max_chars, lowercase, strip_accents, tokenize_chinese_chars):
    """Text `(B,)` -> int32 ids, int64 byte starts and exclusive ends, each `(B, None)`."""
    words, normalized, word_starts, row_splits = _split_and_normalize(batch, lowercase, strip_accents,
                                                                      tokenize_chinese_chars)
    unk_or_words, too_long = _long_words_as_unk(normalized, max_chars)
    ids, piece_starts, piece_ends = wordpiece.tokenize_with_offsets(unk_or_words)
    piece_word = ids.value_rowids()  # (P,) word index of every piece
    normalized_lengths = tf.cast(tf.strings.length(normalized), tf.int64)
    # An [UNK] for a too long word spans the whole word.
    piece_ends = tf.where(tf.gather(too_long, piece_word), tf.gather(normalized_lengths, piece_word),
                          piece_ends.flat_values)

    # Map byte offsets in a normalized word back to the original word, character by character: every
    # original character owns the bytes its own normalization produced (possibly none).
    chars, char_starts = tf.strings.unicode_split_with_offsets(words, "UTF-8")
    char_starts = char_starts.flat_values
    char_ends = char_starts + tf.cast(tf.strings.length(chars.flat_values), tf.int64)
    char_lengths = tf.cast(tf.strings.length(_normalize(chars.flat_values, lowercase, strip_accents)), tf.int64)
    normalized_ends = tf.cumsum(char_lengths)  # (C,) position in all normalized words laid end to end
    normalized_starts = normalized_ends - char_lengths
    word_base = tf.gather(tf.concat([[0], normalized_ends], 0), chars.row_splits[:-1])  # (W,)
    piece_base = tf.gather(word_base, piece_word)
    first_char = tf.searchsorted(normalized_ends, piece_base + piece_starts.flat_values, side="right")
    last_char = tf.searchsorted(normalized_starts, piece_base + piece_ends, side="left") - 1
    piece_word_start = tf.gather(word_starts, piece_word)
    starts = piece_word_start + tf.gather(char_starts, first_char)
    ends = piece_word_start + tf.gather(char_ends, last_char)
    # The last piece of a word also covers characters deleted at the word's end (a trailing accent).
    word_ends = word_starts + tf.cast(tf.strings.length(words), tf.int64)
    ends_word = piece_ends >= tf.gather(normalized_lengths, piece_word)
    ends = tf.where(ends_word, tf.gather(word_ends, piece_word), ends)

    row_splits = tf.gather(ids.row_splits, row_splits)
    ids = tf.RaggedTensor.from_row_splits(ids.flat_values, row_splits, validate=False)
    starts = tf.RaggedTensor.from_row_splits(starts, row_splits, validate=False)
    ends = tf.RaggedTensor.from_row_splits(ends, row_splits, validate=False)
    return ids, starts, ends


def _wordpiece_model(tokens, max_bytes_per_word, no_pretokenization):
    """A compiled `FastWordpieceTokenizer` model for `tokens`, as a uint8 tensor (tensorflow-text's public builder)."""
    # Positional: vocab, max_bytes_per_word, suffix_indicator, unknown_token, no_pretokenization,
    # support_detokenization.
    buffer = tf_text.build_fast_wordpiece_model(tokens, max_bytes_per_word, CONTINUATION_PREFIX, UNK_TOKEN,
                                                no_pretokenization, False)
    return tf.constant(np.frombuffer(buffer, dtype=np.uint8))


def _wordpiece(model_buffer):
    return tf_text.FastWordpieceTokenizer(model_buffer=model_buffer, token_out_type=tf.int32)


@functools.cache
def _shared_batch_function(with_offsets, lowercase, strip_accents, tokenize_chinese_chars):
    """One traced graph per setting, shared by all tokenizers (tracing takes seconds): the vocabulary is an input."""

    def run(batch, model_buffer, fast_model_buffer, max_chars):
        settings = (max_chars, lowercase, strip_accents, tokenize_chinese_chars)
        if with_offsets:
            return _tokenize_with_offsets_batch(batch, _wordpiece(model_buffer), *settings)
        return _tokenize_batch(batch, _wordpiece(model_buffer), _wordpiece(fast_model_buffer), *settings)

    signature = [tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.uint8), tf.TensorSpec([None], tf.uint8),
                 tf.TensorSpec([], tf.int32)]
    # autograph=False: the tokenizer graph has no Python control flow on tensors, and converting it cost seconds.
    return tf.function(run, input_signature=signature, autograph=False)


class BertTokenizer(tf.Module):
    """BERT's WordPiece tokenizer (the original `FullTokenizer`): text to token ids, with character offsets, and back.

    A `tf.Module`, so an exported module can hold it (and its `vocab.txt` as a SavedModel asset).

    Args:
        vocabulary: str or list[str]. Path to a `vocab.txt` (one token per line) or the tokens in id order, with
            [PAD], [UNK], [CLS], [SEP] and [MASK].
        lowercase: bool. Lowercase the text (the "uncased" models). Defaults to True.
        strip_accents: bool or None. NFD-decompose and drop combining marks; None follows `lowercase`. Defaults to
            None.
        tokenize_chinese_chars: bool. Make every CJK ideograph a word of its own. Defaults to True.
        max_input_chars_per_word: int. Words longer than this many characters become one [UNK]. Defaults
            to 200, the original's value (Hugging Face's `tokenizers` uses 100).

    Example:
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "!"])
    >>> tokenizer.tokenize("Hello, Worlds!")
    [5, 1, 6, 7, 8]
    >>> tokenizer.detokenize([5, 6, 7])
    'hello worlds'
    """

    def __init__(self, vocabulary, lowercase=True, strip_accents=None, tokenize_chinese_chars=True,
                 max_input_chars_per_word=200, name=None):
        super().__init__(name=name)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary_path = os.fspath(vocabulary)
            tokens = _read_vocabulary_file(vocabulary_path)
            source = repr(vocabulary_path)
        else:
            vocabulary_path = None
            tokens = list(vocabulary)
            source = "(token list)"
        self._token_to_id = _check_vocabulary(tokens, source)
        self._tokens = tokens
        if int(max_input_chars_per_word) < 1:
            raise ValueError(f"max_input_chars_per_word must be >= 1, got {max_input_chars_per_word}.")
        self.lowercase = bool(lowercase)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        self._strip_accents_setting = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        self.max_input_chars_per_word = int(max_input_chars_per_word)

        self.pad_token_id = self._token_to_id[PAD_TOKEN]
        self.unk_token_id = self._token_to_id[UNK_TOKEN]
        self.cls_token_id = self._token_to_id[CLS_TOKEN]
        self.sep_token_id = self._token_to_id[SEP_TOKEN]
        self.mask_token_id = self._token_to_id[MASK_TOKEN]

        if vocabulary_path is not None:
            self.vocabulary_asset = tf.saved_model.Asset(vocabulary_path)
        # The compiled WordPiece models (uint8 tensors), kept to feed the graphs shared by all tokenizers.
        self._wordpiece_model = _wordpiece_model(tokens, self.max_input_chars_per_word * _BYTES_PER_CHARACTER,
                                                 no_pretokenization=True)
        # The fast path's end-to-end model splits words itself; on printable ASCII a character is a byte.
        self._fast_wordpiece_model = _wordpiece_model(tokens, self.max_input_chars_per_word, no_pretokenization=False)
        self._wordpiece = _wordpiece(self._wordpiece_model)
        self._fast_wordpiece = _wordpiece(self._fast_wordpiece_model)

    @classmethod
    def from_pretrained(cls, directory, **kwargs):
        """Load `vocab.txt` and, where present, Hugging Face's `tokenizer_config.json` from `directory`; `**kwargs`
        (constructor arguments) take precedence over the config file."""
        directory = os.fspath(directory)
        vocabulary_path = os.path.join(directory, VOCABULARY_FILENAME)
        if not os.path.isfile(vocabulary_path):
            raise FileNotFoundError(f"No {VOCABULARY_FILENAME} in {directory!r}; give the vocabulary file itself or a "
                                    "folder holding one.")
        config_path = os.path.join(directory, CONFIG_FILENAME)
        config = read_json(config_path, schema=dict) if os.path.isfile(config_path) else {}
        settings = {argument: config[key] for key, argument in _CONFIG_ARGUMENTS.items() if key in config}
        return cls(vocabulary_path, **{**settings, **kwargs})

    def save_pretrained(self, directory):
        """Write `vocab.txt` and `tokenizer_config.json` atomically into `directory` (created if missing)."""
        directory = os.fspath(directory)
        ensure_directory(directory)  # a file in the way is named, not "[Errno 17] File exists"
        atomic_write_text(os.path.join(directory, VOCABULARY_FILENAME), "".join(t + "\n" for t in self._tokens))
        config = self.get_config()
        atomic_write_json(os.path.join(directory, CONFIG_FILENAME), {
            "tokenizer_class": "BertTokenizer",
            **{key: config[argument] for key, argument in _CONFIG_ARGUMENTS.items()},
            **{f"{token[1:-1].lower()}_token": token for token in SPECIAL_TOKENS},  # "pad_token": "[PAD]", ...
        })

    def get_config(self):
        """The constructor arguments, the vocabulary as a token list: `from_config` rebuilds the tokenizer."""
        return {
            "vocabulary": list(self._tokens),
            "lowercase": self.lowercase,
            "strip_accents": self._strip_accents_setting,
            "tokenize_chinese_chars": self.tokenize_chinese_chars,
            "max_input_chars_per_word": self.max_input_chars_per_word,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def vocabulary_size(self):
        """Number of tokens in the vocabulary."""
        return len(self._tokens)

    def get_vocabulary(self):
        """The tokens in id order (a copy)."""
        return list(self._tokens)

    def token_to_id(self, token):
        """Id of `token`; a KeyError naming it if it is not in the vocabulary."""
        try:
            return self._token_to_id[token]
        except KeyError:
            raise KeyError(f"Token {token!r} is not in the vocabulary ({len(self._tokens)} tokens).") from None

    def id_to_token(self, token_id):
        """Token with id `token_id`; a ValueError if the id is outside the vocabulary."""
        token_id = int(token_id)
        if not 0 <= token_id < len(self._tokens):
            raise ValueError(f"Token id {token_id} is outside the vocabulary [0, {len(self._tokens)}).")
        return self._tokens[token_id]

    def _settings(self):
        return self.max_input_chars_per_word, self.lowercase, self.strip_accents, self.tokenize_chinese_chars

    def tokenize_tensor(self, text):
        """Tokenize a `tf.string` tensor in TensorFlow ops (usable in `tf.data` and `tf.function`).

        Args:
            text: tf.string Tensor, a scalar or `(B,)`. Invalid UTF-8 byte sequences are dropped.

        Returns:
            int32 token ids: a 1-D Tensor for a scalar input, a `(B, None)` RaggedTensor for `(B,)`.
        """
        batch, scalar = self._as_batch(text)
        ids = _tokenize_batch(batch, self._wordpiece, self._fast_wordpiece, *self._settings())
        return ids[0] if scalar else ids

    def tokenize_with_offsets_tensor(self, text):
        """Tokenize a `tf.string` tensor and return each token's UTF-8 byte span in the input.

        Invalid UTF-8 sequences count as U+FFFD (3 bytes). A span covers deleted characters inside the token
        and, for a word's last piece, at its end.

        Args:
            text: tf.string Tensor, a scalar or `(B,)`.

        Returns:
            (ids int32, starts int64, ends int64), each 1-D for a scalar input or a `(B, None)` RaggedTensor;
            ends are exclusive.
        """
        batch, scalar = self._as_batch(text)
        ids, starts, ends = _tokenize_with_offsets_batch(batch, self._wordpiece, *self._settings())
        return (ids[0], starts[0], ends[0]) if scalar else (ids, starts, ends)

    @staticmethod
    def _as_batch(text):
        """`(text as a (B,) batch, whether it was a scalar)`."""
        text = tf.convert_to_tensor(text, dtype=tf.string)
        if text.shape.rank not in (0, 1):
            raise ValueError(f"Expected a scalar or 1-D tf.string tensor, got shape {text.shape}.")
        scalar = text.shape.rank == 0
        return (tf.reshape(text, [1]) if scalar else text), scalar

    def _run_python(self, texts, with_offsets):
        """Tokenize a list of str in one graph call; numpy arrays per text (ids, or ids, starts, ends)."""
        encoded = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"Input {index} is {type(text).__name__}, expected str.")
            try:
                encoded.append(text.encode("utf-8"))
            except UnicodeEncodeError as error:
                raise ValueError(
                    f"Input {index} has a lone surrogate {text[error.start]!r} at character {error.start}; "
                    "it cannot be encoded as UTF-8."
                ) from error
        if not encoded:
            return []
        function = _shared_batch_function(with_offsets, self.lowercase, self.strip_accents, self.tokenize_chinese_chars)
        outputs = function(tf.constant(encoded, dtype=tf.string), self._wordpiece_model, self._fast_wordpiece_model,
                           tf.constant(self.max_input_chars_per_word))
        outputs = outputs if with_offsets else (outputs,)
        splits = outputs[0].row_splits.numpy()[1:-1]
        columns = [np.split(output.flat_values.numpy(), splits) for output in outputs]
        return list(zip(*columns))

    def tokenize(self, inputs):
        """Token ids of a str, a list of str, or a tf.string tensor.

        Args:
            inputs: str, list[str], or tf.string Tensor (scalar or `(B,)`).

        Returns:
            list[int] for a str, list[list[int]] for a list, and `tokenize_tensor(inputs)` for a tensor.
        """
        if isinstance(inputs, (tf.Tensor, tf.Variable)):
            return self.tokenize_tensor(inputs)
        if isinstance(inputs, str):
            return self.tokenize([inputs])[0]
        return [ids.tolist() for (ids,) in self._run_python(list(inputs), with_offsets=False)]

    def tokenize_with_offsets(self, inputs):
        """Token ids with the character span each token came from.

        Args:
            inputs: str or list[str].

        Returns:
            For a str, `(ids, starts, ends)` Python lists where `text[starts[i]:ends[i]]` is the surface
            text of token i (code point offsets, end exclusive); for a list, a list of such tuples.
        """
        if isinstance(inputs, str):
            return self.tokenize_with_offsets([inputs])[0]
        texts = list(inputs)
        results = []
        for text, (row_ids, row_starts, row_ends) in zip(texts, self._run_python(texts, with_offsets=True)):
            # The UTF-8 byte offset at which each character starts, and the total length.
            code_points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            byte_lengths = 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)
            char_byte_starts = np.concatenate([[0], np.cumsum(byte_lengths)]).astype(np.int64)
            starts, ends = (np.searchsorted(char_byte_starts, offsets).tolist() for offsets in (row_starts, row_ends))
            results.append((row_ids.tolist(), starts, ends))
        return results

    def detokenize(self, token_ids):
        """Join tokens back into text: "##" pieces attach to the previous token, others are space-separated.

        Every id is kept, special tokens and [UNK] included; case, accents and spacing stay lost.

        Args:
            token_ids: list[int] (or a 1-D array / tensor), or a list of such lists.

        Returns:
            str, or list[str] for a list of lists.
        """
        if isinstance(token_ids, (tf.Tensor, tf.RaggedTensor)):
            token_ids = token_ids.to_list() if isinstance(token_ids, tf.RaggedTensor) else token_ids.numpy()
        token_ids = list(token_ids)
        if token_ids and not np.isscalar(token_ids[0]):
            return [self.detokenize(row) for row in token_ids]
        words = []
        for token_id in token_ids:
            token = self.id_to_token(token_id)
            if token.startswith(CONTINUATION_PREFIX) and words:
                words[-1] += token[len(CONTINUATION_PREFIX) :]
            else:
                words.append(token)
        return " ".join(words)
