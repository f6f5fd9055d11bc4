"""Length-aware batching: bucket sequences by real length and pad each batch only as far as it needs.

Fine-tuning and inference data is packed to one length `T` (128 for GLUE, 384 for SQuAD), but most sequences
are much shorter: with fixed padding most of the attention and feed-forward work is spent on `[PAD]`. Here
each packed row is cut to its real length (`padding_mask.sum()`), rows of similar length are grouped into
buckets of width `bucket_width`, and a batch is padded to its bucket's upper length (`pad_to="bucket"`: at
most `T / bucket_width` distinct shapes, so XLA compiles a handful of programs) or to its longest row
(`pad_to="batch"`: the least padding, one shape per batch, best without XLA).

The model's outputs on the real tokens do not depend on the padding (attention masks it), so predictions
equal those of fixed padding (`predict_with_length_buckets` returns them in the input order).

Works on the NumPy arrays the data side produces: a preprocessor's eager `preprocessor(x, y)` and
`SquadFeatures.inputs()` / `.labels()`. TensorFlow at the data edge: the batching runs in `tf.data`
(`tf.data.Dataset.bucket_by_sequence_length`) under every Keras backend.
"""

import math

import numpy as np
import tensorflow as tf

PAD_TO_MODES = ("bucket", "batch")
# Value written at positions beyond a sequence's length in per-token outputs (e.g. SQuAD logits): the
# model never produced one there; a large negative logit keeps such positions out of any top-k decoding.
PADDED_LOGIT = -10000.0
INDEX_KEY = "example_index"


def sequence_lengths(padding_mask):
    """Real lengths `(N,)` int64 of packed rows from their bool `padding_mask` `(N, T)`."""
    return np.asarray(padding_mask, dtype=bool).sum(axis=1).astype(np.int64)


def bucket_lengths(max_length, bucket_width=32):
    """The padded lengths of the buckets: `bucket_width, 2 * bucket_width, ...`, the last one `max_length`.

    Args:
        max_length: int. `T`, the packed length (the longest a sequence can be).
        bucket_width: int. Step between bucket lengths. Defaults to 32.

    Returns:
        list of int, increasing, ending with `max_length`.

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
    """The length each row is padded to with `pad_to="bucket"`: the smallest bucket length that holds it.

    Args:
        lengths: int array `(N,)`. Real lengths (`sequence_lengths(padding_mask)`).
        max_length: int. `T`.
        bucket_width: int. Defaults to 32.

    Returns:
        int64 array `(N,)`.

    Example:
    >>> bucket_padded_lengths([5, 32, 33, 50], max_length=50, bucket_width=32).tolist()
    [32, 32, 50, 50]
    """
    edges = np.asarray(bucket_lengths(max_length, bucket_width), dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and lengths.max() > max_length:
        raise ValueError(f"A row of length {lengths.max()} does not fit the packed length max_length={max_length}.")
    return edges[np.searchsorted(edges, lengths, side="left")]


def bucketed_batch_count(lengths, batch_size, max_length, bucket_width=32, drop_remainder=False):
    """Number of batches `length_bucketed_dataset` yields per pass over rows with these `lengths`.

    Use it for `steps_per_epoch` and the learning-rate schedule's `total_steps`: each bucket ends an epoch
    with its own partial batch.

    Args:
        lengths: int array `(N,)`. Real lengths (`sequence_lengths(padding_mask)`).
        batch_size: int. Rows per batch.
        max_length: int. `T`.
        bucket_width: int. Defaults to 32.
        drop_remainder: bool. Partial batches are dropped. Defaults to False.

    Returns:
        int.

    Example:
    >>> bucketed_batch_count([5, 6, 40, 41, 42], batch_size=2, max_length=64, bucket_width=32)
    3
    """
    counts = np.unique(bucket_padded_lengths(lengths, max_length, bucket_width), return_counts=True)[1]
    rounding = math.floor if drop_remainder else math.ceil
    return int(sum(rounding(count / batch_size) for count in counts))


def _token_keys(inputs):
    """Keys of the per-token `(N, T)` input arrays (those that get cut and re-padded)."""
    length = np.shape(inputs["token_ids"])[1]
    return [key for key, value in inputs.items() if np.ndim(value) == 2 and np.shape(value)[1] == length]


def length_bucketed_dataset(
    inputs,
    labels=None,
    batch_size=32,
    bucket_width=32,
    pad_to="bucket",
    shuffle=False,
    seed=None,
    drop_remainder=False,
    with_index=False,
    pad_token_id=0,
    epochs=None,
    initial_epoch=0,
):
    """A `tf.data.Dataset` of length-bucketed, minimally padded batches of packed BERT inputs.

    Args:
        inputs: dict of NumPy arrays. `token_ids`, `segment_ids`, `padding_mask` `(N, T)` (packed with padding
            after the real tokens), and any other `(N, T)` or per-row arrays.
        labels: array, dict of arrays, or None. Per-row targets (`(N,)` class ids or scores, or SQuAD's
            `{"start_positions", "end_positions"}`). Defaults to None.
        batch_size: int. Rows per batch (the same in every bucket). Defaults to 32.
        bucket_width: int. Rows are grouped by length into buckets `(0, w], (w, 2w], ...`. Defaults to 32.
        pad_to: str. "bucket": pad to the bucket's upper length (few shapes, for XLA); "batch": pad to the
            batch's longest row. Defaults to "bucket".
        shuffle: bool. Shuffle rows before bucketing, every epoch (training). Defaults to False.
        seed: int or None. Shuffle seed. Defaults to None.
        drop_remainder: bool. Drop each bucket's last partial batch. Defaults to False.
        with_index: bool. Add the row index (int64 `(B,)`) to each batch: `(x, index)` without labels,
            `(x, y, index)` with them; to put predictions back in order. Defaults to False.
        pad_token_id: int. `token_ids` padding. Defaults to 0 (BERT's `[PAD]`).
        epochs: int or None. Yield the batches of epochs `initial_epoch, ..., epochs - 1` one after another,
            epoch `e`'s rows in the order `epoch_order(N, seed, e)` (with `shuffle`): a resumed run that starts
            at `initial_epoch` sees exactly the batches an uninterrupted run sees from there (feed it to `fit`
            with `steps_per_epoch=bucketed_batch_count(...)`). None: one pass, reshuffled by tf.data on every
            iteration. Defaults to None.
        initial_epoch: int. First epoch of the stream when `epochs` is given. Defaults to 0.

    Returns:
        `tf.data.Dataset` yielding `x` (or `(x, y)`, plus the index when asked) with x's per-token arrays
        `(B, L)`, `L <= T`, and `padding_mask` True exactly on the real tokens.

    Example:
    >>> import numpy as np
    >>> inputs = {"token_ids": np.array([[2, 5, 3, 0, 0, 0], [2, 5, 6, 7, 8, 3]], "int32"),
    ...           "segment_ids": np.zeros((2, 6), "int32"),
    ...           "padding_mask": np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], bool)}
    >>> dataset = length_bucketed_dataset(inputs, batch_size=2, bucket_width=4)
    >>> sorted(tuple(batch["token_ids"].shape) for batch in dataset)
    [(1, 4), (1, 6)]
    """
    if pad_to not in PAD_TO_MODES:
        raise ValueError(f"pad_to must be one of {PAD_TO_MODES}, got {pad_to!r}.")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    for key in ("token_ids", "padding_mask"):
        if key not in inputs:
            raise ValueError(f"inputs needs {key!r}; got keys {sorted(inputs)}.")
    max_length = int(np.shape(inputs["token_ids"])[1])
    lengths = sequence_lengths(inputs["padding_mask"])
    expected_mask = np.arange(max_length)[None, :] < lengths[:, None]
    if not np.array_equal(np.asarray(inputs["padding_mask"], bool), expected_mask):
        row = int(np.nonzero((np.asarray(inputs["padding_mask"], bool) != expected_mask).any(axis=1))[0][0])
        raise ValueError(
            f"Row {row}: padding_mask must be True on a prefix (real tokens first, padding after) to cut rows "
            f"to their length."
        )
    token_keys = _token_keys(inputs)
    elements = {"inputs": dict(inputs), "length": lengths.astype(np.int32)}  # TF bucketing compares int32
    if labels is not None:
        elements["labels"] = labels
    if with_index:
        elements["index"] = np.arange(len(lengths), dtype=np.int64)
    if epochs is None:
        dataset = tf.data.Dataset.from_tensor_slices(elements)
        if shuffle:
            dataset = dataset.shuffle(len(lengths), seed=seed, reshuffle_each_iteration=True)
        dataset = _bucketed_batches(dataset, token_keys, max_length, batch_size, bucket_width, pad_to,
                                    drop_remainder, pad_token_id)
    else:
        # No epoch left (a finished run resumed): an empty stream of the same structure.
        epoch_rows = rows_by_epoch(elements, seed, epochs, initial_epoch, shuffle) or [
            tf.data.Dataset.from_tensor_slices(elements).take(0)]
        batched = [_bucketed_batches(rows, token_keys, max_length, batch_size, bucket_width, pad_to, drop_remainder,
                                     pad_token_id) for rows in epoch_rows]
        dataset = batched[0]
        for more in batched[1:]:
            dataset = dataset.concatenate(more)

    def to_model_batch(batch):
        parts = [batch["inputs"]]
        if labels is not None:
            parts.append(batch["labels"])
        if with_index:
            parts.append(batch["index"])
        return parts[0] if len(parts) == 1 else tuple(parts)

    return dataset.map(to_model_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def epoch_order(num_rows, seed, epoch):
    """The row order of epoch `epoch`: a permutation of `range(num_rows)` fixed by `(seed, epoch)` alone
    (NumPy's PCG64 seeded with both), so it does not depend on TensorFlow's global seed or on how many epochs
    ran before in this process.

    Example:
    >>> epoch_order(5, seed=0, epoch=1).tolist() == epoch_order(5, seed=0, epoch=1).tolist()
    True
    """
    if seed is None:
        raise ValueError("A resumable (epoch-indexed) data order needs an integer seed, got None.")
    return np.random.default_rng([int(seed), int(epoch)]).permutation(int(num_rows)).astype(np.int64)


def rows_by_epoch(elements, seed, epochs, initial_epoch=0, shuffle=True):
    """One `tf.data.Dataset` of single rows per epoch `initial_epoch .. epochs - 1`, in `epoch_order`.

    The arrays become tensors once; each epoch's dataset gathers its rows from them by index.

    Args:
        elements: nested structure (dicts) of NumPy arrays with `N` rows each.
        seed: int. Order seed.
        epochs: int. One past the last epoch.
        initial_epoch: int. First epoch. Defaults to 0.
        shuffle: bool. False keeps every epoch in row order. Defaults to True.

    Returns:
        list of `tf.data.Dataset`, one per epoch.
    """
    if not 0 <= int(initial_epoch) <= int(epochs):
        raise ValueError(f"initial_epoch must be in [0, epochs={epochs}], got {initial_epoch}.")
    num_rows = len(tf.nest.flatten(elements)[0])
    tensors = tf.nest.map_structure(tf.convert_to_tensor, elements)

    def take_row(index):
        return tf.nest.map_structure(lambda tensor: tf.gather(tensor, index), tensors)

    datasets = []
    for epoch in range(int(initial_epoch), int(epochs)):
        order = epoch_order(num_rows, seed, epoch) if shuffle else np.arange(num_rows, dtype=np.int64)
        datasets.append(tf.data.Dataset.from_tensor_slices(order).map(take_row))
    return datasets


def _bucketed_batches(dataset, token_keys, max_length, batch_size, bucket_width, pad_to, drop_remainder,
                      pad_token_id):
    """Cut the rows of `dataset` to their length and batch them by length bucket."""

    def cut_to_length(element):
        element = dict(element)
        element["inputs"] = {
            key: value[: element["length"]] if key in token_keys else value
            for key, value in element["inputs"].items()
        }
        return element

    dataset = dataset.map(cut_to_length, num_parallel_calls=tf.data.AUTOTUNE)
    padding_values = tf.nest.map_structure(lambda spec: tf.zeros([], spec.dtype), dataset.element_spec)
    padding_values["inputs"]["token_ids"] = tf.constant(pad_token_id, dataset.element_spec["inputs"]["token_ids"].dtype)
    edges = bucket_lengths(max_length, bucket_width)
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=lambda element: element["length"],
        # Bucket i holds lengths in (edges[i-1], edges[i]]; TF buckets are [low, high) with high-1 the pad length.
        bucket_boundaries=[edge + 1 for edge in edges],
        bucket_batch_sizes=[batch_size] * (len(edges) + 1),
        padding_values=padding_values,
        pad_to_bucket_boundary=pad_to == "bucket",
        drop_remainder=drop_remainder,
    )
    return dataset


def predict_with_length_buckets(
    model,
    inputs,
    batch_size=32,
    bucket_width=32,
    pad_to="bucket",
    token_outputs=("start_logits", "end_logits"),
    fill_value=PADDED_LOGIT,
    pad_token_id=0,
):
    """`model.predict` on length-bucketed batches, returned in the input order and layout.

    Args:
        model: a Keras model over BERT inputs (e.g. `BertClassifier`, `BertQuestionAnswerer`).
        inputs: dict of NumPy arrays `(N, T)`, as for `length_bucketed_dataset`.
        batch_size: int. Defaults to 32.
        bucket_width: int. Defaults to 32.
        pad_to: str. "bucket" or "batch", see `length_bucketed_dataset`. Defaults to "bucket".
        token_outputs: sequence of str (or None). Names of dict outputs that are per token `(B, L, ...)`;
            they are padded back to `(N, T, ...)` with `fill_value` beyond each batch's length `L`; None names
            a model's single, non-dict output (a token classifier's logits). Defaults to
            `("start_logits", "end_logits")`.
        fill_value: float. Value beyond `L` in per-token outputs. Defaults to `PADDED_LOGIT` (-10000.0).
        pad_token_id: int. Defaults to 0.

    Returns:
        NumPy array (or dict of arrays, like the model's outputs) with `N` rows in the order of `inputs`;
        per-token outputs `(N, T)`.
    """
    max_length = int(np.shape(inputs["token_ids"])[1])
    dataset = length_bucketed_dataset(inputs, batch_size=batch_size, bucket_width=bucket_width, pad_to=pad_to,
                                      with_index=True, pad_token_id=pad_token_id)
    num_rows = len(inputs["token_ids"])
    collected = None
    for x, index in dataset.as_numpy_iterator():
        outputs = model.predict_on_batch(x)
        is_dict = isinstance(outputs, dict)
        outputs = outputs if is_dict else {None: outputs}
        if collected is None:
            collected = {}
            for name, value in outputs.items():
                value = np.asarray(value)
                if name in token_outputs:
                    collected[name] = np.full((num_rows, max_length) + value.shape[2:], fill_value, value.dtype)
                else:
                    collected[name] = np.zeros((num_rows,) + value.shape[1:], value.dtype)
            was_dict = is_dict
        for name, value in outputs.items():
            value = np.asarray(value)
            if name in token_outputs:
                collected[name][index, : value.shape[1]] = value
            else:
                collected[name][index] = value
    if collected is None:
        raise ValueError("No rows to predict on.")
    return collected if was_dict else collected[None]
