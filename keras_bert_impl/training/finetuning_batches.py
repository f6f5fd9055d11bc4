"""The batches of fine-tuning and prediction: fixed padding, or length bucketing (`data.length_bucketing`).

TensorFlow at the data edge: training batches come from `tf.data` pipelines (they feed every Keras backend).
"""

import numpy as np

from keras_bert_impl.training.model_input_checks import check_model_inputs


def batches_per_epoch(inputs, batch_size, length_bucketing=True, bucket_width=32):
    """The number of batches one epoch of `training_dataset` yields (its `steps_per_epoch`).

    Args:
        inputs: dict of NumPy arrays `(N, T)`.
        batch_size: int.
        length_bucketing: bool. Defaults to True.
        bucket_width: int. Defaults to 32.

    Returns:
        int.
    """
    if length_bucketing:  # imports TensorFlow (tf.data batching); fixed padding needs none
        from keras_bert_impl.data.length_bucketing import bucketed_batch_count, sequence_lengths

        return bucketed_batch_count(sequence_lengths(inputs["padding_mask"]), batch_size,
                                    int(np.shape(inputs["token_ids"])[1]), bucket_width)
    return -(-len(inputs["token_ids"]) // batch_size)


def training_dataset(inputs, labels, batch_size, length_bucketing=True, bucket_width=32, seed=None, epochs=None,
                     initial_epoch=0):
    """A shuffled `tf.data.Dataset` of `(x, y)` batches and the number of batches per epoch.

    Args:
        inputs: dict of NumPy arrays `(N, T)` (`token_ids`, `segment_ids`, `padding_mask`).
        labels: array or dict of arrays `(N,)`.
        batch_size: int.
        length_bucketing: bool. Bucket rows by length and pad each batch to its bucket
            (`data.length_bucketing`); False: every batch is `(B, T)`. Defaults to True.
        bucket_width: int. Defaults to 32.
        seed: int or None. Shuffle seed (required with `epochs`). Defaults to None.
        epochs: int or None. Return one stream of the batches of epochs `initial_epoch .. epochs - 1`, epoch
            `e` in an order fixed by `(seed, e)` (`length_bucketing.epoch_order`), for
            `fit(..., steps_per_epoch=steps, initial_epoch=initial_epoch, epochs=epochs)`: a resumed run sees
            the batches an uninterrupted one sees. None: one epoch that tf.data reshuffles on every iteration.
            Defaults to None.
        initial_epoch: int. First epoch of the stream when `epochs` is given. Defaults to 0.

    Returns:
        `(dataset, steps_per_epoch)`. The dataset's `cardinality()` is its number of batches (`steps_per_epoch`,
        times the epochs of the stream when `epochs` is given), so `fit`'s progress bar knows its length.
    """
    import tensorflow as tf

    from keras_bert_impl.data.length_bucketing import length_bucketed_dataset, rows_by_epoch

    num_rows = len(inputs["token_ids"])
    if num_rows == 0:
        raise ValueError("No training examples: the training data is empty after reading and packing.")
    steps = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    if length_bucketing:
        dataset = length_bucketed_dataset(inputs, labels, batch_size=batch_size, bucket_width=bucket_width,
                                          shuffle=True, seed=seed, epochs=epochs, initial_epoch=initial_epoch)
        # tf.data cannot count bucketed batches (cardinality UNKNOWN); `batches_per_epoch` can. A finite stream:
        # one epoch, or epochs `initial_epoch .. epochs - 1` (`length_bucketed_dataset` checked the range).
        batches = steps if epochs is None else steps * (int(epochs) - int(initial_epoch))
        return dataset.apply(tf.data.experimental.assert_cardinality(batches)), steps
    if epochs is None:
        dataset = tf.data.Dataset.from_tensor_slices((inputs, labels))
        dataset = dataset.shuffle(num_rows, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        epoch_rows = rows_by_epoch((inputs, labels), seed, epochs, initial_epoch) or [
            tf.data.Dataset.from_tensor_slices((inputs, labels)).take(0)]
        dataset = epoch_rows[0].batch(batch_size)
        for more in epoch_rows[1:]:
            dataset = dataset.concatenate(more.batch(batch_size))
    return dataset.prefetch(tf.data.AUTOTUNE), steps


def predict_logits(model, inputs, batch_size=64, length_bucketing=True, bucket_width=32):
    """The model's outputs on `inputs`, in row order, with or without length bucketing.

    Args:
        model: a task model (`BertClassifier`, `BertQuestionAnswerer`).
        inputs: dict of NumPy arrays `(N, T)` (`token_ids`, `segment_ids`, `padding_mask`).
        batch_size: int. Defaults to 64.
        length_bucketing: bool. Pad each batch to its length bucket; False: every batch is `(B, T)`.
            Defaults to True.
        bucket_width: int. Defaults to 32.

    Returns:
        NumPy array (classifier logits `(N, C)`) or dict of arrays (span logits `(N, T)`).
    """
    from keras_bert_impl.data.length_bucketing import predict_with_length_buckets

    check_model_inputs(model, inputs, "prediction inputs")
    if length_bucketing:
        return predict_with_length_buckets(model, inputs, batch_size=batch_size, bucket_width=bucket_width)
    return model.predict(inputs, batch_size=batch_size, verbose=0)
