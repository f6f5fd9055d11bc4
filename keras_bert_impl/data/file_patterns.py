"""File arguments of the data readers: paths or glob patterns, expanded in order."""

import glob
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
