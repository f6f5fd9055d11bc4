"""BERT extractive question answering (SQuAD): Dense(2) on every token -> start and end logits.

Shape legend: B batch, T tokens, H hidden width.
"""


import keras
from keras import ops

from keras_bert_impl.models.losses import SpanCrossEntropy
from keras_bert_impl.models.task import BertTask
from keras_bert_impl.models.task_checkpoints import compile_from_saved_config, load_task_weights

# The span model reads the sequence output only; a Hugging Face BertForQuestionAnswering has no pooler.
UNUSED_BACKBONE_PATHS = ("pooler_dense/kernel", "pooler_dense/bias")
LABEL_TO_OUTPUT = {"start_positions": "start_logits", "end_positions": "end_logits"}


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

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
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

    def __init__(self, backbone, **kwargs):
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

    # -- config and checkpoints -------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path, **overrides):
        """Build a question answerer from any checkpoint `checkpoints.read_checkpoint` reads.

        Our own `BertQuestionAnswerer` directories restore every weight; Hugging Face
        `BertForQuestionAnswering` loads `qa_outputs.*` (it has no pooler, which this model does not use);
        original `run_squad.py` checkpoints load `cls/squad/output_weights` / `cls/squad/output_bias`. Any
        other checkpoint loads the encoder; the span head keeps its initial values, which
        `model.load_report.missing` lists and a WARNING names.

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix).
            **overrides: backbone config values to change (e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`).

        Returns:
            `BertQuestionAnswerer`, with `load_report` (a `checkpoints.LoadReport`).
        """
        from keras_bert_impl.checkpoints import backbone_config, read_checkpoint
        from keras_bert_impl.checkpoints.name_map import question_answering_head_specs
        from keras_bert_impl.models.backbone import BertBackbone

        fmt, config, tensors, extra = read_checkpoint(path)
        backbone = BertBackbone(**{**backbone_config(fmt, config, extra), **overrides})
        model = cls(backbone)
        load_task_weights(model, fmt, tensors, extra, path, question_answering_head_specs(),
                          optional_backbone_paths=UNUSED_BACKBONE_PATHS)
        return model

    def save_huggingface(self, path):
        """Write a Hugging Face `BertForQuestionAnswering` directory that `transformers` loads."""
        from keras_bert_impl.checkpoints import save_huggingface
        from keras_bert_impl.checkpoints.name_map import question_answering_head_specs

        save_huggingface(self, path, head_specs=question_answering_head_specs(),
                         architectures=("BertForQuestionAnswering",))
