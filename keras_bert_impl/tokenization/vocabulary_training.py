"""Learn a WordPiece vocabulary (`vocab.txt`) from a text corpus.

TensorFlow at the data edge: the words are `split_words`, exactly what `BertTokenizer` looks up (keras-hub's
own splitting case-folds with NFKC), and the pieces are learned by tensorflow-text's WordPiece learner.
"""

import collections
import os

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from keras_bert_impl.tokenization.bert_tokenizer import CONTINUATION_PREFIX, SPECIAL_TOKENS, split_words
from keras_bert_impl.utils.atomic_io import atomic_write_text
from keras_bert_impl.utils.file_patterns import expand_paths, utf8_error_message

_BATCH_SIZE = 1024


def _check_text_file(path):
    """Raise a clear error for a missing, non-UTF-8 or empty corpus file; return its non-blank line count."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Corpus file {path!r} does not exist.")
    try:
        with open(path, encoding="utf-8") as handle:
            return sum(1 for line in handle if line.strip())
    except UnicodeDecodeError:
        raise ValueError(f"Corpus file {utf8_error_message(path)}") from None


def train_wordpiece_vocabulary(text_files_or_dataset, vocabulary_size, lowercase=True, reserved_tokens=SPECIAL_TOKENS,
                               output_path=None, strip_accents=None, tokenize_chinese_chars=True):
    """Learn a BERT WordPiece vocabulary from text, reserved tokens first ([PAD] is id 0, as released).

    Args:
        text_files_or_dataset: str, list[str] or tf.data.Dataset. UTF-8 text file path(s) (glob patterns
            allowed), read line by line, or a dataset of tf.string scalars or `(B,)` batches.
        vocabulary_size: int. Most tokens, reserved ones included.
        lowercase: bool. Learn an uncased vocabulary. Defaults to True.
        reserved_tokens: sequence of str. Tokens placed first, in order; must include `[PAD]` `[UNK]` `[CLS]`
            `[SEP]` `[MASK]`. Defaults to those five, `[PAD]` first.
        output_path: str or None. Where to write `vocab.txt` (atomically). Defaults to None (not written).
        strip_accents: bool or None. As in `BertTokenizer`; None follows `lowercase`. Defaults to None.
        tokenize_chinese_chars: bool. As in `BertTokenizer`. Defaults to True.

    Returns:
        list[str]: the vocabulary in id order.

    Example:
    >>> dataset = tf.data.Dataset.from_tensor_slices(["the cat sat", "the dog sat on the mat"] * 10)
    >>> vocabulary = train_wordpiece_vocabulary(dataset, vocabulary_size=40)
    >>> vocabulary[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    reserved_tokens = list(reserved_tokens)
    missing = [token for token in SPECIAL_TOKENS if token not in reserved_tokens]
    if missing:
        raise ValueError(f"reserved_tokens must include {', '.join(missing)} (BertTokenizer needs them).")
    if len(set(reserved_tokens)) != len(reserved_tokens):
        raise ValueError(f"reserved_tokens has duplicates: {reserved_tokens}.")
    if int(vocabulary_size) <= len(reserved_tokens):
        raise ValueError(f"vocabulary_size {vocabulary_size} leaves no room beyond the {len(reserved_tokens)} reserved "
                         "tokens.")
    if isinstance(text_files_or_dataset, tf.data.Dataset):
        lines, source = text_files_or_dataset, "the dataset"
    else:
        paths = expand_paths(text_files_or_dataset)
        if sum(_check_text_file(path) for path in paths) == 0:
            raise ValueError(f"Corpus files {paths} contain no text (only blank lines).")
        lines, source = tf.data.TextLineDataset(paths), f"corpus files {paths}"
    if lines.element_spec.shape.rank == 0:
        lines = lines.batch(_BATCH_SIZE)
    words = lines.map(lambda text: split_words(text, lowercase, strip_accents, tokenize_chinese_chars).flat_values,
                      num_parallel_calls=tf.data.AUTOTUNE)
    counts = collections.Counter()
    for batch in words.as_numpy_iterator():
        counts.update(batch.tolist())
    if not counts:
        raise ValueError(f"No words in {source}: the corpus is empty or only whitespace/control characters.")
    word_counts = collections.Counter({word.decode("utf-8"): count for word, count in counts.items()})
    vocabulary = wordpiece_tokenizer_learner_lib.learn(word_counts, vocab_size=int(vocabulary_size),
                                                       reserved_tokens=reserved_tokens, include_joiner_token=True,
                                                       joiner=CONTINUATION_PREFIX)[: int(vocabulary_size)]
    if output_path is not None:
        atomic_write_text(os.fspath(output_path), "".join(token + "\n" for token in vocabulary))
    return vocabulary
