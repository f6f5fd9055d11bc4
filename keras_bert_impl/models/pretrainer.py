"""BERT pretraining model: backbone + masked-LM head + next-sentence head, trained by Keras' own step.

Shape legend: B batch, T tokens, P masked slots per sequence, H hidden width, V vocabulary.

The loss math is written once (`pretraining_losses`, keras.ops) and handed to Keras through the public
`compute_loss` hook: each backend's `keras.Model.train_step` / `test_step` (TensorFlow `GradientTape`, JAX
`value_and_grad` over the stateless variables, torch `backward()`) runs the forward pass, differentiates
that loss and applies the optimizer, as for any Keras model.
"""

import logging

import keras
from keras import ops

from keras_bert_impl.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from keras_bert_impl.models.task import AUTO, BertTask
from keras_bert_impl.models.task_checkpoints import compile_from_saved_config

logger = logging.getLogger(__name__)

# The original `get_masked_lm_output` adds this to the weight sum so a batch without masks divides safely.
MASKED_LM_WEIGHT_EPSILON = 1e-5
# The `fit` / `evaluate` logs, in order. "loss" is Keras' own loss tracker (created by `compile`, updated by
# Keras' step from what `compute_loss` returns); `compute_loss` updates the model's trackers of the others.
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
    `NextSentenceHead`. `fit` / `evaluate` run Keras' own train / test step, which calls `compute_loss`: the
    sum of the two losses (see `pretraining_losses`). The logs are `loss`, `mlm_loss`, `nsp_loss`,
    `mlm_accuracy`, `nsp_accuracy`; compile it with an optimizer only (no `loss` / `metrics`). Whatever Keras'
    step supports works: `keras.optimizers.LossScaleOptimizer`, global-norm clipping, gradient accumulation,
    `jit_compile=True` on TensorFlow and JAX (XLA), tf.distribute strategies and the Keras distribution API
    on JAX. Works on TensorFlow, JAX and torch. Input preprocessing (tokenization, masking, batching in
    tf.data) runs outside the compiled step.

    Args:
        backbone: `BertBackbone`. The encoder; its variables keep their paths.
        preprocessor: `BertPretrainingPreprocessor` or None. With one, `fit` / `evaluate` / `predict` take raw
            texts or `(first_texts, second_texts)` pairs (and next-sentence labels as `y`), packed and masked
            in tf.data with the preprocessor's settings; without one, the inputs and targets below. Defaults
            to None.
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

    default_preprocessor_class = "BertPretrainingPreprocessor"

    def __init__(self, backbone, preprocessor=None, **kwargs):
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
        self.preprocessor = preprocessor
        self.masked_lm_head = mlm_head
        self.next_sentence_head = nsp_head
        # Tracked by Keras, so `model.metrics` lists them after its own `loss` tracker (see METRIC_NAMES).
        self.metric_trackers = [keras.metrics.Mean(name=name) for name in METRIC_NAMES if name != "loss"]

    # -- training: Keras' own train_step / test_step call compute_loss -----------------------------------

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """Like `keras.Model.compile`, but the losses and metrics are the model's own (`compute_loss`)."""
        given = {"loss": loss, "metrics": metrics, "loss_weights": kwargs.get("loss_weights"),
                 "weighted_metrics": kwargs.get("weighted_metrics")}
        given = {name: value for name, value in given.items() if value is not None}
        if given:
            raise ValueError(
                "BertPretrainer computes its own MLM + NSP loss and metrics; call compile() without "
                "`loss`/`metrics`/`loss_weights`/`weighted_metrics` (got "
                + ", ".join(f"{name}={value!r}" for name, value in given.items()) + ")."
            )
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        """Compile a loaded `.keras` model as saved (Keras' default skips a model with its own `compile`)."""
        compile_from_saved_config(self, config)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The MLM + NSP loss (`pretraining_losses`) that Keras' train step differentiates.

        Keras' `train_step` / `test_step` call this on every backend after the forward pass. Keras then logs
        the returned loss in its own `loss` tracker (weighted by the batch size), scales it with
        `optimizer.scale_loss` (`LossScaleOptimizer`) and hands the gradients to `optimizer.apply` (clipping,
        gradient accumulation). Here the other logs are updated where their values are computed:
        `mlm_loss`, `nsp_loss` and `nsp_accuracy` weighted by the batch size, `mlm_accuracy` by the batch's
        mask-weight sum. On JAX this runs inside Keras' `StatelessScope` (`stateless_compute_loss`), which
        carries the tracker updates out of the stateless step, as for Keras' own trackers.

        Under a tf.distribute strategy the returned loss is this replica's share, `loss / replicas`: the
        optimizer sums the replica gradients, and Keras' TensorFlow step multiplies the value back for the
        `loss` log. Keras' built-in losses do the same.

        Args:
            x: dict. The inputs (see the class docstring); only the batch size is read.
            y: dict. The targets: `mask_ids`, `mask_weights`, `next_sentence_labels`.
            y_pred: dict. The outputs: `mlm_logits`, `nsp_logits`.
            sample_weight: must be None: the losses weight themselves (`mask_weights`).
            training: bool. Unused (the loss is the same in training and evaluation). Defaults to True.

        Returns:
            float32 scalar: `mlm_loss + nsp_loss`, divided by the tf.distribute replicas in sync.
        """
        del training
        if sample_weight is not None:
            raise ValueError(
                "BertPretrainer computes its own weighted losses from `y` and does not take a third batch "
                "element (sample_weight / class_weight); put per-example weights into `y` (`mask_weights`)."
            )
        values = pretraining_losses(y, y_pred)
        batch_size = ops.cast(ops.shape(x["token_ids"])[0], "float32")
        weights = {"mlm_accuracy": values["mlm_weight"]}
        for tracker in self.metric_trackers:
            # Metric values are not differentiated: no tape / autograd graph for the tracker updates.
            value = ops.stop_gradient(values[tracker.name])
            tracker.update_state(value, sample_weight=weights.get(tracker.name, batch_size))
        replicas = self._replicas_in_sync()
        return values["loss"] if replicas == 1 else values["loss"] * (1.0 / replicas)

    def _replicas_in_sync(self):
        """How many replicas' gradients the optimizer sums: the tf.distribute strategy's count on TensorFlow
        (`keras.Model.distribute_strategy`, the strategy Keras runs the step with), else 1 (the Keras
        distribution API on JAX traces the step over the global batch)."""
        strategy = getattr(self, "distribute_strategy", None)  # a keras.Model property on TensorFlow only
        return 1 if strategy is None else strategy.num_replicas_in_sync

    # -- config and checkpoints -------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path, preprocessor=AUTO, sequence_length=None, revision=None, **overrides):
        """Build a pretrainer from any checkpoint `checkpoints.read_checkpoint` reads.

        Hugging Face `BertForPreTraining` (`cls.predictions.*`, `cls.seq_relationship`), original BERT
        (`cls/predictions/*`, `cls/seq_relationship/*`) and our own directories load the heads too. A
        checkpoint without heads (a `BertModel`, a backbone, another task model) loads the encoder; the heads
        keep their initial values, which `model.load_report.missing` lists and a WARNING names.

        Args:
            path: str. Checkpoint directory (or original-TF checkpoint prefix), or a Hugging Face Hub model id
                (`checkpoints.hub_cache`).
            preprocessor: "auto", a `BertPretrainingPreprocessor`, or None. "auto" attaches the one saved with
                the model (its masking settings included), else a `BertPretrainingPreprocessor` with the
                original recipe on the checkpoint's `vocab.txt` and casing (none when the directory has no
                vocabulary or TensorFlow is not installed). Defaults to "auto".
            sequence_length: int or None. The preprocessor's packing length; None keeps the saved one, else
                `min(128, max_sequence_length)`. Defaults to None.
            revision: str or None. A Hugging Face Hub branch, tag or commit, for a Hub model id. Defaults to None.
            **overrides: backbone config values to change (e.g. `dropout=0.0`, `dtype="mixed_bfloat16"`).
        """
        from keras_bert_impl.checkpoints import backbone_config, load_weights, native, read_checkpoint, resolve_checkpoint
        from keras_bert_impl.checkpoints.conversion import LoadReport
        from keras_bert_impl.checkpoints.name_map import pretraining_head_specs
        from keras_bert_impl.models.backbone import BertBackbone

        path = resolve_checkpoint(path, revision)
        fmt, config, tensors, extra = read_checkpoint(path)
        backbone = BertBackbone(**{**backbone_config(fmt, config, extra), **overrides})
        preprocessor = cls._pretrained_preprocessor(path, preprocessor, sequence_length, backbone.max_sequence_length)
        model = cls(backbone, preprocessor=preprocessor)
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

    @classmethod
    def from_preset(cls, name, vocabulary=None, sequence_length=None, lowercase=True, **backbone_overrides):
        """A randomly initialised pretrainer of a published size (`models.presets.PRESETS`: "tiny" ... "large").

        Args:
            name: str. The preset, or a keras-hub BERT preset (directory or handle): its pretrained
                backbone and tokenizer, as `BertBackbone.from_preset` reads them.
            vocabulary: str, list of str, `BertTokenizer` or None. A `vocab.txt` path or the tokens: the
                backbone is sized to it and a `BertPretrainingPreprocessor` on it (the original masking recipe;
                pass your own with `BertPretrainer(backbone, preprocessor=...)` for other settings) is
                attached. None: no preprocessor, the published 30,522-token size. Defaults to None.
            sequence_length: int or None. The preprocessor's length. Defaults to `min(128, max_sequence_length)`.
            lowercase: bool. The tokenizer's casing when `vocabulary` is a path or a list. Defaults to True.
            **backbone_overrides: backbone config values (e.g. `max_sequence_length=256`).

        Example:
        >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat"]
        >>> model = BertPretrainer.from_preset("tiny", vocabulary=vocabulary, sequence_length=16)
        >>> model.compile(optimizer="adam")
        >>> history = model.fit((["the cat sat"], ["on the mat"]), [0], epochs=1, verbose=0)
        >>> sorted(history.history)
        ['loss', 'mlm_accuracy', 'mlm_loss', 'nsp_accuracy', 'nsp_loss']
        """
        backbone, preprocessor = cls._preset_parts(name, vocabulary, sequence_length, lowercase, **backbone_overrides)
        return cls(backbone, preprocessor=preprocessor)

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
