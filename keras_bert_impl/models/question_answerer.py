"""BERT extractive question answering (SQuAD): Dense(2) on every token -> start and end logits.

Shape legend: B batch, T tokens, H hidden width.
"""

import keras
from keras import ops

from keras_bert_impl.models.losses import SpanCrossEntropy
from keras_bert_impl.models.task import BertTask, _contains_strings, head_logits

LABEL_TO_OUTPUT = {"start_positions": "start_logits", "end_positions": "end_logits"}


def _targets_by_output(y):
    """The label dict keyed by output names, for Keras losses and metrics given per output."""
    if isinstance(y, dict) and set(y) == set(LABEL_TO_OUTPUT):
        return {LABEL_TO_OUTPUT[key]: value for key, value in y.items()}
    return y


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertQuestionAnswerer(BertTask):
    """Span extraction with BERT (Devlin et al., 2018, section 4.2), as `run_squad.py`.

    A `loss` or `metrics` given to `compile()` per output receives `start_positions` / `end_positions` as targets.

    With a preprocessor, `predict(questions, contexts)` windows the contexts, runs the model and decodes as
    `run_squad.py` (`squad.decode_squad_predictions`), returning one `{"text", "start", "end", "score"}` dict
    per question (`context[start:end] == text`; "" and -1, -1 for no answer; v2.0 models add `null_odds`).

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        preprocessor: `preprocessing.BertQuestionAnsweringPreprocessor` or None. Defaults to None.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`.
    Outputs (dict): `start_logits` float32 `(B, T)`, `end_logits` float32 `(B, T)`.
    Targets for `fit` (dict): `start_positions` int `(B,)`, `end_positions` int `(B,)` (0 = [CLS] for no
    answer in the window).

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
    >>> model = BertQuestionAnswerer(backbone)
    >>> x = {"token_ids": np.array([[2, 7, 3, 9, 8, 3]]), "segment_ids": np.array([[0, 0, 0, 1, 1, 1]]),
    ...      "padding_mask": np.ones((1, 6), bool)}
    >>> tuple(model(x)["start_logits"].shape)
    (1, 6)
    >>> model.compile()
    >>> y = {"start_positions": np.array([3]), "end_positions": np.array([4])}
    >>> sorted(model.fit(x, y, epochs=1, verbose=0).history)
    ['end_logits_accuracy', 'loss', 'start_logits_accuracy']
    """

    default_preprocessor_class = "BertQuestionAnsweringPreprocessor"
    default_sequence_length = 384  # run_squad.py's feature length
    huggingface_architecture = "BertForQuestionAnswering"
    head_output_layer = ("span_dense", "qa_outputs", "cls/squad/output")  # row / column 0 start logit, 1 end
    unused_backbone_paths = ("pooler_dense/kernel", "pooler_dense/bias")

    def __init__(self, backbone, preprocessor=None, **kwargs):
        inputs = dict(backbone.input)
        sequence_output = backbone(inputs)["sequence_output"]  # (B, T, H)
        span_logits = head_logits(backbone, sequence_output, 2, "span")  # (B, T, 2)
        outputs = {"start_logits": span_logits[:, :, 0], "end_logits": span_logits[:, :, 1]}  # (B, T) each
        super().__init__(backbone, inputs, outputs, preprocessor, **kwargs)
        self.span_loss = None

    def compile(self, optimizer="auto", loss=None, metrics=None, **kwargs):
        """`BertTask.compile`; without `loss`, `SpanCrossEntropy` and start / end accuracy."""
        self.span_loss = SpanCrossEntropy() if loss is None else None
        if loss is None and metrics is None:
            metrics = {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                       for name in ("start_logits", "end_logits")}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.span_loss is None:
            return super().compute_loss(x, _targets_by_output(y), y_pred, sample_weight, training)
        return self._with_layer_losses(self.span_loss(y, y_pred, sample_weight))

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, _targets_by_output(y), y_pred, sample_weight)

    def predict(self, x, contexts=None, batch_size=None, **kwargs):
        """Answers to raw questions (with a preprocessor), else `keras.Model.predict` (logits).

        Args:
            x: questions (a str, or a list / array of str) with `contexts`, a tuple `(questions, contexts)`,
                or model inputs (a dict or a `tf.data.Dataset` of token ids).
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
                raise ValueError("predict(questions, contexts) answers raw text, which needs a preprocessor; this "
                                 f"{type(self).__name__} has none (attach a BertQuestionAnsweringPreprocessor).")
            return super().predict(x, batch_size=batch_size, **kwargs)
        examples, features = self.preprocessor.featurize(x)
        if len(features):
            outputs = self._predict_inputs(features.inputs(), batch_size=batch_size, **kwargs)
        else:
            outputs = {name: ops.convert_to_numpy(ops.zeros((0, self.preprocessor.sequence_length)))
                       for name in LABEL_TO_OUTPUT.values()}
        decoded = self.preprocessor.decode(examples, features, outputs)
        answers = [decoded.answer(example.qas_id) for example in examples]
        single = isinstance(x, tuple) and isinstance(x[0], (str, bytes))
        return answers[0] if single else answers
