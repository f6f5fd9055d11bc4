"""The settings file beside pretraining TFRecord shards, `{output_prefix}.settings.json`: how they were made."""

import json
import os
import re

from keras_bert_impl.data.file_patterns import expand_paths
from keras_bert_impl.data.masking import MASKING_MODES
from keras_bert_impl.utils.atomic_io import atomic_write_json

SETTINGS_SUFFIX = ".settings.json"
_SHARD_NAME = re.compile(r"^(.*)-\d{5}-of-\d{5}\.tfrecord$")
_SETTINGS_FORMAT = "keras_bert_impl.pretraining_tfrecords"


def write_pretraining_settings(output_prefix, preprocessor, masking, **details):
    """Record beside the shards of `output_prefix` how they were made, written atomically.

    The JSON holds `masking` (`"static"` / `"dynamic"`), `preprocessor` (`BertPretrainingPreprocessor.settings()`:
    the record length and every masking setting), `vocabulary_size`, and `details` (e.g. `dupe_factor`,
    `seed`). `read_pretraining_settings` reads it back from the shards' paths.

    Returns:
        str, the path written.
    """
    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    path = os.fspath(output_prefix) + SETTINGS_SUFFIX  # a name the shards' glob `{output_prefix}-*` misses
    atomic_write_json(path, {
        "format": _SETTINGS_FORMAT,
        "masking": masking,
        "preprocessor": preprocessor.settings(),
        "vocabulary_size": preprocessor.tokenizer.vocabulary_size(),
        **details,
    })
    return path


def read_pretraining_settings(file_pattern):
    """The settings `write_pretraining_settings` recorded for the TFRecord shards `file_pattern` names.

    Args:
        file_pattern: str or list of str. Shard paths or glob patterns, as `read_pretraining_tfrecords` takes.

    Returns:
        dict (the JSON, with `"path"`, the file it came from), or None when the shards have no settings file
        (records of the original `create_pretraining_data.py`, or written by the library alone). Shards of
        several prefixes whose settings differ raise `ValueError`.
    """
    found = {}
    for path in expand_paths(file_pattern):
        match = _SHARD_NAME.match(path)
        candidate = path if path.endswith(SETTINGS_SUFFIX) else (match.group(1) + SETTINGS_SUFFIX if match else None)
        if candidate is not None and candidate not in found and os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as handle:
                try:
                    document = json.load(handle)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{candidate}: malformed settings JSON ({error}).") from None
            if not isinstance(document, dict) or document.get("format") != _SETTINGS_FORMAT:
                raise ValueError(f"{candidate} is not a pretraining settings file (no format {_SETTINGS_FORMAT!r}).")
            found[candidate] = document
    if not found:
        return None
    (first_path, first), *others = found.items()
    for path, document in others:
        if document != first:
            raise ValueError(
                f"The TFRecords {file_pattern!r} were written with different settings ({first_path} and {path}); "
                "read them separately."
            )
    return {**first, "path": first_path}
