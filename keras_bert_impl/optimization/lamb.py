"""LAMB: layer-wise adaptive moments for large-batch BERT training (You et al., 2019, arXiv:1904.00962).

Unlike `keras.optimizers.Lamb`, the decay is part of the update the trust ratio scales (the paper's Algorithm
2), exclusions match layer paths, and layer adaptation and bias correction can be switched off.
"""

import keras
from keras import ops

from keras_bert_impl.optimization.adam_weight_decay import AdamWeightDecay, compile_variable_patterns, variable_matches
from keras_bert_impl.utils.constructor_config import constructor_config


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class Lamb(AdamWeightDecay):
    """LAMB optimizer (You et al., 2019): Adam moments, decoupled decay, and a per-variable trust ratio.

    Per variable `p` with gradient `g` (after global-norm clipping), at step `t` (1-based):

        m = beta_1 * m + (1 - beta_1) * g ;  v = beta_2 * v + (1 - beta_2) * g^2
        m_hat = m / (1 - beta_1^t) ;  v_hat = v / (1 - beta_2^t)          (if `bias_correction`)
        r = m_hat / (sqrt(v_hat) + epsilon) + weight_decay_rate * p      (decay unless excluded)
        ratio = ||p|| / ||r||, or 1 when either norm is 0                 (1 for layer-adaptation exclusions)
        p = p - lr * ratio * r

    Args:
        learning_rate: float, `keras.optimizers.schedules.LearningRateSchedule` or callable. Defaults to 0.001.
        exclude_from_layer_adaptation: list or tuple of str, or None. Variables matching these get trust ratio
            1. None: the `exclude_from_weight_decay` list (TensorFlow Addons' convention); `()` adapts every
            variable. Defaults to None.
        bias_correction: bool. Divide the moments by `1 - beta^t` as in the paper. Defaults to True.
        **kwargs: the other `AdamWeightDecay` arguments (`beta_1`, `beta_2`, `epsilon`, `weight_decay_rate`,
            `exclude_from_weight_decay`, `global_clipnorm`) and `keras.optimizers.Optimizer`'s.

    Example:
    >>> import keras
    >>> kernel = keras.Variable(keras.ops.full((2, 2), 3.0), name="kernel")
    >>> optimizer = Lamb(learning_rate=0.1, weight_decay_rate=0.0)
    >>> _ = optimizer.apply_gradients([(keras.ops.full((2, 2), 0.5), kernel)])
    >>> # r = 1 everywhere, ratio = ||p|| / ||r|| = 6 / 2 = 3: p = 3 - 0.1 * 3 * 1.
    >>> round(float(keras.ops.convert_to_numpy(kernel)[0, 0]), 4)
    2.7
    """

    def __init__(self, learning_rate=0.001, exclude_from_layer_adaptation=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._layer_adaptation_exclusion = compile_variable_patterns(
            self.exclude_from_weight_decay_patterns if exclude_from_layer_adaptation is None
            else exclude_from_layer_adaptation, "exclude_from_layer_adaptation")
        self.exclude_from_layer_adaptation = (None if exclude_from_layer_adaptation is None
                                              else list(exclude_from_layer_adaptation))
        self.bias_correction = bool(bias_correction)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adapt_flags = [not variable_matches(self._layer_adaptation_exclusion, v) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        update = self._decayed_adam_update(gradient, variable, self.bias_correction)
        if self._adapt_flags[self._get_variable_index(variable)]:
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            both_positive = ops.logical_and(weight_norm > 0, update_norm > 0)
            # The safe denominator keeps the unselected branch finite (0 / 0 would be NaN).
            update = ops.where(both_positive, weight_norm / ops.where(both_positive, update_norm, 1.0), 1.0) * update
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * update)

    def get_config(self):
        return {**super().get_config(), **constructor_config(self, skip=("learning_rate",))}
