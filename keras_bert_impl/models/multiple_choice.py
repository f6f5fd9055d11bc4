"""BERT multiple choice (SWAG): each choice packed with its context, scored by Dense(1) on the pooled output.

Shape legend: B batch, C choices, T tokens, H hidden width.
"""

import keras

from keras_bert_impl.layers.choice_folding import FoldChoices, UnfoldChoices
from keras_bert_impl.models.classifier import classification_loss_and_metrics, top_classes
from keras_bert_impl.models.task import DEFAULT_DROPOUT, BertTask, check_head_dropout, head_logits, pooled_output
from keras_bert_impl.models.task_checkpoints import stored_head


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMultipleChoice(BertTask):
    """Pick the right ending among `C` with BERT (Devlin et al., 2018, section 4.4, SWAG).

    The `B * C` packed sequences `[CLS] context [SEP] ending [SEP]` go through the backbone as one batch; an
    example's `C` scores (head "multiple_choice_dense") are its logits over the choices, as Hugging Face
    `BertForMultipleChoice`; `C` may vary by batch.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        dropout: float. Dropout on the pooled output, applied only in training. Defaults to 0.1.
        preprocessor: `preprocessing.BertMultipleChoicePreprocessor` or None. With one, `fit` / `evaluate` /
            `predict` take `(contexts, endings)` strings, `(B,)` and `(B, C)`. Defaults to None.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): `token_ids`, `segment_ids` int `(B, C, T)`, `padding_mask` bool `(B, C, T)`.
    Output: the logits, float32 `(B, C)`. Targets for `fit`: int `(B,)`, the index of the right choice.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
    >>> model = BertMultipleChoice(backbone)
    >>> x = {"token_ids": np.array([[[2, 7, 3, 9, 3], [2, 7, 3, 8, 3]]]),
    ...      "segment_ids": np.array([[[0, 0, 0, 1, 1]] * 2]), "padding_mask": np.ones((1, 2, 5), bool)}
    >>> tuple(model(x).shape)
    (1, 2)
    >>> model.compile()
    >>> sorted(model.fit(x, np.array([1]), epochs=1, verbose=0).history)
    ['accuracy', 'loss']
    """

    default_preprocessor_class = "BertMultipleChoicePreprocessor"
    huggingface_architecture = "BertForMultipleChoice"
    head_output_layer = ("multiple_choice_dense", "classifier")  # the original has none

    def __init__(self, backbone, dropout=DEFAULT_DROPOUT, preprocessor=None, **kwargs):
        check_head_dropout("BertMultipleChoice", dropout)
        inputs = {name: keras.Input(shape=(None, None), dtype=tensor.dtype, name=name)  # (B, C, T)
                  for name, tensor in backbone.input.items()}
        folded = {name: FoldChoices(name=f"fold_{name}")(tensor) for name, tensor in inputs.items()}  # (B * C, T)
        pooled = pooled_output(backbone, folded)  # (B * C, H)
        scores = head_logits(backbone, pooled, 1, "multiple_choice", dropout)  # (B * C, 1)
        logits = UnfoldChoices(name="unfold_choices")(scores, inputs["token_ids"])  # (B, C)
        super().__init__(backbone, inputs, logits, preprocessor, **kwargs)
        self.dropout = dropout

    def default_loss_and_metrics(self):
        return classification_loss_and_metrics()

    @classmethod
    def pretrained_head_arguments(cls, checkpoint, dropout=None):
        """`from_pretrained`'s head: ours or Hugging Face `BertForMultipleChoice`'s (the original has none).

        Args:
            checkpoint: `task_checkpoints.StoredCheckpoint`.
            dropout: float or None. The head's dropout; None takes the checkpoint's, else 0.1. Defaults to None.
        """
        if dropout is None:
            dropout = stored_head(cls, checkpoint)["dropout"]
        return {"dropout": DEFAULT_DROPOUT if dropout is None else dropout}

    def huggingface_config(self):
        """`classifier_dropout` for config.json."""
        return {"classifier_dropout": self.dropout}

    def decode_predictions(self, logits):
        """Each example's chosen ending and its probability (a softmax over the choices), from `predict`'s logits.

        Args:
            logits: array `(B, C)`, what `predict` returns.

        Returns:
            list of B dicts `{"choice": int, "probability": float}`, `choice` the index of the ending.

        Example:
        >>> from keras_bert_impl.models.backbone import BertBackbone
        >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
        >>> [(row["choice"], round(row["probability"], 4))
        ...  for row in BertMultipleChoice(backbone).decode_predictions([[0.0, 0.0, 3.0]])]
        [(2, 0.9094)]
        """
        choices, probabilities = top_classes(logits)
        return [{"choice": int(choice), "probability": float(probability)}
                for choice, probability in zip(choices, probabilities)]
