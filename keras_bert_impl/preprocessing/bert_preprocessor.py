"""Text (or text pairs) to backbone inputs: tokenize, then pack `[CLS] A [SEP] B [SEP]`.

Shape legend: B batch, T tokens (`sequence_length`).
"""

import keras
import tensorflow as tf

from keras_bert_impl.preprocessing.preprocessor import Preprocessor, refuse_pair_list


def pack_texts(preprocessor, x):
    """`preprocessor.packer` on texts, or on a tuple of one or two text batches (a pair): each `(B, T)`."""
    refuse_pair_list(x)
    first, second = x, None
    if isinstance(x, tuple):
        if len(x) not in (1, 2):
            raise ValueError(f"x must be texts or a tuple of 1 or 2 text batches (a pair), got {len(x)} segments.")
        first, second = x[0], (x[1] if len(x) == 2 else None)
    first = preprocessor.tokenize(first, "x[0]" if second is not None else "x")
    if second is not None:
        second = preprocessor.tokenize(second, "x[1]")
    return preprocessor.packer(first, second)


def _is_text_batches(x):
    """Whether `x` is a list of str or a tuple of one or two equally long ones (a batch of texts or of pairs)."""
    batches = x if isinstance(x, tuple) and len(x) in (1, 2) else (x,)
    return all(isinstance(batch, list) and batch and all(isinstance(text, str) for text in batch)
               for batch in batches) and len({len(batch) for batch in batches}) == 1


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPreprocessor(Preprocessor):
    """Raw text to BERT inputs for the fine-tuning tasks (`BertClassifier`): tokenize and pack.

    Single texts become `[CLS] A [SEP]`, pairs `[CLS] A [SEP] B [SEP]` (segment ids 0 then 1), padded with
    `[PAD]` to `sequence_length`; a pair too long is truncated as `run_classifier.py` does ("longest_first").
    An eager call on a list of str (or a tuple of two) without targets runs `preprocess_batch`: one traced graph.

    Args:
        tokenizer: `BertTokenizer`.
        sequence_length: int. `T`. Defaults to 128.
        truncation: str. `"longest_first"` or `"random_front_back"` (`data.packing`). Defaults to `"longest_first"`.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        x: a str, a list / array / tf.string tensor `(B,)` of texts, or a tuple `(first, second)` of two such
            batches for pairs.
        y, sample_weight: passed through. Default to None.

    Returns:
        `x` dict (`token_ids` int32 `(B, T)`, `segment_ids` int32 `(B, T)`, `padding_mask` bool `(B, T)`; no
        batch axis for one str), or `(x, y)` / `(x, y, sample_weight)` when those are given.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"])
    >>> preprocessor = BertPreprocessor(tokenizer, sequence_length=6)
    >>> preprocessor(["good film", "bad"])["token_ids"].tolist()
    [[2, 5, 7, 3, 0, 0], [2, 6, 3, 0, 0, 0]]
    >>> preprocessor((["good"], ["bad film"]))["segment_ids"].tolist()
    [[0, 0, 0, 1, 1, 1]]
    """

    _config_keys = ("truncation",)

    def __init__(self, tokenizer, sequence_length=128, truncation="longest_first", **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        self.truncation = truncation
        self.packer = self.segment_packer(truncation=truncation)  # checks `truncation`

    def __call__(self, x, y=None, sample_weight=None):
        if y is None and sample_weight is None and tf.executing_eagerly() and _is_text_batches(x):
            return self.preprocess_batch(x)  # one traced graph call instead of eager ops (15x faster on a pair)
        return super().__call__(x, y, sample_weight)

    def call(self, x, y=None, sample_weight=None):
        packed = pack_texts(self, x)  # each (B, T)
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)
