"""Warmup + linear decay learning-rate schedules (original BERT and Hugging Face variants) and `create_optimizer`."""

import logging

import keras
from keras import ops

from keras_bert_impl.optimization.adam_weight_decay import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay
from keras_bert_impl.optimization.lamb import Lamb
from keras_bert_impl.utils.constructor_config import constructor_config

logger = logging.getLogger(__name__)

SCHEDULE_VARIANTS = ("original", "huggingface")
OPTIMIZER_NAMES = ("adamw_original", "lamb", "keras_adamw")
# `keras.optimizers.AdamW` matches exclusions against the bare variable name only; LayerNormalization
# weights are named "gamma" and "beta" there, so those names stand in for "layer_norm".
KERAS_ADAMW_EXCLUDE_FROM_WEIGHT_DECAY = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to a peak learning rate, then linear decay to `end_learning_rate` at `total_steps`.

    With `s` the optimizer update step (0-based), `peak`, `end`, `W = warmup_steps`, `N = total_steps`:

    - `variant="original"` (google-research/bert `optimization.py`): the decay is measured from step 0 and
      warmup overrides it while `s < W`:
      `lr = peak * s / W` if `s < W` else `(peak - end) * (1 - min(s, N) / N) + end`.
      The first update after warmup therefore uses `peak * (1 - W / N)`, not `peak`.
    - `variant="huggingface"` (`transformers.get_linear_schedule_with_warmup`): the decay starts from the peak
      at the end of warmup: `lr = peak * s / W` if `s < W` else
      `(peak - end) * max(0, (N - s) / max(1, N - W)) + end`.

    Args:
        peak_learning_rate: float. Learning rate at the end of warmup (the original's `init_lr`).
        warmup_steps: int. Number of warmup updates `W`, 0 for none.
        total_steps: int. Total number of optimizer updates `N`; the rate stays at `end_learning_rate` after.
        variant: str. `"original"` or `"huggingface"`. Defaults to `"original"`.
        end_learning_rate: float. Learning rate reached at `total_steps`. Defaults to 0.0.
        gradient_accumulation_steps: int. The optimizer's `k`: the schedule counts updates, `micro_step // k`.
            Defaults to 1.

    Input: the step, an integer scalar (tensor or Python int). Output: float32 scalar.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=100)
    >>> [round(float(schedule(step)), 7) for step in (0, 5, 10, 55, 100)]
    [0.0, 5e-05, 9e-05, 4.5e-05, 0.0]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps, variant="original", end_learning_rate=0.0,
                 gradient_accumulation_steps=1):
        if variant not in SCHEDULE_VARIANTS:
            raise ValueError(f"`variant` must be one of {SCHEDULE_VARIANTS}, got {variant!r}.")
        if int(total_steps) != total_steps or total_steps < 1:
            raise ValueError(f"`total_steps` must be a positive integer, got {total_steps}.")
        if int(warmup_steps) != warmup_steps or not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"`warmup_steps` must be an integer in [0, total_steps={total_steps}], got "
                             f"{warmup_steps}.")
        if peak_learning_rate < 0 or end_learning_rate < 0:
            raise ValueError(f"Learning rates must be >= 0, got peak_learning_rate={peak_learning_rate}, "
                             f"end_learning_rate={end_learning_rate}.")
        if int(gradient_accumulation_steps) != gradient_accumulation_steps or gradient_accumulation_steps < 1:
            raise ValueError(f"`gradient_accumulation_steps` must be a positive integer, got "
                             f"{gradient_accumulation_steps}.")
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.variant = variant
        self.end_learning_rate = float(end_learning_rate)
        self.gradient_accumulation_steps = int(gradient_accumulation_steps)

    def __call__(self, step):
        step = ops.convert_to_tensor(step)
        if self.gradient_accumulation_steps > 1:
            step = ops.floor_divide(step, self.gradient_accumulation_steps)
        step = ops.cast(step, "float32")
        if self.variant == "original":
            progress = ops.minimum(step, float(self.total_steps)) / float(self.total_steps)
        else:
            decay_steps = float(max(1, self.total_steps - self.warmup_steps))
            progress = ops.clip((step - float(self.warmup_steps)) / decay_steps, 0.0, 1.0)
        learning_rate = (self.peak_learning_rate - self.end_learning_rate) * (1.0 - progress) + self.end_learning_rate
        if self.warmup_steps > 0:
            warmup_learning_rate = self.peak_learning_rate * step / float(self.warmup_steps)
            learning_rate = ops.where(step < float(self.warmup_steps), warmup_learning_rate, learning_rate)
        return learning_rate

    def get_config(self):
        return constructor_config(self)


def resolve_warmup_steps(total_steps, warmup_steps=None, warmup_fraction=None):
    """Warmup updates from a count or a fraction of `total_steps` (`int(total_steps * fraction)`); 0 for neither.

    Example:
    >>> resolve_warmup_steps(1000, warmup_fraction=0.1)
    100
    """
    if warmup_steps is not None and warmup_fraction is not None:
        raise ValueError(f"Give `warmup_steps` or `warmup_fraction`, not both (got {warmup_steps} and "
                         f"{warmup_fraction}).")
    if warmup_fraction is not None:
        if not 0.0 <= warmup_fraction <= 1.0:
            raise ValueError(f"`warmup_fraction` must be in [0, 1], got {warmup_fraction}.")
        return int(total_steps * warmup_fraction)
    return 0 if warmup_steps is None else int(warmup_steps)


def create_optimizer(*, name="adamw_original", learning_rate, total_steps=None, warmup_steps=None, warmup_fraction=None,
                     weight_decay=0.01, global_clipnorm=1.0, gradient_accumulation_steps=1, loss_scale=False,
                     schedule_variant="original", end_learning_rate=0.0, exclude_from_weight_decay=None):
    """A BERT optimizer with a `WarmupLinearDecay` schedule (a constant rate without `total_steps`).

    Args:
        name: str. `"adamw_original"` (`AdamWeightDecay`, the original), `"lamb"` (`Lamb`) or `"keras_adamw"`
            (stock `keras.optimizers.AdamW`: bias correction, epsilon 1e-7). Defaults to `"adamw_original"`.
        learning_rate: float. Peak learning rate.
        total_steps: int or None. Total optimizer updates; None: a constant rate, no warmup. Defaults to None.
        warmup_steps: int or None. Warmup updates, or give `warmup_fraction`. Defaults to None.
        warmup_fraction: float or None. Warmup as a fraction of `total_steps`. Defaults to None.
        weight_decay: float. Decoupled weight decay rate. Defaults to 0.01.
        global_clipnorm: float or None. Clip all gradients to this global norm. Defaults to 1.0.
        gradient_accumulation_steps: int. Micro-batches averaged per update (1 = none). Defaults to 1.
        loss_scale: bool. Wrap in `keras.optimizers.LossScaleOptimizer` (for `mixed_float16`). Defaults to False.
        schedule_variant: str. `"original"` or `"huggingface"` (`WarmupLinearDecay`). Defaults to `"original"`.
        end_learning_rate: float. Learning rate at `total_steps`. Defaults to 0.0.
        exclude_from_weight_decay: list or tuple of str, or None. Patterns of variables without decay. None:
            `DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY`, for `"keras_adamw"` `KERAS_ADAMW_EXCLUDE_FROM_WEIGHT_DECAY`.
            Defaults to None.

    Returns:
        A `keras.optimizers.Optimizer` (a `LossScaleOptimizer` when `loss_scale`).

    Example:
    >>> optimizer = create_optimizer(learning_rate=2e-5, total_steps=1000, warmup_fraction=0.1)
    >>> type(optimizer).__name__, float(optimizer.learning_rate)  # step 0 of the warmup
    ('AdamWeightDecay', 0.0)
    """
    if name not in OPTIMIZER_NAMES:
        raise ValueError(f"`name` must be one of {OPTIMIZER_NAMES}, got {name!r}.")
    if not isinstance(learning_rate, (int, float)) or learning_rate <= 0:
        raise ValueError(f"`learning_rate` must be a positive float, got {learning_rate!r}.")
    if total_steps is None:
        if warmup_steps or warmup_fraction:
            raise ValueError("A warmup needs `total_steps` (the schedule's length); give it, or no warmup.")
        schedule = float(learning_rate)
    else:
        schedule = WarmupLinearDecay(learning_rate, resolve_warmup_steps(total_steps, warmup_steps, warmup_fraction),
                                     total_steps, schedule_variant, end_learning_rate, gradient_accumulation_steps)
    common = {"learning_rate": schedule, "global_clipnorm": global_clipnorm,
              "gradient_accumulation_steps": None if gradient_accumulation_steps == 1 else gradient_accumulation_steps}
    if exclude_from_weight_decay is None:
        exclude_from_weight_decay = (KERAS_ADAMW_EXCLUDE_FROM_WEIGHT_DECAY if name == "keras_adamw"
                                     else DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY)
    if name == "keras_adamw":
        optimizer = keras.optimizers.AdamW(weight_decay=weight_decay, **common)
        optimizer.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    else:
        optimizer_class = AdamWeightDecay if name == "adamw_original" else Lamb
        optimizer = optimizer_class(weight_decay_rate=weight_decay, exclude_from_weight_decay=exclude_from_weight_decay,
                                    **common)
    shape = ("constant" if total_steps is None else
             f"{schedule.warmup_steps} warmup / {total_steps} total updates ({schedule_variant} schedule)")
    logger.info("Optimizer %s: peak lr %g, %s, weight decay %g, global clipnorm %s, accumulation %d, loss scaling %s.",
                name, learning_rate, shape, weight_decay, global_clipnorm, gradient_accumulation_steps, loss_scale)
    if loss_scale:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
