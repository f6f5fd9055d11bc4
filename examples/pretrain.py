"""Pretrain BERT (masked LM + next sentence prediction) with `model.fit`, from text files or TFRecord shards.

    python examples/pretrain.py --input-files 'corpus/train/*.txt' --vocab-file corpus/vocab.txt \\
        --preset tiny --steps 2000 --output-dir runs/tiny

This script is `keras-bert pretrain` (same flags, `--help` lists them): the program lives in
`keras_bert_impl/cli/pretrain.py`, so the installed command and this example cannot drift apart.
"""

import sys

from keras_bert_impl.cli import main as keras_bert


def main(argv=None):
    """Run `keras-bert pretrain` with `argv` (default: this script's arguments); return the exit status."""
    return keras_bert(["pretrain", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
