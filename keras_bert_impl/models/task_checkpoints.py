"""Checkpoint loading shared by the fine-tuning task models (`BertClassifier`, `BertQuestionAnswerer`).

A task model loads from any checkpoint `checkpoints.read_checkpoint` reads: its own directory (every weight,
strict), another of our directories (a backbone, a pretrainer, another task model: the encoder only), a
Hugging Face directory or an original TF checkpoint (encoder, plus the head when the checkpoint has one of
the same shape). Head weights the checkpoint lacks keep their initial values: `LoadReport.missing` lists
them and a WARNING names them. Checkpoint tensors the model does not use are listed in `LoadReport.unused`
and named in a WARNING too, so pretrained head weights are never dropped silently.
"""

import logging

import numpy as np

from keras_bert_impl.checkpoints import CheckpointError, LoadReport, load_weights, native
from keras_bert_impl.checkpoints.conversion import foreign_names, to_ours

logger = logging.getLogger(__name__)


def _head_mismatches(model, fmt, tensors, head_specs):
    """`[(our path, checkpoint shape, model shape)]` for head tensors present with another shape."""
    variables = {variable.path: variable for variable in model.weights}
    mismatches = []
    for spec in head_specs:
        expected = tuple(variables[spec.ours].shape)
        if fmt == "native":
            found = tuple(np.shape(tensors[spec.ours])) if spec.ours in tensors else expected
        elif all(name in tensors for name in foreign_names(spec, fmt)):
            found = tuple(to_ours(spec, tensors, fmt).shape)
        else:
            found = expected
        if found != expected:
            mismatches.append((spec.ours, found, expected))
    return mismatches


def load_task_weights(model, fmt, tensors, extra, path, head_specs, optional_backbone_paths=()):
    """Assign `model`'s weights from a checkpoint read by `read_checkpoint`; set and return `model.load_report`.

    Args:
        model: the task model, with `model.backbone`.
        fmt: str. "native", "huggingface" or "original".
        tensors: dict name -> array, from `read_checkpoint`.
        extra: dict, from `read_checkpoint`.
        path: str. The checkpoint, for messages.
        head_specs: list of `WeightSpec`. The head's variables.
        optional_backbone_paths: sequence of str. Backbone variables the task does not use (the pooler of a
            span model); a checkpoint may lack them (Hugging Face `BertForQuestionAnswering` has no pooler).
            Defaults to ().

    Returns:
        `LoadReport`.
    """
    backbone = model.backbone
    head_paths = [spec.ours for spec in head_specs]
    mismatches = _head_mismatches(model, fmt, tensors, head_specs)
    if mismatches:
        logger.warning(
            "%s: the checkpoint's head does not fit this %s (variable, checkpoint shape, model shape: %s); the "
            "head starts from its initial values.", path, type(model).__name__, mismatches,
        )
    same_class = fmt == "native" and extra.get("class_name") == type(model).__name__
    if same_class and not mismatches:
        report = load_weights(model, backbone, fmt, tensors, path)
    elif fmt == "native":
        unused = native.assign_native(backbone, tensors, path)
        report = LoadReport(loaded=[variable.path for variable in backbone.weights], missing=head_paths,
                            unused=unused)
    else:
        specs = [] if mismatches else head_specs
        report = load_weights(model, backbone, fmt, tensors, path, head_specs=specs, strict_backbone=False)
        required_missing = [
            name for name in report.missing if name not in head_paths and name not in optional_backbone_paths
        ]
        if required_missing:
            raise CheckpointError(f"{path}: encoder weights missing from the checkpoint: {required_missing}.")
        if mismatches:
            report.missing = report.missing + head_paths
    missing_head = [name for name in report.missing if name in head_paths]
    if missing_head:
        logger.warning(
            "%s has no %s head weights for %s: they keep their initial values. Fine-tune before using the "
            "outputs.", path, type(model).__name__, missing_head,
        )
    if report.unused:
        logger.warning("%s: checkpoint tensors not used by %s: %s", path, type(model).__name__, report.unused)
    logger.info("Loaded %s from %s (%s): %s", type(model).__name__, path, fmt, report.summary())
    model.load_report = report
    return report


def compile_from_saved_config(model, config):
    """`compile_from_config` for task models whose `compile()` fills in defaults (what Keras does for models
    with the stock `compile()`): `.keras` files then load compiled, optimizer state included."""
    import keras

    model.compile(**keras.saving.deserialize_keras_object(config))
    if model.built:
        model.optimizer.build(model.trainable_variables)
