"""Subprocess entry point that exports a saved checkpoint to ONNX under the TensorFlow backend.

`export_onnx` runs this module (`python -m keras_bert_impl.export.onnx_export_worker ...`, with
`KERAS_BACKEND=tensorflow`) when the model lives under JAX or torch: it loads the checkpoint the parent wrote
with `save_pretrained` through the model class's `from_pretrained`, and exports it in-process.

Example:
    KERAS_BACKEND="tensorflow" python -m keras_bert_impl.export.onnx_export_worker \\
        --model-class BertClassifier --model-dir /tmp/checkpoint --output /tmp/classifier.onnx
"""

import argparse
import os
import sys


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-class", required=True, help="BertBackbone, BertPretrainer, BertClassifier, ...")
    parser.add_argument("--model-dir", required=True, help="Directory written by the model's save_pretrained.")
    parser.add_argument("--output", required=True, help="ONNX file to write (atomically).")
    parser.add_argument("--overwrite", action="store_true", help="Replace an existing --output file.")
    parser.add_argument("--opset", type=int, default=None, help="ONNX opset (default: tf2onnx's).")
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit(f"onnx_export_worker needs KERAS_BACKEND=tensorflow, got {keras.backend.backend()!r}.")
    from keras_bert_impl.export.onnx_export import export_onnx
    from keras_bert_impl.models.registry import TASK_CLASSES, task_class

    if args.model_class not in TASK_CLASSES:
        raise SystemExit(f"Unknown model class {args.model_class!r}; expected one of {sorted(TASK_CLASSES)}.")
    model = task_class(args.model_class).from_pretrained(args.model_dir)
    export_onnx(model, args.output, overwrite=args.overwrite, opset=args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
