"""Export BERT models as TensorFlow SavedModels that serve raw text, from any Keras backend.

The SavedModel graph is TensorFlow, so it is built under the TensorFlow backend (`serving_signatures`). A
model living under JAX or torch is saved with its own `save_pretrained` into a temporary directory and a
subprocess with `KERAS_BACKEND=tensorflow` (`export.tensorflow_export_worker`) loads it with
`from_pretrained` and exports it; `_export_for_backend` is the one place that chooses between the two.

Writes are atomic (`utils.atomic_io.atomic_directory`): the SavedModel is written into a temporary
directory beside the target and renamed into place only when complete, so a failed export leaves the
target as it was (absent, or the previous export) and a re-export replaces the old directory in one step.
"""

import json
import logging
import os
import tempfile

import keras

from keras_bert_impl.export.export_error import ExportError
from keras_bert_impl.export.tensorflow_subprocess import export_in_tensorflow_subprocess
from keras_bert_impl.models.registry import TASK_CLASSES, task_kind
from keras_bert_impl.utils.atomic_io import atomic_directory, check_replaceable

logger = logging.getLogger(__name__)

DEFAULT_EXPORT_ROOT = "saved_models"
EXPORT_CONFIG_FILENAME = "export_config.json"
QA_DEFAULTS = dict(
    sequence_length=384,
    doc_stride=128,
    max_query_length=64,
    max_answer_length=30,
    n_best_size=20,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
)
# Token classifier option: tokens between the starts of a long text's windows (default: the model's run's).
TOKEN_CLASSIFIER_OPTIONS = ("stride",)
SAVED_MODEL_MARKERS = ("saved_model.pb",)  # a previous export, which a new one may replace


# Model classes without serving signatures, and what to use instead.
NOT_EXPORTED = {
    "BertMultipleChoice": "its inputs are (B, C, T) choices; run it in Python (model.predict((contexts, endings))) "
                          "or write a Hugging Face directory (save_huggingface).",
}


def _model_kind(model):
    class_name = type(model).__name__
    if class_name not in TASK_CLASSES or not isinstance(model, keras.Model):
        raise ExportError(
            f"export_saved_model supports {', '.join(TASK_CLASSES)}; got {type(model).__module__}."
            f"{class_name}. Export its backbone, or wrap it in one of these models."
        )
    if class_name in NOT_EXPORTED:
        raise ExportError(f"{class_name} has no SavedModel export: {NOT_EXPORTED[class_name]}")
    return class_name, task_kind(class_name)


def _backbone_of(model):
    return model if type(model).__name__ == "BertBackbone" else model.backbone


def _export_settings(model, kind, tokenizer, sequence_length, options):
    """Check and complete the export settings; every inconsistency is an ExportError before writing."""
    backbone = _backbone_of(model)
    known = {"question_answerer": tuple(QA_DEFAULTS), "token_classifier": TOKEN_CLASSIFIER_OPTIONS}
    unknown = sorted(set(options) - set(QA_DEFAULTS) - set(TOKEN_CLASSIFIER_OPTIONS))
    if unknown:
        raise TypeError(f"export_saved_model got unknown options {unknown}; known: "
                        f"{sorted(QA_DEFAULTS) + list(TOKEN_CLASSIFIER_OPTIONS)}.")
    if set(options) - set(known.get(kind, ())):
        owner = "BertQuestionAnswerer" if set(options) & set(QA_DEFAULTS) else "BertTokenClassifier"
        raise ExportError(f"Options {sorted(options)} apply only to {owner} exports, not {kind}.")
    # A fine-tuned model's preprocessor holds what it was trained and tuned with (packing length; SQuAD
    # windows, decoding, null threshold): serve the same unless told otherwise.
    preprocessor = getattr(model, "preprocessor", None)
    saved = preprocessor.get_config() if preprocessor is not None else {}
    if sequence_length is None:
        default = QA_DEFAULTS["sequence_length"] if kind == "question_answerer" else backbone.max_sequence_length
        sequence_length = min(saved.get("sequence_length", default), backbone.max_sequence_length)
    sequence_length = int(sequence_length)
    if not 3 <= sequence_length <= backbone.max_sequence_length:
        raise ExportError(
            f"sequence_length must be in [3, {backbone.max_sequence_length}] (the model's position table, "
            f"max_sequence_length), got {sequence_length}."
        )
    settings = {"sequence_length": sequence_length}
    if kind == "question_answerer":
        for key, value in QA_DEFAULTS.items():
            if key != "sequence_length":
                settings[key] = options.get(key, saved.get(key, value))
        for key in ("doc_stride", "max_query_length", "max_answer_length", "n_best_size"):
            if int(settings[key]) < 1:
                raise ExportError(f"{key} must be at least 1, got {settings[key]}.")
            settings[key] = int(settings[key])
        if sequence_length - settings["max_query_length"] - 3 < 1:
            raise ExportError(
                f"sequence_length ({sequence_length}) must exceed max_query_length "
                f"({settings['max_query_length']}) + 3 so that every window holds a context token."
            )
        settings["version_2_with_negative"] = bool(settings["version_2_with_negative"])
        settings["null_score_diff_threshold"] = float(settings["null_score_diff_threshold"])
    if kind == "token_classifier":
        # The run's stride where its window length is kept, else half a window.
        stride = options.get("stride") or (saved.get("stride") if saved.get("sequence_length") == sequence_length
                                           else None)
        settings["stride"] = int(stride) if stride else max(1, (sequence_length - 2) // 2)
        if not 1 <= settings["stride"] <= sequence_length - 2:
            raise ExportError(f"stride must be in [1, {sequence_length - 2}] (sequence_length - 2, the tokens of a "
                              f"window), got {settings['stride']}.")
        if tokenizer is not None and (model.labels is None or "O" not in model.labels):
            raise ExportError(f"serve_text returns entities, which needs the model's IOB tags with 'O' among them; "
                              f"this BertTokenClassifier has labels {model.labels}. Build it with `labels`.")
    if tokenizer is not None and tokenizer.vocabulary_size() > backbone.vocabulary_size:
        raise ExportError(
            f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model embeds only "
            f"{backbone.vocabulary_size}; export with the tokenizer the model was trained with."
        )
    return settings


def export_saved_model(model, path=None, tokenizer=None, *, sequence_length=None, overwrite=False, **options):
    """Export a BERT model as a TensorFlow SavedModel with numeric and (with a tokenizer) raw-text signatures.

    Works from every Keras backend (see the module docstring). The SavedModel needs only `tensorflow` and
    `tensorflow_text` to serve (`tf.saved_model.load`, TF Serving); it carries `vocab.txt`,
    `tokenizer_config.json` and `export_config.json` (model class and config, labels, export settings) as
    assets. Signatures, inputs and outputs are listed in `export.serving_signatures`; in short:

    - `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` (int32 `(B, T)`, mask 1 = real token).
    - `serve_text` (and `serve_text_pair` for backbone and classifier; `question` + `context` for QA).
    - `serving_default` is `serve_text` when there is one, else `serve_token_ids`.

    Args:
        model: `BertBackbone`, `BertPretrainer`, `BertClassifier` or `BertQuestionAnswerer`.
        path: str or None. Output directory; replaced atomically if it is empty or a previous SavedModel
            (else `OutputExistsError`, unless `overwrite`). None writes to `saved_models/<model.name>` under
            the working directory. Defaults to None.
        tokenizer: `BertTokenizer` or None. Adds the text signatures (not for `BertPretrainer`, which is
            numeric-only) and the vocabulary asset. Defaults to None.
        sequence_length: int or None. Longest packed text sequence (longer texts are truncated, or
            windowed for QA); `max_sequence_length`, its old name, still works, deprecated. None: the
            attached preprocessor's (a fine-tuned model's packing length), else the model's
            `max_sequence_length` (its position table), for QA `min(384, that)`. Defaults to None.
        overwrite: bool. Replace `path` even if it is a file or a folder that is not a SavedModel. Defaults
            to False.
        **options: QA only, each defaulting to the attached preprocessor's (a fine-tuning run's windows,
            decoding settings and tuned null threshold), else to: `doc_stride` (128), `max_query_length`
            (64), `max_answer_length` (30), `n_best_size` (20), `version_2_with_negative` (False: always
            answer; True: answer "" iff null score - best span score > `null_score_diff_threshold`, and
            return `null_odds`), `null_score_diff_threshold` (0.0).

    Returns:
        str. The absolute path of the written SavedModel.

    Example:
    >>> import tensorflow as tf
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> from keras_bert_impl.models.classifier import BertClassifier
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"]
    >>> backbone = BertBackbone(vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16, max_sequence_length=16)
    >>> model = BertClassifier(backbone, num_classes=2, labels=["negative", "positive"])
    >>> path = export_saved_model(model, "/tmp/bert_sentiment", BertTokenizer(vocab))
    >>> served = tf.saved_model.load(path)
    >>> served.signatures["serve_text"](text=tf.constant(["good film"]))["label"].shape
    TensorShape([1])
    """
    class_name, kind = _model_kind(model)
    settings = _export_settings(model, kind, tokenizer, sequence_length, options)
    path = os.path.abspath(os.fspath(path) if path is not None else os.path.join(DEFAULT_EXPORT_ROOT, model.name))
    check_replaceable(path, SAVED_MODEL_MARKERS, overwrite, "SavedModel", "pass --overwrite to replace it")
    _export_for_backend(model, class_name, kind, tokenizer, settings, path, overwrite)
    logger.info("Exported %s to %s", class_name, path)
    return path


def _export_for_backend(model, class_name, kind, tokenizer, settings, path, overwrite):
    """The one backend branch: build the graph here under TensorFlow, else in a TensorFlow subprocess."""
    if keras.backend.backend() == "tensorflow":
        _export_with_tensorflow(model, class_name, kind, tokenizer, settings, path, overwrite)
    else:
        export_in_tensorflow_subprocess(model, class_name, "saved_model", path, settings, tokenizer, overwrite)


def _export_config(model, class_name, kind, tokenizer, settings):
    config = {
        "format": "keras_bert_impl.saved_model",
        "model_class": class_name,
        "model_config": model.get_config(),
        "signatures": None,  # filled in once the signatures exist
        "settings": settings,
        "padding_mask_dtype": "int32",
        "has_tokenizer": tokenizer is not None,
    }
    if kind in ("classifier", "token_classifier"):
        config["labels"] = list(model.labels) if model.labels is not None else None
    if kind == "classifier":
        config["is_regression"] = bool(model.is_regression)
    return config


def _export_with_tensorflow(model, class_name, kind, tokenizer, settings, path, overwrite=False):
    """Build the serving graph in this (TensorFlow-backend) process and write it atomically to `path`."""
    import tensorflow as tf

    from keras_bert_impl.export.serving_signatures import build_serving_module

    with tempfile.TemporaryDirectory(prefix="bert_export_assets_") as staging:
        assets = {}
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)  # vocab.txt + tokenizer_config.json
            assets["vocabulary_file"] = tf.saved_model.Asset(os.path.join(staging, "vocab.txt"))
            assets["tokenizer_config_file"] = tf.saved_model.Asset(os.path.join(staging, "tokenizer_config.json"))
        module, signatures = build_serving_module(model, kind, tokenizer, settings)
        config = _export_config(model, class_name, kind, tokenizer, settings)
        config["signatures"] = sorted(signatures)
        config_path = os.path.join(staging, EXPORT_CONFIG_FILENAME)
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(config, handle, indent=2)
        assets["export_config_file"] = tf.saved_model.Asset(config_path)
        for name, asset in assets.items():
            setattr(module, name, asset)
        with atomic_directory(path, SAVED_MODEL_MARKERS, overwrite, "SavedModel") as tmp:
            tf.saved_model.save(module, tmp, signatures=signatures)
