"""File arguments of the data readers: paths or glob patterns, expanded in order, and their UTF-8 and JSON errors."""

import glob
import json
import os


def expand_paths(files):
    """Paths and glob patterns to the sorted list of files they name (a pattern that matches nothing raises
    `FileNotFoundError`, no paths at all `ValueError`)."""
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    expanded = []
    for path in paths:
        path = os.fspath(path)
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
                    "UTF-8. Convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`)."
                )
    return f"{path}: the file is not valid UTF-8; convert it to UTF-8."


def read_json(path, error=ValueError):
    """The JSON document in `path`; malformed JSON or UTF-8 raises `error` with one line naming where."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as bad:
        raise error(f"{path}: malformed JSON at line {bad.lineno}, column {bad.colno}: {bad.msg}.") from None
    except UnicodeDecodeError:
        raise error(utf8_error_message(path)) from None
