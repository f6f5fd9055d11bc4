"""The base of every model that puts a head on a `BertBackbone` (each task declares only its head, as keras-hub's
`Task` subclasses): an optional preprocessor (raw text in `fit`, `evaluate` and `predict`; TensorFlow, imported
only to attach one), config round trip, loading and saving in every format, and the fine-tuning `compile()`.
"""

import inspect
import json
import logging
import os

import keras
from keras import ops

from keras_bert_impl.checkpoints import backbone_config, native, read_checkpoint, resolve_checkpoint, save_huggingface
from keras_bert_impl.checkpoints.keras_hub_presets import read_keras_hub_tokenizer, write_keras_hub_preset
from keras_bert_impl.checkpoints.name_map import output_layer_specs
from keras_bert_impl.data.label_vocabulary import LABEL_VOCABULARY_FILENAME, LabelVocabulary
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.presets import refuse_size_as_preset
from keras_bert_impl.models.task_checkpoints import StoredCheckpoint, load_task_weights, stored_head
from keras_bert_impl.optimization import create_optimizer
from keras_bert_impl.utils.file_patterns import POSITIVE, read_json

logger = logging.getLogger(__name__)

PREPROCESSOR_FILENAME = "preprocessor.json"
VOCABULARY_FILENAME = "vocab.txt"
# `from_pretrained(..., preprocessor=AUTO)`: attach one when the checkpoint has a vocabulary.
AUTO = "auto"
# `predict`'s rows per batch, as Keras' and `Preprocessor.make_dataset`'s default.
DEFAULT_PREDICT_BATCH_SIZE = 32
# The dropout of every head on the encoder's output, as the original and Hugging Face.
DEFAULT_DROPOUT = 0.1


def check_head_dropout(model_name, dropout):
    """Refuse a head dropout rate outside [0, 1) in one line naming the model."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{model_name} `dropout` must be in [0, 1), got {dropout!r}.")


def check_classification_head(model_name, num_classes, dropout, labels):
    """Check a classification head's arguments; return `labels` as a tuple of str, or None."""
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise ValueError(f"{model_name} `num_classes` must be a positive integer, got {num_classes!r}.")
    check_head_dropout(model_name, dropout)
    if labels is None:
        return None
    labels = tuple(str(label) for label in getattr(labels, "labels", labels))
    if len(labels) != num_classes:
        raise ValueError(f"{model_name} got {len(labels)} labels {list(labels)} for num_classes={num_classes}.")
    return labels


def classification_head_arguments(task_class, checkpoint, num_classes=None, labels=None, classifier_dropout=None):
    """`{"num_classes", "labels", "dropout"}` for `from_pretrained`: the given values, else the checkpoint's
    (`task_checkpoints.stored_head`; its labels only for its own number of classes), else dropout 0.1."""
    stored = stored_head(task_class, checkpoint)
    if num_classes is None:
        if stored["num_classes"] is None:
            raise ValueError(f"{checkpoint.path} has no {task_class.__name__} head, so `num_classes` is needed "
                             f"(e.g. {task_class.__name__}.from_pretrained(path, num_classes=2)).")
        num_classes = stored["num_classes"]
    if labels is None and stored["labels"] is not None and len(stored["labels"]) == num_classes:
        labels = stored["labels"]
    if classifier_dropout is None:
        classifier_dropout = DEFAULT_DROPOUT if stored["dropout"] is None else stored["dropout"]
    return {"num_classes": num_classes, "labels": labels, "dropout": classifier_dropout}


def labelled_huggingface_config(num_classes, labels, dropout):
    """`num_labels`, `id2label`, `label2id` (`LABEL_i` without `labels`, as `transformers`) and
    `classifier_dropout` for a Hugging Face config.json."""
    labels = labels or tuple(f"LABEL_{index}" for index in range(num_classes))
    return {
        "num_labels": num_classes,
        "id2label": {str(index): label for index, label in enumerate(labels)},
        "label2id": {label: index for index, label in enumerate(labels)},
        "classifier_dropout": dropout,
    }


def saved_preprocessor(path):
    """`(class_name, config)` of the preprocessor saved in the model directory `path` (`preprocessor.json`), or
    `(None, {})` without one; a malformed file raises one `ValueError` line naming it, the key and the value."""
    file_path = os.path.join(os.fspath(path), PREPROCESSOR_FILENAME) if path else ""
    if not os.path.isfile(file_path):
        return None, {}
    # [CLS] x [SEP]: the shortest sequence any preprocessor packs
    document = read_json(file_path, schema={"class_name": str, "config": {"sequence_length?": range(3, POSITIVE.stop)}})
    return document["class_name"], dict(document["config"])


def pooled_output(backbone, inputs):
    """The backbone's pooled output `(B, H)`; a `(B, 0)` `output_positions` makes its last block compute [CLS] alone."""
    no_positions = ops.zeros_like(inputs["token_ids"][:, :0])
    return backbone(inputs, output_positions=no_positions)["pooled_output"]


def head_logits(backbone, x, units, name, dropout=None):
    """float32 logits of a `Dense(units)` named `{name}_dense` on `x` (after a `Dropout(dropout)` named
    `{name}_dropout` when `dropout` is given), initialised and typed as the backbone's layers."""
    if dropout is not None:
        x = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name=f"{name}_dropout")(x)
    logits = keras.layers.Dense(units, kernel_initializer=keras.initializers.TruncatedNormal(
        stddev=backbone.initializer_range), dtype=backbone.dtype_policy, name=f"{name}_dense")(x)
    return ops.cast(logits, "float32")


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


def _raw_rows(x):
    """Examples in raw in-memory `x` (texts `(B,)`, or a tuple of text batches); None for one str or a dataset."""
    if isinstance(x, tuple):
        return _raw_rows(x[0]) if x else None
    if isinstance(x, (str, bytes)) or not hasattr(x, "__getitem__"):
        return None
    try:
        return len(x)
    except TypeError:  # a rank-0 array or tensor: one text
        return None


def _fits_one_batch(rows, batch_size, predict_kwargs):
    """Whether `predict` can run `rows` examples as one batch through Keras' predict step: at most `batch_size`
    (default 32) of them, and no `predict` argument that needs Keras' loop (`steps`, `callbacks`)."""
    return rows is not None and 0 < rows <= (batch_size or DEFAULT_PREDICT_BATCH_SIZE) and set(predict_kwargs) <= {
        "verbose"}


class BertTask(keras.Model):
    """A functional Keras model: `backbone` plus a head, optionally holding a preprocessor.

    Subclasses build their graph in `__init__(backbone, ..., preprocessor=None, **kwargs)`, call
    `super().__init__(backbone, inputs, outputs, preprocessor, **kwargs)`, keep each head argument as the
    attribute of its name (`task_config()` reads them), and declare what differs below.

    With a preprocessor, `fit`, `evaluate` and `predict` take raw strings (lists, NumPy string arrays, tuples
    of them for text pairs, or a `tf.data.Dataset`), preprocessed in `tf.data` (`preprocessor.make_dataset`);
    model inputs (a dict with `token_ids`) pass through. Without one the task takes token ids only.
    `predict` on in-memory text of at most one batch (`batch_size`, default 32) skips the per-call `tf.data`
    pipeline: `preprocessor.preprocess_batch` (one traced function, kept) and `predict_on_batch` (Keras' compiled
    predict step), with the same outputs; more rows, a dataset, or `steps` / `callbacks` stream through `tf.data`.
    """

    def __init__(self, backbone, inputs, outputs, preprocessor=None, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        if self.unused_backbone_paths:  # no gradient reaches the pooler: frozen, optimizers do not warn each step
            backbone.pooler.trainable = False

    # -- preprocessing ------------------------------------------------------------------------------------
    # `self.preprocessor` (None or a preprocessor, set by `__init__`) is a plain attribute, not a property: torch's
    # `Module.__setattr__` bypasses descriptors.

    def __call__(self, *args, **kwargs):
        inputs = args[0] if args else kwargs.get("inputs")
        if _contains_strings(inputs):
            raise ValueError(f"{type(self).__name__} was called on strings; calling a model does not preprocess. Use "
                             "predict(texts) with a preprocessor attached, or call it on model(preprocessor(texts)).")
        return super().__call__(*args, **kwargs)

    def _preprocessed(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        return self.preprocessor.make_dataset(x, y, sample_weight, batch_size=batch_size, shuffle=shuffle)

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, validation_data=None,
            validation_split=0.0, shuffle=True, **kwargs):
        if self.preprocessor is None:
            return super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight,
                               validation_data=validation_data, validation_split=validation_split,
                               shuffle=shuffle, **kwargs)
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = self.preprocessor.split_validation(x, y, sample_weight,
                                                                                        validation_split)
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
        if self.preprocessor is None or kwargs.get("_use_cached_eval_dataset", False):
            return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)
        return super().evaluate(self._preprocessed(x, y, sample_weight, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        if self.preprocessor is None:
            return super().predict(x, batch_size=batch_size, **kwargs)
        if self.predicts_raw_batch_directly and _contains_strings(x) and _fits_one_batch(
                _raw_rows(x), batch_size, kwargs):
            return self.predict_on_batch(self.preprocessor.preprocess_batch(x))
        return super().predict(self._preprocessed(x, batch_size=batch_size), **kwargs)

    def _predict_inputs(self, inputs, batch_size=None, **kwargs):
        """`keras.Model.predict` of in-memory model inputs (a dict of `(F, ...)` arrays, `F` rows); rows that fit
        one batch go straight through Keras' compiled predict step (`predict_on_batch`), without a data pipeline."""
        rows = len(next(iter(inputs.values())))
        if _fits_one_batch(rows, batch_size, kwargs):
            return self.predict_on_batch(inputs)
        return keras.Model.predict(self, inputs, batch_size=batch_size or DEFAULT_PREDICT_BATCH_SIZE, **kwargs)

    # -- config -------------------------------------------------------------------------------------------

    def task_config(self):
        """The head's constructor arguments, read from the attributes of the same names."""
        config = {name: getattr(self, name) for name in self._head_parameter_names()}
        return {name: list(value) if isinstance(value, tuple) else value for name, value in config.items()}

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "backbone": keras.saving.serialize_keras_object(self.backbone), **self.task_config()}
        if self.preprocessor is not None:
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

    # -- what each task declares (as keras-hub's Task declares `backbone_cls` / `preprocessor_cls`) ----------

    # Whether `predict` runs raw in-memory text that fits one batch as `preprocessor.preprocess_batch` +
    # `predict_on_batch` (one traced TensorFlow function, then Keras' compiled predict step) instead of a
    # `tf.data` pipeline per call; False where a batch of `make_dataset` is not that (the pretrainer's seeded masks).
    predicts_raw_batch_directly = True
    # The preprocessor class (a name in `keras_bert_impl.preprocessing`) built when none is saved; None for none.
    default_preprocessor_class = None
    # That preprocessor's packing length (at most the backbone's `max_sequence_length`).
    default_sequence_length = 128
    # The `architectures` entry of the Hugging Face directory `save_huggingface` writes.
    huggingface_architecture = "BertModel"
    # Backbone variables the head does not read (the pooler of a token-level head, which Hugging Face's
    # BertForTokenClassification / BertForQuestionAnswering lack); a checkpoint may lack them.
    unused_backbone_paths = ()
    # The default optimizer's peak learning rate and warmup (`compile`).
    default_learning_rate = 5e-5
    default_warmup_fraction = 0.1

    # The head's output layer as `(our layer, Hugging Face module, original variable prefix or None)`
    # (`checkpoints.name_map.output_layer_specs`); None for a head without one.
    head_output_layer = None

    @classmethod
    def head_specs(cls):
        """The head's variables as `checkpoints.WeightSpec`s: our paths, Hugging Face's and the original's."""
        return [] if cls.head_output_layer is None else output_layer_specs(*cls.head_output_layer)

    @classmethod
    def reads_foreign_head(cls, checkpoint):
        """Whether a Hugging Face or original `checkpoint`'s head tensors (`head_specs`' names) are this head."""
        del checkpoint
        return True

    @classmethod
    def pretrained_head_arguments(cls, checkpoint):
        """The head's arguments for `from_pretrained`: this method's keyword arguments as the caller gave them,
        else what `checkpoint` (a `task_checkpoints.StoredCheckpoint`) stores."""
        del checkpoint
        return {}

    def huggingface_config(self):
        """Fields `save_huggingface` adds to the Hugging Face config.json (e.g. `num_labels`)."""
        return {}

    def default_loss_and_metrics(self):
        """`(loss, metrics)` for `compile()` without `loss` (the metrics only without `metrics`); `(None, None)`
        for a task that computes its own loss."""
        return None, None

    def keras_hub_task_head(self):
        """The head `save_to_preset` writes as a keras-hub task, or None (backbone and tokenizer only)."""
        return None

    @property
    def label_vocabulary(self):
        """The `LabelVocabulary` of the head's `labels`, or None without label names."""
        labels = getattr(self, "labels", None)
        return None if labels is None else LabelVocabulary(labels)

    # -- loading: our directories, Hugging Face, original BERT, keras-hub presets, published sizes ----------

    @classmethod
    def from_pretrained(cls, path, *, preprocessor=AUTO, sequence_length=None, revision=None, **kwargs):
        """Build this task from any checkpoint `checkpoints.read_checkpoint` reads.

        A checkpoint with this task's head loads it too; otherwise the head keeps its initial values, listed in
        `model.load_report.missing` and named in a WARNING (as are checkpoint tensors left unused).

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix), or a Hugging Face Hub model id
                (`checkpoints.hub_cache`).
            preprocessor: "auto", a preprocessor, or None. "auto" attaches the one saved with the model, else
                `default_preprocessor_class` on the checkpoint's `vocab.txt` (none without a vocabulary or
                TensorFlow). Defaults to "auto".
            sequence_length: int or None. The preprocessor's length; None keeps the saved one, else
                `min(default_sequence_length, max_sequence_length)`. Defaults to None.
            revision: str or None. A Hugging Face Hub branch, tag or commit, for a Hub model id. Defaults to None.
            **kwargs: the head's arguments (those of `pretrained_head_arguments`: `num_classes`, `labels`,
                `classifier_dropout` for the classifiers), the rest backbone config values to change (e.g.
                `dropout=0.0`, `dtype="mixed_bfloat16"`).

        Returns:
            The task model, with `load_report` (a `checkpoints.LoadReport`).

        Example:
        >>> model = BertClassifier.from_pretrained("google-bert/bert-base-uncased", num_classes=2)  # doctest: +SKIP
        """
        head_names = inspect.signature(cls.pretrained_head_arguments).parameters
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in head_names and name != "checkpoint"}
        path = resolve_checkpoint(path, revision)
        checkpoint = StoredCheckpoint(path, *read_checkpoint(path))
        head = cls.pretrained_head_arguments(checkpoint, **given)
        backbone = BertBackbone(**{**backbone_config(checkpoint.fmt, checkpoint.config, checkpoint.extra), **kwargs})
        preprocessor = cls._pretrained_preprocessor(path, preprocessor, sequence_length, backbone.max_sequence_length)
        model = cls(backbone, preprocessor=preprocessor, **head)
        load_task_weights(model, checkpoint)
        return model

    @classmethod
    def _pretrained_preprocessor(cls, path, preprocessor=AUTO, sequence_length=None, max_sequence_length=None):
        """The preprocessor `from_pretrained(path, preprocessor=...)` attaches (see its Args)."""
        if preprocessor is None or preprocessor is False:
            return None
        if preprocessor != AUTO:
            return preprocessor
        path = resolve_checkpoint(path)  # a Hugging Face Hub id: its cached snapshot, where vocab.txt is
        if cls.default_preprocessor_class is None or not os.path.isfile(os.path.join(path, VOCABULARY_FILENAME)):
            return None
        try:
            import keras_bert_impl.preprocessing as preprocessing
        except ImportError as error:  # a JAX / torch install without TensorFlow: token ids only
            logger.info("%s has a vocabulary, but no preprocessor is attached: %s.", path, error)
            return None
        class_name, settings = saved_preprocessor(path)
        if class_name is not None:
            preprocessor_class = getattr(preprocessing, class_name, None)
            if not (isinstance(preprocessor_class, type) and issubclass(preprocessor_class, preprocessing.Preprocessor)
                    and preprocessor_class is not preprocessing.Preprocessor):
                raise ValueError(f"{os.path.join(path, PREPROCESSOR_FILENAME)}: class_name {class_name!r} is not a "
                                 f"preprocessor of this package; restore the file from what wrote it.")
        else:
            preprocessor_class = getattr(preprocessing, cls.default_preprocessor_class)
            settings = {"sequence_length": cls._default_length(max_sequence_length)}
        if sequence_length is not None:
            settings["sequence_length"] = sequence_length
        elif max_sequence_length and settings.get("sequence_length", 0) > max_sequence_length:  # before any call
            raise ValueError(f"{os.path.join(path, PREPROCESSOR_FILENAME)}: config.sequence_length is "
                             f"{settings['sequence_length']}, longer than the model's position table "
                             f"({max_sequence_length}); restore the file from what wrote it, or pass a "
                             f"sequence_length of at most {max_sequence_length}.")
        return preprocessor_class.from_pretrained(path, **settings)

    @classmethod
    def _default_length(cls, max_sequence_length):
        return min(cls.default_sequence_length, max_sequence_length or cls.default_sequence_length)

    @classmethod
    def from_preset(cls, preset, *, vocabulary=None, sequence_length=None, lowercase=True, **kwargs):
        """Build this task on a keras-hub BERT preset's pretrained backbone and tokenizer, as
        `keras_hub.models.<Task>.from_preset` does; the head starts from its initial values.

        Args:
            preset: str. A keras-hub preset directory or handle (`"bert_base_en_uncased"`, `"kaggle://..."`,
                `"hf://..."`); a published size without weights is `from_scratch`'s.
            vocabulary: str, list of str, `BertTokenizer` or None. Overrides the preset's tokenizer. Defaults to
                None.
            sequence_length: int or None. The preprocessor's length, as in `from_scratch`. Defaults to None.
            lowercase: bool. As in `from_scratch`. Defaults to True.
            **kwargs: the head's arguments, the rest backbone config values, as in `from_scratch`.

        Example:
        >>> model = BertClassifier.from_preset("bert_base_en_uncased", num_classes=2)  # doctest: +SKIP
        """
        refuse_size_as_preset(cls.__name__, preset)
        head = cls._head_arguments(kwargs)
        backbone = BertBackbone.from_preset(preset, **kwargs)
        vocabulary = read_keras_hub_tokenizer(preset) if vocabulary is None else vocabulary
        return cls(backbone, preprocessor=cls._new_preprocessor(backbone, vocabulary, sequence_length, lowercase),
                   **head)

    @classmethod
    def from_scratch(cls, size, *, vocabulary=None, sequence_length=None, lowercase=True, **kwargs):
        """A randomly initialised task of a published size (`models.presets.PRESETS`: "tiny" ... "large").

        Args:
            size: str. The size.
            vocabulary: str, list of str, `BertTokenizer` or None. A `vocab.txt` path or the tokens: the backbone
                is sized to it and the task's default preprocessor on it is attached. None: no preprocessor, the
                published 30,522-token size. Defaults to None.
            sequence_length: int or None. The preprocessor's length. Defaults to
                `min(default_sequence_length, max_sequence_length)`.
            lowercase: bool. The tokenizer's casing when `vocabulary` is a path or a list. Defaults to True.
            **kwargs: the head's constructor arguments (e.g. `num_classes`, `dropout`, `labels`), the rest
                backbone config values (e.g. `max_sequence_length=256`).

        Example:
        >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]
        >>> from keras_bert_impl.models.classifier import BertClassifier
        >>> model = BertClassifier.from_scratch("tiny", num_classes=2, vocabulary=vocabulary)
        >>> model.predict(["good", "bad"], verbose=0).shape
        (2, 2)
        """
        head = cls._head_arguments(kwargs)
        tokenizer = cls._tokenizer(vocabulary, lowercase)
        if tokenizer is not None:
            kwargs = {"vocabulary_size": tokenizer.vocabulary_size(), **kwargs}
        backbone = BertBackbone.from_scratch(size, **kwargs)
        return cls(backbone, preprocessor=cls._new_preprocessor(backbone, tokenizer, sequence_length, lowercase),
                   **head)

    @classmethod
    def _head_parameter_names(cls):
        return [name for name in inspect.signature(cls.__init__).parameters
                if name not in ("self", "backbone", "preprocessor", "kwargs")]

    @classmethod
    def _head_arguments(cls, kwargs):
        """Take the head's constructor arguments out of `kwargs`."""
        return {name: kwargs.pop(name) for name in cls._head_parameter_names() if name in kwargs}

    @staticmethod
    def _tokenizer(vocabulary, lowercase):
        if vocabulary is None:
            return None
        from keras_bert_impl.tokenization import BertTokenizer

        return vocabulary if isinstance(vocabulary, BertTokenizer) else BertTokenizer(vocabulary, lowercase=lowercase)

    @classmethod
    def _new_preprocessor(cls, backbone, vocabulary, sequence_length, lowercase):
        """The task's default preprocessor on `vocabulary` (None without one)."""
        tokenizer = cls._tokenizer(vocabulary, lowercase)
        if tokenizer is None or cls.default_preprocessor_class is None:
            return None
        import keras_bert_impl.preprocessing as preprocessing

        preprocessor_class = getattr(preprocessing, cls.default_preprocessor_class)
        return preprocessor_class(tokenizer, sequence_length=sequence_length or cls._default_length(
            backbone.max_sequence_length))

    # -- saving: our directories, Hugging Face, keras-hub presets -------------------------------------------

    def save_pretrained(self, path):
        """Write our checkpoint directory, atomically: `config.json` + `model.safetensors`, with `labels`
        `label_vocabulary.json`, and with a preprocessor `preprocessor.json`, `vocab.txt` and
        `tokenizer_config.json`."""
        vocabulary = self.label_vocabulary
        files = {} if vocabulary is None else {LABEL_VOCABULARY_FILENAME: vocabulary.save}
        if self.preprocessor is not None:
            files[PREPROCESSOR_FILENAME] = self._write_preprocessor_config
            # Writes vocab.txt and tokenizer_config.json into the same staged directory.
            files[VOCABULARY_FILENAME] = lambda file: self.preprocessor.tokenizer.save_pretrained(os.path.dirname(file))
        native.write_native(os.fspath(path), self, self.task_config(),
                            extra={"backbone_config": self.backbone.get_config()}, files=files)

    def _write_preprocessor_config(self, file_path):
        config = self.preprocessor.get_config()
        config.pop("tokenizer")  # the tokenizer is vocab.txt + tokenizer_config.json beside it
        document = {"class_name": type(self.preprocessor).__name__, "config": config}
        with open(file_path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)

    def save_huggingface(self, path):
        """Write a Hugging Face directory of `huggingface_architecture`, atomically; `transformers` loads it."""
        save_huggingface(self, path, head_specs=self.head_specs(), architectures=(self.huggingface_architecture,),
                         config_updates=self.huggingface_config())

    def save_to_preset(self, path):
        """Write a keras-hub preset directory, atomically: the backbone, the tokenizer, and the head where
        keras-hub has the task (`keras_hub_task_head`). keras-hub's and our `from_preset(path)` load it."""
        tokenizer = None if self.preprocessor is None else self.preprocessor.tokenizer
        write_keras_hub_preset(self.backbone, path, tokenizer=tokenizer, classifier_head=self.keras_hub_task_head())

    # -- training defaults ----------------------------------------------------------------------------------

    def compile(self, optimizer="auto", *, learning_rate=None, total_steps=None, warmup_fraction=None,
                weight_decay=None, **kwargs):
        """`keras.Model.compile` with the BERT fine-tuning optimizer by default (tasks add their loss).

        Args:
            optimizer: "auto" (the original recipe, `optimization.create_optimizer`'s `AdamWeightDecay`) or any
                Keras optimizer. Defaults to "auto".
            learning_rate: float or None. The peak rate of "auto". Defaults to `default_learning_rate` (5e-5;
                the pretrainer's 1e-4).
            total_steps: int or None. Optimizer updates of the whole run (`epochs * steps_per_epoch`): warmup,
                then linear decay to 0. Defaults to None (a constant rate).
            warmup_fraction: float or None. Warmup share of `total_steps`. Defaults to `default_warmup_fraction`
                (0.1; the pretrainer's 0.01, 10k of 1M steps).
            weight_decay: float or None. Decoupled weight decay. Defaults to 0.01.
            **kwargs: passed to `keras.Model.compile` (`loss`, `metrics`, `jit_compile`, ...). Without `loss`, the
                task's `default_loss_and_metrics()`.

        Example:
        >>> from keras_bert_impl.models.classifier import BertClassifier
        >>> model = BertClassifier.from_scratch("tiny", num_classes=2, num_layers=1)
        >>> model.compile(total_steps=100)  # 10 warmup updates to 5e-5, then linear decay to 0 at update 100
        >>> type(model.optimizer).__name__, float(model.optimizer.learning_rate)  # update 0 of the warmup
        ('AdamWeightDecay', 0.0)
        """
        settings = {"learning_rate": learning_rate, "total_steps": total_steps, "warmup_fraction": warmup_fraction,
                    "weight_decay": weight_decay}
        settings = {name: value for name, value in settings.items() if value is not None}
        if not (isinstance(optimizer, str) and optimizer == "auto"):
            if settings:
                raise ValueError(f"{', '.join(settings)} set the default optimizer (optimizer='auto'); this "
                                 f"compile() got optimizer={optimizer!r}, so set them on that optimizer.")
        else:
            if total_steps is not None and warmup_fraction is None:
                warmup_fraction = self.default_warmup_fraction
            optimizer = create_optimizer(learning_rate=learning_rate or self.default_learning_rate,
                                         total_steps=total_steps, warmup_fraction=warmup_fraction,
                                         weight_decay=0.01 if weight_decay is None else weight_decay)
        if kwargs.get("loss") is None:
            kwargs["loss"], default_metrics = self.default_loss_and_metrics()
            kwargs["metrics"] = default_metrics if kwargs.get("metrics") is None else kwargs["metrics"]
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        """Compile a loaded `.keras` model as saved (Keras' own skips a model with its own `compile`)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _with_layer_losses(self, loss):
        """`loss` plus the regularisation losses layers added, if any (what Keras' own `compute_loss` adds)."""
        for extra_loss in self.losses:
            loss = loss + ops.cast(ops.sum(extra_loss), loss.dtype)
        return loss
