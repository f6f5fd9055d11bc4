"""keras-hub BERT presets, both ways, through keras-hub's public API (any handle it accepts: a directory,
`"bert_base_en_uncased"`, `"kaggle://..."`, `"hf://..."`). Weights move through Hugging Face names. keras-hub's
BERT fixes tanh GELU, LayerNorm epsilon 1e-12 and one dropout rate.
"""

import os

import numpy as np

from keras_bert_impl.checkpoints.conversion import (HUGGINGFACE, CheckpointError, check_finite, check_fits_in_memory,
                                                     export_tensors)
from keras_bert_impl.checkpoints.name_map import backbone_weight_specs
from keras_bert_impl.utils.atomic_io import atomic_directory
from keras_bert_impl.utils.file_patterns import read_json

KERAS_HUB_INSTALL_HINT = "pip install keras-hub"
# What keras-hub's `BertBackbone` computes and does not store in its config.
KERAS_HUB_ACTIVATION = "gelu_approximate"
KERAS_HUB_LAYER_NORM_EPSILON = 1e-12
PRESET_CONFIG_FILE = "config.json"
PRESET_WEIGHTS_FILE = "model.weights.h5"
# The `BertBackbone` arguments keras-hub's and ours share.
SHARED_ARGUMENTS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
                    "max_sequence_length", "num_segments")


def _import_keras_hub(what):
    try:
        import keras_hub
    except ImportError as error:
        raise CheckpointError(f"{what} needs keras-hub; install it ({KERAS_HUB_INSTALL_HINT}).") from error
    return keras_hub


def keras_hub_preset_names():
    """The names of keras-hub's built-in BERT presets (e.g. "bert_base_en_uncased")."""
    return set(_import_keras_hub("A keras-hub preset").models.BertBackbone.presets)


def _per_head(kind, value, num_heads, to_keras_hub):
    """One tensor from Hugging Face's layout to keras-hub's (`to_keras_hub`) or back, by `kind`."""
    if kind == "vector":
        return value
    if kind == "dense":  # keras-hub `[in, out]`, Hugging Face `[out, in]`
        return value.T
    if kind == "head_kernel":  # keras-hub (H, N, H/N), Hugging Face [out=H, in=H]
        return value.T.reshape(value.shape[1], num_heads, -1) if to_keras_hub else value.reshape(value.shape[0], -1).T
    if kind == "head_bias":  # keras-hub (N, H/N), Hugging Face (H,)
        return value.reshape(num_heads, -1) if to_keras_hub else value.reshape(-1)
    # "output_kernel": keras-hub (N, H/N, H), Hugging Face [out=H, in=H]
    return value.T.reshape(num_heads, -1, value.shape[0]) if to_keras_hub else value.reshape(-1, value.shape[-1]).T


def _name_table(num_layers):
    """`[(keras-hub variable path, Hugging Face name, kind)]` for every `BertBackbone` weight."""
    table = [(f"{ours}_embedding/embeddings", f"embeddings.{theirs}_embeddings.weight", "vector")
             for ours, theirs in (("token", "word"), ("position", "position"), ("segment", "token_type"))]
    table += [("embeddings_layer_norm/gamma", "embeddings.LayerNorm.weight", "vector"),
              ("embeddings_layer_norm/beta", "embeddings.LayerNorm.bias", "vector")]
    for index in range(num_layers):
        ours, theirs = f"transformer_layer_{index}", f"encoder.layer.{index}"
        for part in ("query", "key", "value"):
            table += [
                (f"{ours}/self_attention_layer/{part}/kernel", f"{theirs}.attention.self.{part}.weight", "head_kernel"),
                (f"{ours}/self_attention_layer/{part}/bias", f"{theirs}.attention.self.{part}.bias", "head_bias"),
            ]
        for dense, their_dense, kernel_kind in (
            ("self_attention_layer/attention_output", "attention.output.dense", "output_kernel"),
            ("feedforward_intermediate_dense", "intermediate.dense", "dense"),
            ("feedforward_output_dense", "output.dense", "dense"),
        ):
            table += [(f"{ours}/{dense}/kernel", f"{theirs}.{their_dense}.weight", kernel_kind),
                      (f"{ours}/{dense}/bias", f"{theirs}.{their_dense}.bias", "vector")]
        for norm, their_norm in (("self_attention_layer_norm", "attention.output.LayerNorm"),
                                 ("feedforward_layer_norm", "output.LayerNorm")):
            table += [(f"{ours}/{norm}/gamma", f"{theirs}.{their_norm}.weight", "vector"),
                      (f"{ours}/{norm}/beta", f"{theirs}.{their_norm}.bias", "vector")]
    return table + [("pooled_dense/kernel", "pooler.dense.weight", "dense"),
                    ("pooled_dense/bias", "pooler.dense.bias", "vector")]


def _check_preset_directory(preset):
    """Before keras-hub builds a preset directory's backbone: its `config.json` layer count against the encoder
    layers its weights file holds, and its sizes against the available memory (other handles: nothing). Raises
    `ValueError`, not `CheckpointError` (which callers report as an unknown preset)."""
    config_path = os.path.join(preset, PRESET_CONFIG_FILE)
    if not os.path.isfile(config_path):
        return
    document = read_json(config_path)
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        return  # keras-hub names what is wrong
    weights_path = os.path.join(preset, PRESET_WEIGHTS_FILE)
    try:
        import h5py

        with h5py.File(weights_path, "r") as handle:  # Keras saves each block as layers/transformer_encoder[_i]
            layers = sum(name.startswith("transformer_encoder") for name in handle.get("layers", {}))
    except (ImportError, OSError):  # no weights file (keras-hub names it), or one h5py cannot read
        layers = 0
    if layers and layers != config.get("num_layers"):
        raise ValueError(f"{config_path} does not match the weights in {weights_path}: config.num_layers is "
                         f"{config.get('num_layers')!r} but the weights have {layers} encoder layers. Use the config "
                         f"saved with these weights.")
    check_fits_in_memory(config, config_path)


def read_keras_hub_preset(preset):
    """`(config, tensors)` of a keras-hub BERT preset (a directory or any handle keras-hub's
    `BertBackbone.from_preset` takes): `BertBackbone` arguments and `{Hugging Face name: np.ndarray}`."""
    keras_hub = _import_keras_hub(f"Reading the keras-hub preset {preset}")
    _check_preset_directory(preset)
    try:
        source = keras_hub.models.BertBackbone.from_preset(preset)
    except (ValueError, OSError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"keras-hub cannot load {preset} as a BertBackbone preset ({first_line})") from error
    config = {name: getattr(source, name) for name in SHARED_ARGUMENTS}
    config.update(attention_dropout=source.dropout, hidden_activation=KERAS_HUB_ACTIVATION,
                  layer_norm_epsilon=KERAS_HUB_LAYER_NORM_EPSILON)
    values = check_finite({variable.path: np.asarray(variable.numpy(), dtype="float32") for variable in source.weights},
                          preset)
    return config, {name: _per_head(kind, values[path], source.num_heads, to_keras_hub=False)
                    for path, name, kind in _name_table(source.num_layers)}


def read_keras_hub_tokenizer(preset):
    """Our `BertTokenizer` with the vocabulary and casing of a keras-hub preset's tokenizer; None when the
    preset has none."""
    keras_hub = _import_keras_hub(f"Reading the keras-hub preset {preset}")
    from keras_bert_impl.tokenization import BertTokenizer

    try:
        source = keras_hub.models.BertTokenizer.from_preset(preset)
    except FileNotFoundError:
        return None
    settings = source.get_config()
    return BertTokenizer(source.get_vocabulary(), lowercase=settings["lowercase"],
                         strip_accents=settings.get("strip_accents", False))


def write_keras_hub_preset(backbone, path, tokenizer=None, classifier_head=None):
    """Write `backbone` (and `tokenizer`, and a classification head) as a keras-hub BERT preset directory.

    Args:
        backbone: `BertBackbone`, with keras-hub's fixed activation and LayerNorm epsilon (module docstring).
        path: str. The preset directory; replaced only when complete.
        tokenizer: our `BertTokenizer` or None. Written as the preset's tokenizer. Defaults to None.
        classifier_head: dict or None. `num_classes`, `dropout`, `kernel` `(H, C)`, `bias` `(C,)` and the
            preprocessor's `sequence_length` of a `BertClassifier`: written as a keras-hub `BertTextClassifier`
            (its `from_preset(path)` loads the head). Defaults to None.

    Raises:
        CheckpointError: the backbone computes something keras-hub's `BertBackbone` cannot.
    """
    if backbone.hidden_activation != KERAS_HUB_ACTIVATION or backbone.layer_norm_epsilon != KERAS_HUB_LAYER_NORM_EPSILON:
        raise CheckpointError(
            f"keras-hub's BertBackbone computes hidden_activation={KERAS_HUB_ACTIVATION!r} and layer_norm_epsilon="
            f"{KERAS_HUB_LAYER_NORM_EPSILON}; this backbone has {backbone.hidden_activation!r} and "
            f"{backbone.layer_norm_epsilon}, so its outputs would change. To accept that, rebuild it with keras-hub's "
            f"(e.g. BertBackbone.from_pretrained(path, hidden_activation={KERAS_HUB_ACTIVATION!r}, "
            f"layer_norm_epsilon={KERAS_HUB_LAYER_NORM_EPSILON})) and write that.")
    keras_hub = _import_keras_hub("Writing a keras-hub preset")
    target = keras_hub.models.BertBackbone(**{name: getattr(backbone, name) for name in SHARED_ARGUMENTS})
    tensors = export_tensors(backbone, backbone_weight_specs(backbone.num_layers), HUGGINGFACE)
    variables = {variable.path: variable for variable in target.weights}
    for keras_hub_path, name, kind in _name_table(backbone.num_layers):
        variables[keras_hub_path].assign(_per_head(kind, tensors[name], backbone.num_heads, to_keras_hub=True))
    target_tokenizer = None if tokenizer is None else keras_hub.models.BertTokenizer(
        vocabulary=tokenizer.get_vocabulary(), lowercase=tokenizer.lowercase, strip_accents=tokenizer.strip_accents)
    with atomic_directory(path, what="keras-hub preset") as staging:
        if classifier_head is None:
            target.save_to_preset(staging)
            if target_tokenizer is not None:
                target_tokenizer.save_to_preset(staging)
            return
        preprocessor = None if target_tokenizer is None else keras_hub.models.BertTextClassifierPreprocessor(
            target_tokenizer, sequence_length=classifier_head["sequence_length"])
        task = keras_hub.models.BertTextClassifier(target, classifier_head["num_classes"], preprocessor=preprocessor,
                                                   dropout=classifier_head["dropout"])
        head = {variable.path: variable for variable in task.weights}
        head["logits/kernel"].assign(classifier_head["kernel"])
        head["logits/bias"].assign(classifier_head["bias"])
        task.save_to_preset(staging)
