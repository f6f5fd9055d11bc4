"""BERT sequence classification and regression: pooled [CLS] output -> dropout -> Dense(num_classes).

Shape legend: B batch, T tokens, H hidden width, C classes (`num_classes`).
"""

import logging

import keras
import numpy as np

from keras_bert_impl.models.label_vocabulary import LABEL_VOCABULARY_FILENAME, LabelVocabulary
from keras_bert_impl.models.task import AUTO, BertTask, check_classification_head
from keras_bert_impl.models.task_checkpoints import compile_from_saved_config, load_task_weights

logger = logging.getLogger(__name__)

DEFAULT_DROPOUT = 0.1


def _is_default_huggingface_labels(labels):
    return all(label == f"LABEL_{index}" for index, label in enumerate(labels))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertClassifier(BertTask):
    """Sentence and sentence-pair classification with BERT (Devlin et al., 2018, section 4.1).

    The backbone's pooled output (the tanh-projected [CLS] vector) goes through dropout and one
    `Dense(num_classes)` layer named "classifier_dense", as `run_classifier.py`. Single sentences
    (`[CLS] A [SEP]`) and pairs (`[CLS] A [SEP] B [SEP]`) differ only in the packed inputs
    (`data.classification_data` packs them). `num_classes=1` is regression (STS-B): the one output is the
    predicted score.

    `compile()` without `loss` uses sparse categorical cross-entropy from logits and an "accuracy" metric
    (mean squared error and no metric for regression). Works on TensorFlow, JAX and torch, with
    `jit_compile=True` on TensorFlow and JAX.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        num_classes: int. Number of classes `C`; 1 for regression.
        dropout: float. Dropout on the pooled output, applied only in training. Defaults to 0.1.
        labels: sequence of str, a `LabelVocabulary`, or None. The class names, id i being `labels[i]`;
            saved with the model (config and `label_vocabulary.json`). Defaults to None.
        preprocessor: `preprocessing.BertPreprocessor` or None. With one, `fit` / `evaluate` / `predict`
            take raw texts (a list of str, or a tuple `(first_texts, second_texts)` for pairs). Defaults to
            None (token ids only).
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`.
    Output: the logits tensor, float32 `(B, C)` (for regression `(B, 1)`, the score). Targets for `fit`:
    int `(B,)` class ids, or float `(B,)` scores for regression.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16, max_sequence_length=16)
    >>> model = BertClassifier(backbone, num_classes=3, labels=["contradiction", "entailment", "neutral"])
    >>> x = {"token_ids": np.array([[2, 7, 3, 9, 3]]), "segment_ids": np.array([[0, 0, 0, 1, 1]]),
    ...      "padding_mask": np.ones((1, 5), bool)}
    >>> tuple(model(x).shape)
    (1, 3)
    >>> model.compile(optimizer="adam")
    >>> sorted(model.fit(x, np.array([2]), epochs=1, verbose=0).history)
    ['accuracy', 'loss']
    """

    default_preprocessor_class = "BertPreprocessor"

    def __init__(self, backbone, num_classes, dropout=DEFAULT_DROPOUT, labels=None, preprocessor=None, **kwargs):
        if num_classes == 1 and labels is not None:
            raise ValueError("BertClassifier with num_classes=1 is a regression model; it takes no `labels`.")
        labels = check_classification_head("BertClassifier", num_classes, dropout, labels)
        inputs = dict(backbone.input)
        # A (B, 0) `output_positions`: the backbone's last block computes the [CLS] row alone.
        no_positions = keras.ops.zeros_like(inputs["token_ids"][:, :0])
        pooled = backbone(inputs, output_positions=no_positions)["pooled_output"]  # (B, H)
        pooled = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="classifier_dropout")(pooled)
        logits = keras.layers.Dense(
            num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=backbone.initializer_range),
            dtype=backbone.dtype_policy,
            name="classifier_dense",
        )(pooled)  # (B, C)
        super().__init__(inputs=inputs, outputs=keras.ops.cast(logits, "float32"), **kwargs)
        self.backbone = backbone
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = labels
        self.preprocessor = preprocessor

    @property
    def is_regression(self):
        """True for `num_classes=1` (one score, mean squared error)."""
        return self.num_classes == 1

    @property
    def label_vocabulary(self):
        """The `LabelVocabulary` of `labels`, or None when the model has no label names."""
        if self.labels is None:
            return None
        return LabelVocabulary(self.labels)

    # -- training ---------------------------------------------------------------------------------------

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """`keras.Model.compile` with this task's defaults when `loss` is None.

        Classification: `SparseCategoricalCrossentropy(from_logits=True)` and, unless `metrics` is given,
        `SparseCategoricalAccuracy(name="accuracy")`. Regression: `MeanSquaredError` and no metric.
        """
        if loss is None:
            if self.is_regression:
                loss = keras.losses.MeanSquaredError()
            else:
                loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                if metrics is None:
                    metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        compile_from_saved_config(self, config)

    # -- config and checkpoints -------------------------------------------------------------------------

    def task_config(self):
        """The head arguments (everything but the backbone), as stored in checkpoints."""
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "labels": list(self.labels) if self.labels is not None else None,
        }

    @classmethod
    def from_pretrained(cls, path, num_classes=None, labels=None, classifier_dropout=None, preprocessor=AUTO,
                        sequence_length=None, revision=None, **overrides):
        """Build a classifier from any checkpoint `checkpoints.read_checkpoint` reads.

        Our own `BertClassifier` directories restore everything (head, `labels`). Hugging Face
        `BertForSequenceClassification` loads `classifier.*` (classes from `num_labels` / the head's shape,
        label names from `id2label` unless they are the default `LABEL_i`, dropout from
        `classifier_dropout`); original `run_classifier.py` checkpoints load `output_weights` /
        `output_bias`. Any other checkpoint (a pretrained encoder) loads the encoder; the head keeps its
        initial values, which `model.load_report.missing` lists and a WARNING names. So does a head whose
        number of classes differs from `num_classes`.

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix), or a Hugging Face Hub model id
                (`checkpoints.hub_cache`).
            num_classes: int or None. Number of classes (1 = regression). None takes the checkpoint's head;
                required for a checkpoint without one. Defaults to None.
            labels: sequence of str, a `LabelVocabulary`, or None. Class names; None keeps the checkpoint's
                when their number fits. Defaults to None.
            classifier_dropout: float or None. The head's `dropout`; None takes the checkpoint's, else 0.1.
                Defaults to None.
            preprocessor: "auto", a `BertPreprocessor`, or None. "auto" attaches the one saved with the model,
                else a `BertPreprocessor` on the checkpoint's `vocab.txt` and casing, so `fit` / `predict`
                take raw text (none when the directory has no vocabulary or TensorFlow is not installed).
                Defaults to "auto".
            sequence_length: int or None. The preprocessor's packing length; None keeps the saved one, else
                `min(128, max_sequence_length)`. Defaults to None.
            revision: str or None. A Hugging Face Hub branch, tag or commit, for a Hub model id. Defaults to None.
            **overrides: backbone config values to change (e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`).

        Returns:
            `BertClassifier`, with `load_report` (a `checkpoints.LoadReport`).
        """
        from keras_bert_impl.checkpoints import backbone_config, read_checkpoint, resolve_checkpoint
        from keras_bert_impl.checkpoints.name_map import classifier_head_specs
        from keras_bert_impl.models.backbone import BertBackbone

        path = resolve_checkpoint(path, revision)
        fmt, config, tensors, extra = read_checkpoint(path)
        stored_classes, stored_labels, stored_dropout = _stored_head(fmt, config, tensors, extra)
        if num_classes is None:
            if stored_classes is None:
                raise ValueError(
                    f"{path} has no classification head, so `num_classes` is needed "
                    f"(e.g. BertClassifier.from_pretrained(path, num_classes=2))."
                )
            num_classes = stored_classes
        if labels is None and stored_labels is not None and len(stored_labels) == num_classes > 1:
            labels = stored_labels
        if classifier_dropout is None:
            classifier_dropout = DEFAULT_DROPOUT if stored_dropout is None else stored_dropout
        backbone = BertBackbone(**{**backbone_config(fmt, config, extra), **overrides})
        preprocessor = cls._pretrained_preprocessor(path, preprocessor, sequence_length, backbone.max_sequence_length)
        model = cls(backbone, num_classes, dropout=classifier_dropout, labels=labels, preprocessor=preprocessor)
        load_task_weights(model, fmt, tensors, extra, path, classifier_head_specs())
        return model

    @classmethod
    def from_preset(cls, name, num_classes, vocabulary=None, sequence_length=None, lowercase=True, dropout=DEFAULT_DROPOUT,
                    labels=None, **backbone_overrides):
        """A randomly initialised classifier of a published size (`models.presets.PRESETS`: "tiny" ... "large").

        Args:
            name: str. The preset, or a keras-hub BERT preset (directory or handle): its pretrained
                backbone and tokenizer, as `BertBackbone.from_preset` reads them.
            num_classes: int. Number of classes (1 = regression).
            vocabulary: str, list of str, `BertTokenizer` or None. A `vocab.txt` path or the tokens: the
                backbone is sized to it and a `BertPreprocessor` on it is attached. None: no preprocessor, the
                published 30,522-token size. Defaults to None.
            sequence_length: int or None. The preprocessor's length. Defaults to `min(128, max_sequence_length)`.
            lowercase: bool. The tokenizer's casing when `vocabulary` is a path or a list. Defaults to True.
            dropout: float. The head's dropout. Defaults to 0.1.
            labels: class names, as in the constructor. Defaults to None.
            **backbone_overrides: backbone config values (e.g. `max_sequence_length=256`).

        Example:
        >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]
        >>> model = BertClassifier.from_preset("tiny", num_classes=2, vocabulary=vocabulary)
        >>> model.predict(["good", "bad"], verbose=0).shape
        (2, 2)
        """
        backbone, preprocessor = cls._preset_parts(name, vocabulary, sequence_length, lowercase, **backbone_overrides)
        return cls(backbone, num_classes, dropout=dropout, labels=labels, preprocessor=preprocessor)

    def checkpoint_files(self):
        """For a model with `labels`: `label_vocabulary.json` (`LabelVocabulary.load` reads it), written by
        `save_pretrained` into the checkpoint directory with the weights, atomically as a whole."""
        if self.labels is None:
            return {}
        return {LABEL_VOCABULARY_FILENAME: self.label_vocabulary.save}

    def save_to_preset(self, path):
        """Write a keras-hub `BertTextClassifier` preset, atomically: backbone, head, and the preprocessor's
        tokenizer and `sequence_length`. `keras_hub.models.BertTextClassifier.from_preset(path)` loads it with this
        model's logits (`checkpoints.keras_hub_presets`); `labels` have no place there (`save_pretrained` keeps
        them)."""
        from keras_bert_impl.checkpoints.keras_hub_presets import write_keras_hub_preset

        preprocessor = self._preprocessor_or_none()
        dense = self.get_layer("classifier_dense")
        head = {"num_classes": self.num_classes, "dropout": self.dropout,
                "kernel": keras.ops.convert_to_numpy(dense.kernel), "bias": keras.ops.convert_to_numpy(dense.bias),
                "sequence_length": None if preprocessor is None else preprocessor.sequence_length}
        write_keras_hub_preset(self.backbone, path, tokenizer=None if preprocessor is None else preprocessor.tokenizer,
                               classifier_head=head)

    def save_huggingface(self, path):
        """Write a Hugging Face `BertForSequenceClassification` directory (`num_labels`, `id2label`,
        `label2id`, `classifier_dropout`, `problem_type` in config.json) that `transformers` loads."""
        from keras_bert_impl.checkpoints import save_huggingface
        from keras_bert_impl.checkpoints.name_map import classifier_head_specs

        labels = self.labels or tuple(f"LABEL_{index}" for index in range(self.num_classes))
        config_updates = {
            "num_labels": self.num_classes,
            "id2label": {str(index): label for index, label in enumerate(labels)},
            "label2id": {label: index for index, label in enumerate(labels)},
            "classifier_dropout": self.dropout,
            "problem_type": "regression" if self.is_regression else "single_label_classification",
        }
        save_huggingface(self, path, head_specs=classifier_head_specs(),
                         architectures=("BertForSequenceClassification",), config_updates=config_updates)

    # -- decoding -----------------------------------------------------------------------------------------

    def decode_predictions(self, logits):
        """Each row's predicted class and its probability (a softmax over the classes), from `predict`'s logits.

        Args:
            logits: array `(B, C)`, what `predict` returns.

        Returns:
            list of B dicts: `{"label": str, "class_id": int, "probability": float}`, the label being the class
            name from `labels` (else the class id as str); for regression `{"score": float}`.

        Example:
        >>> from keras_bert_impl.models.backbone import BertBackbone
        >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
        ...                         intermediate_dim=16, max_sequence_length=16)
        >>> model = BertClassifier(backbone, num_classes=2, labels=["neg", "pos"])
        >>> [(row["label"], round(row["probability"], 4)) for row in model.decode_predictions([[0.0, 2.0]])]
        [('pos', 0.8808)]
        """
        if self.is_regression:
            return [{"score": float(row[0])} for row in np.asarray(logits)]
        class_ids, probabilities = top_classes(logits)
        return [{"label": self.labels[class_id] if self.labels else str(class_id), "class_id": int(class_id),
                 "probability": float(probability)} for class_id, probability in zip(class_ids, probabilities)]


def _stored_head(fmt, config, tensors, extra):
    """`(num_classes, labels, dropout)` of the checkpoint's classification head, None where unknown."""
    if fmt == "native":
        if extra.get("class_name") != BertClassifier.__name__:
            return None, None, None
        labels = config.get("labels")
        return config["num_classes"], tuple(labels) if labels else None, config.get("dropout")
    if fmt == "huggingface":
        if "classifier.weight" not in tensors:
            return None, None, None
        source = extra.get("source_config", {})
        id2label = source.get("id2label") or {}
        labels = tuple(id2label[key] for key in sorted(id2label, key=int)) if id2label else None
        if labels is not None and _is_default_huggingface_labels(labels):
            labels = None
        dropout = source.get("classifier_dropout")
        if dropout is None:
            dropout = source.get("hidden_dropout_prob")
        return int(tensors["classifier.weight"].shape[0]), labels, dropout
    if "output_weights" in tensors:
        return int(tensors["output_weights"].shape[0]), None, None
    return None, None, None


def top_classes(logits):
    """The most probable class of each row of `logits` and its softmax probability.

    Args:
        logits: array `(B, C)`.

    Returns:
        `(class_ids, probabilities)`: int NumPy array `(B,)` and float NumPy array `(B,)`.

    Example:
    >>> class_ids, probabilities = top_classes([[0.0, 2.0], [1.0, 1.0]])
    >>> class_ids.tolist(), [round(float(probability), 4) for probability in probabilities]
    ([1, 0], [0.8808, 0.5])
    """
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(keras.ops.convert_to_tensor(logits, "float32")))
    class_ids = np.argmax(probabilities, axis=-1)  # (B,)
    return class_ids, np.take_along_axis(probabilities, class_ids[:, None], axis=-1)[:, 0]
