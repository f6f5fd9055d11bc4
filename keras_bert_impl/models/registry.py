"""The model classes a checkpoint directory can hold, by class name: the one registry.

`save_pretrained` stores a model's class name; whatever has to turn a name back into a class (the CLI's
`models.load_task`, the SavedModel export worker, the export's checks) looks it up here. Classes are imported
lazily, so reading the registry imports no model code (and nothing that needs TensorFlow).

Example:
>>> sorted(TASK_CLASSES)
['BertBackbone', 'BertClassifier', 'BertMultipleChoice', 'BertPretrainer', 'BertQuestionAnswerer', 'BertTokenClassifier']
>>> task_kind("BertQuestionAnswerer")
'question_answerer'
>>> task_class("BertClassifier").__name__  # doctest: +SKIP
'BertClassifier'
"""

import importlib

# Class name -> the module that defines it.
TASK_CLASSES = {
    "BertBackbone": "keras_bert_impl.models.backbone",
    "BertPretrainer": "keras_bert_impl.models.pretrainer",
    "BertClassifier": "keras_bert_impl.models.classifier",
    "BertQuestionAnswerer": "keras_bert_impl.models.question_answerer",
    "BertTokenClassifier": "keras_bert_impl.models.token_classifier",
    "BertMultipleChoice": "keras_bert_impl.models.multiple_choice",
}
# Class name -> its kind: a short snake_case name (SavedModel export settings, the CLI's `--model-class`
# flag with "-" for "_").
TASK_KINDS = {
    "BertBackbone": "backbone",
    "BertPretrainer": "pretrainer",
    "BertClassifier": "classifier",
    "BertQuestionAnswerer": "question_answerer",
    "BertTokenClassifier": "token_classifier",
    "BertMultipleChoice": "multiple_choice",
}


def _check(name):
    if name not in TASK_CLASSES:
        raise KeyError(f"Unknown model class {name!r}; expected one of {sorted(TASK_CLASSES)}.")


def task_class(name):
    """The model class called `name` (a key of `TASK_CLASSES`), imported on first use.

    Args:
        name: str. A class name, e.g. "BertClassifier".

    Returns:
        The class.

    Raises:
        KeyError: `name` is not a key of `TASK_CLASSES`.
    """
    _check(name)
    return getattr(importlib.import_module(TASK_CLASSES[name]), name)


def task_kind(name):
    """The kind of model class `name` ("backbone", "pretrainer", "classifier" or "question_answerer").

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
