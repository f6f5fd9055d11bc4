"""The per-backend gradient step for models whose loss is computed by the model itself.

Keras 3's `train_step` contract differs per backend: TensorFlow records a `tf.GradientTape`, torch calls
`backward()` on the loss, JAX is functional (`train_step(state, data) -> (logs, state)` over explicit
variable values, see `keras/src/backend/jax/trainer.py`). This module is the only place in the package that
branches on the backend; models call `train_step(model, *args)` / `test_step(model, *args)` from their own
`train_step(self, *args)` / `test_step(self, *args)`.

A model using these steps provides, written once in `keras.ops`:

- `model.compute_step_losses(y, y_pred) -> dict` of float32 scalars; `"loss"` is what is differentiated,
  the other entries (component losses, accuracies, weights) are for the metric trackers.
- `model.update_step_metrics(step_values, x) -> logs` updates its `keras.metrics.Mean` trackers (listed in
  `model.metrics`) and returns `{name: result}`.

Gradients go through `optimizer.apply` / `optimizer.stateless_apply`, so gradient accumulation, global-norm
clipping and `keras.optimizers.LossScaleOptimizer` (`optimizer.scale_loss`) work unchanged, as do
`jit_compile=True` (XLA on TensorFlow and JAX; the step traces as one function), `tf.distribute` strategies
(TensorFlow sums replica gradients, so the differentiated loss is divided by the number of replicas, as
Keras' own step does) and the Keras distribution API on JAX (the step is traced over globally sharded
arrays, so the loss is the global one).
"""

import keras


def xla_jit_compile(requested=True):
    """The `jit_compile` value for `Model.compile` that means "compile with XLA where the backend has it".

    True on TensorFlow and JAX when `requested`. False on torch: its `jit_compile=True` is `torch.compile`
    (TorchDynamo), not XLA, and it cannot trace the tf.data-fed Keras steps this package uses (it fails on
    predict and retraces on every new bucket shape), so torch steps run eagerly.
    """
    return bool(requested) and keras.backend.backend() in ("tensorflow", "jax")


def unpack_x_y(data):
    """`(x, y)` from a batch; per-example `sample_weight`s are rejected (the model weights its own losses)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    if sample_weight is not None:
        raise ValueError(
            "This model computes its own weighted losses from `y` and does not take a third batch element "
            "(sample_weight); put per-example weights into `y`."
        )
    return x, y


def train_step(model, *step_args):
    """One optimizer step for `model`; `step_args` is `(data,)` or, on JAX, `(state, data)`."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_train_step(model, *step_args)
    if backend == "jax":
        return _jax_train_step(model, *step_args)
    if backend == "torch":
        return _torch_train_step(model, *step_args)
    raise NotImplementedError(f"No train step for the Keras backend {backend!r}.")


def test_step(model, *step_args):
    """One evaluation step for `model`; `step_args` is `(data,)` or, on JAX, `(state, data)`."""
    if keras.backend.backend() == "jax":
        return _jax_test_step(model, *step_args)
    x, y = unpack_x_y(step_args[0])
    step_values = model.compute_step_losses(y, model(x, training=False))
    return model.update_step_metrics(step_values, x)


def _scale_loss(model, loss):
    return model.optimizer.scale_loss(loss) if model.optimizer is not None else loss


def _tensorflow_train_step(model, data):
    import tensorflow as tf

    x, y = unpack_x_y(data)
    num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
    with tf.GradientTape() as tape:
        step_values = model.compute_step_losses(y, model(x, training=True))
        # Replica gradients are summed by the optimizer: differentiate the replica's share of the mean.
        loss = step_values["loss"] / num_replicas
        loss = _scale_loss(model, loss)
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    model.optimizer.apply(gradients, variables)
    return model.update_step_metrics(step_values, x)


def _torch_train_step(model, data):
    import torch

    x, y = unpack_x_y(data)
    step_values = model.compute_step_losses(y, model(x, training=True))
    model.zero_grad()  # torch accumulates .grad across backward() calls
    _scale_loss(model, step_values["loss"]).backward()
    variables = model.trainable_variables
    gradients = [variable.value.grad for variable in variables]
    with torch.no_grad():
        model.optimizer.apply(gradients, variables)
    return model.update_step_metrics(
        {name: value.detach() for name, value in step_values.items()}, x
    )


def _jax_losses(model, trainable_values, non_trainable_values, optimizer_values, x, y, training):
    """Stateless forward + losses: `(scaled loss, (step values, new non-trainable values))`."""
    y_pred, non_trainable_values = model.stateless_call(
        trainable_values, non_trainable_values, x, training=training
    )
    step_values = model.compute_step_losses(y, y_pred)
    loss = step_values["loss"]
    if training and model.optimizer is not None:
        # The loss scale (LossScaleOptimizer) is an optimizer variable: read it from the given state.
        with keras.StatelessScope(state_mapping=list(zip(model.optimizer.variables, optimizer_values))):
            loss = model.optimizer.scale_loss(loss)
    return loss, (step_values, non_trainable_values)


def _jax_update_metrics(model, metrics_values, step_values, x):
    mapping = list(zip(model.metrics_variables, metrics_values))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        logs = model.update_step_metrics(step_values, x)
    new_values = []
    for variable, old_value in mapping:
        value = scope.get_current_value(variable)
        new_values.append(old_value if value is None else value)
    return logs, new_values


def _jax_train_step(model, state, data):
    import jax

    trainable_values, non_trainable_values, optimizer_values, metrics_values = state
    x, y = unpack_x_y(data)
    gradient_fn = jax.value_and_grad(_jax_losses, argnums=1, has_aux=True)
    (_, (step_values, non_trainable_values)), gradients = gradient_fn(
        model, trainable_values, non_trainable_values, optimizer_values, x, y, True
    )
    trainable_values, optimizer_values = model.optimizer.stateless_apply(
        optimizer_values, gradients, trainable_values
    )
    logs, metrics_values = _jax_update_metrics(model, metrics_values, step_values, x)
    return logs, (trainable_values, non_trainable_values, optimizer_values, metrics_values)


def _jax_test_step(model, state, data):
    trainable_values, non_trainable_values, metrics_values = state
    x, y = unpack_x_y(data)
    _, (step_values, non_trainable_values) = _jax_losses(
        model, trainable_values, non_trainable_values, None, x, y, False
    )
    logs, metrics_values = _jax_update_metrics(model, metrics_values, step_values, x)
    return logs, (trainable_values, non_trainable_values, metrics_values)
