"""The task models a fine-tuning run starts from: a checkpoint any `from_pretrained` reads, or a preset with
random weights (training from scratch), checked against the run's tokenizer, with the run's preprocessor
attached (its settings, e.g. the packing length and the SQuAD null threshold, are saved with the model)."""

import json
import logging
import os

logger = logging.getLogger(__name__)


def _check_vocabulary_fits(model, tokenizer):
    size = model.backbone.vocabulary_size
    if tokenizer.vocabulary_size() > size:
        raise ValueError(
            f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model's embedding table has {size} "
            f"rows; use the vocabulary the checkpoint was trained with."
        )
    if tokenizer.vocabulary_size() < size:
        # Legal (some checkpoints pad the table to a multiple of 8), but usually a different vocabulary.
        logger.warning("The tokenizer has %d tokens but the model's embedding table has %d rows; unless the "
                       "table is padded, this is not the checkpoint's vocabulary.", tokenizer.vocabulary_size(), size)


def _dropout_overrides(backbone_dropout):
    """Backbone config overrides setting hidden and attention dropout to `backbone_dropout` (none for None)."""
    if backbone_dropout is None:
        return {}
    return {"dropout": backbone_dropout, "attention_dropout": backbone_dropout}


def _preset_backbone(preset, tokenizer, max_sequence_length, dropout):
    from keras_bert_impl.models.backbone import BertBackbone

    return BertBackbone.from_scratch(preset, vocabulary_size=tokenizer.vocabulary_size(),
                                     max_sequence_length=max_sequence_length, **_dropout_overrides(dropout))


def saved_preprocessor_config(path):
    """The config of the preprocessor saved with a model directory (`preprocessor.json`), or {} when none is.

    Args:
        path: str or None. A checkpoint (directory or original-TF prefix).

    Returns:
        dict, e.g. `{"sequence_length": 384, "null_score_diff_threshold": -1.2, ...}`.
    """
    from keras_bert_impl.models.task import PREPROCESSOR_FILENAME

    file_path = os.path.join(os.fspath(path), PREPROCESSOR_FILENAME) if path else ""
    if not os.path.isfile(file_path):
        return {}
    with open(file_path, encoding="utf-8") as handle:
        try:
            return dict(json.load(handle).get("config", {}))
        except (json.JSONDecodeError, AttributeError) as error:
            raise ValueError(f"{file_path}: not a preprocessor config written by save_pretrained ({error}); give "
                             "a model directory save_pretrained wrote, or remove that file.") from error


def build_classifier(tokenizer, num_classes, labels=None, init_checkpoint=None, preset=None,
                     max_sequence_length=512, classifier_dropout=None, backbone_dropout=None, preprocessor=None,
                     model_class=None):
    """A `BertClassifier` (or `BertTokenClassifier`) from a checkpoint (`init_checkpoint`) or a randomly
    initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        num_classes: int or None. Classes (1 = regression); None takes the checkpoint head's.
        labels: sequence of str or None. Class names saved with the model. Defaults to None.
        init_checkpoint: str or None. Any checkpoint `BertClassifier.from_pretrained` reads. Defaults to None.
        preset: str or None. `BertBackbone` preset for training from scratch (used without a checkpoint).
            Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        classifier_dropout: float or None. Head dropout; None: the checkpoint's or 0.1. Defaults to None.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).
        preprocessor: `BertPreprocessor` or None. Attached to the model and saved with it (the packing length
            of the run); None: the checkpoint's own, if any. Defaults to None.
        model_class: `BertClassifier`, `BertTokenClassifier` (the same head arguments), or None for
            `BertClassifier`. Defaults to None.

    Returns:
        the `model_class` model.
    """
    from keras_bert_impl.models.classifier import DEFAULT_DROPOUT, BertClassifier
    from keras_bert_impl.models.task import AUTO

    model_class = model_class or BertClassifier
    if init_checkpoint:
        model = model_class.from_pretrained(init_checkpoint, num_classes=num_classes, labels=labels,
                                            classifier_dropout=classifier_dropout,
                                            preprocessor=AUTO if preprocessor is None else preprocessor,
                                            **_dropout_overrides(backbone_dropout))
    elif preset:
        model = model_class(
            _preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout), num_classes,
            dropout=DEFAULT_DROPOUT if classifier_dropout is None else classifier_dropout, labels=labels,
            preprocessor=preprocessor,
        )
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model


def build_question_answerer(tokenizer, init_checkpoint=None, preset=None, max_sequence_length=512,
                            backbone_dropout=None, preprocessor=None):
    """A `BertQuestionAnswerer` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        init_checkpoint: str or None. Any checkpoint `BertQuestionAnswerer.from_pretrained` reads. Defaults
            to None.
        preset: str or None. `BertBackbone` preset for training from scratch. Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).
        preprocessor: `BertQuestionAnsweringPreprocessor` or None. Attached to the model and saved with it (the
            run's windows, decoding settings and null threshold); None: the checkpoint's own, if any. Defaults
            to None.

    Returns:
        `BertQuestionAnswerer`.
    """
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.models.task import AUTO

    if init_checkpoint:
        model = BertQuestionAnswerer.from_pretrained(
            init_checkpoint, preprocessor=AUTO if preprocessor is None else preprocessor,
            **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertQuestionAnswerer(_preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout),
                                     preprocessor=preprocessor)
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model


def build_multiple_choice(tokenizer, init_checkpoint=None, preset=None, max_sequence_length=512, dropout=None,
                          backbone_dropout=None, preprocessor=None):
    """A `BertMultipleChoice` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        init_checkpoint: str or None. Any checkpoint `BertMultipleChoice.from_pretrained` reads. Defaults to
            None.
        preset: str or None. `BertBackbone` preset for training from scratch. Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        dropout: float or None. Head dropout; None: the checkpoint's or 0.1. Defaults to None.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).
        preprocessor: `BertMultipleChoicePreprocessor` or None. Attached to the model and saved with it (the
            packing length of the run); None: the checkpoint's own, if any. Defaults to None.

    Returns:
        `BertMultipleChoice`.
    """
    from keras_bert_impl.models.multiple_choice import DEFAULT_DROPOUT, BertMultipleChoice
    from keras_bert_impl.models.task import AUTO

    if init_checkpoint:
        model = BertMultipleChoice.from_pretrained(
            init_checkpoint, dropout=dropout, preprocessor=AUTO if preprocessor is None else preprocessor,
            **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertMultipleChoice(_preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout),
                                   dropout=DEFAULT_DROPOUT if dropout is None else dropout, preprocessor=preprocessor)
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model
