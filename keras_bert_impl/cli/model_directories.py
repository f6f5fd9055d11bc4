"""Open a model directory as the right model class, with the tokenizer saved beside it.

`predict`, `export` and `convert` take any checkpoint `from_pretrained` reads and must know which task it
holds. The class is read from the checkpoint itself:

- ours (`save_pretrained`): `config.json` stores `class_name`;
- Hugging Face: `config.json` `architectures` (`BertForSequenceClassification` -> `BertClassifier`,
  `BertForQuestionAnswering` -> `BertQuestionAnswerer`, `BertForTokenClassification` -> `BertTokenClassifier`,
  `BertForPreTraining` -> `BertPretrainer`, anything else -> `BertBackbone`);
- original TF: the head variables (`cls/squad/*` -> question answering, `output_weights` ->
  classification, `cls/predictions/*` -> pretraining, none -> backbone).

Example:
>>> model, tokenizer = load_model_directory("runs/mrpc/best")  # doctest: +SKIP
>>> type(model).__name__
'BertClassifier'
"""

import json
import os

from keras_bert_impl.models.registry import TASK_CLASSES, TASK_KINDS, class_name_for_kind, task_class

# The `--model-class` values: "auto" and each registered kind, "-" for "_" ("question-answerer").
MODEL_CLASS_CHOICES = ("auto",) + tuple(kind.replace("_", "-") for kind in TASK_KINDS.values())
HUGGINGFACE_ARCHITECTURES = {
    "BertForSequenceClassification": "BertClassifier",
    "BertForQuestionAnswering": "BertQuestionAnswerer",
    "BertForTokenClassification": "BertTokenClassifier",
    "BertForPreTraining": "BertPretrainer",
}


def class_name_for_flag(flag):
    """`BertClassifier` for "classifier" etc.; None for "auto"."""
    if flag == "auto":
        return None
    if flag not in MODEL_CLASS_CHOICES:
        raise ValueError(f"Unknown model class {flag!r}; expected one of {', '.join(MODEL_CLASS_CHOICES)}.")
    return class_name_for_kind(flag)


def _read_json(path):
    with open(path, encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: malformed JSON at line {error.lineno}: {error.msg}.") from error
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{path}: not UTF-8 text (byte {error.object[error.start:error.start + 1]!r} at offset "
                f"{error.start}), so not a config written by save_pretrained; give the model directory's own "
                "config.json."
            ) from error


def stored_class_name(path):
    """The model class a checkpoint holds (see the module docstring).

    Args:
        path: str. A checkpoint directory or original-TF checkpoint prefix.

    Returns:
        str, a key of `models.registry.TASK_CLASSES`.
    """
    from keras_bert_impl.checkpoints import native, read_checkpoint
    from keras_bert_impl.checkpoints.conversion import CheckpointError

    path = os.fspath(path)
    config_path = os.path.join(path, "config.json")
    if os.path.isdir(path) and native.is_native_directory(path):
        class_name = _read_json(config_path).get("class_name")
        if class_name not in TASK_CLASSES:
            raise CheckpointError(f"{config_path}: class_name {class_name!r} is not one of {sorted(TASK_CLASSES)}.")
        return class_name
    if os.path.isdir(path) and os.path.isfile(config_path):
        architectures = _read_json(config_path).get("architectures") or []
        return next((HUGGINGFACE_ARCHITECTURES[name] for name in architectures if name in HUGGINGFACE_ARCHITECTURES),
                    "BertBackbone")
    _, _, tensors, _ = read_checkpoint(path)  # an original TF checkpoint, or a CheckpointError naming the problem
    if "cls/squad/output_weights" in tensors:
        return "BertQuestionAnswerer"
    if "output_weights" in tensors:
        return "BertClassifier"
    if "cls/predictions/output_bias" in tensors:
        return "BertPretrainer"
    return "BertBackbone"


def load_model(path, class_name=None):
    """Build the model a checkpoint holds, or `class_name` from it (e.g. a backbone out of a classifier).

    Args:
        path: str. Any checkpoint `from_pretrained` reads.
        class_name: str or None. A key of `models.registry.TASK_CLASSES`; None reads it from the checkpoint.
            Defaults to None.

    Returns:
        The model (its `load_report` says what was loaded).
    """
    class_name = class_name or stored_class_name(path)
    return task_class(class_name).from_pretrained(os.fspath(path))


def load_tokenizer_beside(path):
    """The `BertTokenizer` saved in a checkpoint's directory, or None when it has no `vocab.txt`."""
    from keras_bert_impl.tokenization import BertTokenizer

    path = os.fspath(path)
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    if not os.path.isfile(os.path.join(directory, "vocab.txt")):
        return None
    return BertTokenizer.from_pretrained(directory)


def load_model_directory(path, class_name=None, require_tokenizer=False):
    """`(model, tokenizer)` from a checkpoint and the tokenizer beside it.

    Args:
        path: str. Any checkpoint `from_pretrained` reads.
        class_name: str or None. See `load_model`. Defaults to None.
        require_tokenizer: bool. Raise `FileNotFoundError` when there is no `vocab.txt`. Defaults to False.

    Returns:
        `(model, tokenizer or None)`.
    """
    model = load_model(path, class_name)
    tokenizer = load_tokenizer_beside(path)
    if tokenizer is None and require_tokenizer:
        raise FileNotFoundError(f"No vocab.txt beside the model in {path!r}; save the tokenizer with the model.")
    backbone = getattr(model, "backbone", model)
    if tokenizer is not None and tokenizer.vocabulary_size() > backbone.vocabulary_size:
        raise ValueError(f"{path}: vocab.txt has {tokenizer.vocabulary_size()} tokens, more than the model embeds.")
    return model, tokenizer
