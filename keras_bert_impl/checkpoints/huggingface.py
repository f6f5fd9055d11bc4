"""Reading and writing Hugging Face BERT checkpoints (`config.json` + safetensors or `pytorch_model.bin`)."""

import json
import os

import numpy as np

from keras_bert_impl.checkpoints.conversion import CheckpointError, check_finite
from keras_bert_impl.utils.file_patterns import POSITIVE, check_json, read_json

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"

# Hugging Face `hidden_act` -> ours. HF "gelu" is exact erf; "gelu_new" & co. are the tanh form.
HUGGINGFACE_ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "gelu_new": "gelu_approximate",
                           "gelu_pytorch_tanh": "gelu_approximate", "gelu_fast": "gelu_approximate", "relu": "relu",
                           "silu": "silu", "swish": "silu"}
OUR_ACTIVATIONS_TO_HUGGINGFACE = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu", "silu": "silu"}
# `BertConfig` JSON field -> our `BertBackbone` argument and its default when absent (None: required).
CONFIG_FIELDS = {
    "vocab_size": ("vocabulary_size", None),
    "num_hidden_layers": ("num_layers", None),
    "num_attention_heads": ("num_heads", None),
    "hidden_size": ("hidden_dim", None),
    "intermediate_size": ("intermediate_dim", None),
    "max_position_embeddings": ("max_sequence_length", 512),
    "type_vocab_size": ("num_segments", 2),
    "hidden_dropout_prob": ("dropout", 0.1),
    "attention_probs_dropout_prob": ("attention_dropout", 0.1),
    "layer_norm_eps": ("layer_norm_epsilon", 1e-12),
    "initializer_range": ("initializer_range", 0.02),
}


def is_huggingface_directory(path):
    return os.path.isfile(os.path.join(path, CONFIG_FILE)) and any(
        os.path.exists(os.path.join(path, name)) for name in (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, PYTORCH_FILE))


def backbone_config_from_huggingface(config, config_path):
    """Translate a Hugging Face `BertConfig` dict into `BertBackbone` arguments, rejecting what we lack."""
    check_json(config, {"model_type?": str, "position_embedding_type?": str}, config_path, CheckpointError)
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{config_path}: model_type {model_type!r} is not supported; only 'bert' checkpoints "
                              "load.")
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(f"{config_path}: position_embedding_type {position_type!r} is not supported (only "
                              f"learned absolute positions, as in BERT).")
    return backbone_config_from_bert_json(config, config_path, HUGGINGFACE_ACTIVATIONS, num_segments=2)


def backbone_config_from_bert_json(config, config_path, activations, num_segments, layer_norm_epsilon=None):
    """`BertBackbone` arguments from a `BertConfig` JSON dict (Hugging Face's or the original's).

    Args:
        config: dict. The parsed JSON.
        config_path: str. Its file, for error messages.
        activations: dict. The format's `hidden_act` names -> ours.
        num_segments: int. `type_vocab_size` when the config has none.
        layer_norm_epsilon: float or None. A fixed epsilon (the original has no field); None reads
            `layer_norm_eps` (default 1e-12).
    """
    fields = dict(CONFIG_FIELDS, type_vocab_size=("num_segments", num_segments))
    check_json(config, {"hidden_act?": str, **{name + ("?" if default is not None else ""): (
        float if isinstance(default, float) else POSITIVE) for name, (_, default) in fields.items()}},
        config_path, CheckpointError)
    activation = config.get("hidden_act", "gelu")
    if activation not in activations:
        raise CheckpointError(f"{config_path}: hidden_act {activation!r} is not supported; supported: "
                              f"{sorted(activations)}.")
    arguments = {"hidden_activation": activations[activation]}
    for name, (ours, default) in fields.items():
        arguments[ours] = (float if isinstance(default, float) else int)(config.get(name, default))
    if layer_norm_epsilon is not None:
        arguments["layer_norm_epsilon"] = float(layer_norm_epsilon)
    return arguments


def huggingface_config_from_backbone(backbone, architectures=("BertModel",)):
    return {"architectures": list(architectures), "model_type": "bert",
            **{name: getattr(backbone, ours) for name, (ours, _) in CONFIG_FIELDS.items()},
            "hidden_act": OUR_ACTIVATIONS_TO_HUGGINGFACE[backbone.hidden_activation],
            "position_embedding_type": "absolute", "pad_token_id": 0}


def _normalise_names(tensors):
    """Strip the task models' `bert.` prefix and map legacy LayerNorm `gamma`/`beta` to `weight`/`bias`.
    Older `transformers` checkpoints store the MLM output bias as `cls.predictions.decoder.bias`, a tied copy of
    `cls.predictions.bias` (sometimes both): it is read under the canonical name."""
    normalised = {}
    for name, value in tensors.items():
        if name.startswith("bert."):
            name = name[len("bert."):]
        if ".LayerNorm." in name or name.startswith("LayerNorm."):
            name = name.replace(".gamma", ".weight").replace(".beta", ".bias")
        normalised[name] = value
    if "cls.predictions.decoder.bias" in normalised:
        normalised.setdefault("cls.predictions.bias", normalised.pop("cls.predictions.decoder.bias"))
    return normalised


def _safetensors_call(read, path):
    """`read(path)`, its errors for a damaged file as `CheckpointError` naming the file."""
    from safetensors import SafetensorError

    try:
        return read(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"Cannot read {path}: the file is truncated or corrupt ({error}).") from error


def load_safetensors(path):
    """`{name: np.ndarray}` of the safetensors file `path`; `CheckpointError` when it is corrupt or holds NaN/inf."""
    from safetensors.numpy import load_file

    return check_finite(_safetensors_call(load_file, path), path)


def safetensors_shapes(paths):
    """`{name: shape}` of every tensor in the safetensors files `paths`, from their headers (no data is read)."""
    from safetensors import safe_open

    def read(path):
        with safe_open(path, framework="numpy") as handle:
            return {name: handle.get_slice(name).get_shape() for name in handle.keys()}  # noqa: SIM118 - no __iter__

    shapes = {}
    for path in paths:
        shapes.update(_safetensors_call(read, path))
    return shapes


def _shard_path(directory, shard, index_path):
    """`shard` (a file name from `index_path`) inside `directory`; `CheckpointError` for a name that is absolute,
    climbs with `..` or resolves (through links) outside the folder, without saying whether that file exists."""
    root = os.path.realpath(directory)
    if os.path.basename(os.path.dirname(root)) == "snapshots":  # a Hub cache snapshot: files link to ../../blobs
        root = os.path.dirname(os.path.dirname(root))
    path = os.path.join(directory, shard) if isinstance(shard, str) and shard else None
    if (path is None or os.path.isabs(shard) or ".." in shard.replace("\\", "/").split("/")
            or os.path.commonpath([root, os.path.realpath(path)]) != root):
        raise CheckpointError(f"{index_path} lists shard {shard!r}, which is not a file name inside {directory}; a "
                              f"shard must lie in the checkpoint folder.")
    return path


def weight_files(directory):
    """The weight files of a Hugging Face checkpoint directory: `model.safetensors`, the shards its index lists
    (confined to `directory`) or `pytorch_model.bin`."""
    index_path = os.path.join(directory, SAFETENSORS_INDEX_FILE)
    safetensors_path = os.path.join(directory, SAFETENSORS_FILE)
    if os.path.exists(safetensors_path):
        return [safetensors_path]
    if not os.path.exists(index_path):
        return [os.path.join(directory, PYTORCH_FILE)]
    weight_map = read_json(index_path, CheckpointError, {"weight_map?": {str: str}}).get("weight_map")
    if not weight_map:
        raise CheckpointError(f"{index_path}: 'weight_map' is missing or empty.")
    paths = []
    for shard in weight_map.values():
        path = _shard_path(directory, shard, index_path)
        if path not in paths:
            if not os.path.exists(path):
                raise CheckpointError(f"{index_path} lists shard {shard!r}, which does not exist.")
            paths.append(path)
    return paths


def read_huggingface_tensors(directory, check_shapes=None):
    """All weight tensors of a Hugging Face checkpoint directory as `{normalised name: np.ndarray}`.

    Args:
        directory: str. The checkpoint directory.
        check_shapes: callable or None. Called with `{normalised name: shape}` before any tensor data is read
            (after, for `pytorch_model.bin`), to refuse weights that do not fit. Defaults to None.
    """
    paths = weight_files(directory)
    if paths[0].endswith(PYTORCH_FILE):
        tensors = _normalise_names(_read_pytorch_bin(paths[0]))
        if check_shapes is not None:
            check_shapes({name: value.shape for name, value in tensors.items()})
        return tensors
    if check_shapes is not None:
        check_shapes(_normalise_names(safetensors_shapes(paths)))
    tensors = {}
    for path in paths:
        tensors.update(load_safetensors(path))
    return _normalise_names(tensors)


def _read_pytorch_bin(path):
    try:
        import torch
    except ImportError as error:
        raise CheckpointError(f"{path} is a torch pickle; install torch (`pip install keras-bert-impl[torch]`) to read "
                              f"it, or convert it to safetensors.") from error
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises several unrelated types for bad files
        raise CheckpointError(f"Cannot read {path}: the file is truncated or corrupt ({error}).") from error
    return check_finite({name: tensor.float().numpy() for name, tensor in state.items()}, path)


def write_huggingface_directory(directory, config, tensors):
    """Write `config.json` + `model.safetensors` (torch layout) into an existing directory."""
    from safetensors.numpy import save_file

    with open(os.path.join(directory, CONFIG_FILE), "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)
    save_file({name: np.ascontiguousarray(value, dtype="float32") for name, value in tensors.items()},
              os.path.join(directory, SAFETENSORS_FILE), metadata={"format": "pt"})
