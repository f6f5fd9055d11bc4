"""Shared helpers for the `keras-bert` tests: run the CLI in-process, tiny vocabularies and corpora."""

import numpy as np

from keras_bert_impl.cli import main

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the a cat dog bird sat ran flew on under over mat tree roof red blue small big quickly slowly and "
         "then it was happy sad").split()


def run_cli(capsys, *argv):
    """`keras-bert argv...` in this process: `(exit status, stdout, stderr)`; argparse exits become statuses."""
    try:
        status = main([str(arg) for arg in argv])
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write_corpus(directory, documents=12, sentences=6, seed=0):
    """A random-word corpus (one sentence per line, blank line between documents) and its exact vocab.txt."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(documents):
        for _ in range(sentences):
            lines.append(" ".join(rng.choice(WORDS, rng.integers(4, 9))) + ".")
        lines.append("")
    (directory / "corpus.txt").write_text("\n".join(lines))
    (directory / "vocab.txt").write_text("\n".join(SPECIAL_TOKENS + [".", *WORDS]) + "\n")
    return directory / "corpus.txt", directory / "vocab.txt"
