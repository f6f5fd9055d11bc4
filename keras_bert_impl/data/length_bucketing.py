"""The batches of packed BERT inputs: fixed padding or length bucketing, in a reproducible `(seed, epoch)` order.

Length bucketing cuts each row to its real length and pads a batch only to its bucket's upper length (a
multiple of `bucket_width`), so little work is spent on `[PAD]` and XLA compiles a handful of shapes.

Shape legend: N rows, T `max_length` (the packed length), C choices (multiple choice rows are `(C, T)`).
"""

import math

import keras
import numpy as np


def sequence_lengths(padding_mask):
    """Real lengths `(N,)` int64 of packed rows from their bool `padding_mask` `(N, T)` (the longest choice
    of a `(N, C, T)` multiple-choice row)."""
    lengths = np.asarray(padding_mask, dtype=bool).sum(axis=-1)
    return lengths.reshape(len(lengths), -1).max(axis=1, initial=0).astype(np.int64)


def bucket_lengths(max_length, bucket_width=32):
    """The padded lengths of the buckets: `bucket_width, 2 * bucket_width, ...`, the last one `max_length`.

    Args:
        max_length: int. `T`, the packed length.
        bucket_width: int. Step between bucket lengths. Defaults to 32.

    Example:
    >>> bucket_lengths(100, 32)
    [32, 64, 96, 100]
    """
    if not isinstance(bucket_width, int) or bucket_width < 1:
        raise ValueError(f"bucket_width must be a positive integer, got {bucket_width!r}.")
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be a positive integer, got {max_length!r}.")
    return list(range(bucket_width, max_length, bucket_width)) + [max_length]


def bucket_padded_lengths(lengths, max_length, bucket_width=32):
    """The length each row of real length `lengths` `(N,)` is padded to (int64 `(N,)`): its bucket's length.

    Example:
    >>> bucket_padded_lengths([5, 32, 33, 50], max_length=50, bucket_width=32).tolist()
    [32, 32, 50, 50]
    """
    edges = np.asarray(bucket_lengths(max_length, bucket_width), dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and lengths.max() > max_length:
        raise ValueError(f"A row of length {lengths.max()} does not fit the packed length max_length={max_length}.")
    return edges[np.searchsorted(edges, lengths, side="left")]


def batch_count(padding_mask, batch_size, bucket_width=None):
    """Batches per epoch of `packed_batches` (each bucket ends an epoch with its own partial batch).

    Args:
        padding_mask: bool array `(N, T)` (or `(N, C, T)`).
        batch_size: int. Rows per batch.
        bucket_width: int or None. None: fixed padding, `ceil(N / batch_size)`. Defaults to None.

    Example:
    >>> import numpy as np
    >>> mask = np.arange(64)[None, :] < np.array([5, 6, 40, 41, 42])[:, None]
    >>> batch_count(mask, batch_size=2, bucket_width=32), batch_count(mask, batch_size=2)
    (3, 3)
    """
    if bucket_width is None:
        return -(-len(padding_mask) // batch_size)
    padded = bucket_padded_lengths(sequence_lengths(padding_mask), int(np.shape(padding_mask)[-1]), bucket_width)
    return int(sum(math.ceil(count / batch_size) for count in np.unique(padded, return_counts=True)[1]))


def epoch_order(num_rows, seed, epoch):
    """The row order of epoch `epoch`: a permutation of `range(num_rows)` fixed by `(seed, epoch)` alone.

    Example:
    >>> epoch_order(5, seed=0, epoch=1).tolist() == epoch_order(5, seed=0, epoch=1).tolist()
    True
    """
    if seed is None:
        raise ValueError("A resumable (epoch-indexed) data order needs an integer seed, got None.")
    return np.random.default_rng([int(seed), int(epoch)]).permutation(int(num_rows)).astype(np.int64)


def _check_packed(inputs, bucket_width):
    for key in ("token_ids", "padding_mask"):
        if key not in inputs:
            raise ValueError(f"inputs needs {key!r}; got keys {sorted(inputs)}.")
    if len(inputs["token_ids"]) == 0:
        raise ValueError("No examples: the data is empty after reading and packing.")
    if bucket_width is None:
        return
    mask = np.asarray(inputs["padding_mask"], bool)
    prefix = np.arange(mask.shape[-1]) < mask.sum(axis=-1, keepdims=True)
    if not np.array_equal(mask, prefix):
        row = int(np.nonzero((mask != prefix).reshape(len(mask), -1).any(axis=1))[0][0])
        raise ValueError(f"Row {row}: padding_mask must be True on a prefix (real tokens first, padding after) to "
                         f"cut rows to their length; pass bucket_width=None for fixed padding.")


def packed_batches(inputs, labels=None, sample_weight=None, *, batch_size=32, bucket_width=None, shuffle=False,
                   seed=None, epochs=None, pad_token_id=0):
    """A `tf.data.Dataset` of batches of packed BERT inputs (and targets), fixed or length-bucketed.

    Args:
        inputs: dict of NumPy arrays: `token_ids`, `segment_ids`, `padding_mask` `(N, T)` or `(N, C, T)`,
            padding after the real tokens.
        labels: array, dict of arrays, or None. Per-row targets (`(N, T)` token labels are not cut). Defaults to
            None.
        sample_weight: array `(N,)` or None. Defaults to None.
        batch_size: int. Rows per batch (in every bucket). Defaults to 32.
        bucket_width: int or None. Length bucketing (module docstring); it changes the row order, so train on
            it and predict on fixed padding. None: every batch `(B, T)`. Defaults to None.
        shuffle: bool. Shuffle the rows every epoch. Defaults to False.
        seed: int or None. Shuffle seed. Defaults to None.
        epochs: int or None. The batches of epochs `0 .. epochs - 1`, epoch `e` in `epoch_order(N, seed, e)`
            (with `shuffle`), so a run resumes at epoch `i` with `dataset.skip(i * batch_count(...))`. None: one
            epoch, reshuffled by tf.data on every iteration. Defaults to None.
        pad_token_id: int. `token_ids` padding of bucketed batches. Defaults to 0 (BERT's `[PAD]`).

    Returns:
        `tf.data.Dataset` of `x`, `(x, y)` or `(x, y, sample_weight)`, with a known `cardinality()`.

    Example:
    >>> import numpy as np
    >>> inputs = {"token_ids": np.array([[2, 5, 3, 0, 0, 0], [2, 5, 6, 7, 8, 3]], "int32"),
    ...           "segment_ids": np.zeros((2, 6), "int32"),
    ...           "padding_mask": np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], bool)}
    >>> dataset = packed_batches(inputs, batch_size=2, bucket_width=4)
    >>> sorted(tuple(batch["token_ids"].shape) for batch in dataset)
    [(1, 4), (1, 6)]
    """
    import tensorflow as tf  # here, not at the top: the length arithmetic above serves jobs without TensorFlow

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    _check_packed(inputs, bucket_width)
    num_rows, token_shape = len(inputs["token_ids"]), np.shape(inputs["token_ids"])[1:]
    token_keys = [key for key, value in inputs.items() if np.shape(value)[1:] == token_shape]
    lengths = sequence_lengths(inputs["padding_mask"]).astype(np.int32)  # TF bucketing compares int32
    labels, sample_weight = (np.asarray(value) if isinstance(value, (list, tuple)) else value
                             for value in (labels, sample_weight))  # a list of targets, not a structure
    tensors = tf.nest.map_structure(tf.convert_to_tensor, {"parts": keras.utils.pack_x_y_sample_weight(
        dict(inputs), labels, sample_weight), "length": lengths})

    def take(index):  # one row (bucketing cuts it to its length), or a batch of rows
        element = tf.nest.map_structure(lambda tensor: tf.gather(tensor, index), tensors)
        if bucket_width is not None:
            x = element["parts"][0] if isinstance(element["parts"], tuple) else element["parts"]
            x.update({key: x[key][..., : element["length"]] for key in token_keys})
        return element

    def batches(order):
        if bucket_width is None:
            return order.batch(batch_size).map(take)
        rows = order.map(take)
        padding_values = tf.nest.map_structure(lambda spec: tf.zeros([], spec.dtype), rows.element_spec)
        x_padding = padding_values["parts"]
        x_padding = x_padding[0] if isinstance(x_padding, tuple) else x_padding
        x_padding["token_ids"] = tf.cast(pad_token_id, x_padding["token_ids"].dtype)
        edges = bucket_lengths(int(token_shape[-1]), bucket_width)
        return rows.bucket_by_sequence_length(
            element_length_func=lambda element: element["length"],
            # Bucket i holds lengths in (edges[i-1], edges[i]]; TF buckets are [low, high), padded to high - 1.
            bucket_boundaries=[edge + 1 for edge in edges], bucket_batch_sizes=[batch_size] * (len(edges) + 1),
            padding_values=padding_values, pad_to_bucket_boundary=True)

    if epochs is None:
        order = tf.data.Dataset.range(num_rows)
        if shuffle:
            order = order.shuffle(num_rows, seed=seed, reshuffle_each_iteration=True)
        dataset, num_epochs = batches(order), 1
    else:
        num_epochs = int(epochs)
        orders = np.array([epoch_order(num_rows, seed, epoch) if shuffle else np.arange(num_rows)
                           for epoch in range(num_epochs)], np.int64).reshape(num_epochs, num_rows)
        dataset = tf.data.Dataset.from_tensor_slices(orders).flat_map(
            lambda order: batches(tf.data.Dataset.from_tensor_slices(order)))
    dataset = dataset.map(lambda element: element["parts"], num_parallel_calls=tf.data.AUTOTUNE)
    # tf.data cannot count bucketed batches (cardinality UNKNOWN); `batch_count` can.
    steps = batch_count(inputs["padding_mask"], batch_size, bucket_width) * num_epochs
    return dataset.apply(tf.data.experimental.assert_cardinality(steps)).prefetch(tf.data.AUTOTUNE)
