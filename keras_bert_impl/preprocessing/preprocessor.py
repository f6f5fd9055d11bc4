"""The base of the preprocessors: a tokenizer and its settings as one serializable Keras layer.

TensorFlow at the data edge: a preprocessor runs TensorFlow ops on purpose, inside `tf.data.Dataset.map` whatever
the Keras backend, and eagerly on Python lists (returning NumPy arrays). It is a Keras layer for its config (and a
place in a task's `.keras` file); it holds no weights, so `__call__` skips Keras' input conversion. A task holding
one feeds `fit` / `evaluate` / `predict` through `make_dataset`, so those take raw strings.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.data.length_bucketing import packed_batches
from keras_bert_impl.tokenization.bert_tokenizer import BertTokenizer

DEFAULT_BATCH_SIZE = 32


def _as_tokenizer(tokenizer):
    if isinstance(tokenizer, BertTokenizer):
        return tokenizer
    if isinstance(tokenizer, dict):
        return BertTokenizer.from_config(tokenizer)
    raise TypeError(f"`tokenizer` must be a BertTokenizer (or its config dict), got {type(tokenizer).__name__}.")


def _is_model_input(x):
    return isinstance(x, dict) and "token_ids" in x


def _to_numpy(structure):
    """TensorFlow tensors (dense) to NumPy arrays, for results of an eager call."""
    return tf.nest.map_structure(lambda value: value.numpy() if isinstance(value, (tf.Tensor, tf.Variable)) else value,
                                 structure)


def _as_string_tensor(texts, name, rank=1):
    """A `tf.string` tensor of `rank` (or `rank - 1`: one example) from str, lists of str, a NumPy string array
    or a tensor. `rank` 1 is a batch of texts `(B,)`; 2 a batch of choices `(B, C)`, every example with as many."""
    shape = "(B,)" if rank == 1 else "(B, C)"
    if rank == 2 and isinstance(texts, tf.RaggedTensor):
        raise ValueError(f"{name} must be strings of shape {shape}, every example with the same number of choices; "
                         f"got a RaggedTensor.")
    if isinstance(texts, (tf.Tensor, tf.RaggedTensor)):
        tensor = texts
    else:
        if isinstance(texts, np.ndarray) and texts.dtype == object:
            texts = texts.tolist()
        try:
            tensor = tf.convert_to_tensor(texts, dtype=tf.string)
        except (TypeError, ValueError) as error:
            if rank == 1:
                raise TypeError(f"{name} must be a str, a list of str or a string array/tensor; got "
                                f"{type(texts).__name__} ({error}).") from None
            raise ValueError(f"{name} must be strings of shape {shape}, every example with the same number of "
                             f"choices; got {type(texts).__name__} ({error}).") from None
    if tensor.dtype != tf.string:
        raise TypeError(f"{name} must hold strings, got a tensor of {tensor.dtype.name}.")
    if tensor.shape.rank not in (rank - 1, rank, None):
        raise ValueError(f"{name} must be strings of shape {shape} (or one example), got shape {tensor.shape}.")
    return tensor


def as_text_batch(texts, name):
    """tf.string `(B,)` from a batch of texts or one text (a batch of one); see `_as_string_tensor`."""
    return tf.reshape(_as_string_tensor(texts, name), [-1])


def refuse_pair_list(x):
    """Raise a TypeError for sentence pairs given as a list of pairs (they go as a tuple of two lists)."""
    if isinstance(x, list) and x and isinstance(x[0], (list, tuple)) and not isinstance(x[0], str):
        raise TypeError("x is a list of pairs; give sentence pairs as a tuple of two lists, (first_texts, "
                        "second_texts).")


def refuse_dataset_options(**options):
    """Raise a ValueError for an option given with a `tf.data.Dataset`, which holds its own targets and batches."""
    for name, value in options.items():
        if value is not None:
            raise ValueError(f"When `x` is a tf.data.Dataset, give no `{name}` (got {type(value).__name__}); "
                             "targets, batching, bucketing and epoch streams need in-memory data.")


def _slice_structure(structure, start, stop):
    if structure is None:
        return None
    if isinstance(structure, tuple):
        return tuple(_slice_structure(value, start, stop) for value in structure)
    if isinstance(structure, dict):
        return {key: _slice_structure(value, start, stop) for key, value in structure.items()}
    return structure[start:stop]


def _as_tensors(element):
    """Raw in-memory data (`Preprocessor._slices`' structure) as TensorFlow tensors, converted as
    `tf.data.Dataset.from_tensor_slices` converts it: tuples and dicts are structure, anything else one tensor."""
    if isinstance(element, tuple):
        return tuple(_as_tensors(value) for value in element)
    if isinstance(element, dict):
        return {key: _as_tensors(value) for key, value in element.items()}
    if isinstance(element, (tf.Tensor, tf.RaggedTensor)):
        return element
    if isinstance(element, np.ndarray) and element.dtype == object:
        element = element.tolist()
    return tf.convert_to_tensor(element)


def _first_leaf_length(structure):
    for value in tf.nest.flatten(structure if not isinstance(structure, list) else [structure]):
        if value is not None:
            return len(value)
    return None


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class Preprocessor(keras.layers.Layer):
    """Base of the BERT preprocessors: owns a `BertTokenizer` and turns raw text into model inputs.

    Subclasses implement `call(x, y=None, sample_weight=None)` in TensorFlow ops and return
    `keras.utils.pack_x_y_sample_weight(model_inputs, y, sample_weight)`.

    Args:
        tokenizer: `BertTokenizer` (or its `get_config()` dict), saved in this layer's config.
        sequence_length: int. `T`, the length every packed row is padded or truncated to.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).
    """

    # The constructor arguments a subclass adds: `get_config` saves the attributes of these names.
    _config_keys = ()

    def __init__(self, tokenizer, sequence_length=128, **kwargs):
        super().__init__(**kwargs)
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, (int, np.integer)) or (
                sequence_length < 3):
            raise ValueError(f"sequence_length must be an int >= 3 ([CLS] x [SEP]), got {sequence_length!r}.")
        self.tokenizer = _as_tokenizer(tokenizer)
        self.sequence_length = int(sequence_length)
        self._traced_preprocess = None  # `preprocess_batch`'s tf.function, traced on its first call
        self.built = True  # no weights

    def segment_packer(self, **settings):
        """The `data.packing.SegmentPacker` named "packer" for this tokenizer's `[CLS]`, `[SEP]`, `[PAD]` and
        `sequence_length`; `settings`: its `truncation`, `padding`, `seed`."""
        return SegmentPacker(self.sequence_length, self.tokenizer.cls_token_id, self.tokenizer.sep_token_id,
                             self.tokenizer.pad_token_id, name="packer", **settings)

    def __call__(self, *args, **kwargs):
        outputs = self.call(*args, **kwargs)
        return _to_numpy(outputs) if tf.executing_eagerly() else outputs

    def call(self, x, y=None, sample_weight=None):
        raise NotImplementedError

    def tokenize(self, texts, name="x"):
        """int32 token ids of a batch of texts: a `(B, None)` RaggedTensor (`(None,)` for one text)."""
        return self.tokenizer.tokenize_tensor(_as_string_tensor(texts, name))

    def make_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, seed=None,
                     bucket_width=None, epochs=None):
        """Batched, preprocessed `tf.data.Dataset` of model inputs (and targets) from raw data.

        In-memory data with `bucket_width` or `epochs`, and packed inputs, are featurized eagerly and batched by
        `data.length_bucketing.packed_batches` (what `keras-bert finetune-*` trains on).

        Args:
            x: raw inputs as `call` takes them, packed model inputs (a dict with `token_ids`), or a batched
                `tf.data.Dataset` of either, mapped as it is: elements `(x, y)` or `(x, y, sample_weight)` (text
                pairs without targets: `((first, second),)`).
            y, sample_weight: targets and per-example weights, or None; not allowed with a dataset.
            batch_size: int or None. Rows per batch for in-memory data. Defaults to 32.
            shuffle: bool. Shuffle in-memory data before batching (every epoch). Defaults to False.
            seed: int or None. The shuffle seed. Defaults to None.
            bucket_width: int or None. Length bucketing: rows batched with rows of similar length and padded to
                their bucket (a multiple of `bucket_width`); the row order changes, so predict on fixed padding.
                None: every batch padded to `sequence_length`. Defaults to None.
            epochs: int or None. The batches of epochs `0 .. epochs - 1` as one stream, epoch `e` in an order
                fixed by `(seed, e)`: fit with `steps_per_epoch=cardinality // epochs`, resume at epoch `i` on
                `dataset.skip(i * steps)`. None: one epoch, reshuffled on every iteration. Defaults to None.

        Returns:
            `tf.data.Dataset` of `x`, `(x, y)` or `(x, y, sample_weight)` batches.

        Example:
        >>> from keras_bert_impl.tokenization import BertTokenizer
        >>> from keras_bert_impl.preprocessing import BertPreprocessor
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"])
        >>> preprocessor = BertPreprocessor(tokenizer, sequence_length=16)
        >>> dataset = preprocessor.make_dataset(["good film", "bad"] * 3, [1, 0] * 3, batch_size=4, shuffle=True,
        ...                                     seed=0, bucket_width=8, epochs=2)
        >>> int(dataset.cardinality()), [tuple(x["token_ids"].shape) for x, y in dataset.take(2)]
        (4, [(4, 8), (2, 8)])
        """
        if isinstance(x, tf.data.Dataset):
            refuse_dataset_options(y=y, sample_weight=sample_weight, batch_size=batch_size, bucket_width=bucket_width,
                                   epochs=epochs)
            element_x = keras.utils.unpack_x_y_sample_weight(x.element_spec)[0]
            if _is_model_input(element_x):
                return x
            return x.map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
        if _is_model_input(x) or bucket_width is not None or epochs is not None:
            if not _is_model_input(x):
                x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(self(x, y, sample_weight))
            return packed_batches(x, y, sample_weight, batch_size=batch_size or DEFAULT_BATCH_SIZE,
                                  bucket_width=bucket_width, shuffle=shuffle, seed=seed, epochs=epochs,
                                  pad_token_id=self.tokenizer.pad_token_id)
        dataset = tf.data.Dataset.from_tensor_slices(self._slices(x, y, sample_weight))
        if shuffle:
            dataset = dataset.shuffle(int(dataset.cardinality()), seed=seed, reshuffle_each_iteration=True)
        dataset = self._batch(dataset, batch_size or DEFAULT_BATCH_SIZE)
        return dataset.map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def preprocess_batch(self, x):
        """Model inputs (NumPy) of one in-memory batch of raw inputs, without a `tf.data` pipeline: what a batch of
        `make_dataset(x)` holds, from the same `call`, traced once into a `tf.function` kept on this preprocessor
        (relaxed to any batch size by the second size it sees), so a warm call runs one TensorFlow graph.

        Args:
            x: raw inputs as `make_dataset` takes them (texts `(B,)`, a tuple of text batches, ...).

        Returns:
            The model inputs dict (e.g. `token_ids` int32 `(B, T)`), NumPy arrays.

        Example:
        >>> from keras_bert_impl.tokenization import BertTokenizer
        >>> from keras_bert_impl.preprocessing import BertPreprocessor
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"])
        >>> preprocessor = BertPreprocessor(tokenizer, sequence_length=6)
        >>> preprocessor.preprocess_batch((["good film"], ["bad"]))["token_ids"].tolist()
        [[2, 5, 7, 3, 6, 3]]
        """
        element = _as_tensors(self._slices(x, None, None))
        if self._traced_preprocess is None:
            self._traced_preprocess = tf.function(self._preprocess_element, reduce_retracing=True)
        # As `tf.data` maps it: a tuple element as positional arguments, anything else as one.
        return _to_numpy(self._traced_preprocess(*(element if isinstance(element, tuple) else (element,))))

    def _slices(self, x, y, sample_weight):
        """Raw in-memory data as `tf.data.Dataset.from_tensor_slices` takes it (subclasses convert their inputs)."""
        refuse_pair_list(x)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    @staticmethod
    def _batch(dataset, batch_size):
        return dataset.batch(batch_size)

    # The element function is plain TensorFlow (no Python control flow on tensors): autograph's conversion of it and
    # of everything it calls cost a process about 2 CPU-seconds on its first pipeline and changed nothing.
    @tf.autograph.experimental.do_not_convert
    def _preprocess_element(self, *element):
        # tf.data passes a tuple element as positional arguments: (x,), (x, y) or (x, y, sample_weight).
        return self.call(*element)

    @staticmethod
    def split_validation(x, y, sample_weight, validation_split):
        """`((x, y, sample_weight), validation_data)`: the last `validation_split` of in-memory data held out,
        as Keras' `fit(validation_split=...)` does."""
        length = _first_leaf_length(x)
        if length is None or isinstance(x, tf.data.Dataset):
            raise ValueError("validation_split needs in-memory data (lists or arrays), not a dataset.")
        split_at = int(np.floor(length * (1.0 - validation_split)))
        if split_at in (0, length):
            raise ValueError(f"{length} examples cannot be split into a training and a validation set with "
                             f"validation_split={validation_split}.")
        train = tuple(_slice_structure(value, 0, split_at) for value in (x, y, sample_weight))
        validation = tuple(_slice_structure(value, split_at, length) for value in (x, y, sample_weight))
        return train, keras.utils.pack_x_y_sample_weight(*validation)

    def get_config(self):
        config = super().get_config()
        config.update(tokenizer=self.tokenizer.get_config(), sequence_length=self.sequence_length)
        config.update({key: getattr(self, key) for key in self._config_keys})
        return config

    @classmethod
    def from_pretrained(cls, directory, **kwargs):
        """This preprocessor on the tokenizer of a checkpoint directory; `kwargs` are its own settings."""
        return cls(BertTokenizer.from_pretrained(directory), **kwargs)
