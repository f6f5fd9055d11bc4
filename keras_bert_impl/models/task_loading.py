"""Load any checkpoint as the task it holds: `load_task(path)`, the library's AutoModel.

The task is read from the checkpoint itself (`detect_task`): our `config.json`'s `class_name`, Hugging Face
`architectures` (each class's `huggingface_architecture`; any other BERT head is a `BertBackbone`), or an original
checkpoint's head variables (`cls/squad/*`, `output_weights`, `cls/predictions/*`, none).

Example:
>>> model = load_task("runs/mrpc/best")  # doctest: +SKIP
>>> type(model).__name__, model.predict(["a fine film"], verbose=0).shape  # doctest: +SKIP
('BertClassifier', (1, 2))
"""

import os

from keras_bert_impl.checkpoints import CheckpointError, native, read_checkpoint, resolve_checkpoint
from keras_bert_impl.models.registry import TASK_CLASSES, TASK_KINDS, task_class
from keras_bert_impl.models.task import AUTO, VOCABULARY_FILENAME
from keras_bert_impl.utils.file_patterns import check_json, read_json

# What `task=` takes besides a class name: each kind ("question_answerer", or "question-answerer").
TASK_NAMES = tuple(sorted(TASK_CLASSES)) + tuple(TASK_KINDS.values())
# A question must leave at least this many tokens of a window: [CLS], two [SEP] and one context token.
_WINDOW_OVERHEAD = 4


def _huggingface_class_name(config_path):
    architectures = read_json(config_path, CheckpointError, dict).get("architectures") or []
    check_json(architectures, [str], config_path, CheckpointError, "architectures")
    # Each task class's `huggingface_architecture` (the encoder's is "BertModel") -> its name.
    ours = {getattr(task_class(name), "huggingface_architecture", "BertModel"): name for name in TASK_CLASSES}
    for name in architectures:
        if name in ours:
            return ours[name]
    if not architectures or any(name.startswith("Bert") for name in architectures):
        return "BertBackbone"  # a BERT encoder under another head (BertForMaskedLM, ...) or none named
    raise ValueError(f"{config_path}: architectures {architectures} name no BERT task this library detects; pass "
                     f"task= (one of {', '.join(sorted(TASK_KINDS.values()))}) to load it as that task.")


def detect_task(path):
    """The class name (a key of `models.registry.TASK_CLASSES`) of the task the checkpoint at `path` holds.

    Raises:
        ValueError: the checkpoint names a class this library does not have, or is no checkpoint.
    """
    path = resolve_checkpoint(os.fspath(path))
    config_path = os.path.join(path, "config.json")
    if os.path.isdir(path) and native.is_native_directory(path):
        class_name = read_json(config_path, CheckpointError, native.CONFIG_SCHEMA)["class_name"]
        if class_name not in TASK_CLASSES:
            raise CheckpointError(f"{config_path}: class_name {class_name!r} is not one of {sorted(TASK_CLASSES)}; "
                                  "pass task= to load it as one of them.")
        return class_name
    if os.path.isdir(path) and os.path.isfile(config_path):
        return _huggingface_class_name(config_path)
    _, _, tensors, _ = read_checkpoint(path)  # an original TF checkpoint, or a CheckpointError naming the problem
    if "cls/squad/output_weights" in tensors:
        return "BertQuestionAnswerer"
    if "output_weights" in tensors:
        return "BertClassifier"
    if "cls/predictions/output_bias" in tensors:
        return "BertPretrainer"
    return "BertBackbone"


def _task_class_name(task):
    if isinstance(task, type):
        return task.__name__
    if task in TASK_CLASSES:
        return task
    for name, kind in TASK_KINDS.items():
        if kind == task.replace("-", "_"):
            return name
    raise ValueError(f"Unknown task {task!r}; expected None (detect it) or one of {', '.join(TASK_NAMES)}.")


def _with_preprocessor_settings(model, settings):
    """`model.preprocessor` rebuilt with `settings`; `sequence_length` cut to the position table and
    `max_query_length` to leave each window context."""
    preprocessor = model.preprocessor
    saved = preprocessor.get_config()
    unknown = sorted(set(settings) - set(saved))
    if unknown:
        known = sorted(set(saved) - {"name", "trainable", "dtype", "tokenizer"})
        raise ValueError(f"{type(preprocessor).__name__} has no setting {', '.join(unknown)}; its settings are "
                         f"{', '.join(known)}.")
    config = {**saved, **settings}
    config["sequence_length"] = min(config["sequence_length"], model.backbone.max_sequence_length)
    if "max_query_length" in config:
        config["max_query_length"] = min(config["max_query_length"], config["sequence_length"] - _WINDOW_OVERHEAD)
    return type(preprocessor).from_config(config)


def _vocabulary_path(path):
    """The `vocab.txt` beside the checkpoint at `path` (a directory or an original-TF prefix), or None."""
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    vocabulary = os.path.join(directory, VOCABULARY_FILENAME)
    return vocabulary if os.path.isfile(vocabulary) else None


def _why_no_preprocessor(path, model):
    if getattr(model, "default_preprocessor_class", None) is None:
        return f"a {type(model).__name__} takes no raw text"
    if _vocabulary_path(path) is None:
        return f"no vocab.txt beside the model in {path!r}; save the tokenizer with the model"
    return "TensorFlow is not installed; raw text needs it (pip install tensorflow tensorflow-text)"


def load_task(path, task=None, preprocessor=AUTO, require_preprocessor=False, **preprocessor_settings):
    """The task a checkpoint holds, loaded with its class's `from_pretrained` (the library's AutoModel).

    Args:
        path: str. Any checkpoint `from_pretrained` reads: our directory, a Hugging Face directory or Hub model
            id, or an original-TF checkpoint prefix.
        task: None, a class name ("BertClassifier"), a kind ("classifier", "question-answerer") or a task
            class. None detects it (`detect_task`); anything else loads that class from the checkpoint (e.g.
            "backbone": the encoder of a fine-tuned model). Defaults to None.
        preprocessor: "auto", a preprocessor or None, as `BertTask.from_pretrained` takes it. Ignored for a
            `BertBackbone`. Defaults to "auto".
        require_preprocessor: bool. Raise `ValueError` saying why when no preprocessor is attached. Defaults
            to False.
        **preprocessor_settings: settings of the attached preprocessor to change (e.g. `sequence_length=64`,
            `doc_stride=32`); `sequence_length` is cut to the position table, `max_query_length` to 4 less.

    Returns:
        The model (a `BertTask`, or a `BertBackbone`), with `load_report` (a `checkpoints.LoadReport`).

    Raises:
        ValueError: the task cannot be detected or is unknown; the vocabulary is larger than the embedding
            table; `preprocessor_settings` without a preprocessor.

    Example:
    >>> import tempfile
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> from keras_bert_impl.models.classifier import BertClassifier
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=7, num_layers=1)
    >>> directory = tempfile.mkdtemp()
    >>> BertClassifier(backbone, num_classes=2, labels=["bad", "good"]).save_pretrained(directory)
    >>> BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]).save_pretrained(directory)
    >>> model = load_task(directory, sequence_length=8)
    >>> type(model).__name__, model.preprocessor.sequence_length
    ('BertClassifier', 8)
    >>> [row["label"] in ("bad", "good") for row in model.decode_predictions(model.predict(["good"], verbose=0))]
    [True]
    """
    path = resolve_checkpoint(os.fspath(path))  # a Hub model id: its cached snapshot, where vocab.txt is
    class_name = detect_task(path) if task is None else _task_class_name(task)
    options = {} if class_name == "BertBackbone" else {"preprocessor": preprocessor}  # an encoder takes no text
    model = task_class(class_name).from_pretrained(path, **options)
    if getattr(model, "preprocessor", None) is None:
        if require_preprocessor or preprocessor_settings:
            wanted = "raw text" if require_preprocessor else f"preprocessor settings {sorted(preprocessor_settings)}"
            raise ValueError(f"{path}: {wanted} needs a preprocessor, and none is attached: "
                             f"{_why_no_preprocessor(path, model)}.")
        return model
    if preprocessor_settings:
        model.preprocessor = _with_preprocessor_settings(model, preprocessor_settings)
    size = model.preprocessor.tokenizer.vocabulary_size()
    if size > model.backbone.vocabulary_size:
        raise ValueError(f"{path}: vocab.txt has {size} tokens, more than the model embeds "
                         f"({model.backbone.vocabulary_size}); give the vocabulary the model was trained with.")
    return model


def checkpoint_tokenizer(path, required=False):
    """The `BertTokenizer` saved with a checkpoint (`vocab.txt` in its directory), or None without one.

    Args:
        path: str. A checkpoint directory or an original-TF checkpoint prefix.
        required: bool. Raise `FileNotFoundError` instead of returning None. Defaults to False.

    Returns:
        `tokenization.BertTokenizer` or None. Needs TensorFlow (the tokenizer runs in TensorFlow text ops).
    """
    path = resolve_checkpoint(os.fspath(path))
    vocabulary = _vocabulary_path(path)
    if vocabulary is None:
        if required:
            raise FileNotFoundError(f"No vocab.txt beside the model in {path!r}; save the tokenizer with the model.")
        return None
    from keras_bert_impl.tokenization import BertTokenizer

    return BertTokenizer.from_pretrained(os.path.dirname(vocabulary))
