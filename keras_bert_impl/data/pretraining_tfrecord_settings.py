"""The settings file beside pretraining TFRecord shards: how `keras-bert create-data` made them.

`write_pretraining_settings` records a `BertPretrainingPreprocessor`'s settings (the record length and every
masking setting), the masking mode and the vocabulary size in `{output_prefix}.settings.json`;
`read_pretraining_settings` finds it again from the shards' paths, so that training reads them back.
"""

import json
import os
import re

from keras_bert_impl.data.file_patterns import expand_paths
from keras_bert_impl.data.masking import MASKING_MODES
from keras_bert_impl.utils.atomic_io import atomic_write_json

SETTINGS_SUFFIX = ".settings.json"
_SHARD_NAME = re.compile(r"^(.*)-\d{5}-of-\d{5}\.tfrecord$")
_SETTINGS_FORMAT = "keras_bert_impl.pretraining_tfrecords"


def pretraining_settings_path(output_prefix):
    """The settings file of the shards `{output_prefix}-*-of-*.tfrecord`: `{output_prefix}.settings.json`
    (a name the shards' glob `{output_prefix}-*` does not match)."""
    return os.fspath(output_prefix) + SETTINGS_SUFFIX


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
    path = pretraining_settings_path(output_prefix)
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
        candidate = path if path.endswith(SETTINGS_SUFFIX) else (
            pretraining_settings_path(match.group(1)) if match else None)
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
