"""BERT pretraining model: backbone + masked-LM head + next-sentence head, trained by Keras' own step.

Shape legend: B batch, T tokens, P masked slots per sequence, H hidden width, V vocabulary.
"""

import keras
from keras import ops

from keras_bert_impl.checkpoints.name_map import pretraining_head_specs
from keras_bert_impl.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from keras_bert_impl.models.losses import sparse_cross_entropy_from_logits
from keras_bert_impl.models.task import BertTask

# The original `get_masked_lm_output` adds this to the weight sum so a batch without masks divides safely.
MASKED_LM_WEIGHT_EPSILON = 1e-5
# The `fit` / `evaluate` logs, in order: Keras' own "loss" tracker, then the model's, updated by `compute_loss`.
METRIC_NAMES = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")


def _first_argmax(logits):
    """int32 index of the first maximum along the last axis, as `np.argmax`; cheaper than `ops.argmax`, whose JAX
    form adds two passes over the `(B, P, V)` logits (about 4% of a mini pretraining step on CPU)."""
    num_classes = ops.shape(logits)[-1]
    is_max = ops.equal(logits, ops.max(logits, axis=-1, keepdims=True))
    indices = ops.where(is_max, ops.arange(num_classes, dtype="int32"), num_classes)
    return ops.min(indices, axis=-1)


def pretraining_losses(y, y_pred):
    """The BERT pretraining objective (original `run_pretraining.py`), in float32.

    - MLM: `sum(w * nll) / (sum(w) + 1e-5)` over the `(B, P)` masked slots, `w` = `mask_weights`.
    - NSP: mean cross-entropy over the batch (label 0 = IsNext, 1 = random next).
    - `loss = mlm_loss + nsp_loss`.

    Args:
        y: dict. `mask_ids` int `(B, P)`, `mask_weights` float `(B, P)`, `next_sentence_labels` int `(B,)`
            (or `(B, 1)` as in the original TFRecords).
        y_pred: dict. `mlm_logits` `(B, P, V)`, `nsp_logits` `(B, 2)`.

    Returns:
        dict of float32 scalars: `loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy` (weighted by `mask_weights`),
        `nsp_accuracy`, and `mlm_weight` (`sum(w)`, the weight of this batch's `mlm_accuracy`).

    Example:
    >>> import numpy as np
    >>> y = {"mask_ids": np.array([[1, 0]]), "mask_weights": np.array([[1.0, 0.0]]),
    ...      "next_sentence_labels": np.array([0])}
    >>> y_pred = {"mlm_logits": np.zeros((1, 2, 4), "float32"), "nsp_logits": np.zeros((1, 2), "float32")}
    >>> round(float(pretraining_losses(y, y_pred)["loss"]), 4)  # ln 4 + ln 2
    2.0794
    """
    mlm_logits = ops.cast(y_pred["mlm_logits"], "float32")  # (B, P, V)
    nsp_logits = ops.cast(y_pred["nsp_logits"], "float32")  # (B, 2)
    mask_ids = ops.cast(y["mask_ids"], "int32")  # (B, P)
    mask_weights = ops.cast(y["mask_weights"], "float32")  # (B, P)
    nsp_labels = ops.reshape(ops.cast(y["next_sentence_labels"], "int32"), (-1,))  # (B,)

    mlm_weight = ops.sum(mask_weights)
    mlm_nll = sparse_cross_entropy_from_logits(mask_ids, mlm_logits)  # (B, P)
    mlm_loss = ops.sum(mask_weights * mlm_nll) / (mlm_weight + MASKED_LM_WEIGHT_EPSILON)
    mlm_correct = ops.cast(ops.equal(_first_argmax(mlm_logits), mask_ids), "float32")
    mlm_accuracy = ops.divide_no_nan(ops.sum(mask_weights * mlm_correct), mlm_weight)

    nsp_loss = ops.mean(sparse_cross_entropy_from_logits(nsp_labels, nsp_logits))
    nsp_correct = ops.equal(ops.cast(ops.argmax(nsp_logits, axis=-1), "int32"), nsp_labels)
    nsp_accuracy = ops.mean(ops.cast(nsp_correct, "float32"))
    return {"loss": mlm_loss + nsp_loss, "mlm_loss": mlm_loss, "nsp_loss": nsp_loss, "mlm_accuracy": mlm_accuracy,
            "nsp_accuracy": nsp_accuracy, "mlm_weight": mlm_weight}


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(BertTask):
    """BERT pretraining with the masked-LM and next-sentence objectives (Devlin et al., 2018, section 3.1).

    Adds `MaskedLMHead` (tied to `backbone.token_embedding`) and `NextSentenceHead` to a `BertBackbone`.
    Keras' own train / test step calls `compute_loss`; the logs are `METRIC_NAMES`. Compile it with an
    optimizer only (no `loss` / `metrics`).

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        preprocessor: `BertPretrainingPreprocessor` or None (see `BertTask`); it also masks. Defaults to None.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`, and
    `mask_positions` int `(B, P)`.
    Targets (dict): `mask_ids` int `(B, P)`, `mask_weights` float `(B, P)`, `next_sentence_labels` int
    `(B,)` (0 = IsNext, 1 = random next).
    Outputs (dict): `mlm_logits` float32 `(B, P, V)`, `nsp_logits` float32 `(B, 2)`.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone.from_scratch("tiny", vocabulary_size=30, num_layers=1)
    >>> model = BertPretrainer(backbone)
    >>> x = {"token_ids": np.array([[2, 4, 1, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.ones((1, 4), bool), "mask_positions": np.array([[2, 0]])}
    >>> y = {"mask_ids": np.array([[7, 0]]), "mask_weights": np.array([[1.0, 0.0]], "float32"),
    ...      "next_sentence_labels": np.array([0])}
    >>> model.compile()
    >>> sorted(model.fit(x, y, epochs=1, verbose=0).history)
    ['loss', 'mlm_accuracy', 'mlm_loss', 'nsp_accuracy', 'nsp_loss']
    """

    default_preprocessor_class = "BertPretrainingPreprocessor"
    huggingface_architecture = "BertForPreTraining"
    head_specs = staticmethod(pretraining_head_specs)
    # `run_pretraining.py`: peak 1e-4, 10k warmup steps of 1M.
    default_learning_rate = 1e-4
    default_warmup_fraction = 0.01
    # Each `make_dataset` batch is masked under its own seed, which a batch outside `tf.data` does not draw.
    predicts_raw_batch_directly = False

    def __init__(self, backbone, preprocessor=None, **kwargs):
        inputs = dict(backbone.input)
        mask_positions = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        # The backbone's last block computes only the rows the heads read: [CLS] and the masked positions.
        backbone_outputs = backbone(inputs, output_positions=mask_positions)
        mlm_head = MaskedLMHead(backbone.token_embedding, backbone.hidden_activation, backbone.layer_norm_epsilon,
                                backbone.initializer_range, dtype=backbone.dtype_policy, name="masked_lm_head")
        nsp_head = NextSentenceHead(backbone.initializer_range, dtype=backbone.dtype_policy, name="next_sentence_head")
        outputs = {"mlm_logits": mlm_head(backbone_outputs["sequence_output"]),  # (B, P, V)
                   "nsp_logits": nsp_head(backbone_outputs["pooled_output"])}  # (B, 2)
        super().__init__(backbone, {**inputs, "mask_positions": mask_positions}, outputs, preprocessor, **kwargs)
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        self.metric_trackers = [keras.metrics.Mean(name=name) for name in METRIC_NAMES if name != "loss"]

    def compile(self, optimizer="auto", loss=None, metrics=None, **kwargs):
        """`BertTask.compile` (the original recipe's optimizer at 1e-4); losses and metrics are the model's own."""
        given = {"loss": loss, "metrics": metrics, "loss_weights": kwargs.get("loss_weights"),
                 "weighted_metrics": kwargs.get("weighted_metrics")}
        given = {name: value for name, value in given.items() if value is not None}
        if given:
            raise ValueError("BertPretrainer computes its own MLM + NSP loss and metrics; call compile() without "
                             "`loss`/`metrics`/`loss_weights`/`weighted_metrics` (got "
                             + ", ".join(f"{name}={value!r}" for name, value in given.items()) + ").")
        super().compile(optimizer=optimizer, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The MLM + NSP loss (`pretraining_losses`) that Keras' train step differentiates; updates the other logs
        (`mlm_accuracy` weighted by the mask-weight sum, the rest by the batch size).

        Args:
            x: dict. The inputs (see the class docstring); only the batch size is read.
            y: dict. The targets: `mask_ids`, `mask_weights`, `next_sentence_labels`.
            y_pred: dict. The outputs: `mlm_logits`, `nsp_logits`.
            sample_weight: must be None: the losses weight themselves (`mask_weights`).
            training: bool. Unused. Defaults to True.

        Returns:
            float32 scalar: `mlm_loss + nsp_loss`, divided by the tf.distribute replicas in sync (this
            replica's share, as Keras' built-in losses return it).
        """
        del training
        if sample_weight is not None:
            raise ValueError("BertPretrainer computes its own weighted losses from `y` and does not take a third "
                             "batch element (sample_weight / class_weight); put per-example weights into `y` "
                             "(`mask_weights`).")
        values = pretraining_losses(y, y_pred)
        batch_size = ops.cast(ops.shape(x["token_ids"])[0], "float32")
        weights = {"mlm_accuracy": values["mlm_weight"]}
        for tracker in self.metric_trackers:
            value = ops.stop_gradient(values[tracker.name])
            tracker.update_state(value, sample_weight=weights.get(tracker.name, batch_size))
        # The replicas whose gradients the optimizer sums: the tf.distribute strategy's (a keras.Model property on
        # TensorFlow only), else 1 (the JAX distribution API traces the step over the global batch).
        strategy = getattr(self, "distribute_strategy", None)
        replicas = 1 if strategy is None else strategy.num_replicas_in_sync
        return values["loss"] if replicas == 1 else values["loss"] * (1.0 / replicas)
