"""Our own checkpoint directory: `config.json` (class + constructor config, and the SHA-256 of the weights file,
which loading verifies) + `model.safetensors` keyed by Keras variable path (e.g.
`encoder_layer_0/output_dense/kernel`), independent of Keras' object-graph ordering.
"""

import hashlib
import json
import os

import numpy as np

from keras_bert_impl.checkpoints.conversion import NATIVE, SIZE_SOURCES, CheckpointError, check_config_fits
from keras_bert_impl.checkpoints.huggingface import load_safetensors, safetensors_shapes
from keras_bert_impl.utils.atomic_io import atomic_directory
from keras_bert_impl.utils.file_patterns import POSITIVE, check_json, read_json

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_NAME = "keras_bert_impl"
DIGESTS_FIELD = "sha256"  # config.json: {weights file name: SHA-256 hex digest}


def file_sha256(path):
    """The SHA-256 hex digest of file `path`, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# What `read_native` requires of config.json: `BertBackbone`'s arguments without defaults, under `config` for a
# backbone and under `extra.backbone_config` for a task model (whose `config` holds its head's arguments).
BACKBONE_SCHEMA = dict.fromkeys(("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim"),
                                POSITIVE)
CONFIG_SCHEMA = {"class_name": str, "config": dict, "extra?": dict, DIGESTS_FIELD + "?": {str: str}}


def is_native_directory(path):
    try:
        document = read_json(os.path.join(path, CONFIG_FILE), CheckpointError)
    except (CheckpointError, OSError):  # no readable JSON config
        return False
    return isinstance(document, dict) and document.get("format") == FORMAT_NAME


def read_native(path):
    """Return `(class_name, config, extra, tensors)` from one of our checkpoint directories."""
    config_path = os.path.join(path, CONFIG_FILE)
    document = read_json(config_path, CheckpointError, CONFIG_SCHEMA)
    if document["class_name"] == "BertBackbone":
        check_json(document, {"config": BACKBONE_SCHEMA}, config_path, CheckpointError)
    else:
        check_json(document, {"extra": {"backbone_config": BACKBONE_SCHEMA}, "config": {"labels?": (list, type(None))}},
                   config_path, CheckpointError)
    weights_path = os.path.join(path, WEIGHTS_FILE)
    if not os.path.exists(weights_path):
        raise CheckpointError(f"{path} has {CONFIG_FILE} but no {WEIGHTS_FILE}.")
    shapes = safetensors_shapes([weights_path])  # a truncated or garbled file is named as such first
    recorded = document.get(DIGESTS_FIELD, {}).get(WEIGHTS_FILE)
    if recorded is not None and file_sha256(weights_path) != recorded:
        raise CheckpointError(f"{weights_path}: its SHA-256 differs from the one {config_path} recorded when it was "
                              f"saved, so the weights were changed or corrupted since; save or copy the checkpoint "
                              f"again.")
    extra = document.get("extra", {})
    backbone, prefix = ((document["config"], "config.") if document["class_name"] == "BertBackbone"
                        else (extra.get("backbone_config"), "extra.backbone_config."))
    if isinstance(backbone, dict):
        check_config_fits(backbone, shapes, NATIVE, config_path, weights_path,
                          {name: prefix + name for name in ("num_layers", "num_heads", *SIZE_SOURCES)})
    return document["class_name"], document["config"], extra, load_safetensors(weights_path)


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
    with atomic_directory(path, what="model directory") as tmp:
        save_file(tensors, os.path.join(tmp, WEIGHTS_FILE))
        document = {"format": FORMAT_NAME, "class_name": type(model).__name__, "config": config, "extra": extra or {},
                    DIGESTS_FIELD: {WEIGHTS_FILE: file_sha256(os.path.join(tmp, WEIGHTS_FILE))}}
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
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
            raise CheckpointError(f"{path}/{WEIGHTS_FILE}: tensor {name} has shape {tuple(value.shape)} but the model "
                                  f"expects {tuple(variable.shape)}.")
        variable.assign(value.astype(variable.dtype))
    return sorted(set(tensors) - set(variables))
