"""Export BERT models as TensorFlow SavedModels that serve raw text, from any Keras backend.

The graph is built under the TensorFlow backend (`serving_signatures`); a JAX or torch model is exported by a
TensorFlow subprocess (`export.tensorflow_subprocess`). Writes are atomic (`utils.atomic_io.atomic_directory`).
"""

import json
import logging
import os

import keras

from keras_bert_impl.export.tensorflow_subprocess import (ExportError, export_in_tensorflow_subprocess,
                                                          exported_class_name)
from keras_bert_impl.models.registry import TASK_KINDS
from keras_bert_impl.utils.atomic_io import atomic_directory, check_output, scratch_directory
from keras_bert_impl.utils.output_lock import output_lock

logger = logging.getLogger(__name__)

DEFAULT_EXPORT_ROOT = "saved_models"
EXPORT_CONFIG_FILENAME = "export_config.json"
QA_DEFAULTS = dict(sequence_length=384, doc_stride=128, max_query_length=64, max_answer_length=30, n_best_size=20,
                   version_2_with_negative=False, null_score_diff_threshold=0.0)
# Token classifier option: tokens between the starts of a long text's windows (default: the model's run's).
TOKEN_CLASSIFIER_OPTIONS = ("stride",)


def _export_settings(model, kind, tokenizer, sequence_length, options):
    """Check and complete the export settings; every inconsistency is an ExportError before writing."""
    backbone = model if kind == "backbone" else model.backbone
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
        raise ExportError(f"sequence_length must be in [3, {backbone.max_sequence_length}] (the model's position "
                          f"table, max_sequence_length), got {sequence_length}.")
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
            raise ExportError(f"sequence_length ({sequence_length}) must exceed max_query_length "
                              f"({settings['max_query_length']}) + 3 so that every window holds a context token.")
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
        raise ExportError(f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model embeds only "
                          f"{backbone.vocabulary_size}; export with the tokenizer the model was trained with.")
    return settings


def export_saved_model(model, path=None, tokenizer=None, *, sequence_length=None, overwrite=False, **options):
    """Export a BERT model as a TensorFlow SavedModel with numeric and (with a tokenizer) raw-text signatures.

    Assets: `vocab.txt`, `tokenizer_config.json` and `export_config.json` (model class and config, labels,
    settings). Signatures: `export.serving_signatures`; `serving_default`: `serve_text`, else `serve_token_ids`.

    Args:
        model: a task model of `models.registry.TASK_CLASSES` but `BertMultipleChoice`.
        path: str or None. Output directory, written atomically; an existing one only if empty, or a previous
            output of this package with `overwrite` (else `OutputExistsError`). Defaults to None:
            `saved_models/<model.name>`.
        tokenizer: `BertTokenizer` or None. Adds the text signatures (not for `BertPretrainer`) and the
            vocabulary asset. Defaults to None.
        sequence_length: int or None. Longest packed text sequence (longer texts are truncated, or windowed).
            None: the attached preprocessor's, else the model's `max_sequence_length`, for QA `min(384, that)`.
            Defaults to None.
        overwrite: bool. Replace a previous output of this package at `path`. Defaults to False.
        **options: QA: `doc_stride`, `max_query_length`, `max_answer_length`, `n_best_size`,
            `version_2_with_negative`, `null_score_diff_threshold` (defaults: the attached preprocessor's, else
            `QA_DEFAULTS`); token classifier: `stride` (the preprocessor's, else half a window).

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
    class_name = exported_class_name(model, "export_saved_model")
    if class_name == "BertMultipleChoice":  # the one class without serving signatures
        raise ExportError(f"{class_name} has no SavedModel export: its inputs are (B, C, T) choices; run it in Python "
                          "(model.predict((contexts, endings))) or write a Hugging Face directory (save_huggingface).")
    kind = TASK_KINDS[class_name]
    settings = _export_settings(model, kind, tokenizer, sequence_length, options)
    path = os.path.abspath(os.fspath(path) if path is not None else os.path.join(DEFAULT_EXPORT_ROOT, model.name))
    check_output(path, overwrite=overwrite, what="SavedModel")
    if keras.backend.backend() == "tensorflow":  # the writer holds the lock (a subprocess: its own call)
        with output_lock(path, replaced=True):
            _export_with_tensorflow(model, class_name, kind, tokenizer, settings, path, overwrite)
    else:
        export_in_tensorflow_subprocess(model, class_name, "saved_model", path, settings, tokenizer, overwrite)
    logger.info("Exported %s to %s", class_name, path)
    return path


def _export_with_tensorflow(model, class_name, kind, tokenizer, settings, path, overwrite=False):
    """Build the serving graph in this (TensorFlow-backend) process and write it atomically to `path`."""
    import tensorflow as tf

    from keras_bert_impl.export.serving_signatures import build_serving_module

    with scratch_directory(path) as staging:  # beside the output: a killed export leaves nothing elsewhere
        assets = {}
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)  # vocab.txt + tokenizer_config.json
            assets["vocabulary_file"] = tf.saved_model.Asset(os.path.join(staging, "vocab.txt"))
            assets["tokenizer_config_file"] = tf.saved_model.Asset(os.path.join(staging, "tokenizer_config.json"))
        module, signatures = build_serving_module(model, kind, tokenizer, settings)
        config = {"format": "keras_bert_impl.saved_model", "model_class": class_name,
                  "model_config": model.get_config(), "signatures": sorted(signatures), "settings": settings,
                  "padding_mask_dtype": "int32", "has_tokenizer": tokenizer is not None}
        if kind in ("classifier", "token_classifier"):
            config["labels"] = list(model.labels) if model.labels is not None else None
        if kind == "classifier":
            config["is_regression"] = bool(model.is_regression)
        config_path = os.path.join(staging, EXPORT_CONFIG_FILENAME)
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(config, handle, indent=2)
        assets["export_config_file"] = tf.saved_model.Asset(config_path)
        for name, asset in assets.items():
            setattr(module, name, asset)
        with atomic_directory(path, overwrite, "SavedModel") as tmp:
            tf.saved_model.save(module, tmp, signatures=signatures)
