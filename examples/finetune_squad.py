"""Fine-tune BERT for SQuAD v1.1 / v2.0 question answering, as `run_squad.py`, with `model.fit`.

    python examples/finetune_squad.py --train-file train-v1.1.json --dev-file dev-v1.1.json \\
        --init-checkpoint path/to/bert --output-dir runs/squad1

This script is `keras-bert finetune-squad` (same flags, `--help` lists them): the program lives in
`keras_bert_impl/cli/finetune_squad.py`, so the installed command and this example cannot drift apart.
"""

import sys

from keras_bert_impl.cli import main as keras_bert


def main(argv=None):
    """Run `keras-bert finetune-squad` with `argv` (default: this script's arguments); return the exit status."""
    return keras_bert(["finetune-squad", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
