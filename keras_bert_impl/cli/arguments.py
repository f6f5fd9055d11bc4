"""Pieces the subcommand modules share: the usage error and argument types.

Kept free of TensorFlow and Keras imports, so that `keras-bert --help` answers at once.
"""

import argparse


class UsageError(ValueError):
    """Flags that do not fit together (e.g. neither of two required alternatives); exits 2 with the usage."""


def positive_int(text):
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text):
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def fraction(text):
    """argparse type: a float in [0, 1]."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def add_verbose_argument(parser, default=1):
    """`--verbose 0|1|2`: Keras' fit verbosity (1: a progress bar per epoch)."""
    parser.add_argument("--verbose", type=int, default=default, choices=(0, 1, 2),
                        help=f"training output: 0 silent, 1 progress bar, 2 one line per epoch (default: {default})")


def expand_input_files(spec):
    """Comma-separated paths and glob patterns -> the list of files, in order; a pattern matching nothing or
    a missing file raises `FileNotFoundError` naming it.

    Example:
    >>> expand_input_files("/etc/hostname")  # doctest: +SKIP
    ['/etc/hostname']
    """
    import glob
    import os

    files = []
    for part in (piece.strip() for piece in spec.split(",")):
        if not part:
            continue
        matches = sorted(glob.glob(part)) if glob.has_magic(part) else [part]
        missing = [path for path in matches if not os.path.isfile(path)]
        if not matches or missing:
            raise FileNotFoundError(f"No input file {part!r}" + (" matches." if not matches else " exists."))
        files.extend(matches)
    if not files:
        raise ValueError("No input files given.")
    return files
