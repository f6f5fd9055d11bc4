"""What a task model reads from a checkpoint: its stored head arguments and its weights, for every task."""

import logging
from typing import NamedTuple

import numpy as np

from keras_bert_impl.checkpoints import load_weights
from keras_bert_impl.checkpoints.conversion import HUGGINGFACE, foreign_names, to_ours

logger = logging.getLogger(__name__)


class StoredCheckpoint(NamedTuple):
    """A checkpoint as `checkpoints.read_checkpoint(path)` read it."""

    path: str
    fmt: str  # "native", "huggingface" or "original"
    config: dict
    tensors: dict
    extra: dict

    @property
    def huggingface_architectures(self):
        """The `architectures` of a Hugging Face config.json (e.g. `["BertForTokenClassification"]`), else []."""
        return self.extra.get("source_config", {}).get("architectures") or []


def _check_label_count(checkpoint, field, labels, num_classes):
    """Refuse a stored label list of another length than the head's classes, in one line naming both numbers."""
    if labels and num_classes is not None and len(labels) != num_classes:
        raise ValueError(f"{checkpoint.path}: the config's {field!r} names {len(labels)} labels {list(labels)[:8]} but "
                         f"the head has {num_classes} classes; give one label per class in {field!r} (or retrain "
                         f"the head).")


def stored_head(task_class, checkpoint):
    """`{"num_classes", "labels", "dropout"}` of the checkpoint's head for `task_class`, None where unknown:
    from our config, or a foreign head's shape (Hugging Face `classifier.*` with `id2label` unless the default
    `LABEL_i` and `classifier_dropout`, else `hidden_dropout_prob`; original `output_weights`). A label list of
    another length than the head's classes raises `ValueError`."""
    config, tensors = checkpoint.config, checkpoint.tensors
    unknown = {"num_classes": None, "labels": None, "dropout": None}
    if checkpoint.fmt == "native":
        if checkpoint.extra.get("class_name") != task_class.__name__:
            return unknown
        labels = config.get("labels")
        _check_label_count(checkpoint, "labels", labels, config.get("num_classes"))
        return {"num_classes": config.get("num_classes"), "labels": tuple(labels) if labels else None,
                "dropout": config.get("dropout")}
    if not task_class.reads_foreign_head(checkpoint):
        return unknown
    if checkpoint.fmt == HUGGINGFACE and "classifier.weight" in tensors:
        source = checkpoint.extra.get("source_config", {})
        id2label = source.get("id2label") or {}
        labels = tuple(id2label[key] for key in sorted(id2label, key=int)) if id2label else None
        # LABEL_0, LABEL_1, ...: the names `transformers` makes up for a model without any (2 by default, also
        # for a multiple-choice head of 1 unit), so their count says nothing.
        made_up = labels is not None and all(label == f"LABEL_{index}" for index, label in enumerate(labels))
        if not made_up:
            _check_label_count(checkpoint, "id2label", labels, int(tensors["classifier.weight"].shape[0]))
        dropout = source.get("classifier_dropout")
        return {"num_classes": int(tensors["classifier.weight"].shape[0]),
                "labels": None if labels is None or made_up else labels,
                "dropout": source.get("hidden_dropout_prob") if dropout is None else dropout}
    if "output_weights" in tensors:
        return {"num_classes": int(tensors["output_weights"].shape[0]), "labels": None, "dropout": None}
    return unknown


def _head_mismatches(model, fmt, tensors, head_specs):
    """`[(our path, checkpoint shape, model shape)]` for head tensors present with another shape."""
    variables = {variable.path: variable for variable in model.weights}
    mismatches = []
    for spec in head_specs:
        expected = tuple(variables[spec.ours].shape)
        names = foreign_names(spec, fmt)  # empty where the format has no such head (original multiple choice)
        if fmt == "native":
            found = tuple(np.shape(tensors[spec.ours])) if spec.ours in tensors else expected
        elif names and all(name in tensors for name in names):
            found = tuple(to_ours(spec, tensors, fmt).shape)
        else:
            found = expected
        if found != expected:
            mismatches.append((spec.ours, found, expected))
    return mismatches


def load_task_weights(model, checkpoint):
    """Assign a task model's weights from `checkpoint` (a `StoredCheckpoint`); set and return `model.load_report`.

    A foreign head is read where `model.reads_foreign_head(checkpoint)`; only `model.unused_backbone_paths`
    may be missing from the encoder (else `CheckpointError`).
    """
    fmt, tensors, extra, path = checkpoint.fmt, checkpoint.tensors, checkpoint.extra, checkpoint.path
    backbone, task_name = model.backbone, type(model).__name__
    head_specs = model.head_specs()
    head_paths = [spec.ours for spec in head_specs]
    reads_head = fmt == "native" or model.reads_foreign_head(checkpoint)
    mismatches = _head_mismatches(model, fmt, tensors, head_specs) if reads_head else []
    if mismatches:
        logger.warning("%s: the checkpoint's head does not fit this %s (variable, checkpoint shape, model shape: %s); "
                       "the head starts from its initial values.", path, task_name, mismatches)
    if fmt == "native":
        reads_head = extra.get("class_name") == task_name and not mismatches
        report = load_weights(model if reads_head else backbone, backbone, fmt, tensors, path)
    else:
        reads_head = reads_head and not mismatches
        report = load_weights(model, backbone, fmt, tensors, path, head_specs=head_specs if reads_head else [],
                              optional_backbone_paths=model.unused_backbone_paths)
    if not reads_head:
        report.missing = report.missing + head_paths
    missing_head = [name for name in report.missing if name in head_paths]
    if missing_head:
        logger.warning("%s has no %s head weights for %s: they keep their random initial values. Train before using "
                       "the outputs.", path, task_name, missing_head)
    if report.unused:
        logger.warning("%s: checkpoint tensors not used by %s: %s", path, task_name, report.unused)
    logger.info("Loaded %s from %s (%s): %s", task_name, path, fmt, report.summary())
    model.load_report = report
    return report
