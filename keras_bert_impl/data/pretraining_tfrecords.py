"""Pretraining TFRecord shards: the `create_pretraining_data.py` equivalent that writes them, and their reader.

TFRecord features have the original's names, so files interchange with `run_pretraining.py`: `input_ids`,
`input_mask`, `segment_ids` (int64 `[T]`), `next_sentence_labels` (int64 `[1]`, 1 = random next), and with static
masking `masked_lm_positions`, `masked_lm_ids` (int64 `[P]`), `masked_lm_weights` (float `[P]`).
"""

import logging
import os
import random
import re

import numpy as np
import tensorflow as tf

from keras_bert_impl.data.documents import read_documents, tokenize_documents
from keras_bert_impl.utils.file_patterns import expand_paths, read_json
from keras_bert_impl.data.masking import MASKING_MODES, epoch_seed, mask_dataset
from keras_bert_impl.data.pretraining_batches import check_pretraining_preprocessor, pretraining_epochs
from keras_bert_impl.data.pretraining_instances import check_instance_settings, iterate_pretraining_instances
from keras_bert_impl.utils.atomic_io import atomic_path, atomic_write_json

logger = logging.getLogger(__name__)

SETTINGS_SUFFIX = ".settings.json"
_SHARD_NAME = re.compile(r"^(.*)-\d{5}-of-\d{5}\.tfrecord$")
_SETTINGS_FORMAT = "keras_bert_impl.pretraining_tfrecords"
_MASKING_BATCH = 256  # instances masked together when writing static masks
# TFRecord feature name -> the feature it holds: the packed rows, then the static masks.
_PACKED_RECORD_NAMES = {"input_ids": "token_ids", "input_mask": "padding_mask", "segment_ids": "segment_ids"}
_MASK_RECORD_NAMES = {"masked_lm_positions": "mask_positions", "masked_lm_ids": "mask_ids",
                      "masked_lm_weights": "mask_weights"}


def _record_names(static):
    return {**_PACKED_RECORD_NAMES, **(_MASK_RECORD_NAMES if static else {})}


def _feature(values):
    """A TFRecord feature holding a row of floats or integers (bools as 0 / 1)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64)))


def _serialized_records(instances, preprocessor, static, seed):
    """Serialize segment pairs packed by `preprocessor.packer` (to `sequence_length`) and, when `static`, masked
    by its masker, in fixed-size groups (each group's stateless seed: `[seed, group]`)."""
    for group_index, group_start in enumerate(range(0, len(instances), _MASKING_BATCH)):
        group = instances[group_start : group_start + _MASKING_BATCH]
        rows = preprocessor.packer.pack([instance["first"] for instance in group],
                                        [instance["second"] for instance in group])
        if static:
            masked = preprocessor.mask(rows, seed=tf.constant([seed, group_index], tf.int64))
            rows = {key: np.asarray(value) for key, value in masked.items()}
        for row, instance in enumerate(group):
            features = {record_name: _feature(rows[name][row]) for record_name, name in _record_names(static).items()}
            features["next_sentence_labels"] = _feature([instance["next_sentence_labels"]])
            yield tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def write_pretraining_tfrecords(input_files, output_prefix, preprocessor, num_shards=1, masking="static",
                                dupe_factor=10, short_seq_prob=0.1, input_format="sentence_per_line", errors="strict",
                                seed=12345):
    """The `create_pretraining_data.py` equivalent: text files to sharded TFRecord files of instances.

    Instances are shuffled and dealt round-robin over the shards as the original does;
    `{output_prefix}.settings.json` records how they were made, for `read_pretraining_settings`.

    Args:
        input_files: str or list of str. Text files (glob patterns allowed) for `documents.read_documents`.
        output_prefix: str. Shards are named `{output_prefix}-{index:05d}-of-{num_shards:05d}.tfrecord`.
        preprocessor: `BertPretrainingPreprocessor`: its tokenizer, packer and masker make the records.
        num_shards: int. Number of output files. Defaults to 1.
        masking: str. `"static"` writes masks; `"dynamic"` writes unmasked instances for
            `read_pretraining_tfrecords(..., masker=...)`. Defaults to `"static"`.
        dupe_factor: int. Passes over the corpus. Defaults to 10 (the original's).
        short_seq_prob: float. See `pretraining_instances`. Defaults to 0.1.
        input_format: str. `"sentence_per_line"` or `"document_per_line"`. Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` or `"replace"` for bytes that are not UTF-8. Defaults to `"strict"`.
        seed: int. Seed of instance creation, the final shuffle and the masks. Defaults to 12345.

    Returns:
        list of str, the shard paths written.
    """
    check_pretraining_preprocessor(preprocessor, "write_pretraining_tfrecords")
    tokenizer, sequence_length = preprocessor.tokenizer, preprocessor.sequence_length
    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    if int(num_shards) < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}.")
    check_instance_settings(sequence_length, short_seq_prob, dupe_factor)
    documents = tokenize_documents(read_documents(input_files, input_format, errors), tokenizer)
    if not documents:
        raise ValueError(f"No documents with tokens in {input_files!r}.")
    instances = list(iterate_pretraining_instances(documents, sequence_length, short_seq_prob, dupe_factor, seed))
    random.Random(seed + 1).shuffle(instances)
    paths = [f"{output_prefix}-{index:05d}-of-{num_shards:05d}.tfrecord" for index in range(num_shards)]
    for shard_index, path in enumerate(paths):
        shard = instances[shard_index::num_shards]
        # Each shard masks with its own seed stream, so a shard's masks do not depend on the shard count.
        with atomic_path(path) as temporary, tf.io.TFRecordWriter(temporary) as writer:
            for record in _serialized_records(shard, preprocessor, masking == "static", seed + shard_index):
                writer.write(record)
        logger.info("Wrote %d instances to %s.", len(shard), path)
    atomic_write_json(os.fspath(output_prefix) + SETTINGS_SUFFIX, {  # a name the shards' glob `{prefix}-*` misses
        "format": _SETTINGS_FORMAT,
        "masking": masking,
        "preprocessor": preprocessor.settings(),
        "vocabulary_size": tokenizer.vocabulary_size(),
        "num_shards": num_shards, "dupe_factor": dupe_factor, "short_seq_prob": short_seq_prob,
        "input_format": input_format, "seed": seed,
    })
    return paths


def _check_record_layout(path, features):
    """Compare the first record of `path` with the expected `features`, so a mismatch is named, not a parse error."""
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.DataLossError:
        raise ValueError(f"{path} is not a TFRecord file (its first record is corrupted); give the shards "
                         "`keras-bert create-data` wrote, or the text corpus with --input-files.") from None
    if first is None:
        raise ValueError(f"{path} holds no records.")
    feature = tf.train.Example.FromString(first.numpy()).features.feature
    for name, expected in features.items():
        if name not in feature:
            hint = " (unmasked records need `masker=` for dynamic masking)" if name.startswith("masked_lm") else ""
            raise ValueError(f"{path}: records have no {name!r} feature{hint}.")
        found = len(feature[name].int64_list.value) + len(feature[name].float_list.value)
        if found != expected.shape[0]:
            raise ValueError(f"{path}: feature {name!r} has length {found}, expected {expected.shape[0]}; pass the "
                             "sequence_length / max_predictions_per_seq the records were written with.")


def read_pretraining_tfrecords(file_pattern, batch_size, sequence_length=128, max_predictions_per_seq=20, masker=None,
                               shuffle=True, shuffle_buffer_size=10000, drop_remainder=True, seed=12345,
                               vocabulary_size=None, epochs=1, initial_epoch=0):
    """Read TFRecord shards (ours or the original's) into batches of `(x, y)` for `BertPretrainer.fit`; the
    stream is a function of `(seed, epoch)` only, as `pretraining_dataset`'s.

    Args:
        file_pattern: str or list of str. Shard paths or glob patterns.
        batch_size: int. Batch size `B`.
        sequence_length: int. `T`, the records' length. Defaults to 128.
        max_predictions_per_seq: int. `P` of statically masked records. Defaults to 20.
        masker: MaskedLMMasker, BertPretrainingPreprocessor (its masker) or None. None reads the records' static
            masks; a masker masks unmasked records anew every epoch. Defaults to None.
        shuffle: bool. Shuffle shards and records, anew each epoch. Defaults to True.
        shuffle_buffer_size: int. Records in the shuffle buffer. Defaults to 10000.
        drop_remainder: bool. Drop a last partial batch. Defaults to True.
        seed: int. Seed of the shuffles and the dynamic masks. Defaults to 12345.
        vocabulary_size: int or None. Raise `tf.errors.InvalidArgumentError` on a record id outside
            `[0, vocabulary_size)`; None: no check. Defaults to None.
        epochs: int or None. Epochs in the stream; None repeats without end. Defaults to 1.
        initial_epoch: int. Number of the first epoch. Defaults to 0.

    Returns:
        tf.data.Dataset of `(x, y)` as in docs/data-formats.md (pretraining batches).
    """
    if vocabulary_size is not None and (not isinstance(vocabulary_size, (int, np.integer))
                                        or isinstance(vocabulary_size, bool) or vocabulary_size < 1):
        raise ValueError(f"vocabulary_size must be a positive integer or None, got {vocabulary_size!r}.")
    files = [path for path in expand_paths(file_pattern) if not path.endswith(SETTINGS_SUFFIX)]
    if not files:
        raise ValueError(f"No TFRecord shards in {file_pattern!r}.")
    masker = getattr(masker, "masker", masker)  # a BertPretrainingPreprocessor masks with its masker
    static = masker is None
    features = {"next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}  # what tf.io.parse_example reads
    for record_name in _record_names(static):
        length = sequence_length if record_name in _PACKED_RECORD_NAMES else max_predictions_per_seq
        dtype = tf.float32 if record_name == "masked_lm_weights" else tf.int64
        features[record_name] = tf.io.FixedLenFeature([length], dtype)
    _check_record_layout(files[0], features)

    def parse(serialized):
        record = tf.io.parse_example(serialized, features)
        if vocabulary_size is not None:
            checked = ["input_ids"] + (["masked_lm_ids"] if static else [])
            record = _check_token_ids(record, checked, int(vocabulary_size), file_pattern)
        parsed = {name: record[record_name] for record_name, name in _record_names(static).items()}
        parsed["next_sentence_labels"] = record["next_sentence_labels"]
        return parsed

    def one_epoch(epoch):
        dataset = tf.data.Dataset.from_tensor_slices(files)
        if shuffle:
            dataset = dataset.shuffle(len(files), seed=epoch_seed(seed, epoch, stream=1),
                                      reshuffle_each_iteration=False)
        dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                                     num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if shuffle:
            dataset = dataset.shuffle(shuffle_buffer_size, seed=epoch_seed(seed, epoch, stream=2),
                                      reshuffle_each_iteration=False)
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
        dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if not static:
            dataset = mask_dataset(dataset, masker, seed=seed, new_masks_each_epoch=True, epoch=epoch)
        return dataset

    return pretraining_epochs(one_epoch, epochs, initial_epoch)


def _check_token_ids(record, names, vocabulary_size, file_pattern):
    """`record` with its `names` fields checked to hold ids in `[0, vocabulary_size)` (one min and max each)."""
    checks = []
    for name in names:
        ids = record[name]
        where = f"TFRecords {file_pattern}: feature {name}"
        checks.append(tf.debugging.assert_less(
            tf.reduce_max(ids, name=f"largest_{name}"), tf.constant(vocabulary_size, ids.dtype, name="vocabulary_size"),
            message=f"{where} holds a token id >= vocabulary_size {vocabulary_size} (the records were written with "
                    f"another vocabulary; ids must be in [0, {vocabulary_size}))",
            summarize=1,
        ))
        checks.append(tf.debugging.assert_non_negative(
            tf.reduce_min(ids, name=f"smallest_{name}"),
            message=f"{where} holds a negative token id (ids must be in [0, {vocabulary_size}))",
            summarize=1,
        ))
    with tf.control_dependencies(checks):
        return {key: tf.identity(value) if key in names else value for key, value in record.items()}


def read_pretraining_settings(file_pattern):
    """The settings `write_pretraining_tfrecords` recorded for the shards `file_pattern` names (paths or globs).

    Returns:
        dict (the JSON, with `"path"`, the file it came from), or None without a settings file (the original's
        shards). Shards of several prefixes whose settings differ raise `ValueError`.
    """
    found = {}
    for path in expand_paths(file_pattern):
        match = _SHARD_NAME.match(path)
        candidate = path if path.endswith(SETTINGS_SUFFIX) else (match.group(1) + SETTINGS_SUFFIX if match else None)
        if candidate is not None and candidate not in found and os.path.isfile(candidate):
            document = read_json(candidate)
            if not isinstance(document, dict) or document.get("format") != _SETTINGS_FORMAT:
                raise ValueError(f"{candidate} is not a pretraining settings file (no format {_SETTINGS_FORMAT!r}).")
            found[candidate] = document
    if not found:
        return None
    (first_path, first), *others = found.items()
    for path, document in others:
        if document != first:
            raise ValueError(f"The TFRecords {file_pattern!r} were written with different settings ({first_path} and "
                             f"{path}); read them separately.")
    return {**first, "path": first_path}
