"""Moving tensors between our variables and foreign checkpoints, driven by `name_map.WeightSpec`s."""

import dataclasses
import logging

import numpy as np

from keras_bert_impl.checkpoints.name_map import IGNORED_FOREIGN_TENSORS

logger = logging.getLogger(__name__)

HUGGINGFACE = "huggingface"
ORIGINAL = "original"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not fit the model; the message names file and tensor."""


@dataclasses.dataclass
class LoadReport:
    """What a checkpoint load did. `loaded`/`missing` are our variable paths; `unused` foreign names."""

    loaded: list
    missing: list
    unused: list

    def summary(self):
        return (
            f"loaded {len(self.loaded)} weights; left at initial values: {self.missing or 'none'}; "
            f"checkpoint tensors not used: {self.unused or 'none'}"
        )


def foreign_names(spec, source):
    return spec.huggingface if source == HUGGINGFACE else spec.original


def _needs_transpose(spec, source):
    if spec.kind != "kernel":
        return False
    return source == HUGGINGFACE or spec.original_out_in


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
    """Assign every spec found in `tensors` to `model`'s variables; return a `LoadReport`.

    Raises `CheckpointError` when a tensor's shape does not match the variable (naming both shapes) or
    when only some of a fused tensor's parts are present.
    """
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
            raise CheckpointError(
                f"{checkpoint_path}: found only some of {list(names)} for {spec.ours}; missing {absent}."
            )
        value = to_ours(spec, tensors, source)
        if tuple(value.shape) != tuple(variable.shape):
            shapes = ", ".join(f"{name} {tuple(np.shape(tensors[name]))}" for name in names)
            raise CheckpointError(
                f"{checkpoint_path}: shape mismatch for {shapes}: converted to {tuple(value.shape)} but "
                f"the model variable {spec.ours} has shape {tuple(variable.shape)}. The config and the "
                f"weights disagree (e.g. vocab size, hidden size or number of heads)."
            )
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
        value = np.asarray(variables[spec.ours].numpy(), dtype="float32")
        tensors.update(from_ours(spec, value, target))
    return tensors
