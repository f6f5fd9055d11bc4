"""Checkpoint loading and writing for every format `from_pretrained` accepts.

- Hugging Face directories: `config.json` + `model.safetensors` (or sharded, or `pytorch_model.bin`).
- Original google-research/bert: `bert_config.json` + `bert_model.ckpt.{index,data-*}`.
- Ours: `config.json` with `"format": "keras_bert_impl"` + `model.safetensors` keyed by variable path.

Names map through one table, `name_map.py`. This package never builds models (models -> checkpoints).
"""

import os

from keras_bert_impl.checkpoints import huggingface, native, original_tf
from keras_bert_impl.checkpoints.conversion import (HUGGINGFACE, ORIGINAL, CheckpointError, LoadReport,
                                                     assign_from_checkpoint, check_config_fits, export_tensors)
from keras_bert_impl.checkpoints.hub_cache import resolve_checkpoint
from keras_bert_impl.checkpoints.name_map import WeightSpec, backbone_weight_specs
from keras_bert_impl.utils.atomic_io import atomic_directory
from keras_bert_impl.utils.file_patterns import read_json

__all__ = ["CheckpointError", "LoadReport", "WeightSpec", "backbone_config", "backbone_weight_specs", "load_weights",
           "read_checkpoint", "resolve_checkpoint", "save_huggingface"]


def read_checkpoint(path, revision=None):
    """Identify and read a checkpoint (a path or Hub model id at `revision`): `(format, backbone_config,
    tensors, extra)`, `format` "native", "huggingface" or "original", `extra` what ours stores beside."""
    path = resolve_checkpoint(path, revision)
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise CheckpointError(f"Checkpoint path {path} does not exist.")
    if os.path.isdir(path) and native.is_native_directory(path):
        class_name, config, extra, tensors = native.read_native(path)
        return "native", config, tensors, dict(extra, class_name=class_name)
    if os.path.isdir(path) and huggingface.is_huggingface_directory(path):
        config_path = os.path.join(path, huggingface.CONFIG_FILE)
        hf_config = read_json(config_path, CheckpointError, dict)
        config = huggingface.backbone_config_from_huggingface(hf_config, config_path)
        tensors = huggingface.read_huggingface_tensors(path, _config_check(config, HUGGINGFACE, config_path, path))
        return HUGGINGFACE, config, tensors, {"source_config": hf_config}
    prefix = original_tf.checkpoint_prefix(path)
    if prefix is not None:
        config = original_tf.read_original_config(prefix)
        config_path = os.path.join(os.path.dirname(prefix), original_tf.CONFIG_FILE)
        return ORIGINAL, config, original_tf.read_original_tensors(
            prefix, _config_check(config, ORIGINAL, config_path, prefix)), {}
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, huggingface.CONFIG_FILE)):
        raise CheckpointError(f"{path} has config.json but no weights: expected {huggingface.SAFETENSORS_FILE}, "
                              f"{huggingface.SAFETENSORS_INDEX_FILE} or {huggingface.PYTORCH_FILE}.")
    raise CheckpointError(f"{path} is not a checkpoint this package reads: expected a Hugging Face directory "
                          f"(config.json + model.safetensors / pytorch_model.bin), an original BERT directory "
                          f"(bert_config.json + bert_model.ckpt.*) or one written by save_pretrained.")


def _config_check(config, fmt, config_path, weights_path):
    """The `check_shapes` callback that refuses weights whose shapes the BERT-JSON `config` does not fit."""
    fields = {ours: field for field, (ours, _) in huggingface.CONFIG_FIELDS.items()}
    return lambda shapes: check_config_fits(config, shapes, fmt, config_path, weights_path, fields)


def load_weights(model, backbone, fmt, tensors, path, head_specs=(), optional_backbone_paths=()):
    """Assign backbone (and head) weights from tensors read by `read_checkpoint`; return a LoadReport.
    Missing backbone weights but `optional_backbone_paths` are an error; missing head weights stay initial."""
    if fmt == "native":
        unused = native.assign_native(model, tensors, path)
        return LoadReport(loaded=[v.path for v in model.weights], missing=[], unused=unused)
    backbone_specs = backbone_weight_specs(backbone.num_layers)
    report = assign_from_checkpoint(model, backbone_specs + list(head_specs), tensors, fmt, path)
    required = {spec.ours for spec in backbone_specs} - set(optional_backbone_paths)
    missing_backbone = [name for name in report.missing if name in required]
    if missing_backbone:
        raise CheckpointError(f"{path}: encoder weights missing from the checkpoint: {missing_backbone}.")
    return report


def backbone_config(fmt, config, extra):
    """The `BertBackbone` arguments of a checkpoint `read_checkpoint` gave as `(fmt, config, extra)` (a native
    task-model directory stores them in `extra["backbone_config"]`)."""
    if fmt == "native" and extra.get("class_name") != "BertBackbone":
        config = extra["backbone_config"]
    return {key: value for key, value in config.items() if key not in ("name", "trainable")}


def save_huggingface(model, path, head_specs=(), architectures=("BertModel",), config_updates=None):
    """Write `model` (a backbone, or a task model via its `backbone` and `head_specs`) as a Hugging Face
    directory that `transformers.AutoModel.from_pretrained` loads. Replaces `path` only when complete.
    `config_updates` adds task fields to config.json (e.g. `num_labels`, `id2label`)."""
    backbone = getattr(model, "backbone", model)
    tensors = export_tensors(model, backbone_weight_specs(backbone.num_layers), HUGGINGFACE)
    if head_specs:
        # Task-model checkpoints nest the encoder under `bert.`, as transformers' BertFor* classes do.
        tensors = {f"bert.{name}": value for name, value in tensors.items()}
        tensors.update(export_tensors(model, head_specs, HUGGINGFACE))
    config = huggingface.huggingface_config_from_backbone(backbone, architectures)
    config.update(config_updates or {})
    with atomic_directory(os.fspath(path), what="model directory") as tmp:
        huggingface.write_huggingface_directory(tmp, config, tensors)
