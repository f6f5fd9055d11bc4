"""The original BERT optimizer (`AdamWeightDecayOptimizer` in google-research/bert `optimization.py`).

Backend-agnostic: `keras.ops` only.
"""

import keras
from keras import ops

from keras_bert_impl.optimization.decoupled_weight_decay import (
    DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
    DecoupledWeightDecayOptimizer,
)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class AdamWeightDecay(DecoupledWeightDecayOptimizer):
    """Adam without bias correction and with decoupled weight decay, as BERT was pretrained (Devlin et al., 2018).

    Per variable `p` with gradient `g` (after global-norm clipping of all gradients together):

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g^2
        p = p - lr * (m / (sqrt(v) + epsilon) + weight_decay_rate * p)

    where the decay term is dropped for variables whose path or name matches `exclude_from_weight_decay`.
    Differences from `keras.optimizers.AdamW`: no bias correction (`m`, `v` are not divided by `1 - beta^t`,
    so early steps are not amplified), epsilon 1e-6 instead of 1e-7, exclusion matched on the layer path
    (`.../layer_norm/gamma`) rather than the bare variable name, and global-norm clipping 1.0 by default.

    Works with the Keras base-optimizer features: `gradient_accumulation_steps` (the update uses the mean
    gradient of the micro-steps), `keras.optimizers.LossScaleOptimizer` (fp16) and mixed precision (slots take
    the dtype of the float32 master weights).

    Args:
        learning_rate: float, `keras.optimizers.schedules.LearningRateSchedule` (e.g. `WarmupLinearDecay`) or
            callable. Defaults to 0.001.
        beta_1: float. Decay rate of the first moment. Defaults to 0.9.
        beta_2: float. Decay rate of the second moment. Defaults to 0.999.
        epsilon: float. Added to `sqrt(v)`. Defaults to 1e-6.
        weight_decay_rate: float. Decoupled weight decay coefficient. Defaults to 0.01.
        exclude_from_weight_decay: list or tuple of str. Regular expressions searched in `variable.path` and
            `variable.name`; matches get no decay. Defaults to `("layer_norm", "LayerNorm", "bias")`, which
            covers LayerNorm gamma/beta, Dense biases and the MLM `output_bias`.
        global_clipnorm: float or None. Global gradient-norm clip. Defaults to 1.0.
        **kwargs: other `keras.optimizers.Optimizer` arguments (`gradient_accumulation_steps`, `name`, ...).

    Example:
    >>> import keras, numpy as np
    >>> kernel = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    >>> optimizer = AdamWeightDecay(learning_rate=0.1)
    >>> _ = optimizer.apply_gradients([(keras.ops.full((2, 2), 0.5), kernel)])
    >>> # First step without bias correction: m / sqrt(v) = 0.1 / sqrt(0.001) whatever the gradient.
    >>> round(float(keras.ops.convert_to_numpy(kernel)[0, 0]), 4)  # 1 - 0.1 * (3.1623 + 0.01)
    0.6828
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        global_clipnorm=1.0,
        **kwargs,
    ):
        super().__init__(
            learning_rate=learning_rate,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            weight_decay_rate=weight_decay_rate,
            exclude_from_weight_decay=exclude_from_weight_decay,
            global_clipnorm=global_clipnorm,
            **kwargs,
        )

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        first_moment, second_moment = self._update_moments(gradient, variable)
        update = first_moment / (ops.sqrt(second_moment) + ops.cast(self.epsilon, variable.dtype))
        update = self._add_weight_decay(update, variable)
        self.assign_sub(variable, learning_rate * update)
