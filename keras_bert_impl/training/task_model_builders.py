"""The task models a fine-tuning run starts from: a checkpoint any `from_pretrained` reads, or a preset with
random weights (training from scratch), checked against the run's tokenizer."""

import logging

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

    return BertBackbone.from_preset(preset, vocabulary_size=tokenizer.vocabulary_size(),
                                    max_sequence_length=max_sequence_length, **_dropout_overrides(dropout))


def build_classifier(tokenizer, num_classes, labels=None, init_checkpoint=None, preset=None,
                     max_sequence_length=512, classifier_dropout=None, backbone_dropout=None):
    """A `BertClassifier` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

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

    Returns:
        `BertClassifier`.
    """
    from keras_bert_impl.models.classifier import DEFAULT_DROPOUT, BertClassifier

    if init_checkpoint:
        model = BertClassifier.from_pretrained(init_checkpoint, num_classes=num_classes, labels=labels,
                                               classifier_dropout=classifier_dropout,
                                               **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertClassifier(
            _preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout), num_classes,
            dropout=DEFAULT_DROPOUT if classifier_dropout is None else classifier_dropout, labels=labels,
        )
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model


def build_question_answerer(tokenizer, init_checkpoint=None, preset=None, max_sequence_length=512,
                            backbone_dropout=None):
    """A `BertQuestionAnswerer` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        init_checkpoint: str or None. Any checkpoint `BertQuestionAnswerer.from_pretrained` reads. Defaults
            to None.
        preset: str or None. `BertBackbone` preset for training from scratch. Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).

    Returns:
        `BertQuestionAnswerer`.
    """
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    if init_checkpoint:
        model = BertQuestionAnswerer.from_pretrained(init_checkpoint, **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertQuestionAnswerer(_preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout))
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model
