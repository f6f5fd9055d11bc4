"""The model classes a checkpoint directory can hold, by class name: the one registry (`load_task`, exports,
the package's lazy names). Classes are imported on first use, so reading it imports no model code.

Example:
>>> sorted(TASK_CLASSES)
['BertBackbone', 'BertClassifier', 'BertMultipleChoice', 'BertPretrainer', 'BertQuestionAnswerer', 'BertTokenClassifier']
>>> TASK_KINDS["BertQuestionAnswerer"]
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


def task_class(name):
    """The model class called `name` (a key of `TASK_CLASSES`, e.g. "BertClassifier"), imported on first use.

    Raises:
        KeyError: `name` is not a key of `TASK_CLASSES`.
    """
    if name not in TASK_CLASSES:
        raise KeyError(f"Unknown model class {name!r}; expected one of {sorted(TASK_CLASSES)}.")
    return getattr(importlib.import_module(TASK_CLASSES[name]), name)
