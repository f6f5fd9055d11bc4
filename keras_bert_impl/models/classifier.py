"""BERT sequence classification and regression: pooled [CLS] output -> dropout -> Dense(num_classes).

Shape legend: B batch, T tokens, H hidden width, C classes (`num_classes`).
"""

import keras
import numpy as np

from keras_bert_impl.models.task import (DEFAULT_DROPOUT, BertTask, check_classification_head,
                                         classification_head_arguments, head_logits, labelled_huggingface_config,
                                         pooled_output)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertClassifier(BertTask):
    """Sentence and sentence-pair classification with BERT (Devlin et al., 2018, section 4.1).

    The head is named "classifier_dense", as `run_classifier.py`'s. `num_classes=1` is regression (STS-B): the one
    output is the predicted score.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        num_classes: int. Number of classes `C`; 1 for regression.
        dropout: float. Dropout on the pooled output, applied only in training. Defaults to 0.1.
        labels: sequence of str, a `LabelVocabulary`, or None. The class names, id i being `labels[i]`;
            saved with the model (config and `label_vocabulary.json`). Defaults to None.
        preprocessor: `preprocessing.BertPreprocessor` or None (see `BertTask`). Defaults to None.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`.
    Output: the logits tensor, float32 `(B, C)` (for regression `(B, 1)`, the score). Targets for `fit`:
    int `(B,)` class ids, or float `(B,)` scores for regression.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
    >>> model = BertClassifier(backbone, num_classes=3, labels=["contradiction", "entailment", "neutral"])
    >>> x = {"token_ids": np.array([[2, 7, 3, 9, 3]]), "segment_ids": np.array([[0, 0, 0, 1, 1]]),
    ...      "padding_mask": np.ones((1, 5), bool)}
    >>> tuple(model(x).shape)
    (1, 3)
    >>> model.compile()
    >>> sorted(model.fit(x, np.array([2]), epochs=1, verbose=0).history)
    ['accuracy', 'loss']
    """

    default_preprocessor_class = "BertPreprocessor"
    huggingface_architecture = "BertForSequenceClassification"
    head_output_layer = ("classifier_dense", "classifier", "output")  # run_classifier.py's output_weights

    def __init__(self, backbone, num_classes, dropout=DEFAULT_DROPOUT, labels=None, preprocessor=None, **kwargs):
        if num_classes == 1 and labels is not None:
            raise ValueError("BertClassifier with num_classes=1 is a regression model; it takes no `labels`.")
        labels = check_classification_head("BertClassifier", num_classes, dropout, labels)
        inputs = dict(backbone.input)
        pooled = pooled_output(backbone, inputs)  # (B, H)
        logits = head_logits(backbone, pooled, num_classes, "classifier", dropout)  # (B, C)
        super().__init__(backbone, inputs, logits, preprocessor, **kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = labels

    @property
    def is_regression(self):
        """True for `num_classes=1` (one score, mean squared error)."""
        return self.num_classes == 1

    def default_loss_and_metrics(self):
        """Mean squared error for regression, else sparse categorical cross-entropy from logits and "accuracy"."""
        if self.is_regression:
            return keras.losses.MeanSquaredError(), None
        return classification_loss_and_metrics()

    @classmethod
    def pretrained_head_arguments(cls, checkpoint, num_classes=None, labels=None, classifier_dropout=None):
        """`from_pretrained`'s head: ours, Hugging Face `BertForSequenceClassification`'s or `run_classifier.py`'s.

        Args:
            checkpoint: `task_checkpoints.StoredCheckpoint`.
            num_classes: int or None. None takes the checkpoint's head (required without one). Defaults to None.
            labels: sequence of str, a `LabelVocabulary`, or None. None keeps the checkpoint's when their number
                fits. Defaults to None.
            classifier_dropout: float or None. None takes the checkpoint's, else 0.1. Defaults to None.
        """
        head = classification_head_arguments(cls, checkpoint, num_classes, labels, classifier_dropout)
        if head["num_classes"] == 1 and labels is None:  # regression: a score has no class names
            head["labels"] = None
        return head

    def keras_hub_task_head(self):
        """A keras-hub `BertTextClassifier` (without `labels`, which keras-hub has no place for)."""
        dense = self.get_layer("classifier_dense")
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "kernel": keras.ops.convert_to_numpy(dense.kernel), "bias": keras.ops.convert_to_numpy(dense.bias),
                "sequence_length": None if self.preprocessor is None else self.preprocessor.sequence_length}

    def huggingface_config(self):
        """`num_labels`, `id2label`, `label2id`, `classifier_dropout` and `problem_type` for config.json."""
        return {**labelled_huggingface_config(self.num_classes, self.labels, self.dropout),
                "problem_type": "regression" if self.is_regression else "single_label_classification"}

    def decode_predictions(self, logits):
        """Each row's predicted class and its probability (a softmax over the classes), from `predict`'s logits.

        Args:
            logits: array `(B, C)`, what `predict` returns.

        Returns:
            list of B dicts: `{"label": str, "class_id": int, "probability": float}`, the label being the class
            name from `labels` (else the class id as str); for regression `{"score": float}`.

        Example:
        >>> from keras_bert_impl.models.backbone import BertBackbone
        >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
        >>> model = BertClassifier(backbone, num_classes=2, labels=["neg", "pos"])
        >>> [(row["label"], round(row["probability"], 4)) for row in model.decode_predictions([[0.0, 2.0]])]
        [('pos', 0.8808)]
        """
        if self.is_regression:
            return [{"score": float(row[0])} for row in np.asarray(logits)]
        class_ids, probabilities = top_classes(logits)
        return [{"label": self.labels[class_id] if self.labels else str(class_id), "class_id": int(class_id),
                 "probability": float(probability)} for class_id, probability in zip(class_ids, probabilities)]


def top_classes(logits):
    """The most probable class of each row of `logits` `(B, C)` and its softmax probability, two `(B,)` arrays.

    Example:
    >>> class_ids, probabilities = top_classes([[0.0, 2.0], [1.0, 1.0]])
    >>> class_ids.tolist(), [round(float(probability), 4) for probability in probabilities]
    ([1, 0], [0.8808, 0.5])
    """
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(keras.ops.convert_to_tensor(logits, "float32")))
    class_ids = np.argmax(probabilities, axis=-1)  # (B,)
    return class_ids, np.take_along_axis(probabilities, class_ids[:, None], axis=-1)[:, 0]


def classification_loss_and_metrics():
    """Sparse categorical cross-entropy from logits and "accuracy": `compile()`'s default for class logits."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True), [
        keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
