"""Moving tensors between our variables and foreign checkpoints, driven by `name_map.WeightSpec`s."""

import dataclasses
import logging
import os
import re

import numpy as np

from keras_bert_impl.checkpoints.name_map import IGNORED_FOREIGN_TENSORS, backbone_weight_specs

logger = logging.getLogger(__name__)

HUGGINGFACE = "huggingface"
ORIGINAL = "original"
NATIVE = "native"
# Each format's encoder-layer tensor names: group 1 is the layer index.
LAYER_NAME_PATTERNS = {NATIVE: r"encoder_layer_(\d+)/", HUGGINGFACE: r"encoder\.layer\.(\d+)\.",
                       ORIGINAL: r"bert/encoder/layer_(\d+)/"}
# `BertBackbone` size argument -> (our variable whose shape holds it, axis of that shape, in our layout).
SIZE_SOURCES = {
    "vocabulary_size": ("embeddings/token_embedding/embeddings", 0),
    "hidden_dim": ("embeddings/token_embedding/embeddings", 1),
    "max_sequence_length": ("embeddings/position_embeddings", 0),
    "num_segments": ("embeddings/segment_embedding/embeddings", 0),
    "intermediate_dim": ("encoder_layer_0/intermediate_dense/kernel", 1),
}


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the model; the message names file and tensor."""


@dataclasses.dataclass
class LoadReport:
    """What a checkpoint load did. `loaded`/`missing` are our variable paths; `unused` foreign names."""

    loaded: list
    missing: list
    unused: list

    def summary(self):
        return (f"loaded {len(self.loaded)} weights; left at initial values: {self.missing or 'none'}; "
                f"checkpoint tensors not used: {self.unused or 'none'}")


def check_finite(tensors, path):
    """Return `tensors` (`{name: array}` read from file `path`); `CheckpointError` naming the first tensor that
    holds NaN or infinity."""
    for name, value in tensors.items():
        value = np.asarray(value)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            count = value.size - int(np.count_nonzero(np.isfinite(value)))
            raise CheckpointError(f"{path}: tensor {name} holds {count} NaN or infinite values (of {value.size}): the "
                                  f"weights are corrupt; download or save the checkpoint again.")
    return tensors


def parameter_count(config):
    """The number of `BertBackbone` weights `config` (its arguments) makes, from the sizes alone."""
    hidden, intermediate = config["hidden_dim"], config["intermediate_dim"]
    rows = config["vocabulary_size"] + config["max_sequence_length"] + config["num_segments"]
    # Per block: fused QKV + attention output (4H^2 + 4H), feed-forward (2HI + I + H), two LayerNorms (4H).
    per_layer = 4 * hidden * hidden + 2 * hidden * intermediate + 9 * hidden + intermediate
    return rows * hidden + 2 * hidden + config["num_layers"] * per_layer + hidden * hidden + hidden


def available_memory():
    """Bytes of memory this process can still take: `MemAvailable` of /proc/meminfo, else all physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits_in_memory(config, source):
    """Raise `ValueError` when the float32 weights of a `BertBackbone` of `config` exceed the available memory,
    before anything is allocated. `source` (the config file, or the class) names it; sizes that are not
    positive integers are left to the constructor's checks."""
    sizes = ("vocabulary_size", "num_layers", "hidden_dim", "intermediate_dim", "max_sequence_length", "num_segments")
    if not all(isinstance(config.get(name), int) and config[name] > 0 for name in sizes):
        return
    needed, available = 4 * parameter_count(config), available_memory()
    if needed > available:
        raise ValueError(f"{source}: a model of {', '.join(f'{name} {config[name]}' for name in sizes)} needs "
                         f"{needed / 2**30:.1f} GiB for its weights alone, more than the {available / 2**30:.1f} "
                         f"GiB of memory available; check those sizes.")


def check_config_fits(config, shapes, source, config_path, weights_path, field_names):
    """Before any model is built or weight read: raise `CheckpointError` when the config's sizes differ from
    those the weights' shapes hold (more or fewer layers, other widths or table sizes) or its head count does
    not divide its width, then `ValueError` when they exceed the available memory (`check_fits_in_memory`).

    Args:
        config: dict. The `BertBackbone` arguments the config file gives.
        shapes: dict. `{tensor name: shape}` of the weights in `source`'s names (read from file headers).
        source: str. `NATIVE`, `HUGGINGFACE` or `ORIGINAL`.
        config_path: str. The config file, named in the message.
        weights_path: str. The weights file (or folder), named in the message.
        field_names: dict. `{BertBackbone argument: its field in the config file}`.
    """
    found = {}
    pattern = re.compile(LAYER_NAME_PATTERNS[source])
    layers = {int(match.group(1)) for match in map(pattern.match, shapes) if match}
    if layers:
        found["num_layers"] = (max(layers) + 1, f"encoder layers {min(layers)} to {max(layers)}")
    specs = {spec.ours: spec for spec in backbone_weight_specs(1)}
    for argument, (ours, axis) in SIZE_SOURCES.items():
        spec = specs[ours]
        name = ours if source == NATIVE else foreign_names(spec, source)[0]
        shape = tuple(shapes.get(name, ()))
        if len(shape) == 2:
            found[argument] = ((shape[::-1] if _needs_transpose(spec, source) else shape)[axis],
                               f"{name} has shape {list(shape)}")
    mismatches = [f"{field_names[argument]} is {config.get(argument)!r} but the weights have {value} ({evidence})"
                  for argument, (value, evidence) in found.items() if config.get(argument) != value]
    if mismatches:
        raise CheckpointError(f"{config_path} does not match the weights in {weights_path}: {'; '.join(mismatches)}. "
                              f"Use the config saved with these weights.")
    heads, hidden = config.get("num_heads"), config.get("hidden_dim")
    if isinstance(heads, int) and isinstance(hidden, int) and heads > 0 and hidden % heads:  # no shape holds it
        raise CheckpointError(f"{config_path}: {field_names['num_heads']} is {heads}, which does not divide "
                              f"{field_names['hidden_dim']} {hidden} into attention heads; use the config saved "
                              f"with these weights.")
    check_fits_in_memory(config, config_path)


def foreign_names(spec, source):
    return spec.huggingface if source == HUGGINGFACE else spec.original


def _needs_transpose(spec, source):
    return spec.kind == "kernel" and (source == HUGGINGFACE or spec.original_out_in)


def to_ours(spec, tensors, source):
    """Build our variable's value from the foreign tensor(s) named by `spec`."""
    arrays = [np.asarray(tensors[name]) for name in foreign_names(spec, source)]
    if _needs_transpose(spec, source):
        arrays = [array.T for array in arrays]
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=-1)


def from_ours(spec, value, target):
    """Split/transpose our variable's value into `{foreign name: array}` for `target`."""
    names = foreign_names(spec, target)
    parts = np.split(np.asarray(value), len(names), axis=-1) if len(names) > 1 else [np.asarray(value)]
    if _needs_transpose(spec, target):
        parts = [part.T for part in parts]
    return {name: np.ascontiguousarray(part) for name, part in zip(names, parts)}


def assign_from_checkpoint(model, specs, tensors, source, checkpoint_path):
    """Assign every spec found in `tensors` to `model`'s variables; return a `LoadReport`. `CheckpointError` when
    a tensor's shape does not match the variable's or only some of a fused tensor's parts are present."""
    variables = {variable.path: variable for variable in model.weights}
    loaded, missing, used = [], [], set()
    for spec in specs:
        variable = variables[spec.ours]
        names = foreign_names(spec, source)
        present = [name in tensors for name in names]
        if not any(present):
            missing.append(spec.ours)
            continue
        if not all(present):
            absent = [name for name, ok in zip(names, present) if not ok]
            raise CheckpointError(f"{checkpoint_path}: found only some of {list(names)} for {spec.ours}; missing "
                                  f"{absent}.")
        value = to_ours(spec, tensors, source)
        if tuple(value.shape) != tuple(variable.shape):
            shapes = ", ".join(f"{name} {tuple(np.shape(tensors[name]))}" for name in names)
            raise CheckpointError(f"{checkpoint_path}: shape mismatch for {shapes}: converted to {tuple(value.shape)} "
                                  f"but the model variable {spec.ours} has shape {tuple(variable.shape)}. The config "
                                  f"and the weights disagree (e.g. vocab size, hidden size or number of heads).")
        variable.assign(value.astype(variable.dtype))
        loaded.append(spec.ours)
        used.update(names)
    # Ignored tensors, also under a prefix ("bert."), and the original TF optimizer slots.
    ignored_endings = tuple("." + name for name in IGNORED_FOREIGN_TENSORS) + ("adam_m", "adam_v")
    unused = sorted(name for name in tensors if name not in used and name not in IGNORED_FOREIGN_TENSORS
                    and not name.endswith(ignored_endings))
    return LoadReport(loaded=loaded, missing=missing, unused=unused)


def export_tensors(model, specs, target):
    """`{foreign name: array}` for every spec, read from `model`'s variables."""
    variables = {variable.path: variable for variable in model.weights}
    tensors = {}
    for spec in specs:
        tensors.update(from_ours(spec, np.asarray(variables[spec.ours].numpy(), dtype="float32"), target))
    return tensors
