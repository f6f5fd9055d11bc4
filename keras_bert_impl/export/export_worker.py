"""Subprocess entry point that exports a saved checkpoint under the TensorFlow backend.

`export_saved_model` runs this module (`python -m keras_bert_impl.export.export_worker ...`, with
`KERAS_BACKEND=tensorflow`) when the model lives under JAX or torch: it loads the checkpoint the parent
wrote with `save_pretrained` through the model class's `from_pretrained`, and exports it in-process.

Example:
    KERAS_BACKEND="tensorflow" python -m keras_bert_impl.export.export_worker --model-class BertClassifier \\
        --model-dir /tmp/checkpoint --tokenizer-dir /tmp/checkpoint --output /tmp/exported \\
        --settings '{"sequence_length": 128}'
"""

import argparse
import json
import os
import sys


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-class", required=True, help="BertBackbone, BertPretrainer, BertClassifier, ...")
    parser.add_argument("--model-dir", required=True, help="Directory written by the model's save_pretrained.")
    parser.add_argument("--tokenizer-dir", default=None, help="Directory written by BertTokenizer.save_pretrained.")
    parser.add_argument("--output", required=True, help="SavedModel directory to write (atomically).")
    parser.add_argument("--overwrite", action="store_true", help="Replace --output whatever it holds.")
    parser.add_argument("--settings", required=True, help="JSON export settings (sequence_length, QA options).")
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit(f"export_worker needs KERAS_BACKEND=tensorflow, got {keras.backend.backend()!r}.")
    from keras_bert_impl.export.saved_model_export import export_saved_model
    from keras_bert_impl.models.registry import TASK_CLASSES, task_class
    from keras_bert_impl.tokenization import BertTokenizer

    if args.model_class not in TASK_CLASSES:
        raise SystemExit(f"Unknown model class {args.model_class!r}; expected one of {sorted(TASK_CLASSES)}.")
    model_class = task_class(args.model_class)
    model = model_class.from_pretrained(args.model_dir)
    tokenizer = BertTokenizer.from_pretrained(args.tokenizer_dir) if args.tokenizer_dir else None
    settings = json.loads(args.settings)
    sequence_length = settings.pop("sequence_length")
    export_saved_model(model, args.output, tokenizer, sequence_length=sequence_length,
                       overwrite=args.overwrite, **settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
