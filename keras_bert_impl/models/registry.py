"""The model classes a checkpoint directory can hold, by class name: the one registry (`load_task`, exports,
the package's lazy names). Classes are imported on first use, so reading it imports no model code.

Example:
>>> sorted(TASK_CLASSES)
['BertBackbone', 'BertClassifier', 'BertMultipleChoice', 'BertPretrainer', 'BertQuestionAnswerer', 'BertTokenClassifier']
>>> task_kind("BertQuestionAnswerer")
'question_answerer'
>>> task_class("BertClassifier").__name__  # doctest: +SKIP
'BertClassifier'
"""

import importlib
import re

# Class name -> the module that defines it.
TASK_CLASSES = {
    "BertBackbone": "keras_bert_impl.models.backbone",
    "BertPretrainer": "keras_bert_impl.models.pretrainer",
    "BertClassifier": "keras_bert_impl.models.classifier",
    "BertQuestionAnswerer": "keras_bert_impl.models.question_answerer",
    "BertTokenClassifier": "keras_bert_impl.models.token_classifier",
    "BertMultipleChoice": "keras_bert_impl.models.multiple_choice",
}
# Class name -> its kind, the snake_case name after "Bert" (SavedModel export settings, the CLI's
# `--model-class` flag with "-" for "_"): "BertQuestionAnswerer" -> "question_answerer".
TASK_KINDS = {name: re.sub(r"(?<!^)(?=[A-Z])", "_", name[len("Bert"):]).lower() for name in TASK_CLASSES}


def _check(name):
    if name not in TASK_CLASSES:
        raise KeyError(f"Unknown model class {name!r}; expected one of {sorted(TASK_CLASSES)}.")


def task_class(name):
    """The model class called `name` (a key of `TASK_CLASSES`, e.g. "BertClassifier"), imported on first use.

    Raises:
        KeyError: `name` is not a key of `TASK_CLASSES`.
    """
    _check(name)
    return getattr(importlib.import_module(TASK_CLASSES[name]), name)


def task_kind(name):
    """The kind of model class `name` (a value of `TASK_KINDS`, e.g. "question_answerer").

    Raises:
        KeyError: `name` is not a key of `TASK_CLASSES`.
    """
    _check(name)
    return TASK_KINDS[name]


def class_name_for_kind(kind):
    """The class name whose kind is `kind` ("question-answerer" is read as "question_answerer").

    Raises:
        KeyError: no class has that kind.
    """
    kind = kind.replace("-", "_")
    for name, known in TASK_KINDS.items():
        if known == kind:
            return name
    raise KeyError(f"Unknown model kind {kind!r}; expected one of {sorted(TASK_KINDS.values())}.")
