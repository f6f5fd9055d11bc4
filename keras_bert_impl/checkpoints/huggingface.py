"""Reading and writing Hugging Face BERT checkpoints (`config.json` + safetensors or `pytorch_model.bin`)."""

import json
import os

import numpy as np

from keras_bert_impl.checkpoints.conversion import CheckpointError
from keras_bert_impl.utils.file_patterns import POSITIVE, check_json, read_json

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"

# Hugging Face `hidden_act` -> ours. HF "gelu" is exact erf; "gelu_new" & co. are the tanh form.
HUGGINGFACE_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}
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
    if not os.path.isfile(os.path.join(path, CONFIG_FILE)):
        return False
    return any(
        os.path.exists(os.path.join(path, name))
        for name in (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, PYTORCH_FILE)
    )


def backbone_config_from_huggingface(config, config_path):
    """Translate a Hugging Face `BertConfig` dict into `BertBackbone` arguments, rejecting what we lack."""
    check_json(config, {"model_type?": str, "position_embedding_type?": str}, config_path, CheckpointError)
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(
            f"{config_path}: model_type {model_type!r} is not supported; only 'bert' checkpoints load."
        )
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{config_path}: position_embedding_type {position_type!r} is not supported (only learned "
            f"absolute positions, as in BERT)."
        )
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
        raise CheckpointError(
            f"{config_path}: hidden_act {activation!r} is not supported; supported: {sorted(activations)}."
        )
    arguments = {"hidden_activation": activations[activation]}
    for name, (ours, default) in fields.items():
        arguments[ours] = (float if isinstance(default, float) else int)(config.get(name, default))
    if layer_norm_epsilon is not None:
        arguments["layer_norm_epsilon"] = float(layer_norm_epsilon)
    return arguments


def huggingface_config_from_backbone(backbone, architectures=("BertModel",)):
    return {
        "architectures": list(architectures),
        "model_type": "bert",
        **{name: getattr(backbone, ours) for name, (ours, _) in CONFIG_FIELDS.items()},
        "hidden_act": OUR_ACTIVATIONS_TO_HUGGINGFACE[backbone.hidden_activation],
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }


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


def load_safetensors(path):
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"Cannot read {path}: the file is truncated or corrupt ({error}).") from error


def read_huggingface_tensors(directory):
    """All weight tensors of a Hugging Face checkpoint directory as `{normalised name: np.ndarray}`."""
    index_path = os.path.join(directory, SAFETENSORS_INDEX_FILE)
    safetensors_path = os.path.join(directory, SAFETENSORS_FILE)
    if os.path.exists(safetensors_path):
        tensors = load_safetensors(safetensors_path)
    elif os.path.exists(index_path):
        index = read_json(index_path, CheckpointError, {"weight_map?": {str: str}})
        shards = sorted(set(index.get("weight_map", {}).values()))
        if not shards:
            raise CheckpointError(f"{index_path}: 'weight_map' is missing or empty.")
        tensors = {}
        for shard in shards:
            shard_path = os.path.join(directory, shard)
            if not os.path.exists(shard_path):
                raise CheckpointError(f"{index_path} lists shard {shard!r}, which does not exist.")
            tensors.update(load_safetensors(shard_path))
    else:
        tensors = _read_pytorch_bin(os.path.join(directory, PYTORCH_FILE))
    return _normalise_names(tensors)


def _read_pytorch_bin(path):
    try:
        import torch
    except ImportError as error:
        raise CheckpointError(
            f"{path} is a torch pickle; install torch (`pip install keras-bert-impl[torch]`) to read it, "
            f"or convert it to safetensors."
        ) from error
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises several unrelated types for bad files
        raise CheckpointError(f"Cannot read {path}: the file is truncated or corrupt ({error}).") from error
    return {name: tensor.float().numpy() for name, tensor in state.items()}


def write_huggingface_directory(directory, config, tensors):
    """Write `config.json` + `model.safetensors` (torch layout) into an existing directory."""
    from safetensors.numpy import save_file

    with open(os.path.join(directory, CONFIG_FILE), "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)
    save_file(
        {name: np.ascontiguousarray(value, dtype="float32") for name, value in tensors.items()},
        os.path.join(directory, SAFETENSORS_FILE),
        metadata={"format": "pt"},
    )
