"""The TensorFlow export worker: loads a model a JAX or torch process saved and exports it under TensorFlow.

Launched by `export.tensorflow_subprocess` by module name, so the exporters it imports never import it.

Example:
    KERAS_BACKEND="tensorflow" python -m keras_bert_impl.export.tensorflow_export_worker --format onnx \\
        --model-class BertClassifier --model-dir /tmp/checkpoint --output /tmp/classifier.onnx --options '{}'
"""

import argparse
import json
import os
import sys

from keras_bert_impl.export.tensorflow_subprocess import FORMATS, WORKER_MODULE


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", required=True, choices=sorted(FORMATS))
    parser.add_argument("--model-class", required=True, help="BertBackbone, BertPretrainer, BertClassifier, ...")
    parser.add_argument("--model-dir", required=True, help="Directory written by the model's save_pretrained.")
    parser.add_argument("--tokenizer-dir", default=None, help="Directory written by BertTokenizer.save_pretrained.")
    parser.add_argument("--output", required=True, help="SavedModel directory or ONNX file to write (atomically).")
    parser.add_argument("--overwrite", action="store_true", help="Replace an existing export at --output.")
    parser.add_argument("--options", required=True,
                        help="JSON keyword arguments of export_saved_model (sequence_length, QA options) or "
                             "export_onnx (opset).")
    args = parser.parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit(f"{WORKER_MODULE} needs KERAS_BACKEND=tensorflow, got {keras.backend.backend()!r}.")
    from keras_bert_impl.models.registry import TASK_CLASSES, task_class

    if args.model_class not in TASK_CLASSES:
        raise SystemExit(f"Unknown model class {args.model_class!r}; expected one of {sorted(TASK_CLASSES)}.")
    model = task_class(args.model_class).from_pretrained(args.model_dir)
    options = json.loads(args.options)
    if args.format == "onnx":
        from keras_bert_impl.export.onnx_export import export_onnx

        export_onnx(model, args.output, overwrite=args.overwrite, **options)
    else:
        from keras_bert_impl.export.saved_model_export import export_saved_model
        from keras_bert_impl.tokenization import BertTokenizer

        tokenizer = BertTokenizer.from_pretrained(args.tokenizer_dir) if args.tokenizer_dir else None
        export_saved_model(model, args.output, tokenizer, overwrite=args.overwrite, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
