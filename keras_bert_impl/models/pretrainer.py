"""BERT pretraining model: backbone + masked-LM head + next-sentence head, with its own train/test step.

Shape legend: B batch, T tokens, P masked slots per sequence, H hidden width, V vocabulary.

The loss math is written once (`pretraining_losses`, keras.ops); the per-backend gradient step that
differentiates it lives in `keras_bert_impl.training.backend_train_steps`.
"""

import logging

import keras
from keras import ops

from keras_bert_impl.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from keras_bert_impl.models.task import BertTask

logger = logging.getLogger(__name__)

# The original `get_masked_lm_output` adds this to the weight sum so a batch without masks divides safely.
MASKED_LM_WEIGHT_EPSILON = 1e-5
METRIC_NAMES = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")


def _cross_entropy(logits, labels):
    """Per-element negative log-likelihood of integer `labels` under float32 `logits` (..., C)."""
    log_probs = ops.log_softmax(logits, axis=-1)
    return -ops.squeeze(ops.take_along_axis(log_probs, labels[..., None], axis=-1), axis=-1)


def _first_argmax(logits):
    """int32 index of the first maximum along the last axis, as `np.argmax` (ties: the lowest index).

    Written as max + compare + min instead of `ops.argmax`: on CPU, Keras' JAX `argmax` adds two full passes
    over its input (a -0.0 workaround: compare, then select), which over the `(B, P, V)` vocabulary logits
    cost about 4% of a mini pretraining step on JAX, and XLA's TensorFlow argmax was no cheaper.
    """
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
    mlm_nll = _cross_entropy(mlm_logits, mask_ids)  # (B, P)
    mlm_loss = ops.sum(mask_weights * mlm_nll) / (mlm_weight + MASKED_LM_WEIGHT_EPSILON)
    mlm_correct = ops.cast(ops.equal(_first_argmax(mlm_logits), mask_ids), "float32")
    mlm_accuracy = ops.divide_no_nan(ops.sum(mask_weights * mlm_correct), mlm_weight)

    nsp_loss = ops.mean(_cross_entropy(nsp_logits, nsp_labels))
    nsp_correct = ops.equal(ops.cast(ops.argmax(nsp_logits, axis=-1), "int32"), nsp_labels)
    nsp_accuracy = ops.mean(ops.cast(nsp_correct, "float32"))
    return {
        "loss": mlm_loss + nsp_loss,
        "mlm_loss": mlm_loss,
        "nsp_loss": nsp_loss,
        "mlm_accuracy": mlm_accuracy,
        "nsp_accuracy": nsp_accuracy,
        "mlm_weight": mlm_weight,
    }


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(BertTask):
    """BERT pretraining with the masked-LM and next-sentence objectives (Devlin et al., 2018, section 3.1).

    Takes a `BertBackbone` and adds `MaskedLMHead` (tied to `backbone.token_embedding`) and
    `NextSentenceHead`. `fit` / `evaluate` run a custom step that sums the two losses (see
    `pretraining_losses`) and logs `loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy`, `nsp_accuracy`; compile it
    with an optimizer only (no `loss` / `metrics`). Works on TensorFlow, JAX and torch, with
    `jit_compile=True` on TensorFlow and JAX (XLA). Input preprocessing (tokenization, masking, batching
    in tf.data) runs outside the compiled step.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Inputs (dict): the backbone's `token_ids`, `segment_ids` int `(B, T)`, `padding_mask` bool `(B, T)`, and
    `mask_positions` int `(B, P)`.
    Targets (dict): `mask_ids` int `(B, P)`, `mask_weights` float `(B, P)`, `next_sentence_labels` int
    `(B,)` (0 = IsNext, 1 = random next).
    Outputs (dict): `mlm_logits` float32 `(B, P, V)`, `nsp_logits` float32 `(B, 2)`.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16, max_sequence_length=16)
    >>> model = BertPretrainer(backbone)
    >>> x = {"token_ids": np.array([[2, 4, 1, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.ones((1, 4), bool), "mask_positions": np.array([[2, 0]])}
    >>> y = {"mask_ids": np.array([[7, 0]]), "mask_weights": np.array([[1.0, 0.0]], "float32"),
    ...      "next_sentence_labels": np.array([0])}
    >>> model.compile(optimizer="adam")
    >>> sorted(model.fit(x, y, epochs=1, verbose=0).history)
    ['loss', 'mlm_accuracy', 'mlm_loss', 'nsp_accuracy', 'nsp_loss']
    """

    def __init__(self, backbone, **kwargs):
        inputs = dict(backbone.input)
        mask_positions = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        # The backbone's last block computes only the rows the heads read: [CLS] and the masked positions.
        backbone_outputs = backbone(inputs, output_positions=mask_positions)
        mlm_head = MaskedLMHead(
            backbone.token_embedding,
            hidden_activation=backbone.hidden_activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            initializer_range=backbone.initializer_range,
            dtype=backbone.dtype_policy,
            name="masked_lm_head",
        )
        nsp_head = NextSentenceHead(
            initializer_range=backbone.initializer_range,
            dtype=backbone.dtype_policy,
            name="next_sentence_head",
        )
        outputs = {
            "mlm_logits": mlm_head(backbone_outputs["sequence_output"]),  # (B, P, V)
            "nsp_logits": nsp_head(backbone_outputs["pooled_output"]),  # (B, 2)
        }
        super().__init__(inputs={**inputs, "mask_positions": mask_positions}, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        self.metric_trackers = [keras.metrics.Mean(name=name) for name in METRIC_NAMES]

    # -- training ---------------------------------------------------------------------------------------

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """Like `keras.Model.compile`, but the losses and metrics are the model's own."""
        if loss is not None or metrics is not None:
            raise ValueError(
                "BertPretrainer computes its own MLM + NSP loss and metrics; call compile() without "
                f"`loss`/`metrics` (got loss={loss!r}, metrics={metrics!r})."
            )
        super().compile(optimizer=optimizer, **kwargs)

    @property
    def metrics(self):
        return list(self.metric_trackers)

    def compute_step_losses(self, y, y_pred):
        """The step's losses and metric values (`pretraining_losses`); `"loss"` is differentiated."""
        return pretraining_losses(y, y_pred)

    def update_step_metrics(self, step_values, x):
        """Update the `fit` / `evaluate` trackers from `compute_step_losses` values; return the logs."""
        batch_size = ops.cast(ops.shape(x["token_ids"])[0], "float32")
        weights = {"mlm_accuracy": step_values["mlm_weight"]}
        for tracker in self.metric_trackers:
            tracker.update_state(step_values[tracker.name], sample_weight=weights.get(tracker.name, batch_size))
        return {tracker.name: tracker.result() for tracker in self.metric_trackers}

    def train_step(self, *step_args):
        from keras_bert_impl.training import backend_train_steps

        return backend_train_steps.train_step(self, *step_args)

    def test_step(self, *step_args):
        from keras_bert_impl.training import backend_train_steps

        return backend_train_steps.test_step(self, *step_args)

    # -- config and checkpoints -------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path, **overrides):
        """Build a pretrainer from any checkpoint `checkpoints.read_checkpoint` reads.

        Hugging Face `BertForPreTraining` (`cls.predictions.*`, `cls.seq_relationship`), original BERT
        (`cls/predictions/*`, `cls/seq_relationship/*`) and our own directories load the heads too. A
        checkpoint without heads (a `BertModel`, a backbone, another task model) loads the encoder; the heads
        keep their initial values, which `model.load_report.missing` lists and a WARNING names.

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix).
            **overrides: backbone config values to change (e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`).
        """
        from keras_bert_impl.checkpoints import backbone_config, load_weights, native, read_checkpoint
        from keras_bert_impl.checkpoints.conversion import LoadReport
        from keras_bert_impl.checkpoints.name_map import pretraining_head_specs
        from keras_bert_impl.models.backbone import BertBackbone

        fmt, config, tensors, extra = read_checkpoint(path)
        backbone = BertBackbone(**{**backbone_config(fmt, config, extra), **overrides})
        model = cls(backbone)
        head_paths = [variable.path for variable in model.weights if variable.path.split("/")[0] in (
            model.masked_lm_head.name, model.next_sentence_head.name)]
        if fmt == "native" and extra.get("class_name") == cls.__name__:
            report = load_weights(model, backbone, fmt, tensors, path)
        elif fmt == "native":
            unused = native.assign_native(backbone, tensors, path)
            loaded = [variable.path for variable in backbone.weights]
            report = LoadReport(loaded=loaded, missing=head_paths, unused=unused)
        else:
            tensors = _with_canonical_output_bias(tensors)
            report = load_weights(model, backbone, fmt, tensors, path, head_specs=pretraining_head_specs())
        if report.missing:
            logger.warning(
                "%s has no pretraining-head weights for %s: they keep their random initial values. Train "
                "before using the MLM / NSP outputs.", path, report.missing,
            )
        if report.unused:
            logger.warning("%s: checkpoint tensors not used by BertPretrainer: %s", path, report.unused)
        logger.info("Loaded BertPretrainer from %s (%s): %s", path, fmt, report.summary())
        model.load_report = report
        return model

    def save_huggingface(self, path):
        """Write a Hugging Face `BertForPreTraining` directory (`transformers` loads it), atomically."""
        from keras_bert_impl.checkpoints import save_huggingface
        from keras_bert_impl.checkpoints.name_map import pretraining_head_specs

        save_huggingface(self, path, head_specs=pretraining_head_specs(), architectures=("BertForPreTraining",))


def _with_canonical_output_bias(tensors):
    """Older `transformers` checkpoints store the MLM output bias as `cls.predictions.decoder.bias`, a tied
    copy of `cls.predictions.bias` (sometimes both): read it under the canonical name."""
    alias, canonical = "cls.predictions.decoder.bias", "cls.predictions.bias"
    if alias not in tensors:
        return tensors
    tensors = dict(tensors)
    alias_value = tensors.pop(alias)
    tensors.setdefault(canonical, alias_value)
    return tensors
