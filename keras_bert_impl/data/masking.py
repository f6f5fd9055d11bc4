"""Masked-LM masking for BERT pretraining (Devlin et al., 2018, section 3.1 "Task #1: Masked LM").

TensorFlow at the data edge: `MaskedLMMasker` runs inside `tf.data.Dataset.map` under every Keras backend, on
TensorFlow tensors (Keras' input conversion is off, as in keras-hub's preprocessing layers).

Shape legend: `B` batch, `T` tokens per sequence, `P` max predictions per sequence, `W` = T + 1 word slots.

The original `create_masked_lm_predictions`, vectorised over the batch, except that a "##" piece right after a
[SEP] starts a word of its own. Counting rules: `"original"` predicts `min(P, max(1, round(n * mask_rate)))` of
`n` tokens ([CLS]/[SEP] included, float64, half to even); `"ceil"` `min(P, ceil(n_candidates * mask_rate))` as
tensorflow-text's `RandomItemSelector`; `"bernoulli"` keeps each candidate word with probability `mask_rate` (as
Hugging Face's collator), capped at `P`. Randomness is stateless: the same `(2,)` seed gives the same masks on
every run and backend.
"""

import keras
import tensorflow as tf

from keras_bert_impl.data.documents import text_lines
from keras_bert_impl.utils.constructor_config import constructor_config

COUNTING_RULES = ("original", "ceil", "bernoulli")
REPLACEMENT_UNITS = ("word", "token")
# "static": masked once, kept across epochs (the original's TFRecords); "dynamic": masked anew every epoch.
MASKING_MODES = ("static", "dynamic")
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class MaskedLMMasker(keras.layers.Layer):
    """Choose and replace tokens for the masked-LM objective; runs in `tf.data` under any Keras backend.

    Args:
        vocabulary_size: int. Random replacements are drawn from `[0, vocabulary_size)`. Defaults to
            `len(vocabulary)`.
        mask_token_id: int. Id of `[MASK]`. Defaults to the id of `"[MASK]"` in `vocabulary`.
        max_predictions_per_seq: int. `P`, the width of the prediction outputs. Defaults to 20.
        mask_rate: float. Fraction of tokens to predict. Defaults to 0.15.
        mask_token_rate: float. Probability that a chosen token becomes `[MASK]`. Defaults to 0.8.
        random_token_rate: float. Probability that a chosen token becomes a random id; the rest stay
            unchanged. Defaults to 0.1.
        counting: str. `"original"`, `"ceil"` or `"bernoulli"` (module docstring). Defaults to `"original"`.
        whole_word_masking: bool. Mask "##" pieces together with the word they continue. Needs
            `vocabulary`. Defaults to False.
        replacement_unit: str. With `whole_word_masking`: one 80/10/10 draw per chosen `"word"`, or per `"token"`
            as the original script. Defaults to `"word"`.
        unselectable_token_ids: list of int. Ids never chosen. Defaults to the ids of `[CLS]`, `[SEP]`,
            `[PAD]` in `vocabulary`; required when `vocabulary` is not given.
        pad_token_id: int. Pads ragged input and marks padding in dense input without a `padding_mask`.
            Defaults to the id of `"[PAD]"` in `vocabulary`, else 0.
        vocabulary: list of str or str. The tokens (or a `vocab.txt` path), for whole-word masking and the
            defaults above. Defaults to None.
        seed: int. Seed of the stateless randomness when `call` gets no `seed`. Defaults to 0.

    Call arguments:
        inputs: a dict with `"token_ids"` (int, `(B, T)` dense or ragged, or `(T,)`), optionally
            `"padding_mask"` (bool, same shape as dense `token_ids`); other keys are passed through.
            A bare `token_ids` tensor is accepted too.
        seed: optional int tensor `(2,)` (a stateless seed) or a scalar (combined with the layer's `seed`).

    Returns:
        The input dict with masked `"token_ids"` (same shape, dtype and raggedness) and, padded with 0,
        `"mask_positions"` int32 `(B, P)` (ascending), `"mask_ids"` int32 `(B, P)` (the original ids) and
        `"mask_weights"` float32 `(B, P)`; TensorFlow tensors under every backend.

    Example:
    >>> masker = MaskedLMMasker(vocabulary_size=10, mask_token_id=3, max_predictions_per_seq=3,
    ...                         mask_rate=1.0, random_token_rate=0.0, mask_token_rate=1.0,
    ...                         unselectable_token_ids=[0, 1, 2])
    >>> out = masker({"token_ids": [[1, 5, 6, 2, 0]]}, seed=[1, 2])
    >>> out["token_ids"].numpy().tolist(), out["mask_positions"].numpy().tolist()
    ([[1, 3, 3, 2, 0]], [[1, 2, 0]])
    """

    def __init__(self, vocabulary_size=None, mask_token_id=None, max_predictions_per_seq=20, mask_rate=0.15,
                 mask_token_rate=0.8, random_token_rate=0.1, counting="original", whole_word_masking=False,
                 replacement_unit="word", unselectable_token_ids=None, pad_token_id=None, vocabulary=None, seed=0,
                 **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.vocabulary_size = vocabulary_size
        self.mask_token_id = mask_token_id
        self.max_predictions_per_seq = max_predictions_per_seq
        self.mask_rate = mask_rate
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.counting = counting
        self.whole_word_masking = whole_word_masking
        self.replacement_unit = replacement_unit
        self.unselectable_token_ids = unselectable_token_ids
        self.pad_token_id = pad_token_id
        self.vocabulary = vocabulary
        self.seed = seed
        self.built = True
        tokens = None
        if isinstance(vocabulary, str):
            tokens = [line.strip() for line in text_lines(vocabulary)]
        elif vocabulary is not None:
            tokens = list(vocabulary)
        ids = {token: index for index, token in enumerate(tokens)} if tokens else {}

        def look_up(token, purpose):
            if token not in ids:
                raise ValueError(
                    f"MaskedLMMasker: the vocabulary has no {token!r} token, needed for {purpose}; pass the "
                    "id explicitly."
                )
            return ids[token]

        if tokens is None and any(value is None for value in (vocabulary_size, mask_token_id, unselectable_token_ids)):
            raise ValueError(
                "MaskedLMMasker needs `vocabulary_size`, `mask_token_id` and `unselectable_token_ids` (e.g. the ids of "
                "[CLS], [SEP], [PAD]), or a `vocabulary`."
            )
        self._vocabulary_size = self.vocabulary_size if self.vocabulary_size is not None else len(tokens)
        self._mask_token_id = look_up("[MASK]", "mask_token_id") if self.mask_token_id is None else self.mask_token_id
        if self.unselectable_token_ids is not None:
            self._unselectable_ids = [int(i) for i in self.unselectable_token_ids]
        else:
            self._unselectable_ids = [look_up(token, "unselectable_token_ids") for token in SPECIAL_TOKENS]
        self._pad_token_id = self.pad_token_id if self.pad_token_id is not None else ids.get("[PAD]", 0)
        if not 0 <= self._mask_token_id < self._vocabulary_size:
            raise ValueError(f"mask_token_id={self._mask_token_id} is outside the vocabulary "
                             f"[0, {self._vocabulary_size}).")
        if self.counting not in COUNTING_RULES:
            raise ValueError(f"counting must be one of {COUNTING_RULES}, got {self.counting!r}.")
        if self.replacement_unit not in REPLACEMENT_UNITS:
            raise ValueError(f"replacement_unit must be one of {REPLACEMENT_UNITS}, got {self.replacement_unit!r}.")
        if not 0.0 <= self.mask_rate <= 1.0:
            raise ValueError(f"mask_rate must be in [0, 1], got {self.mask_rate}.")
        rates = (self.mask_token_rate, self.random_token_rate)
        if min(rates) < 0 or sum(rates) > 1.0 + 1e-9:
            raise ValueError(f"mask_token_rate and random_token_rate must be >= 0 with a sum <= 1, got {rates[0]} and "
                             f"{rates[1]}.")
        if int(self.max_predictions_per_seq) < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {self.max_predictions_per_seq}.")
        self._continuation_table = None
        if self.whole_word_masking:
            if tokens is None:
                raise ValueError("whole_word_masking=True needs `vocabulary` to know which ids are '##' pieces.")
            self._continuation_table = [token.startswith("##") for token in tokens]

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker whose ids come from a `BertTokenizer` (`[MASK]`; never `[CLS]`, `[SEP]`, `[PAD]`); `**kwargs`
        are other `MaskedLMMasker` arguments."""
        kwargs.setdefault("vocabulary_size", tokenizer.vocabulary_size())
        if kwargs.get("whole_word_masking"):
            # Only whole-word masking needs the tokens themselves (to find the "##" pieces).
            kwargs.setdefault("vocabulary", [tokenizer.id_to_token(i) for i in range(tokenizer.vocabulary_size())])
        kwargs.setdefault("mask_token_id", tokenizer.mask_token_id)
        kwargs.setdefault("pad_token_id", tokenizer.pad_token_id)
        kwargs.setdefault("unselectable_token_ids", [tokenizer.cls_token_id, tokenizer.sep_token_id,
                                                     tokenizer.pad_token_id])
        return cls(**kwargs)

    def _stateless_seed(self, seed):
        if seed is None:
            return tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int64, seed=self.seed)
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        if seed.shape.rank == 0:
            return tf.stack([tf.constant(self.seed, tf.int64), seed])
        return tf.reshape(seed, [2])

    def call(self, inputs, seed=None):
        with tf.device("cpu"):
            features = dict(inputs) if isinstance(inputs, dict) else {"token_ids": inputs}
            token_ids = features["token_ids"]
            ragged = isinstance(token_ids, tf.RaggedTensor)
            token_ids = token_ids if ragged else tf.convert_to_tensor(token_ids)
            unbatched = token_ids.shape.rank == 1
            if unbatched:
                token_ids = token_ids[tf.newaxis]
            if ragged:
                row_lengths = token_ids.row_lengths()
                dense_ids = token_ids.to_tensor(default_value=tf.cast(self._pad_token_id, token_ids.dtype))
                valid = tf.sequence_mask(row_lengths, tf.shape(dense_ids)[1])
            else:
                dense_ids = token_ids
                if "padding_mask" in features:
                    padding_mask = tf.convert_to_tensor(features["padding_mask"])
                    valid = tf.cast(padding_mask[tf.newaxis] if unbatched else padding_mask, tf.bool)
                else:
                    valid = tf.not_equal(dense_ids, tf.cast(self._pad_token_id, dense_ids.dtype))
            masked, positions, mask_ids, weights = self._mask_dense(dense_ids, valid, self._stateless_seed(seed))
            if ragged:
                masked = tf.RaggedTensor.from_tensor(masked, lengths=row_lengths)
            if unbatched:
                masked, positions, mask_ids, weights = masked[0], positions[0], mask_ids[0], weights[0]
            features.update(token_ids=masked, mask_positions=positions, mask_ids=mask_ids, mask_weights=weights)
            return features

    def _mask_dense(self, token_ids, valid, seed):
        P = int(self.max_predictions_per_seq)
        ids = tf.cast(token_ids, tf.int32)  # (B, T)
        B, T = tf.shape(ids)[0], tf.shape(ids)[1]
        W = T + 1  # word slots; slot T collects non-candidates
        word_seed, choice_seed, random_id_seed, coin_seed = tf.unstack(
            tf.random.experimental.stateless_split(seed, num=4)
        )

        candidate = valid  # (B, T)
        for unselectable_id in self._unselectable_ids:  # a few ids: cheaper than a (B, T, n) comparison
            candidate &= tf.not_equal(ids, unselectable_id)
        if self.whole_word_masking:
            table = tf.constant(self._continuation_table, tf.bool)
            is_piece = tf.gather(table, tf.clip_by_value(ids, 0, len(self._continuation_table) - 1))
            previous_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
            starts_word = candidate & ~(is_piece & previous_candidate)
        else:
            starts_word = candidate
        word_of_token = tf.where(candidate, tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1, T)  # (B, T)
        num_tokens = tf.reduce_sum(tf.cast(valid, tf.int32), axis=1)
        num_candidates = tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1)
        num_words = tf.reduce_sum(tf.cast(starts_word, tf.int32), axis=1) if self.whole_word_masking else num_candidates
        is_word = tf.range(W)[tf.newaxis] < num_words[:, tf.newaxis]  # (B, W)
        eligible = is_word
        if self.counting == "original":
            wanted = tf.maximum(1, tf.cast(tf.round(tf.cast(num_tokens, tf.float64) * self.mask_rate), tf.int32))
        elif self.counting == "ceil":
            wanted = tf.cast(tf.math.ceil(tf.cast(num_candidates, tf.float32) * self.mask_rate), tf.int32)
        else:
            wanted = tf.fill([B], P)
            eligible = is_word & (tf.random.stateless_uniform([B, W], coin_seed) < self.mask_rate)
        wanted = tf.minimum(wanted, P)  # (B,)

        # Visit eligible words in a random order (ineligible slots sort last).
        priority = tf.where(eligible, tf.random.stateless_uniform([B, W], word_seed), 2.0)  # (B, W)
        if self.whole_word_masking:
            row_offsets = tf.range(B)[:, tf.newaxis] * W
            word_length = tf.reshape(tf.math.unsorted_segment_sum(
                tf.reshape(tf.cast(candidate, tf.int32), [-1]), tf.reshape(word_of_token + row_offsets, [-1]), B * W
            ), [B, W])  # (B, W), 0 for unused slots
            order = tf.argsort(priority, axis=1, stable=True)  # (B, W)
            length_in_order = tf.gather(word_length, order, batch_dims=1)
            eligible_in_order = tf.gather(eligible, order, batch_dims=1)
            taken_in_order = self._take_words_that_fit(length_in_order, eligible_in_order, wanted)
            taken_word = tf.gather(taken_in_order, tf.argsort(order, axis=1), batch_dims=1)  # (B, W)
        else:
            # Every word is one token: take the eligible slots sorting no later than the `wanted`-th lowest
            # (priority, then slot), found by top-k over the P lowest without sorting the whole row.
            padded_priority = tf.concat([priority, tf.fill([B, P], 3.0)], axis=1)  # (B, W + P)
            lowest_negated, lowest = tf.math.top_k(-padded_priority, k=P)  # (B, P), lowest priority first
            last = tf.maximum(wanted, 1)[:, tf.newaxis] - 1  # (B, 1)
            last_priority = -tf.gather(lowest_negated, last, batch_dims=1)  # (B, 1)
            last_slot = tf.gather(lowest, last, batch_dims=1)
            at_or_before = tf.range(W)[tf.newaxis] <= last_slot
            sorts_before = (priority < last_priority) | ((priority == last_priority) & at_or_before)
            taken_word = eligible & sorts_before & (wanted > 0)[:, tf.newaxis]  # (B, W)
        selected = candidate & tf.gather(taken_word, word_of_token, batch_dims=1)  # (B, T)

        if self.whole_word_masking and self.replacement_unit == "word":
            choice = tf.gather(tf.random.stateless_uniform([B, W], choice_seed), word_of_token, batch_dims=1)
        else:
            choice = tf.random.stateless_uniform([B, T], choice_seed)
        to_mask = selected & (choice < self.mask_token_rate)
        to_random = selected & ~to_mask & (choice < self.mask_token_rate + self.random_token_rate)
        random_ids = tf.random.stateless_uniform([B, T], random_id_seed, maxval=self._vocabulary_size, dtype=tf.int32)
        masked = tf.where(to_mask, self._mask_token_id, tf.where(to_random, random_ids, ids))

        # Each row's (at most P) selected positions in ascending order, then padding: each one's column is its rank
        # in its row, clipped to a spare column P that is dropped, so the scatter never goes out of bounds.
        coordinates = tf.cast(tf.where(selected), tf.int32)  # (N, 2)
        row = coordinates[:, 0]
        num_selected = tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)  # (B,)
        column = tf.range(tf.shape(row)[0]) - tf.gather(tf.cumsum(num_selected, exclusive=True), row)
        index = tf.stack([row, tf.minimum(column, P)], axis=1)
        mask_positions = tf.scatter_nd(index, coordinates[:, 1], [B, P + 1])[:, :P]
        mask_ids = tf.scatter_nd(index, tf.gather_nd(ids, coordinates), [B, P + 1])[:, :P]
        mask_weights = tf.cast(tf.range(P)[tf.newaxis] < num_selected[:, tf.newaxis], tf.float32)
        return tf.cast(masked, token_ids.dtype), mask_positions, mask_ids, mask_weights

    @staticmethod
    def _take_words_that_fit(length_in_order, eligible_in_order, wanted):
        """The original greedy pass: take a word if it fits, skip one that would pass `wanted`, stop when full."""
        num_slots = tf.shape(length_in_order)[1]
        taken = tf.TensorArray(tf.bool, size=num_slots, element_shape=wanted.shape)

        def visit(k, count, taken):
            length = length_in_order[:, k]
            fits = eligible_in_order[:, k] & (count < wanted) & (count + length <= wanted)
            return k + 1, count + tf.where(fits, length, 0), taken.write(k, fits)

        def some_row_open(k, count, taken):
            next_eligible = tf.gather(eligible_in_order, tf.minimum(k, num_slots - 1), axis=1)
            return (k < num_slots) & tf.reduce_any((count < wanted) & next_eligible)

        k, _, taken = tf.while_loop(some_row_open, visit, (0, tf.zeros_like(wanted), taken))
        # Slots after the early stop are not taken.
        taken = tf.concat([taken.stack()[:k], tf.zeros([num_slots - k, tf.shape(wanted)[0]], tf.bool)], axis=0)
        return tf.transpose(taken)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}


def epoch_seed(seed, epoch, stream=0):
    """An int64 scalar seed that depends only on `(seed, epoch, stream)`: one epoch's shuffle (`stream` 1 or 2) or
    masks (`stream` 0); `epoch` may be a tensor."""
    if stream not in (0, 1, 2, 3):
        raise ValueError(f"stream must be 0, 1, 2 or 3, got {stream!r}.")
    key = tf.stack([tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64) * 4 + stream])
    return tf.random.stateless_uniform([], seed=key, minval=None, maxval=None, dtype=tf.int64)


def mask_dataset(dataset, masker, seed=None, new_masks_each_epoch=True, num_parallel_calls=tf.data.AUTOTUNE,
                 epoch=None):
    """Apply `masker` to every element of `dataset` with its own reproducible stateless seed.

    With `epoch`, dynamic masks (Liu et al., 2019) are keyed by `(seed, epoch, element index)`; without it they
    are redrawn on every pass. Static masks are the same on every pass.

    Args:
        dataset: tf.data.Dataset. Elements are dicts with `"token_ids"` (see `MaskedLMMasker`), batched or not.
        masker: MaskedLMMasker.
        seed: int. Seed of the per-element seeds. Defaults to `masker.seed`.
        new_masks_each_epoch: bool. Dynamic (True) or static (False) masks. Defaults to True.
        num_parallel_calls: int. Parallelism of the `map`. Defaults to `tf.data.AUTOTUNE`.
        epoch: int, int64 scalar tensor or None. The epoch the elements belong to. Defaults to None.

    Returns:
        A tf.data.Dataset of the masker's output dicts.

    Example:
    >>> ds = tf.data.Dataset.from_tensor_slices({"token_ids": [[1, 5, 6, 2]]})
    >>> masker = MaskedLMMasker(vocabulary_size=10, mask_token_id=3, max_predictions_per_seq=2,
    ...                         unselectable_token_ids=[0, 1, 2])
    >>> sorted(next(iter(mask_dataset(ds, masker, seed=1))))
    ['mask_ids', 'mask_positions', 'mask_weights', 'token_ids']
    """
    seed = masker.seed if seed is None else seed
    keyed_by_epoch = epoch is not None and new_masks_each_epoch
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=new_masks_each_epoch and epoch is None)
    first_key = epoch_seed(seed, epoch) if keyed_by_epoch else tf.constant(seed, tf.int64)
    return tf.data.Dataset.zip((dataset, seeds)).map(
        lambda features, element_seed: masker(features, seed=tf.stack([first_key, element_seed])),
        num_parallel_calls=num_parallel_calls, deterministic=True,
    )
