"""File arguments of the data readers: paths or glob patterns, expanded in order, and their UTF-8 and JSON errors."""

import glob
import json
import os


def expand_paths(files):
    """Paths and glob patterns to the sorted list of files they name (a pattern that matches nothing raises
    `FileNotFoundError`, no paths at all `ValueError`)."""
    expanded = []
    for path in map(os.fspath, [files] if isinstance(files, (str, os.PathLike)) else files):
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches:
            raise FileNotFoundError(f"No input file matches {path!r}.")
        expanded.extend(matches)
    if not expanded:
        raise ValueError("No input files given.")
    return expanded


def utf8_error_message(path):
    """A one-line message naming the first line of `path` that is not valid UTF-8 and its bytes."""
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                bad = raw[error.start : error.end]
                return (
                    f"{path}, line {line_number}: bytes {bad!r} at byte {error.start} of the line are not valid "
                    "UTF-8. Convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`).")
    return f"{path}: the file is not valid UTF-8; convert it to UTF-8."


def read_json(path, error=ValueError, schema=None):
    """The JSON document in `path`; bad JSON or UTF-8, or a mismatch of `schema` (`check_json`): one-line `error`."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as bad:
        raise error(f"{path}: malformed JSON at line {bad.lineno}, column {bad.colno}: {bad.msg}.") from None
    except UnicodeDecodeError:
        raise error(utf8_error_message(path)) from None
    return document if schema is None else check_json(document, schema, path, error)


POSITIVE = range(1, 2**63)  # a `check_json` schema: a count or size
_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def _json_name(kind):
    return " or ".join(_JSON_NAMES[kind] for kind in (kind if isinstance(kind, tuple) else (kind,)))


def check_json(value, schema, path, error=ValueError, key_path=""):
    """`value` (a parsed JSON document, or part of one) when it matches `schema`, else `error` with one line
    naming the file, the key path, what was expected and what was found.

    Args:
        value: the parsed JSON.
        schema: a type or tuple of types among dict, list, str, bool, int, float, None's type (`float` admits
            integers, `int` refuses true/false); a `range`: an integer in it (`POSITIVE`: at least 1); a dict:
            an object holding every key of the dict (a key ending in "?" is optional) whose value matches that
            key's schema; `{str: s}`: an object whose every value matches `s`; `[s]`: a list whose every item
            matches `s`. Keys the schema does not name are not checked.
        path: str. The file, for the message.
        error: the exception class raised. Defaults to ValueError.
        key_path: str. Where `value` is in the document (e.g. "extra.backbone_config"), for the message.
    """
    where = f"{path}: {key_path or 'the document'}"
    if isinstance(schema, dict):
        check_json(value, dict, path, error, key_path)
        if set(schema) == {str}:
            for key, item in value.items():
                check_json(item, schema[str], path, error, f"{key_path}.{key}" if key_path else key)
            return value
        for key, item_schema in schema.items():
            name = key.rstrip("?")
            inner = f"{key_path}.{name}" if key_path else name
            if name in value:
                check_json(value[name], item_schema, path, error, inner)
            elif not key.endswith("?"):
                raise error(f"{path}: required key {inner!r} is missing; restore the file from what wrote it.")
        return value
    if isinstance(schema, list):
        for index, item in enumerate(check_json(value, list, path, error, key_path)):
            check_json(item, schema[0], path, error, f"{key_path}[{index}]")
        return value
    if isinstance(schema, range):
        if check_json(value, int, path, error, key_path) not in schema:
            limits = f"at least {schema.start}" if schema.stop == POSITIVE.stop else f"{schema.start} to {schema[-1]}"
            raise error(f"{where} must be {limits}, found {value}; restore the file from what wrote it.")
        return value
    kinds = schema if isinstance(schema, tuple) else (schema,)
    accepted = (isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)) or (
        float in kinds and isinstance(value, int) and not isinstance(value, bool))
    if not accepted:
        found = _JSON_NAMES.get(type(value), type(value).__name__)
        shown = "" if value is None else f" {json.dumps(value)[:40]}"
        raise error(f"{where} must be {_json_name(schema)}, found {found}{shown}; restore the file from what "
                    "wrote it.")
    return value
