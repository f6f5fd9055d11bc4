"""Exports from JAX and torch: the model is saved (`save_pretrained`) beside the output, and a subprocess under the
TensorFlow backend (`export.tensorflow_export_worker`) loads and exports it. `ExportError`: every export's error.
"""

import json
import os
import subprocess
import sys

from keras_bert_impl.models.registry import TASK_CLASSES
from keras_bert_impl.utils.atomic_io import scratch_directory

WORKER_MODULE = "keras_bert_impl.export.tensorflow_export_worker"
# `export_format` -> how messages name it.
FORMATS = {"saved_model": "SavedModel", "onnx": "ONNX"}
_WORKER_OUTPUT_TAIL = 4000  # characters of a failed worker's output quoted in the error


class ExportError(RuntimeError):
    """An export that cannot be done (unsupported model, inconsistent settings, a failed worker); every export
    raises it."""


def exported_class_name(model, exporter):
    """The class name of `model`, a task model of `models.registry.TASK_CLASSES`; else one `ExportError` line."""
    import keras

    class_name = type(model).__name__
    if class_name not in TASK_CLASSES or not isinstance(model, keras.Model):
        raise ExportError(f"{exporter} supports {', '.join(TASK_CLASSES)}; got {type(model).__module__}.{class_name}. "
                          "Export its backbone, or wrap it in one of these models.")
    return class_name


def export_in_tensorflow_subprocess(model, class_name, export_format, path, options, tokenizer=None,
                                    overwrite=False):
    """Save `model` with `save_pretrained`, then let the worker (KERAS_BACKEND=tensorflow) load and export it.

    Args:
        model: the task model, under any backend; `class_name` its registered class name.
        export_format: "saved_model" or "onnx".
        path: str. Where the worker writes, atomically.
        options: dict. JSON-serialisable keyword arguments of `export_saved_model` / `export_onnx`.
        tokenizer: `BertTokenizer` or None. Saved for the worker (SavedModels that serve raw text).
        overwrite: bool. Replace an existing export at `path`.

    Raises:
        ExportError: saving the model failed, or the worker exited with an error (its output is quoted).
    """
    import keras

    backend, name = keras.backend.backend(), FORMATS[export_format]
    with scratch_directory(path) as staging:  # beside the output: a killed export leaves nothing elsewhere
        model_dir = os.path.join(staging, "model")
        try:
            model.save_pretrained(model_dir)
        except Exception as error:
            raise ExportError(f"Cannot export {class_name} as {name} from the {backend} backend: saving it for the "
                              f"TensorFlow export worker failed ({type(error).__name__}: {error}).") from error
        job = {"format": export_format, "model_class": class_name, "model_dir": model_dir, "tokenizer_dir": None,
               "output": path, "overwrite": overwrite, "options": options}
        if tokenizer is not None:
            job["tokenizer_dir"] = os.path.join(staging, "tokenizer")
            tokenizer.save_pretrained(job["tokenizer_dir"])
        command = [sys.executable, "-m", WORKER_MODULE, json.dumps(job)]
        result = subprocess.run(command, env=dict(os.environ, KERAS_BACKEND="tensorflow"), capture_output=True,
                                text=True, check=False)
    if result.returncode != 0:
        raise ExportError(
            f"The TensorFlow export worker failed (exit code {result.returncode}) exporting {class_name} as {name} "
            f"from the {backend} backend to {path}; nothing was written there. Its output ends with:\n"
            f"{(result.stdout + result.stderr)[-_WORKER_OUTPUT_TAIL:]}"
        )
