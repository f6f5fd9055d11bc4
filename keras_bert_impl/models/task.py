"""The base of every model that puts a head on a `BertBackbone`: an optional preprocessor (raw text in `fit`,
`evaluate` and `predict`), config round trip and our checkpoint format.

Backend-agnostic: this module imports no TensorFlow. A preprocessor (TensorFlow at the data edge) is an
object the task is given; the task only calls its methods. Loading one from a checkpoint directory imports
`keras_bert_impl.preprocessing` when the directory has a vocabulary and TensorFlow is installed.
"""

import json
import logging
import os

import keras

logger = logging.getLogger(__name__)

PREPROCESSOR_FILENAME = "preprocessor.json"
VOCABULARY_FILENAME = "vocab.txt"
# `from_pretrained(..., preprocessor=AUTO)`: attach one when the checkpoint has a vocabulary.
AUTO = "auto"


def check_head_dropout(model_name, dropout):
    """Refuse a head dropout rate outside [0, 1) in one line naming the model."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{model_name} `dropout` must be in [0, 1), got {dropout!r}.")


def check_classification_head(model_name, num_classes, dropout, labels):
    """Check a classification head's `num_classes`, `dropout` and `labels`; return the labels as a tuple of str
    (from a `LabelVocabulary`, a sequence of str) or None."""
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise ValueError(f"{model_name} `num_classes` must be a positive integer, got {num_classes!r}.")
    check_head_dropout(model_name, dropout)
    if labels is None:
        return None
    labels = tuple(str(label) for label in getattr(labels, "labels", labels))
    if len(labels) != num_classes:
        raise ValueError(f"{model_name} got {len(labels)} labels {list(labels)} for num_classes={num_classes}.")
    return labels


def _contains_strings(x):
    """Whether `x` (a model call's inputs) holds text, which only a preprocessor turns into model inputs."""
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, tuple):
        return any(_contains_strings(item) for item in x)
    if isinstance(x, list):
        return bool(x) and _contains_strings(x[0])
    dtype = getattr(x, "dtype", None)
    return dtype is not None and (getattr(dtype, "kind", None) in ("U", "S") or "string" in str(dtype))


class BertTask(keras.Model):
    """A functional Keras model built from `backbone` plus a head (`BertPretrainer`, `BertClassifier`,
    `BertQuestionAnswerer`), optionally holding a preprocessor.

    Subclasses build their graph in `__init__(backbone, ..., preprocessor=None, **kwargs)`, call
    `super().__init__(inputs=..., outputs=...)`, set `self.backbone` and `self.preprocessor`, and return the
    head arguments from `task_config()`. This class turns them into the Keras config (`get_config` /
    `from_config`, backbone and preprocessor serialized inside) and into our checkpoint directory
    (`save_pretrained`: `config.json` holds `task_config()`, the backbone's config travels beside it, and the
    preprocessor's settings and vocabulary are written next to the weights).

    With a preprocessor, `fit`, `evaluate` and `predict` take what the preprocessor takes (raw strings:
    lists, NumPy string arrays, tuples of them for text pairs, or a `tf.data.Dataset` of strings) and
    preprocess it in `tf.data` (`preprocessor.make_dataset`). Data that already holds model inputs (a dict
    with `token_ids`) is passed through, so the same model also trains on token ids. Without a preprocessor
    the task takes token ids only, as a plain Keras model.
    """

    # -- preprocessing ------------------------------------------------------------------------------------

    # `self.preprocessor` is a plain attribute every task sets in `__init__` (no property: on torch a layer
    # assigned to a module attribute is stored by `torch.nn.Module.__setattr__`, bypassing descriptors).

    def _preprocessor_or_none(self):
        return getattr(self, "preprocessor", None)

    def __call__(self, *args, **kwargs):
        inputs = args[0] if args else kwargs.get("inputs")
        if _contains_strings(inputs):
            raise ValueError(
                f"{type(self).__name__} was called on strings; calling a model does not preprocess. Use "
                "predict(texts) with a preprocessor attached, or call it on model(preprocessor(texts))."
            )
        return super().__call__(*args, **kwargs)

    def _preprocessed(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        return self.preprocessor.make_dataset(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle)

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, validation_data=None,
            validation_split=0.0, shuffle=True, **kwargs):
        if self._preprocessor_or_none() is None:
            return super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight,
                               validation_data=validation_data, validation_split=validation_split,
                               shuffle=shuffle, **kwargs)
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = self.preprocessor.split_validation(
                x, y, sample_weight, validation_split
            )
        dataset = self._preprocessed(x, y, sample_weight, batch_size, shuffle=shuffle)
        if validation_data is not None:
            if isinstance(validation_data, tuple):
                validation_data = self._preprocessed(*keras.utils.unpack_x_y_sample_weight(validation_data),
                                                     batch_size=kwargs.get("validation_batch_size") or batch_size)
            else:
                validation_data = self._preprocessed(validation_data)
        kwargs.pop("validation_batch_size", None)
        # `make_dataset` shuffled the in-memory data; Keras does not shuffle a tf.data.Dataset.
        return super().fit(dataset, validation_data=validation_data, shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if self._preprocessor_or_none() is None or kwargs.get("_use_cached_eval_dataset", False):
            return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)
        return super().evaluate(self._preprocessed(x, y, sample_weight, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        if self._preprocessor_or_none() is None:
            return super().predict(x, batch_size=batch_size, **kwargs)
        return super().predict(self._preprocessed(x, batch_size=batch_size), **kwargs)

    # -- config -------------------------------------------------------------------------------------------

    def task_config(self):
        """The head's constructor arguments (everything but the backbone and preprocessor). Defaults to none."""
        return {}

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
        }
        if self._preprocessor_or_none() is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if config.get("preprocessor") is not None:
            import keras_bert_impl.preprocessing  # noqa: F401  registers the preprocessor classes (TF edge)

            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(**config)

    # -- our checkpoint directory -------------------------------------------------------------------------

    def save_pretrained(self, path):
        """Write our checkpoint directory, atomically: `config.json` + `model.safetensors`, and with a
        preprocessor its settings (`preprocessor.json`) and tokenizer (`vocab.txt`, `tokenizer_config.json`).
        `from_pretrained` of the same class restores every weight and the preprocessor."""
        from keras_bert_impl.checkpoints import native

        files = dict(self.checkpoint_files())
        if self._preprocessor_or_none() is not None:
            files[PREPROCESSOR_FILENAME] = self._write_preprocessor_config
            # Writes vocab.txt and tokenizer_config.json into the same staged directory.
            files[VOCABULARY_FILENAME] = lambda file_path: self.preprocessor.tokenizer.save_pretrained(
                os.path.dirname(file_path)
            )
        native.write_native(os.fspath(path), self, self.task_config(),
                            extra={"backbone_config": self.backbone.get_config()}, files=files)

    def save_to_preset(self, path):
        """Write the backbone, and the preprocessor's tokenizer, as a keras-hub preset directory (atomically):
        keras-hub's `BertBackbone`, `BertTokenizer` and task classes load it with `from_preset(path)`. The head
        stays here (`save_pretrained` keeps it)."""
        preprocessor = self._preprocessor_or_none()
        self.backbone.save_to_preset(path, tokenizer=None if preprocessor is None else preprocessor.tokenizer)

    def _write_preprocessor_config(self, file_path):
        config = self.preprocessor.get_config()
        config.pop("tokenizer")  # the tokenizer is vocab.txt + tokenizer_config.json beside it
        document = {"class_name": type(self.preprocessor).__name__, "config": config}
        with open(file_path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)

    def checkpoint_files(self):
        """`{file name: writer(path)}` of files `save_pretrained` puts beside the weights, inside the same
        atomic directory write. None here; tasks with more state (a classifier's labels) add theirs."""
        return {}

    # The preprocessor class a checkpoint without `preprocessor.json` gets, by name in
    # `keras_bert_impl.preprocessing`; None for tasks without one.
    default_preprocessor_class = None

    @classmethod
    def _pretrained_preprocessor(cls, path, preprocessor=AUTO, sequence_length=None, max_sequence_length=None):
        """The preprocessor `from_pretrained(path, preprocessor=...)` attaches.

        `preprocessor` is a preprocessor object (used as is), None / False (none), or "auto": the one saved
        in `path` (`preprocessor.json`), else `default_preprocessor_class` on the checkpoint's vocabulary, when
        `path` is a directory with `vocab.txt` and TensorFlow is installed. `sequence_length` overrides the
        packing length; by default it is the saved one, else `min(128, max_sequence_length)`.
        """
        if preprocessor is None or preprocessor is False:
            return None
        if preprocessor != AUTO:
            return preprocessor
        from keras_bert_impl.checkpoints import resolve_checkpoint

        path = resolve_checkpoint(path)  # a Hugging Face Hub id: its cached snapshot, where vocab.txt is
        if cls.default_preprocessor_class is None or not os.path.isfile(os.path.join(path, VOCABULARY_FILENAME)):
            return None
        try:
            import keras_bert_impl.preprocessing as preprocessing
        except ImportError as error:  # a JAX / torch install without TensorFlow: token ids only
            logger.info("%s has a vocabulary, but no preprocessor is attached: %s.", path, error)
            return None
        config_path = os.path.join(path, PREPROCESSOR_FILENAME)
        if os.path.isfile(config_path):
            with open(config_path, encoding="utf-8") as handle:
                document = json.load(handle)
            preprocessor_class = getattr(preprocessing, document["class_name"])
            settings = dict(document["config"])
        else:
            preprocessor_class = getattr(preprocessing, cls.default_preprocessor_class)
            settings = {"sequence_length": min(128, max_sequence_length or 128)}
        if sequence_length is not None:
            settings["sequence_length"] = sequence_length
        return preprocessor_class.from_pretrained(path, **settings)

    @classmethod
    def _preset_parts(cls, name, vocabulary, sequence_length=None, lowercase=True, **backbone_overrides):
        """`(backbone, preprocessor)` for `from_preset`: a randomly initialised backbone of preset `name`
        sized to the vocabulary, and the task's default preprocessor on it (None without a vocabulary). A
        keras-hub preset (`BertBackbone.from_preset`) gives its pretrained backbone, and its tokenizer unless
        `vocabulary` is given."""
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.models.presets import PRESETS

        if name in PRESETS:
            backbone = None  # sized to the vocabulary below
        else:
            from keras_bert_impl.checkpoints.keras_hub_presets import read_keras_hub_tokenizer

            backbone = BertBackbone.from_preset(name, **backbone_overrides)
            vocabulary = read_keras_hub_tokenizer(name) if vocabulary is None else vocabulary
        if vocabulary is None:
            return (BertBackbone.from_preset(name, **backbone_overrides) if backbone is None else backbone), None
        import keras_bert_impl.preprocessing as preprocessing
        from keras_bert_impl.tokenization import BertTokenizer

        tokenizer = vocabulary if isinstance(vocabulary, BertTokenizer) else BertTokenizer(vocabulary, lowercase=lowercase)
        if backbone is None:
            backbone = BertBackbone.from_preset(name, vocabulary_size=tokenizer.vocabulary_size(), **backbone_overrides)
        if cls.default_preprocessor_class is None:
            return backbone, None
        preprocessor_class = getattr(preprocessing, cls.default_preprocessor_class)
        length = sequence_length or min(128, backbone.max_sequence_length)
        return backbone, preprocessor_class(tokenizer, sequence_length=length)
