"""Text (or text pairs) to BERT pretraining batches: tokenize, pack `[CLS] A [SEP] B [SEP]`, mask.

`BertPretrainingPreprocessor` owns every packing and masking setting, so that one object (its config, or the
settings JSON `keras-bert create-data` writes beside its TFRecords) carries them from data creation to training;
the pretraining data pipeline masks its instances with its masker.

Shape legend: B batch, T tokens (`sequence_length`), P masked slots (`max_predictions_per_seq`).
"""

import keras
import tensorflow as tf

from keras_bert_impl.data.masking import MaskedLMMasker, mask_dataset
from keras_bert_impl.data.pretraining_batches import to_inputs_and_targets
from keras_bert_impl.preprocessing.bert_preprocessor import pack_texts
from keras_bert_impl.preprocessing.preprocessor import (DEFAULT_BATCH_SIZE, Preprocessor, _is_model_input,
                                                         refuse_dataset_options)

# The settings a BertPretrainingPreprocessor owns besides its tokenizer: `create_pretraining_data.py`'s defaults.
DEFAULT_SETTINGS = {
    "sequence_length": 128, "truncation": "random_front_back", "mask_rate": 0.15, "max_predictions_per_seq": 20,
    "counting": "original", "whole_word_masking": False, "replacement_unit": "word", "mask_token_rate": 0.8,
    "random_token_rate": 0.1, "seed": 0,
}
# The settings that shape the masks (all but the packing ones and the seed).
MASKING_SETTINGS = ("mask_rate", "max_predictions_per_seq", "counting", "whole_word_masking", "replacement_unit",
                    "mask_token_rate", "random_token_rate")


def _is_masked_input(x):
    return _is_model_input(x) and "mask_positions" in x


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainingPreprocessor(Preprocessor):
    """Raw text to `BertPretrainer` inputs and targets: tokenize, pack, and choose the masked-LM targets.

    Texts are packed as `BertPreprocessor` packs them; then `MaskedLMMasker` picks the tokens to predict
    (`mask_rate` of them, at most `max_predictions_per_seq`) and replaces them (80% `[MASK]`, 10% a random id,
    10% unchanged by default). The next-sentence labels are `y` (0 = IsNext, 1 = random next), else 0.

    Masks are stateless functions of a seed: a call with `seed=` (int `(2,)`) masks the same way every time, one
    without draws from the layer's `seed`; `make_dataset` keys each batch by a seed from
    `tf.data.Dataset.random(seed)`: new masks every epoch, the same ones on every run.

    Args:
        tokenizer: `BertTokenizer`.
        sequence_length: int. `T`. Defaults to 128.
        truncation: str. How a pair too long for `T` is cut: `"random_front_back"` (`create_pretraining_data.py`'s)
            or `"longest_first"` (see `data.packing`). Defaults to `"random_front_back"`.
        mask_rate: float. Share of the tokens to predict. Defaults to 0.15.
        max_predictions_per_seq: int. `P`, the masked-LM slots per row. Defaults to 20.
        counting: str. How many tokens a row predicts: `"original"`, `"ceil"` or `"bernoulli"` (`data.masking`).
            Defaults to `"original"`.
        whole_word_masking: bool. Mask "##" pieces together with their word. Defaults to False.
        replacement_unit: str. The unit of the 80/10/10 draw under whole-word masking, `"word"` or `"token"`.
            Defaults to `"word"`.
        mask_token_rate: float. Share of the chosen tokens that become `[MASK]`. Defaults to 0.8.
        random_token_rate: float. Share that become a random id (the rest stay). Defaults to 0.1.
        seed: int. Seed of the masks (and of the `"random_front_back"` coins). Defaults to 0.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        x: texts or pairs as `BertPreprocessor` takes them, or packed inputs (a dict with `token_ids`,
            `segment_ids`, optionally `padding_mask`), which are masked only.
        y: next-sentence labels, int `(B,)`, or None (all 0). Defaults to None.
        sample_weight: passed through. Defaults to None.
        seed: int tensor `(2,)` or None: the stateless seed of the masks. Defaults to None.

    Returns:
        `(x, y)` (or `(x, y, sample_weight)`): `x` a dict of `token_ids` int32 `(B, T)` (masked),
        `segment_ids` int32 `(B, T)`, `padding_mask` bool `(B, T)`, `mask_positions` int32 `(B, P)`; `y` a
        dict of `mask_ids` int32 `(B, P)`, `mask_weights` float32 `(B, P)`, `next_sentence_labels` int32
        `(B,)`: what `BertPretrainer` takes. No batch axis for one str.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"])
    >>> preprocessor = BertPretrainingPreprocessor(tokenizer, sequence_length=8, max_predictions_per_seq=2,
    ...                                            mask_rate=0.3, mask_token_rate=1.0, random_token_rate=0.0)
    >>> x, y = preprocessor((["good film"], ["bad"]), [1], seed=[1, 2])
    >>> x["token_ids"].tolist(), x["mask_positions"].tolist(), y["mask_ids"].tolist()
    ([[2, 4, 4, 3, 6, 3, 0, 0]], [[1, 2]], [[5, 7]])
    >>> y["next_sentence_labels"].tolist()
    [1]
    """

    _config_keys = tuple(name for name in DEFAULT_SETTINGS if name != "sequence_length")

    def __init__(self, tokenizer, sequence_length=DEFAULT_SETTINGS["sequence_length"],
                 truncation=DEFAULT_SETTINGS["truncation"], mask_rate=DEFAULT_SETTINGS["mask_rate"],
                 max_predictions_per_seq=DEFAULT_SETTINGS["max_predictions_per_seq"],
                 counting=DEFAULT_SETTINGS["counting"], whole_word_masking=DEFAULT_SETTINGS["whole_word_masking"],
                 replacement_unit=DEFAULT_SETTINGS["replacement_unit"],
                 mask_token_rate=DEFAULT_SETTINGS["mask_token_rate"],
                 random_token_rate=DEFAULT_SETTINGS["random_token_rate"], seed=DEFAULT_SETTINGS["seed"], **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        self.truncation, self.counting, self.replacement_unit = truncation, counting, replacement_unit
        self.mask_rate, self.mask_token_rate = float(mask_rate), float(mask_token_rate)
        self.random_token_rate, self.max_predictions_per_seq = float(random_token_rate), int(max_predictions_per_seq)
        self.whole_word_masking, self.seed = bool(whole_word_masking), int(seed)
        # The packer and the masker check their settings (truncation; counting, rates, P >= 1) themselves.
        self.packer = self.segment_packer(truncation=truncation, seed=self.seed)
        self.masker = MaskedLMMasker.from_tokenizer(self.tokenizer, seed=self.seed, name="masker",
                                                    **{name: getattr(self, name) for name in MASKING_SETTINGS})

    def mask(self, features, seed=None):
        """`features` masked by this preprocessor's `MaskedLMMasker`: `token_ids` masked, `mask_positions`,
        `mask_ids`, `mask_weights` added.

        Args:
            features: dict with `token_ids` (int `(B, T)` dense or ragged, or `(T,)`), optionally `padding_mask`.
            seed: int tensor `(2,)` (stateless), a scalar (combined with the layer's `seed`) or None.
        """
        return self.masker(features, seed=seed)

    def mask_dataset(self, dataset, seed=None, new_masks_each_epoch=True, epoch=None):
        """`data.masking.mask_dataset` with this preprocessor's masker and `seed` (default: the layer's): new masks
        every epoch (dynamic) or the same ones (static); with `epoch`, masks keyed by `(seed, epoch)`."""
        return mask_dataset(dataset, self.masker, seed=self.seed if seed is None else seed,
                            new_masks_each_epoch=new_masks_each_epoch, epoch=epoch)

    def call(self, x, y=None, sample_weight=None, seed=None):
        if isinstance(x, dict):
            if "token_ids" not in x or "segment_ids" not in x:
                raise ValueError(f"Packed inputs need `token_ids` and `segment_ids`; got the keys {sorted(x)}.")
            packed = dict(x)
            token_ids = tf.convert_to_tensor(packed["token_ids"])
            if "padding_mask" not in packed:
                packed["padding_mask"] = tf.not_equal(token_ids, tf.cast(self.tokenizer.pad_token_id, token_ids.dtype))
        else:
            packed = pack_texts(self, x)  # each (B, T)
        masked = self.masker(packed, seed=seed)
        labels = tf.zeros(tf.shape(masked["token_ids"])[:-1], tf.int32) if y is None else y
        inputs, targets = to_inputs_and_targets({**masked, "next_sentence_labels": labels})
        return keras.utils.pack_x_y_sample_weight(inputs, targets, sample_weight)

    def make_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """Batched `(x, y)` pretraining batches from raw texts (or text pairs) and next-sentence labels.

        As `Preprocessor.make_dataset`, each batch masked under its own seed from `tf.data.Dataset.random(seed)`.
        Masked inputs (with `mask_positions`) pass through; packed but unmasked inputs are masked.
        """
        if isinstance(x, tf.data.Dataset):
            refuse_dataset_options(y=y, sample_weight=sample_weight, batch_size=batch_size)
            if _is_masked_input(keras.utils.unpack_x_y_sample_weight(x.element_spec)[0]):
                return x
            dataset = x
        else:
            dataset = tf.data.Dataset.from_tensor_slices(self._slices(x, y, sample_weight))
            if shuffle:
                dataset = dataset.shuffle(int(dataset.cardinality()), reshuffle_each_iteration=True)
            dataset = dataset.batch(batch_size or DEFAULT_BATCH_SIZE)
            if _is_masked_input(x):
                return dataset.prefetch(tf.data.AUTOTUNE)
        seeds = tf.data.Dataset.random(seed=self.seed, rerandomize_each_iteration=True)
        dataset = tf.data.Dataset.zip((dataset, seeds)).map(self._preprocess_seeded, deterministic=True,
                                                             num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)

    @tf.autograph.experimental.do_not_convert  # plain TensorFlow: see Preprocessor._preprocess_element
    def _preprocess_seeded(self, element, element_seed):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(element)
        return self.call(x, y, sample_weight, seed=tf.stack([tf.constant(self.seed, tf.int64), element_seed]))

    def settings(self):
        """Every constructor argument but the tokenizer (what `create-data` records; `cls(tokenizer, **settings)`)."""
        return {name: getattr(self, name) for name in DEFAULT_SETTINGS}
