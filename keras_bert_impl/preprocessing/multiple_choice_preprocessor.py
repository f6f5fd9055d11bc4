"""Contexts and their candidate endings to multiple-choice inputs: `[CLS] context [SEP] ending [SEP]` per choice.

Shape legend: B batch, C choices, T tokens (`sequence_length`).
"""

import keras
import tensorflow as tf

from keras_bert_impl.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_impl.preprocessing.preprocessor import _as_string_tensor


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMultipleChoicePreprocessor(BertPreprocessor):
    """Raw text to `BertMultipleChoice` inputs: pack each choice with its context, `(B, C, T)`.

    Choice `c` of example `b` becomes `[CLS] contexts[b] [SEP] endings[b][c] [SEP]`, packed as `BertPreprocessor`
    packs a sentence pair. For SWAG, the context is `sent1` and each ending `sent2 + " " + endingN`, as Hugging
    Face's `run_swag.py` builds them (`data.multiple_choice_data.multiple_choice_inputs`).

    Args:
        tokenizer, sequence_length, truncation, **kwargs: as `BertPreprocessor`'s; `T` is per choice.

    Call arguments:
        x: a tuple `(contexts, endings)`: contexts a list / array / tf.string tensor `(B,)`, endings `(B, C)`
            (a list of equally long lists); or one example, a str and `(C,)` endings.
        y, sample_weight: the index of the right choice, and weights; passed through. Default to None.

    Returns:
        `x` dict (`token_ids` int32 `(B, C, T)`, `segment_ids` int32 `(B, C, T)`, `padding_mask` bool
        `(B, C, T)`; `(C, T)` for one example), or `(x, y)` / `(x, y, sample_weight)` when those are given.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "sat", "down", "away"])
    >>> preprocessor = BertMultipleChoicePreprocessor(tokenizer, sequence_length=6)
    >>> preprocessor((["he sat"], [["down", "away"]]))["token_ids"].tolist()
    [[[2, 5, 6, 3, 7, 3], [2, 5, 6, 3, 8, 3]]]
    """

    def call(self, x, y=None, sample_weight=None):
        if not isinstance(x, tuple) or len(x) != 2:
            raise ValueError("x must be a tuple (contexts, endings): contexts (B,) and endings (B, C) strings.")
        contexts = _as_string_tensor(x[0], "x[0] (the contexts)", rank=1)
        endings = _as_string_tensor(x[1], "x[1] (the endings)", rank=2)
        unbatched = contexts.shape.rank == 0
        if unbatched:
            contexts, endings = contexts[tf.newaxis], endings[tf.newaxis]
        batch_size, num_choices = tf.shape(endings)[0], tf.shape(endings)[1]
        with tf.control_dependencies([tf.debugging.assert_equal(
                tf.shape(contexts)[0], batch_size,
                message="x[0] (the contexts) and x[1] (the endings) must hold as many examples")]):
            firsts = tf.repeat(contexts, num_choices)  # (B * C,), each context once per choice
        seconds = tf.reshape(endings, [-1])  # (B * C,)
        packed = self.packer(self.tokenize(firsts, "x[0]"), self.tokenize(seconds, "x[1]"))  # each (B * C, T)
        packed = {key: tf.reshape(value, [batch_size, num_choices, tf.shape(value)[-1]])  # (B, C, T)
                  for key, value in packed.items()}
        if unbatched:
            packed = {key: value[0] for key, value in packed.items()}
        return keras.utils.pack_x_y_sample_weight(packed, y, sample_weight)
