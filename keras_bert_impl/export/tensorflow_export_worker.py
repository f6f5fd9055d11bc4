"""The TensorFlow export worker: loads a model a JAX or torch process saved and exports it under TensorFlow.

Launched by `export.tensorflow_subprocess` by module name, so the exporters it imports never import it. Its
one argument is the parent's JSON job: `format`, `model_class`, `model_dir`, `tokenizer_dir`, `output`,
`overwrite` and `options` (keyword arguments of `export_saved_model` or `export_onnx`).
"""

import json
import sys


def main(job):
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit(f"The TensorFlow export worker needs KERAS_BACKEND=tensorflow, got "
                         f"{keras.backend.backend()!r}.")
    from keras_bert_impl.models.registry import task_class

    model = task_class(job["model_class"]).from_pretrained(job["model_dir"])
    if job["format"] == "onnx":
        from keras_bert_impl.export.onnx_export import export_onnx

        export_onnx(model, job["output"], overwrite=job["overwrite"], **job["options"])
    else:
        from keras_bert_impl.export.saved_model_export import export_saved_model
        from keras_bert_impl.tokenization import BertTokenizer

        tokenizer = BertTokenizer.from_pretrained(job["tokenizer_dir"]) if job["tokenizer_dir"] else None
        export_saved_model(model, job["output"], tokenizer, overwrite=job["overwrite"], **job["options"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
