"""Our own checkpoint directory: `config.json` (class + constructor config) + `model.safetensors`.

Weights are keyed by Keras variable path (e.g. `encoder_layer_0/output_dense/kernel`), so the file is
readable by any safetensors tool and independent of Keras' object-graph ordering.
"""

import json
import os

import numpy as np

from keras_bert_impl.checkpoints.conversion import CheckpointError
from keras_bert_impl.checkpoints.huggingface import load_safetensors, read_json
from keras_bert_impl.utils.atomic_io import atomic_directory

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_NAME = "keras_bert_impl"


def is_native_directory(path):
    try:
        return read_json(os.path.join(path, CONFIG_FILE)).get("format") == FORMAT_NAME
    except CheckpointError:  # no readable JSON config
        return False


def read_native(path):
    """Return `(class_name, config, extra, tensors)` from one of our checkpoint directories."""
    config_path = os.path.join(path, CONFIG_FILE)
    document = read_json(config_path)
    for field in ("class_name", "config"):
        if field not in document:
            raise CheckpointError(f"{config_path}: required field {field!r} is missing.")
    weights_path = os.path.join(path, WEIGHTS_FILE)
    if not os.path.exists(weights_path):
        raise CheckpointError(f"{path} has {CONFIG_FILE} but no {WEIGHTS_FILE}.")
    return document["class_name"], document["config"], document.get("extra", {}), load_safetensors(weights_path)


def write_native(path, model, config, extra=None, files=None):
    """Write `model`'s variables and `config` to directory `path`, replacing it only when complete.

    Args:
        path: str. The checkpoint directory.
        model: a Keras model or layer; its `weights` are saved by variable path.
        config: dict. The model config stored in `config.json`.
        extra: dict or None. More JSON stored under `extra`. Defaults to None.
        files: dict or None. `{file name: writer}`: each `writer(file_path)` writes one more file into the
            directory before it replaces `path` (e.g. a classifier's label vocabulary). Defaults to None.
    """
    from safetensors.numpy import save_file

    tensors = {}
    for variable in model.weights:
        if variable.path in tensors:
            raise ValueError(f"Two variables share the path {variable.path!r}; cannot save by path.")
        tensors[variable.path] = np.ascontiguousarray(np.asarray(variable.numpy(), dtype="float32"))
    document = {
        "format": FORMAT_NAME,
        "class_name": type(model).__name__,
        "config": config,
        "extra": extra or {},
    }
    with atomic_directory(path, what="model directory") as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
        save_file(tensors, os.path.join(tmp, WEIGHTS_FILE))
        for name, writer in (files or {}).items():
            writer(os.path.join(tmp, name))


def assign_native(model, tensors, path):
    """Assign every variable of `model` from `tensors` keyed by variable path; strict on both sides."""
    variables = {variable.path: variable for variable in model.weights}
    missing = sorted(set(variables) - set(tensors))
    if missing:
        raise CheckpointError(f"{path}/{WEIGHTS_FILE} lacks weights for {missing}.")
    for name, variable in variables.items():
        value = tensors[name]
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointError(
                f"{path}/{WEIGHTS_FILE}: tensor {name} has shape {tuple(value.shape)} but the model "
                f"expects {tuple(variable.shape)}."
            )
        variable.assign(value.astype(variable.dtype))
    return sorted(set(tensors) - set(variables))
