"""Fine-tune BERT for sentence (pair) classification or regression, as `run_classifier.py`, with `model.fit`.

    python examples/finetune_classifier.py --task mrpc --train-file glue/MRPC/train.tsv \\
        --dev-file glue/MRPC/dev.tsv --init-checkpoint path/to/bert --output-dir runs/mrpc

This script is `keras-bert finetune-classifier` (same flags, `--help` lists them): the program lives in
`keras_bert_impl/cli/finetune_classifier.py`, so the installed command and this example cannot drift apart.
"""

import sys

from keras_bert_impl.cli import main as keras_bert


def main(argv=None):
    """Run `keras-bert finetune-classifier` with `argv` (default: this script's arguments); return the exit status."""
    return keras_bert(["finetune-classifier", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
