"""BERT token classification (NER): every token's sequence output -> dropout -> Dense(num_classes).

Shape legend: B batch (windows), T tokens, H hidden width, C classes (tags, `num_classes`).
"""

import keras
from keras import ops

from keras_bert_impl.data.token_classification_data import IGNORED_LABEL
from keras_bert_impl.models.losses import sparse_cross_entropy_from_logits
from keras_bert_impl.models.task import (DEFAULT_DROPOUT, BertTask, _contains_strings, check_classification_head,
                                         classification_head_arguments, head_logits, labelled_huggingface_config)


def _targets_and_weights(y, y_pred, sample_weight):
    """Labels cut to the logits' length (length-bucketed batches cut inputs, not targets; the rest is padding),
    ignored positions set to 0, and each token's weight: 0 where ignored, else the example's `sample_weight`."""
    labels = ops.cast(y, "int32")[:, : ops.shape(y_pred)[1]]  # (B, T)
    weights = ops.cast(ops.not_equal(labels, IGNORED_LABEL), "float32")  # (B, T)
    if sample_weight is not None:
        weights = weights * ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
    return ops.where(ops.equal(labels, IGNORED_LABEL), 0, labels), weights


def masked_token_cross_entropy(labels, logits, weights):
    """Cross-entropy averaged over the weighted tokens, as Hugging Face's `CrossEntropyLoss(ignore_index=-100)`.

    Args:
        labels: int `(B, T)`. Class ids in `[0, C)`.
        logits: float `(B, T, C)`.
        weights: float32 `(B, T)`. 0 for ignored tokens.

    Returns:
        float32 scalar; 0 when no token has weight.

    Example:
    >>> import numpy as np
    >>> loss = masked_token_cross_entropy(np.array([[1, 0]]), np.zeros((1, 2, 4), "float32"),
    ...                                   np.array([[1.0, 0.0]], "float32"))
    >>> round(float(loss), 4)  # ln 4, the second token ignored
    1.3863
    """
    nll = sparse_cross_entropy_from_logits(labels, logits)  # (B, T)
    return ops.sum(nll * weights) / ops.maximum(ops.sum(weights), 1.0)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassifier(BertTask):
    """Token classification with BERT, e.g. named entities (Devlin et al., 2018, section 5.3).

    Labels sit on the first sub-token of each word; other positions carry -100 (`IGNORED_LABEL`), which the
    default loss (`masked_token_cross_entropy`) and accuracy skip.

    With a preprocessor, `fit(words, tag_ids)` trains on pre-split sentences and `predict(texts)` (or word
    lists) returns per text its `words` (`tag`, character `start` / `end`, `score`) and `entities`
    (`{"text", "type", "start", "end", "score"}`); long texts are windowed.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        num_classes: int. Number of tags `C`.
        dropout: float. Dropout on the sequence output, applied only in training. Defaults to 0.1.
        labels: sequence of str, a `LabelVocabulary`, or None. The tags (IOB2, "O" among them, to decode
            entities), id i being `labels[i]`; saved with the model. Defaults to None.
        preprocessor: `preprocessing.BertTokenClassificationPreprocessor` or None. Defaults to None.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`.
    Output: the logits, float32 `(B, T, C)`. Targets for `fit`: int `(B, T)` tag ids, -100 where ignored.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
    >>> model = BertTokenClassifier(backbone, num_classes=3, labels=["O", "B-PER", "I-PER"])
    >>> x = {"token_ids": np.array([[2, 7, 8, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.ones((1, 4), bool)}
    >>> tuple(model(x).shape)
    (1, 4, 3)
    >>> model.compile()
    >>> sorted(model.fit(x, np.array([[-100, 1, 2, -100]]), epochs=1, verbose=0).history)
    ['accuracy', 'loss']
    """

    default_preprocessor_class = "BertTokenClassificationPreprocessor"
    huggingface_architecture = "BertForTokenClassification"
    head_output_layer = ("token_classifier_dense", "classifier")  # the original has none
    unused_backbone_paths = ("pooler_dense/kernel", "pooler_dense/bias")

    def __init__(self, backbone, num_classes, dropout=DEFAULT_DROPOUT, labels=None, preprocessor=None, **kwargs):
        labels = check_classification_head("BertTokenClassifier", num_classes, dropout, labels)
        inputs = dict(backbone.input)
        sequence_output = backbone(inputs)["sequence_output"]  # (B, T, H)
        logits = head_logits(backbone, sequence_output, num_classes, "token_classifier", dropout)  # (B, T, C)
        super().__init__(backbone, inputs, logits, preprocessor, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = labels
        self.uses_default_loss = False

    def compile(self, optimizer="auto", loss=None, metrics=None, **kwargs):
        """`BertTask.compile`; without `loss`, the masked token cross-entropy and accuracy over labelled tokens.
        With the default loss, `weighted_metrics` see the labelled tokens only; `metrics` see every position."""
        self.uses_default_loss = loss is None
        if loss is None and metrics is None and kwargs.get("weighted_metrics") is None:
            kwargs["weighted_metrics"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not self.uses_default_loss:
            return super().compute_loss(x, y, y_pred, sample_weight, training)
        labels, weights = _targets_and_weights(y, y_pred, sample_weight)
        return self._with_layer_losses(masked_token_cross_entropy(labels, y_pred, weights))

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if not self.uses_default_loss:
            return super().compute_metrics(x, y, y_pred, sample_weight)
        labels, weights = _targets_and_weights(y, y_pred, sample_weight)
        return super().compute_metrics(x, labels, y_pred, weights)

    def predict(self, x, batch_size=None, **kwargs):
        """Tagged words and entities of raw texts or word lists (with a preprocessor), else the logits.

        Args:
            x: a str, a list / array of str (raw texts), a list of word lists, or model inputs (token ids; a
                dict or a `tf.data.Dataset`), which give the logits `(B, T, C)` as without a preprocessor.
            batch_size: int or None. Windows per batch. Defaults to 32.
            **kwargs: passed to `keras.Model.predict` (e.g. `verbose`).

        Returns:
            For text or words: a list of dicts `{"words", "entities"}` (one dict for one str), see the class
            docstring. For model inputs: the logits.
        """
        if self.preprocessor is None or not _contains_strings(x):
            return super().predict(x, batch_size=batch_size, **kwargs)
        if self.labels is None:
            raise ValueError("Tagging text needs the tag names: build the BertTokenClassifier with `labels`.")
        features = self.preprocessor.featurize(x)
        logits = self._predict_inputs(features["inputs"], batch_size=batch_size, **kwargs)
        results = self.preprocessor.decode(features, logits, self.labels)
        return results[0] if isinstance(x, (str, bytes)) else results

    @classmethod
    def reads_foreign_head(cls, checkpoint):
        """Only a Hugging Face `BertForTokenClassification`'s `classifier.*` is this head (a sequence classifier's
        has the same names)."""
        return cls.huggingface_architecture in checkpoint.huggingface_architectures

    # `from_pretrained`'s head: ours or Hugging Face `BertForTokenClassification`'s (arguments as `BertClassifier`'s).
    pretrained_head_arguments = classmethod(classification_head_arguments)

    def huggingface_config(self):
        """`num_labels`, `id2label`, `label2id` and `classifier_dropout` for config.json."""
        return labelled_huggingface_config(self.num_classes, self.labels, self.dropout)
