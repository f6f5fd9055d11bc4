"""Pack one or two token id segments into BERT inputs: `[CLS] A [SEP] B [SEP]`.

TensorFlow at the data edge: `SegmentPacker` runs inside `tf.data.Dataset.map` under every Keras backend.
`[CLS] A [SEP]` has segment id 0, `B [SEP]` segment id 1 (Devlin et al., 2018, section 3).

Truncation: `"longest_first"` (`run_classifier.py`) drops the last token of the longer segment (B on a tie);
`"random_front_back"` (`create_pretraining_data.py`) drops it from the front or the back by a coin, drawn by
`SegmentPacker` from a hash of its `seed` and the segments' content, so a pair gets the same coins in any batch.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_impl.utils.constructor_config import constructor_config

TRUNCATION_RULES = ("longest_first", "random_front_back")
PADDING_MODES = ("fixed", "dynamic")
_MASK32 = 0xFFFFFFFF
_MIX_MULTIPLIER = 0x45D9F3B
_STEP_MULTIPLIER = 0x27D4EB2D


def truncate_pair(first, second, max_tokens, truncation="longest_first", rng=None):
    """Truncate two token lists so that together they hold at most `max_tokens` tokens.

    Args:
        first: list. Segment A (any items). Not modified.
        second: list or None. Segment B. Not modified.
        max_tokens: int. Room for both segments together.
        truncation: str. `"longest_first"` or `"random_front_back"`. Defaults to `"longest_first"`.
        rng: random.Random. Coin source for `"random_front_back"`, one draw per removed token as the original.
            Defaults to None.

    Returns:
        `(first, second)` as new lists (`second` is `[]` when None was given).

    Example:
    >>> truncate_pair([1, 2, 3, 4], [5, 6], 4)
    ([1, 2], [5, 6])
    """
    if truncation not in TRUNCATION_RULES:
        raise ValueError(f"truncation must be one of {TRUNCATION_RULES}, got {truncation!r}.")
    if truncation == "random_front_back" and rng is None:
        raise ValueError("truncation='random_front_back' needs `rng` (a random.Random).")
    second = second or []
    # The original's coins, counted instead of deleting one token at a time (quadratic on a long segment).
    kept, front = [len(first), len(second)], [0, 0]
    random_front_back = truncation == "random_front_back"
    while kept[0] + kept[1] > max_tokens:
        longer = 0 if kept[0] > kept[1] else 1
        kept[longer] -= 1
        if random_front_back and rng.random() < 0.5:
            front[longer] += 1
    return (list(first[front[0] : front[0] + kept[0]]), list(second[front[1] : front[1] + kept[1]]))


def _kept_lengths(length_a, length_b, max_tokens):
    """Closed form of the longest-first loop: trim the longer side to the shorter, then alternate B, A."""
    excess = tf.maximum(length_a + length_b - max_tokens, 0)
    gap = tf.abs(length_a - length_b)
    to_level = tf.minimum(excess, gap)
    rest = excess - to_level
    a_is_longer = length_a > length_b
    kept_a = length_a - tf.where(a_is_longer, to_level, to_level * 0) - rest // 2
    kept_b = length_b - tf.where(a_is_longer, to_level * 0, to_level) - (rest - rest // 2)
    return kept_a, kept_b


def _mix_tf(x):
    x = tf.bitwise.bitwise_and(x, _MASK32)
    for _ in range(2):
        x = tf.bitwise.bitwise_and(tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16)) * _MIX_MULTIPLIER, _MASK32)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))


def _content_key_tf(ids):
    positions = tf.cast(tf.ragged.range(ids.row_lengths()), tf.int64) + 1
    return tf.bitwise.bitwise_and(tf.reduce_sum((tf.cast(ids, tf.int64) + 1) * positions, axis=1), _MASK32)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class SegmentPacker(keras.layers.Layer):
    """Pack one or two id segments into `token_ids`, `segment_ids`, `padding_mask`, truncating as needed.

    Args:
        sequence_length: int. Output length `T` with `padding="fixed"`, and the limit on the packed length.
        cls_token_id: int. Id of `[CLS]`.
        sep_token_id: int. Id of `[SEP]`.
        pad_token_id: int. Id used for padding. Defaults to 0.
        truncation: str. `"longest_first"` or `"random_front_back"`. Defaults to `"longest_first"`.
        padding: str. `"fixed"` pads to `sequence_length`; `"dynamic"` to the longest row of the call. Defaults to
            `"fixed"`.
        seed: int. Key of the `"random_front_back"` coins. Defaults to 0.

    Call arguments (calling the layer, or `pack` for NumPy results):
        first: ids of segment A, `(B, None)` (ragged, or a list of lists) or `(None,)` for one example.
        second: ids of segment B, same batch structure, or None for single segments.

    Returns:
        A dict of `"token_ids"` int32 `(B, T)`, `"segment_ids"` int32 `(B, T)`, `"padding_mask"` bool `(B, T)`
        (no batch axis for one example); TensorFlow tensors, NumPy arrays from `pack`.

    Example:
    >>> packer = SegmentPacker(sequence_length=8, cls_token_id=1, sep_token_id=2)
    >>> packer.pack([5, 6, 7], [8, 9])["token_ids"].tolist()
    [1, 5, 6, 7, 2, 8, 9, 2]
    >>> packer(tf.ragged.constant([[5, 6, 7, 10, 11]]), tf.ragged.constant([[8, 9]]))["token_ids"].numpy().tolist()
    [[1, 5, 6, 7, 2, 8, 9, 2]]
    """

    def __init__(self, sequence_length=None, cls_token_id=None, sep_token_id=None, pad_token_id=0,
                 truncation="longest_first", padding="fixed", seed=0, **kwargs):
        super().__init__(**kwargs)
        if sequence_length is None or cls_token_id is None or sep_token_id is None:
            raise TypeError("SegmentPacker needs sequence_length, cls_token_id and sep_token_id.")
        if truncation not in TRUNCATION_RULES:
            raise ValueError(f"truncation must be one of {TRUNCATION_RULES}, got {truncation!r}.")
        if padding not in PADDING_MODES:
            raise ValueError(f"padding must be one of {PADDING_MODES}, got {padding!r}.")
        if int(sequence_length) < 3:
            raise ValueError(f"sequence_length must be at least 3 ([CLS] x [SEP]), got {sequence_length}.")
        self.sequence_length = int(sequence_length)
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        self.pad_token_id = pad_token_id
        self.truncation = truncation
        self.padding = padding
        self.seed = seed
        self.built = True

    def pack(self, first, second=None):
        """Pack Python lists (or NumPy arrays) of ids eagerly with the layer's ops; NumPy arrays out."""
        return {key: value.numpy() for key, value in self._pack_tf(first, second).items()}

    def __call__(self, first, second=None):
        # TensorFlow tensors in and out under every backend: Keras' input conversion is skipped.
        return self.call(first, second)

    def call(self, first, second=None):
        with tf.device("cpu"):
            return self._pack_tf(first, second)

    @staticmethod
    def _as_ragged(ids):
        """`(ids as an int32 ragged batch, whether they were one example)`."""
        if isinstance(ids, (list, tuple)) and ids and isinstance(ids[0], (list, tuple, np.ndarray)):
            ids = tf.ragged.constant([[int(i) for i in row] for row in ids], dtype=tf.int64, ragged_rank=1)
        elif not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        unbatched = ids.shape.rank == 1
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if unbatched else ids)
        return tf.cast(ids, tf.int32), unbatched

    def _pack_tf(self, first, second):
        has_second = second is not None
        room = self.sequence_length - (3 if has_second else 2)
        if room < (2 if has_second else 1):
            raise ValueError(f"sequence_length={self.sequence_length} leaves no room for both segments of a pair.")
        first, unbatched = self._as_ragged(first)
        length_a = first.row_lengths()
        if has_second:
            second, _ = self._as_ragged(second)
            if tf.executing_eagerly() and int(first.nrows()) != int(second.nrows()):
                raise ValueError(f"first has {int(first.nrows())} rows but second has {int(second.nrows())}.")
            kept_a, kept_b = _kept_lengths(length_a, second.row_lengths(), room)
        else:
            # `_kept_lengths` with an empty B, in one op (every tf.data graph node costs about a microsecond).
            kept_a, kept_b = tf.minimum(length_a, room), None
        front_a = front_b = None
        if self.truncation == "random_front_back":
            removed_b = second.row_lengths() - kept_b if has_second else tf.zeros_like(length_a)
            front_a, front_b = self._front_removals_tf(first, second, length_a - kept_a, removed_b)
        # Every output position j reads [CLS], a kept token of A, [SEP], a kept token of B, [SEP] or padding:
        # one gather from both segments' flat values and a padding slot instead of ragged concatenation.
        packed_length = kept_a + kept_b + 3 if has_second else kept_a + 2  # (B,)
        width = self.sequence_length if self.padding == "fixed" else tf.reduce_max(tf.concat([packed_length, [0]], 0))
        j = tf.range(tf.cast(width, tf.int64), dtype=tf.int64)[tf.newaxis]  # (1, T)
        kept_a = kept_a[:, tf.newaxis]  # (B, 1)
        in_a = (j >= 1) & (j <= kept_a)
        is_sep = j == kept_a + 1
        a_start = first.row_starts()[:, tf.newaxis] - 1
        if front_a is not None:
            a_start += front_a[:, tf.newaxis]
        num_a = tf.shape(first.flat_values, out_type=tf.int64)[0]
        pad = tf.constant([self.pad_token_id], tf.int32)
        padding_mask = j < packed_length[:, tf.newaxis]
        if has_second:
            kept_b = kept_b[:, tf.newaxis]
            in_b = (j >= kept_a + 2) & (j < kept_a + 2 + kept_b)
            is_sep |= j == kept_a + kept_b + 2
            b_start = num_a + second.row_starts()[:, tf.newaxis] - kept_a - 2
            if front_b is not None:
                b_start += front_b[:, tf.newaxis]
            values = tf.concat([first.flat_values, second.flat_values, pad], axis=0)
            pad_index = num_a + tf.shape(second.flat_values, out_type=tf.int64)[0]
            index = tf.where(in_a, a_start + j, tf.where(in_b, b_start + j, pad_index))
            segment_ids = tf.cast((j >= kept_a + 2) & padding_mask, tf.int32)
        else:
            values = tf.concat([first.flat_values, pad], axis=0)
            index = tf.where(in_a, a_start + j, num_a)
            segment_ids = tf.zeros(tf.shape(padding_mask), tf.int32)
        token_ids = tf.gather(values, index)
        token_ids = tf.where(is_sep, self.sep_token_id, tf.where(j == 0, self.cls_token_id, token_ids))
        packed = {"token_ids": tf.cast(token_ids, tf.int32), "segment_ids": segment_ids, "padding_mask": padding_mask}
        return {key: value[0] for key, value in packed.items()} if unbatched else packed

    def _front_removals_tf(self, first, second, removed_a, removed_b):
        key_b = 0 if second is None else _content_key_tf(second)  # an absent B has the content key 0
        key = tf.bitwise.bitwise_and(_content_key_tf(first) * 31 + key_b, _MASK32)
        state = _mix_tf(tf.bitwise.bitwise_and((self.seed & _MASK32) * _MIX_MULTIPLIER + key, _MASK32))
        steps = tf.range(tf.reduce_max(tf.concat([removed_a, removed_b, tf.zeros([1], removed_a.dtype)], axis=0)))

        def front_count(step_offset, removed):
            step = 2 * steps + step_offset  # (S,)
            mixed = _mix_tf(tf.bitwise.bitwise_and(state[:, tf.newaxis] + step * _STEP_MULTIPLIER, _MASK32))
            coins = tf.bitwise.bitwise_and(tf.bitwise.right_shift(mixed, 15), 1)  # (B, S)
            return tf.reduce_sum(tf.where(steps < removed[:, tf.newaxis], coins, 0), axis=1)

        return front_count(0, removed_a), front_count(1, removed_b)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self)}
