"""Class names <-> class ids for classification models, saved as JSON next to a model (pure Python, no TensorFlow)."""

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_write_json
from keras_bert_impl.utils.file_patterns import read_json

LABEL_VOCABULARY_FILENAME = "label_vocabulary.json"


class ClassificationDataError(ValueError):
    """A classification data file that cannot be used: a missing column, a bad label, a malformed line."""


def all_labelled(examples):
    """Whether every example has a `label` (False when none has); a mix raises naming an unlabelled one."""
    missing = [example for example in examples if example.label is None]
    if missing and len(missing) < len(examples):
        first = missing[0]
        raise ClassificationDataError(f"{first.source}, line {first.line}: the example has no label, others do.")
    return not missing


class LabelVocabulary:
    """String labels <-> class ids, saved as JSON next to a model.

    Args:
        labels: sequence of str. The labels, id i being `labels[i]`; no repeats.

    Example:
    >>> vocabulary = LabelVocabulary(["contradiction", "entailment", "neutral"])
    >>> vocabulary.label_to_id("neutral"), vocabulary.id_to_label(1)
    (2, 'entailment')
    """

    def __init__(self, labels):
        labels = [str(label) for label in labels]
        if not labels:
            raise ValueError("A label vocabulary needs at least one label.")
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"Repeated labels in the label vocabulary: {repeated}.")
        self.labels = labels
        self._ids = {label: index for index, label in enumerate(labels)}

    @classmethod
    def from_examples(cls, examples):
        """The sorted set of labels in `examples` (numerically if they are all integers: "2" < "10")."""
        labels = {example.label for example in examples if example.label is not None}
        if not labels:
            raise ValueError("The examples have no labels to build a label vocabulary from.")
        if all(label.lstrip("-").isdigit() for label in labels):
            return cls(sorted(labels, key=int))
        return cls(sorted(labels))

    def __len__(self):
        return len(self.labels)

    def __eq__(self, other):
        return isinstance(other, LabelVocabulary) and self.labels == other.labels

    def __repr__(self):
        return f"LabelVocabulary({self.labels!r})"

    def label_to_id(self, label, location=None):
        """The id of `label`; `location` ("file, line N") goes into the error for an unknown label."""
        if label not in self._ids:
            where = f"{location}: " if location else ""
            raise ClassificationDataError(f"{where}label {label!r} is not one of the known labels {self.labels}.")
        return self._ids[label]

    def id_to_label(self, label_id):
        """The label with id `label_id`."""
        if not 0 <= int(label_id) < len(self.labels):
            raise ValueError(f"Label id {label_id} is outside [0, {len(self.labels)}).")
        return self.labels[int(label_id)]

    def encode(self, examples):
        """int32 `(N,)` ids of the examples' labels; an unknown or missing label names its file and line."""
        ids = np.zeros((len(examples),), dtype=np.int32)
        for index, example in enumerate(examples):
            if example.label is None:
                raise ClassificationDataError(f"{example.location}: the example has no label.")
            ids[index] = self.label_to_id(example.label, example.location)
        return ids

    def save(self, path):
        """Writes `{"labels": [...]}` to `path` atomically (by convention `label_vocabulary.json`)."""
        atomic_write_json(path, {"labels": self.labels})

    @classmethod
    def load(cls, path):
        """Reads a vocabulary written by `save`."""
        content = read_json(path, ClassificationDataError)
        if not isinstance(content, dict) or not isinstance(content.get("labels"), list):
            raise ClassificationDataError(f"{path}: expected a JSON object with a 'labels' list.")
        return cls(content["labels"])
