"""Text to batched `(x, y)` pretraining batches with `tf.data`: NSP instances streamed, padded and masked.

The instances are the original's (`pretraining_instances`); every packing and masking setting comes from the
`BertPretrainingPreprocessor` that `pretraining_dataset` is given.
"""

import tensorflow as tf

from keras_bert_impl.data.documents import as_sentence_documents, read_documents, tokenize_documents
from keras_bert_impl.data.masking import MASKING_MODES, epoch_seed
from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.data.pretraining_instances import check_instance_settings, iterate_pretraining_instances


def pretraining_instances_dataset(
    documents, cls_token_id, sep_token_id, sequence_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345
):
    """A streaming `tf.data.Dataset` of unmasked NSP instances of `iterate_pretraining_instances` (which takes the
    other arguments), packed unpadded by `SegmentPacker`; the same instances on every pass.

    Returns:
        tf.data.Dataset of dicts: `"token_ids"` int32 `(None,)` (`[CLS] A [SEP] B [SEP]`), `"segment_ids"` int32
        `(None,)`, `"padding_mask"` bool `(None,)` (all True), `"next_sentence_labels"` int32 `()`.
    """
    check_instance_settings(sequence_length, short_seq_prob, dupe_factor)
    documents = [document for document in documents if document]
    if not documents:
        raise ValueError("No documents with tokens: the input is empty after dropping empty lines and documents.")
    packer = SegmentPacker(sequence_length, cls_token_id, sep_token_id, padding="dynamic")

    def pack(pair):
        return {**packer(pair["first"], pair["second"]), "next_sentence_labels": pair["next_sentence_labels"]}

    segment = tf.TensorSpec([None], tf.int32)
    signature = {"first": segment, "second": segment, "next_sentence_labels": tf.TensorSpec([], tf.int32)}
    pairs = tf.data.Dataset.from_generator(
        lambda: iterate_pretraining_instances(documents, sequence_length, short_seq_prob, dupe_factor, seed),
        output_signature=signature)
    return pairs.map(pack, num_parallel_calls=tf.data.AUTOTUNE)


# The `(x, y)` of a pretraining batch (docs/data-formats.md): feature -> dtype.
_INPUT_DTYPES = {"token_ids": tf.int32, "segment_ids": tf.int32, "padding_mask": tf.bool, "mask_positions": tf.int32}
_TARGET_DTYPES = {"mask_ids": tf.int32, "mask_weights": tf.float32}


def to_inputs_and_targets(features):
    """Split masked features (batched or not) into the `(x, y)` structure `BertPretrainer.fit` takes
    (docs/data-formats.md); `next_sentence_labels` get the batch shape of `token_ids`."""
    x = {key: tf.cast(features[key], dtype) for key, dtype in _INPUT_DTYPES.items()}
    y = {key: tf.cast(features[key], dtype) for key, dtype in _TARGET_DTYPES.items()}
    labels = tf.reshape(features["next_sentence_labels"], tf.shape(features["token_ids"])[:-1])
    y["next_sentence_labels"] = tf.cast(labels, tf.int32)
    return x, y


def pretraining_epochs(one_epoch, epochs=1, initial_epoch=0):
    """The prefetched `(x, y)` batches of `one_epoch(epoch)` (int64 scalar tensor -> `tf.data.Dataset` of masked
    batches) for the epochs `initial_epoch, initial_epoch + 1, ...` (`epochs` of them; None: without end). What
    each epoch holds depends only on its number, not on how often the result is iterated."""
    if epochs is not None and (isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1):
        raise ValueError(f"epochs must be a positive integer or None (endless), got {epochs!r}.")
    if isinstance(initial_epoch, bool) or not isinstance(initial_epoch, int) or initial_epoch < 0:
        raise ValueError(f"initial_epoch must be a non-negative integer, got {initial_epoch!r}.")
    numbers = tf.data.Dataset.counter(initial_epoch) if epochs is None else tf.data.Dataset.range(
        initial_epoch, initial_epoch + epochs)
    batches = numbers.flat_map(one_epoch)
    return batches.map(to_inputs_and_targets, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def check_pretraining_preprocessor(preprocessor, caller):
    """Raise a one-line `TypeError` unless `preprocessor` is a `BertPretrainingPreprocessor` (or anything with its
    tokenizer, settings and masking methods)."""
    needed = ("tokenizer", "sequence_length", "packer", "max_predictions_per_seq", "mask", "mask_dataset")
    if not all(hasattr(preprocessor, name) for name in needed):
        raise TypeError(
            f"{caller} takes a BertPretrainingPreprocessor (it owns the tokenizer and every packing and masking "
            f"setting), got {type(preprocessor).__name__}; build one: BertPretrainingPreprocessor(tokenizer, "
            "sequence_length=128, max_predictions_per_seq=20)."
        )


def pretraining_dataset(preprocessor, files=None, documents=None, batch_size=32, masking="dynamic", seed=12345,
                        short_seq_prob=0.1, dupe_factor=1, padding="fixed", input_format="sentence_per_line",
                        errors="strict", shuffle_buffer_size=10000, drop_remainder=False, epochs=1, initial_epoch=0):
    """Text to batched, prefetched `(x, y)` pretraining batches, ready for `BertPretrainer.fit`.

    The stream is a function of `(seed, epoch)` only, so iterating again (a resumed run) gives the same batches;
    for new masks every epoch, build the epochs into the stream and give `fit` a `steps_per_epoch`.

    Args:
        preprocessor: `BertPretrainingPreprocessor`, the source of the tokenizer and every length and masking setting.
        files: str or list of str. Text files (`documents.read_documents`). Give this or `documents`.
        documents: list. In-memory documents, each a str (split with `split_sentences`) or a list of
            sentence strings.
        batch_size: int. `B`. Defaults to 32.
        masking: str. `"dynamic"` (new masks every epoch) or `"static"` (each instance masked once). Defaults
            to `"dynamic"`.
        seed: int. Seed of instance creation, shuffling and masks. Defaults to 12345.
        short_seq_prob: float. Defaults to 0.1.
        dupe_factor: int. Passes over the documents per epoch. Defaults to 1.
        padding: str. `"fixed"` pads to `sequence_length`; `"dynamic"` to the longest instance of the batch.
            Defaults to `"fixed"`.
        input_format: str. For `files`. Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` or `"replace"`, for `files`. Defaults to `"strict"`.
        shuffle_buffer_size: int. Instances in the shuffle buffer (0 turns shuffling off). Defaults to 10000.
        drop_remainder: bool. Drop a last partial batch (of each epoch). Defaults to False.
        epochs: int or None. Epochs in the stream; None repeats without end. Defaults to 1.
        initial_epoch: int. Number of the first epoch (its shuffle and masks). Defaults to 0.

    Returns:
        tf.data.Dataset of `(x, y)` as in docs/data-formats.md (pretraining batches).

    Example:
    >>> from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "."])
    >>> preprocessor = BertPretrainingPreprocessor(tokenizer, sequence_length=16, max_predictions_per_seq=4)
    >>> ds = pretraining_dataset(preprocessor, documents=["a b. C a.", "b c. A b c."], batch_size=2)
    >>> x, y = next(iter(ds))
    >>> x["token_ids"].shape, y["mask_ids"].shape
    (TensorShape([2, 16]), TensorShape([2, 4]))
    """
    check_pretraining_preprocessor(preprocessor, "pretraining_dataset")
    tokenizer, sequence_length = preprocessor.tokenizer, preprocessor.sequence_length
    if (files is None) == (documents is None):
        raise ValueError("Give exactly one of `files` (text files) and `documents` (in-memory texts).")
    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    if padding not in ("fixed", "dynamic"):
        raise ValueError(f"padding must be 'fixed' or 'dynamic', got {padding!r}.")
    sentence_documents = (read_documents(files, input_format, errors) if files is not None
                          else as_sentence_documents(documents))
    id_documents = tokenize_documents(sentence_documents, tokenizer)
    dataset = pretraining_instances_dataset(id_documents, tokenizer.cls_token_id, tokenizer.sep_token_id,
                                            sequence_length, short_seq_prob, dupe_factor, seed)
    if masking == "static":
        # Masked one instance at a time, before shuffling: instance i always gets the same seed.
        dataset = preprocessor.mask_dataset(dataset, seed=seed, new_masks_each_epoch=False)
    # Rows padded to `sequence_length` (or the batch's longest) with [PAD], segment 0 and False.
    width = sequence_length if padding == "fixed" else None
    padded_shapes = {key: [width] if key in ("token_ids", "segment_ids", "padding_mask") else spec.shape
                     for key, spec in dataset.element_spec.items()}
    padding_values = {key: tf.zeros([], spec.dtype) for key, spec in dataset.element_spec.items()}
    padding_values["token_ids"] = tf.constant(tokenizer.pad_token_id, padding_values["token_ids"].dtype)

    def one_epoch(epoch):
        batches = dataset
        if shuffle_buffer_size:
            batches = batches.shuffle(shuffle_buffer_size, seed=epoch_seed(seed, epoch, stream=1),
                                      reshuffle_each_iteration=False)
        batches = batches.padded_batch(batch_size, padded_shapes, padding_values, drop_remainder=drop_remainder)
        if masking == "dynamic":
            batches = preprocessor.mask_dataset(batches, seed=seed, new_masks_each_epoch=True, epoch=epoch)
        return batches

    return pretraining_epochs(one_epoch, epochs, initial_epoch)
