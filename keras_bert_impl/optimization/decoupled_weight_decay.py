"""Shared machinery of the BERT optimizers: Adam moments plus decoupled weight decay with an exclusion list.

Why the decay is not delegated to the Keras base optimizer (`weight_decay=`): the base applies
`variable -= variable * weight_decay * learning_rate` before `update_step`. For Adam that equals the original
`p -= lr * (m / (sqrt(v) + eps) + wd * p)` up to rounding, but (1) LAMB needs the decay term inside the update
whose norm forms the trust ratio, so it cannot come from a separate pre-step; (2) the base class matches its
exclusion patterns against `variable.name` only ("gamma", "bias"), while this project's convention (and the
original `_do_use_weight_decay`, which sees full TF names) matches the layer path ("encoder/layer_norm/gamma").
So the decay lives in each `update_step`, written as in the original `optimization.py`, and the base
`weight_decay` stays `None`. The base's `exclude_from_weight_decay(var_list=..., var_names=...)` method still
works on top of the constructor patterns.

Backend-agnostic: `keras.ops` only.
"""

import re
import threading

import keras

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("layer_norm", "LayerNorm", "bias")


def compile_variable_patterns(patterns, argument_name):
    """Compiles a list of regular expressions into one pattern matched with `re.search`.

    Args:
        patterns: list or tuple of str. Regular expressions (plain substrings work as themselves).
        argument_name: str. Argument the patterns came from, for error messages.

    Returns:
        A compiled `re.Pattern`, or `None` when `patterns` is empty.

    Example:
    >>> bool(compile_variable_patterns(["bias"], "exclude").search("dense/bias"))
    True
    """
    if isinstance(patterns, str) or not isinstance(patterns, (list, tuple)):
        raise ValueError(
            f"`{argument_name}` must be a list or tuple of regular expressions, got {patterns!r} "
            f"(a single string would be read character by character)."
        )
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
    """Whether `pattern` (from `compile_variable_patterns`) occurs in the variable's path or its name.

    Args:
        pattern: `re.Pattern` or `None` (matches nothing).
        variable: `keras.Variable` (or a backend variable, which has only a name).

    Returns:
        bool.
    """
    if pattern is None:
        return False
    names = [str(getattr(variable, "path", "")), str(variable.name)]
    return any(pattern.search(name) is not None for name in names)


def _check_fraction(value, argument_name):
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`{argument_name}` must be in [0, 1), got {value}.")


def _multi_replica_context():
    """The tf.distribute replica context when the step runs on two or more replicas, else None."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    return context if context is not None and context.num_replicas_in_sync > 1 else None


class DecoupledWeightDecayOptimizer(keras.optimizers.Optimizer):
    """Base of `AdamWeightDecay` and `Lamb`: first/second moment slots and per-variable decay decisions.

    Subclasses implement `update_step` and use `self._moments(variable)` and `self._decays(variable)`.

    Args:
        learning_rate: float, `keras.optimizers.schedules.LearningRateSchedule` or callable. Defaults to 0.001.
        beta_1: float. Decay rate of the first moment. Defaults to 0.9.
        beta_2: float. Decay rate of the second moment. Defaults to 0.999.
        epsilon: float. Added to `sqrt(v)` in the denominator. Defaults to 1e-6 (the original BERT value).
        weight_decay_rate: float. Decoupled weight decay coefficient `wd`. Defaults to 0.01.
        exclude_from_weight_decay: list or tuple of str. Regular expressions searched in `variable.path` and
            `variable.name`; matching variables get no decay. Defaults to `("layer_norm", "LayerNorm", "bias")`.
        global_clipnorm: float or None. Clip all gradients to this global norm (Keras base-class clipping).
            Defaults to 1.0 (the original BERT value). Set to None to use `clipnorm` or `clipvalue` instead.
        **kwargs: other `keras.optimizers.Optimizer` arguments (`gradient_accumulation_steps`, `use_ema`,
            `clipnorm`, `name`, ...). `weight_decay` is refused: use `weight_decay_rate`.
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
        if kwargs.get("weight_decay") is not None:
            raise ValueError(
                f"{type(self).__name__} applies decoupled decay itself: pass `weight_decay_rate` "
                f"(got weight_decay={kwargs['weight_decay']})."
            )
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, global_clipnorm=global_clipnorm, **kwargs)
        self._clipping_done = threading.local()
        _check_fraction(beta_1, "beta_1")
        _check_fraction(beta_2, "beta_2")
        if epsilon <= 0:
            raise ValueError(f"`epsilon` must be > 0, got {epsilon}.")
        if weight_decay_rate < 0:
            raise ValueError(f"`weight_decay_rate` must be >= 0, got {weight_decay_rate}.")
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self._weight_decay_exclusion = compile_variable_patterns(
            exclude_from_weight_decay, "exclude_from_weight_decay"
        )
        self.exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._first_moments, self._second_moments = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )
        # Decided here, on the Keras variables: `update_step` may receive the backend variable (TensorFlow),
        # which has no `path`. The base `_use_weight_decay` adds exclusions set through its own method.
        self._decay_flags = [
            self.weight_decay_rate > 0
            and not variable_matches(self._weight_decay_exclusion, variable)
            and self._use_weight_decay(variable)
            for variable in var_list
        ]

    def apply(self, grads, trainable_variables=None):
        """`keras.optimizers.Optimizer.apply`, clipping the global (all-reduced) gradient under tf.distribute.

        Keras' TensorFlow optimizer clips each replica's gradients (`global_clipnorm`) before it sums them
        across replicas, so with two or more replicas the clip factor comes from a replica's own norm. The
        original (`optimization.py`) clips the gradient of the global batch, `tf.clip_by_global_norm` over the
        all-reduced gradients. Keras 3 has no public hook between its all-reduce and `update_step`
        (`experimental_aggregate_gradients` is gone, `update_step` sees one variable at a time), so here, in
        the public `apply`, each replica all-reduces (sums) the gradients, computes the clip factor of that
        global gradient as `keras.optimizers` does (`c * min(1 / norm, 1 / c)`, NaN for a non-finite norm),
        and scales its own gradients by it; Keras' base clipping is switched off for this call, and Keras'
        own all-reduce then sums the scaled replica gradients, which is the clipped global gradient (clipping
        is a common scale factor). Cost: one extra all-reduce of the gradients per step. One device, the JAX
        distribution API (the step sees the global batch), gradient accumulation (Keras clips the accumulated
        mean) and `loss_scale_factor` keep Keras' own clipping.
        """
        context = _multi_replica_context()
        if (context is None or not self.global_clipnorm or self.gradient_accumulation_steps
                or self.loss_scale_factor is not None):
            return super().apply(grads, trainable_variables)
        import tensorflow as tf

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

    def _moments(self, variable):
        index = self._get_variable_index(variable)
        return self._first_moments[index], self._second_moments[index]

    def _decays(self, variable):
        return self._decay_flags[self._get_variable_index(variable)]

    def _update_moments(self, gradient, variable):
        """Updates and returns `(m, v)` as the original: `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`."""
        first_moment, second_moment = self._moments(variable)
        dtype = variable.dtype
        # `1 - beta` in Python double as the original: float32(1) - float32(0.999) is off by 5e-5 relative.
        beta_1, one_minus_beta_1 = keras.ops.cast(self.beta_1, dtype), keras.ops.cast(1.0 - self.beta_1, dtype)
        beta_2, one_minus_beta_2 = keras.ops.cast(self.beta_2, dtype), keras.ops.cast(1.0 - self.beta_2, dtype)
        self.assign(first_moment, beta_1 * first_moment + one_minus_beta_1 * gradient)
        self.assign(second_moment, beta_2 * second_moment + one_minus_beta_2 * keras.ops.square(gradient))
        return first_moment, second_moment

    def _add_weight_decay(self, update, variable):
        if not self._decays(variable):
            return update
        return update + keras.ops.cast(self.weight_decay_rate, variable.dtype) * variable

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay")
        config.update(
            {
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "weight_decay_rate": self.weight_decay_rate,
                "exclude_from_weight_decay": list(self.exclude_from_weight_decay_patterns),
            }
        )
        return config
