"""The original BERT optimizer (`AdamWeightDecayOptimizer` in google-research/bert `optimization.py`).

The decay lives in `update_step`, not in the Keras base optimizer's `weight_decay` (a separate pre-step matched
on bare variable names): LAMB needs it inside the update, and exclusions match the layer path as the original.
"""

import re
import threading

import keras
from keras import ops

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("layer_norm", "LayerNorm", "bias")


def compile_variable_patterns(patterns, argument_name):
    """Compiles a list of regular expressions (`argument_name`'s) into one `re.Pattern`, or None when empty.

    Example:
    >>> bool(compile_variable_patterns(["bias"], "exclude").search("dense/bias"))
    True
    """
    if isinstance(patterns, str) or not isinstance(patterns, (list, tuple)):
        raise ValueError(f"`{argument_name}` must be a list or tuple of regular expressions, got {patterns!r} "
                         f"(a single string would be read character by character).")
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ValueError(f"`{argument_name}` entries must be str, got {pattern!r} in {list(patterns)}.")
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"`{argument_name}` entry {pattern!r} is not a valid regular expression: {error}.")
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


def variable_matches(pattern, variable):
    """Whether `pattern` (from `compile_variable_patterns`, `None` matches nothing) occurs in the variable's
    path or its name."""
    return pattern is not None and any(pattern.search(name) is not None
                                       for name in (str(getattr(variable, "path", "")), str(variable.name)))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """Adam without bias correction and with decoupled weight decay, as BERT was pretrained (Devlin et al., 2018).

    Per variable `p` with gradient `g` (after global-norm clipping of all gradients together):

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g^2
        p = p - lr * (m / (sqrt(v) + epsilon) + weight_decay_rate * p)      (decay unless excluded)

    Unlike `keras.optimizers.AdamW`: no bias correction, epsilon 1e-6, exclusion matched on the layer path
    (`.../layer_norm/gamma`), global-norm clipping 1.0 by default.

    Args:
        learning_rate: float, `keras.optimizers.schedules.LearningRateSchedule` (e.g. `WarmupLinearDecay`) or
            callable. Defaults to 0.001.
        beta_1: float. Decay rate of the first moment. Defaults to 0.9.
        beta_2: float. Decay rate of the second moment. Defaults to 0.999.
        epsilon: float. Added to `sqrt(v)`. Defaults to 1e-6.
        weight_decay_rate: float. Decoupled weight decay coefficient. Defaults to 0.01.
        exclude_from_weight_decay: list or tuple of str. Regular expressions searched in `variable.path` and
            `variable.name`; matches get no decay. Defaults to `("layer_norm", "LayerNorm", "bias")`.
        global_clipnorm: float or None. Global gradient-norm clip (None for `clipnorm` / `clipvalue`).
            Defaults to 1.0.
        **kwargs: other `keras.optimizers.Optimizer` arguments (`gradient_accumulation_steps`, `use_ema`,
            `name`, ...). `weight_decay` is refused: use `weight_decay_rate`.

    Example:
    >>> import keras, numpy as np
    >>> kernel = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    >>> optimizer = AdamWeightDecay(learning_rate=0.1)
    >>> _ = optimizer.apply_gradients([(keras.ops.full((2, 2), 0.5), kernel)])
    >>> # First step without bias correction: m / sqrt(v) = 0.1 / sqrt(0.001) whatever the gradient.
    >>> round(float(keras.ops.convert_to_numpy(kernel)[0, 0]), 4)  # 1 - 0.1 * (3.1623 + 0.01)
    0.6828
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-6, weight_decay_rate=0.01,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, global_clipnorm=1.0, **kwargs):
        if kwargs.get("weight_decay") is not None:
            raise ValueError(f"{type(self).__name__} applies decoupled decay itself: pass `weight_decay_rate` "
                             f"(got weight_decay={kwargs['weight_decay']}).")
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, global_clipnorm=global_clipnorm, **kwargs)
        self._clipping_done = threading.local()
        for name, value in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"`{name}` must be in [0, 1), got {value}.")
        if epsilon <= 0:
            raise ValueError(f"`epsilon` must be > 0, got {epsilon}.")
        if weight_decay_rate < 0:
            raise ValueError(f"`weight_decay_rate` must be >= 0, got {weight_decay_rate}.")
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self._weight_decay_exclusion = compile_variable_patterns(exclude_from_weight_decay, "exclude_from_weight_decay")
        self.exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._first_moments, self._second_moments = self.add_optimizer_variables(var_list, ["momentum", "velocity"])
        # Decided on the Keras variables (`update_step` may get a TensorFlow variable without `path`).
        self._decay_flags = [self.weight_decay_rate > 0 and not variable_matches(self._weight_decay_exclusion, variable)
                             and self._use_weight_decay(variable) for variable in var_list]

    def apply(self, grads, trainable_variables=None):
        """`keras.optimizers.Optimizer.apply`, clipping the global (all-reduced) gradient under tf.distribute.

        Keras clips each replica's gradients before summing them; the original clips the global gradient. With
        two or more replicas each replica all-reduces the gradients, scales its own by the global clip factor
        (as `keras.optimizers` computes it) and switches Keras' clipping off for the call: one extra all-reduce.
        """
        if (keras.backend.backend() != "tensorflow" or not self.global_clipnorm or self.gradient_accumulation_steps
                or self.loss_scale_factor is not None):
            return super().apply(grads, trainable_variables)
        import tensorflow as tf

        context = tf.distribute.get_replica_context()  # None in a cross-replica context
        if context is None or context.num_replicas_in_sync < 2:
            return super().apply(grads, trainable_variables)
        clipnorm = self.global_clipnorm
        grads = list(grads)
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [g for g in grads if g is not None])
        norm = tf.linalg.global_norm(summed)
        scale = clipnorm * tf.minimum(1.0 / norm, 1.0 / clipnorm) + (norm - norm)
        grads = [None if g is None else g * tf.cast(scale, g.dtype) for g in grads]
        # Each replica runs this in its own thread (MirroredStrategy): the switch is per thread.
        self._clipping_done.active = True
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._clipping_done.active = False

    @property
    def global_clipnorm(self):
        """The global-norm clip (None while `apply` has clipped the all-reduced gradient in this thread)."""
        done = getattr(self, "_clipping_done", None)
        return None if getattr(done, "active", False) else self._global_clipnorm

    @global_clipnorm.setter
    def global_clipnorm(self, value):
        self._global_clipnorm = value

    def _decayed_adam_update(self, gradient, variable, bias_correction=False):
        """Update the moments and return `m / (sqrt(v) + epsilon) + wd * p` (moments bias-corrected if asked)."""
        dtype = variable.dtype
        gradient = ops.cast(gradient, dtype)
        index = self._get_variable_index(variable)
        first_moment, second_moment = self._first_moments[index], self._second_moments[index]
        # `1 - beta` in Python double as the original: float32(1) - float32(0.999) is off by 5e-5 relative.
        beta_1, one_minus_beta_1 = ops.cast(self.beta_1, dtype), ops.cast(1.0 - self.beta_1, dtype)
        beta_2, one_minus_beta_2 = ops.cast(self.beta_2, dtype), ops.cast(1.0 - self.beta_2, dtype)
        self.assign(first_moment, beta_1 * first_moment + one_minus_beta_1 * gradient)
        self.assign(second_moment, beta_2 * second_moment + one_minus_beta_2 * ops.square(gradient))
        if bias_correction:
            # `iterations` counts optimizer updates (micro-steps / accumulation steps), so t starts at 1.
            step = ops.cast(self.iterations + 1, dtype)
            first_moment = first_moment / (1.0 - ops.power(beta_1, step))
            second_moment = second_moment / (1.0 - ops.power(beta_2, step))
        update = first_moment / (ops.sqrt(second_moment) + ops.cast(self.epsilon, dtype))
        if self._decay_flags[index]:
            update = update + ops.cast(self.weight_decay_rate, dtype) * variable
        return update

    def update_step(self, gradient, variable, learning_rate):
        update = self._decayed_adam_update(gradient, variable)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * update)

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay")
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      weight_decay_rate=self.weight_decay_rate,
                      exclude_from_weight_decay=list(self.exclude_from_weight_decay_patterns))
        return config
