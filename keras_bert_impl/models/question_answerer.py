"""BERT extractive question answering (SQuAD): Dense(2) on every token -> start and end logits.

Shape legend: B batch, T tokens, H hidden width.
"""


import os

import keras
from keras import ops

from keras_bert_impl.models.losses import SpanCrossEntropy
from keras_bert_impl.models.task import AUTO, PREPROCESSOR_FILENAME, BertTask, _contains_strings
from keras_bert_impl.models.task_checkpoints import compile_from_saved_config, load_task_weights

# The span model reads the sequence output only; a Hugging Face BertForQuestionAnswering has no pooler.
UNUSED_BACKBONE_PATHS = ("pooler_dense/kernel", "pooler_dense/bias")
LABEL_TO_OUTPUT = {"start_positions": "start_logits", "end_positions": "end_logits"}
# run_squad.py's feature length, the default preprocessor's `sequence_length` (at most the model's).
DEFAULT_SEQUENCE_LENGTH = 384


def _targets_by_output(y):
    """Rename the label dict (`start_positions`, `end_positions`) to the output names, so that Keras losses and
    metrics given per output (`{"start_logits": ...}`) find their targets."""
    if isinstance(y, dict) and set(y) == set(LABEL_TO_OUTPUT):
        return {LABEL_TO_OUTPUT[key]: value for key, value in y.items()}
    return y


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertQuestionAnswerer(BertTask):
    """Span extraction with BERT (Devlin et al., 2018, section 4.2), as `run_squad.py`.

    One `Dense(2)` layer named "span_dense" maps each token's sequence output to a start and an end logit.
    The backbone's pooler is not used and is frozen (`trainable = False`).
    The logits of padded positions are left as they are (as the original and Hugging Face do): the SQuAD
    decoder (`squad.decode_squad_predictions`) only considers document tokens of each window.

    `compile()` without `loss` trains with `SpanCrossEntropy`, `(CE(start) + CE(end)) / 2`, and, unless
    `metrics` is given, reports `start_logits_accuracy` and `end_logits_accuracy`. A user `loss` or `metrics` given per
    output (`{"start_logits": ..., "end_logits": ...}`) receives `start_positions` / `end_positions` as the
    targets. Works on TensorFlow, JAX and torch, with `jit_compile=True` on TensorFlow and JAX.

    With a preprocessor (`preprocessing.BertQuestionAnsweringPreprocessor`), `predict(questions, contexts)`
    (or `predict((questions, contexts))`) answers raw text: it windows the contexts, runs the model and
    decodes as `run_squad.py` (`squad.decode_squad_predictions`, with the preprocessor's n-best, answer
    length and null-threshold settings), returning one `{"text", "start", "end", "score"}` dict per question
    (`context[start:end] == text`; "" and -1, -1 for no answer; v2.0 models add `null_odds`). The same
    answers as the offline evaluation and as an exported SavedModel's `serve_text`. `fit`, `evaluate` and
    `predict` on token ids work with or without one.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        preprocessor: `preprocessing.BertQuestionAnsweringPreprocessor` or None. Defaults to None (token ids
            only).
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`.
    Outputs (dict): `start_logits` float32 `(B, T)`, `end_logits` float32 `(B, T)`.
    Targets for `fit` (dict): `start_positions` int `(B,)`, `end_positions` int `(B,)` (0 = [CLS] for no
    answer in the window).

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16, max_sequence_length=16)
    >>> model = BertQuestionAnswerer(backbone)
    >>> x = {"token_ids": np.array([[2, 7, 3, 9, 8, 3]]), "segment_ids": np.array([[0, 0, 0, 1, 1, 1]]),
    ...      "padding_mask": np.ones((1, 6), bool)}
    >>> tuple(model(x)["start_logits"].shape)
    (1, 6)
    >>> model.compile(optimizer="adam")
    >>> y = {"start_positions": np.array([3]), "end_positions": np.array([4])}
    >>> sorted(model.fit(x, y, epochs=1, verbose=0).history)
    ['end_logits_accuracy', 'loss', 'start_logits_accuracy']
    """

    default_preprocessor_class = "BertQuestionAnsweringPreprocessor"

    def __init__(self, backbone, preprocessor=None, **kwargs):
        inputs = dict(backbone.input)
        sequence_output = backbone(inputs)["sequence_output"]  # (B, T, H)
        span_logits = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=backbone.initializer_range),
            dtype=backbone.dtype_policy,
            name="span_dense",
        )(sequence_output)  # (B, T, 2)
        span_logits = ops.cast(span_logits, "float32")
        outputs = {"start_logits": span_logits[:, :, 0], "end_logits": span_logits[:, :, 1]}  # (B, T) each
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        # The pooler gets no gradient from span logits; freezing it keeps optimizers from warning each step.
        backbone.pooler.trainable = False
        self.span_loss = None

    # -- training ---------------------------------------------------------------------------------------

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """`keras.Model.compile`; without `loss`, the span loss `SpanCrossEntropy` and start / end accuracy."""
        self.span_loss = SpanCrossEntropy() if loss is None else None
        if loss is None and metrics is None:
            metrics = {
                "start_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "end_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            }
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.span_loss is None:
            return super().compute_loss(x, _targets_by_output(y), y_pred, sample_weight, training)
        loss = self.span_loss(y, y_pred, sample_weight)
        for extra_loss in self.losses:  # regularisation added by layers, if any
            loss = loss + ops.cast(ops.sum(extra_loss), loss.dtype)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, _targets_by_output(y), y_pred, sample_weight)

    def compile_from_config(self, config):
        compile_from_saved_config(self, config)

    # -- prediction -------------------------------------------------------------------------------------

    def predict(self, x, contexts=None, batch_size=None, **kwargs):
        """Answers to raw questions (with a preprocessor), else `keras.Model.predict` (logits).

        Args:
            x: questions (a str, or a list / array of str) with `contexts`, a tuple `(questions, contexts)`,
                or model inputs (token ids; a dict or a `tf.data.Dataset`), which give the logits as without
                a preprocessor.
            contexts: the context of each question, when `x` holds the questions alone. Defaults to None.
            batch_size: int or None. Features (windows) per batch. Defaults to 32.
            **kwargs: passed to `keras.Model.predict` (e.g. `verbose`).

        Returns:
            For raw text: a list of dicts `{"text", "start", "end", "score"}` (one dict for one str question),
            see the class docstring. For model inputs: `{"start_logits", "end_logits"}` `(F, T)` arrays.
        """
        if contexts is not None:
            x = (x, contexts)
        if self.preprocessor is None or not _contains_strings(x):
            if contexts is not None:
                raise ValueError(
                    "predict(questions, contexts) answers raw text, which needs a preprocessor; this "
                    f"{type(self).__name__} has none (attach a BertQuestionAnsweringPreprocessor)."
                )
            return super().predict(x, batch_size=batch_size, **kwargs)
        preprocessor = self.preprocessor
        examples, features = preprocessor.featurize(x)
        if len(features):
            outputs = keras.Model.predict(self, features.inputs(), batch_size=batch_size or 32, **kwargs)
        else:
            outputs = {name: ops.convert_to_numpy(ops.zeros((0, preprocessor.sequence_length)))
                       for name in LABEL_TO_OUTPUT.values()}
        decoded = preprocessor.decode(examples, features, outputs)
        answers = [decoded.answer(example.qas_id) for example in examples]
        single = isinstance(x, tuple) and isinstance(x[0], (str, bytes))
        return answers[0] if single else answers

    # -- config and checkpoints -------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path, preprocessor=AUTO, sequence_length=None, revision=None, **overrides):
        """Build a question answerer from any checkpoint `checkpoints.read_checkpoint` reads.

        Our own `BertQuestionAnswerer` directories restore every weight; Hugging Face
        `BertForQuestionAnswering` loads `qa_outputs.*` (it has no pooler, which this model does not use);
        original `run_squad.py` checkpoints load `cls/squad/output_weights` / `cls/squad/output_bias`. Any
        other checkpoint loads the encoder; the span head keeps its initial values, which
        `model.load_report.missing` lists and a WARNING names.

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix), or a Hugging Face Hub model id
                (`checkpoints.hub_cache`).
            preprocessor: "auto", a `BertQuestionAnsweringPreprocessor`, or None. "auto" attaches the one
                saved with the model, else one with the `run_squad.py` settings on the checkpoint's
                `vocab.txt` and casing, so `predict(questions, contexts)` answers raw text (none when the
                directory has no vocabulary or TensorFlow is not installed). Defaults to "auto".
            sequence_length: int or None. The preprocessor's feature length; None keeps the saved one, else
                `min(384, max_sequence_length)`. Defaults to None.
            revision: str or None. A Hugging Face Hub branch, tag or commit, for a Hub model id. Defaults to None.
            **overrides: backbone config values to change (e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`).

        Returns:
            `BertQuestionAnswerer`, with `load_report` (a `checkpoints.LoadReport`).
        """
        from keras_bert_impl.checkpoints import backbone_config, read_checkpoint, resolve_checkpoint
        from keras_bert_impl.checkpoints.name_map import question_answering_head_specs
        from keras_bert_impl.models.backbone import BertBackbone

        path = resolve_checkpoint(path, revision)
        fmt, config, tensors, extra = read_checkpoint(path)
        backbone = BertBackbone(**{**backbone_config(fmt, config, extra), **overrides})
        preprocessor = cls._pretrained_preprocessor(path, preprocessor, sequence_length, backbone.max_sequence_length)
        model = cls(backbone, preprocessor=preprocessor)
        load_task_weights(model, fmt, tensors, extra, path, question_answering_head_specs(),
                          optional_backbone_paths=UNUSED_BACKBONE_PATHS)
        return model

    @classmethod
    def _pretrained_preprocessor(cls, path, preprocessor=AUTO, sequence_length=None, max_sequence_length=None):
        # A checkpoint without preprocessor.json gets run_squad.py's 384 (at most the model's length).
        if (isinstance(preprocessor, str) and preprocessor == AUTO and sequence_length is None
                and not os.path.isfile(os.path.join(os.fspath(path), PREPROCESSOR_FILENAME))):
            sequence_length = min(DEFAULT_SEQUENCE_LENGTH, max_sequence_length or DEFAULT_SEQUENCE_LENGTH)
        return super()._pretrained_preprocessor(path, preprocessor, sequence_length, max_sequence_length)

    @classmethod
    def from_preset(cls, name, vocabulary=None, sequence_length=None, lowercase=True, **backbone_overrides):
        """A randomly initialised question answerer of a published size (`models.presets.PRESETS`).

        Args:
            name: str. The preset ("tiny" ... "large"), or a keras-hub BERT preset (directory or handle): its
                pretrained backbone and tokenizer, as `BertBackbone.from_preset` reads them.
            vocabulary: str, list of str, `BertTokenizer` or None. A `vocab.txt` path or the tokens: the
                backbone is sized to it and a `BertQuestionAnsweringPreprocessor` on it is attached. None: no
                preprocessor, the published 30,522-token size. Defaults to None.
            sequence_length: int or None. The preprocessor's feature length. Defaults to
                `min(384, max_sequence_length)`.
            lowercase: bool. The tokenizer's casing when `vocabulary` is a path or a list. Defaults to True.
            **backbone_overrides: backbone config values (e.g. `max_sequence_length=256`).

        Example:
        >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "?", "in",
        ...               "france", "."]
        >>> model = BertQuestionAnswerer.from_preset("tiny", vocabulary=vocabulary, max_sequence_length=32)
        >>> answer = model.predict("Where is Paris?", "Paris is in France.", verbose=0)
        >>> sorted(answer)
        ['end', 'score', 'start', 'text']
        >>> answer["text"] == "Paris is in France."[answer["start"]:answer["end"]]
        True
        """
        backbone, preprocessor = cls._preset_parts(name, vocabulary, sequence_length, lowercase, **backbone_overrides)
        if preprocessor is not None and sequence_length is None:  # run_squad.py's 384, not the tasks' 128
            length = min(DEFAULT_SEQUENCE_LENGTH, backbone.max_sequence_length)
            preprocessor = type(preprocessor)(preprocessor.tokenizer, sequence_length=length)
        return cls(backbone, preprocessor=preprocessor)

    def save_huggingface(self, path):
        """Write a Hugging Face `BertForQuestionAnswering` directory that `transformers` loads."""
        from keras_bert_impl.checkpoints import save_huggingface
        from keras_bert_impl.checkpoints.name_map import question_answering_head_specs

        save_huggingface(self, path, head_specs=question_answering_head_specs(),
                         architectures=("BertForQuestionAnswering",))
