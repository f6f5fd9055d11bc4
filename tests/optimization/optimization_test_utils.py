"""Helpers for the optimizer tests: variables named like BERT's, gradient sequences, stepping."""

import contextlib

import keras
import numpy as np

# Path -> shape. Excluded from decay by the default patterns: LayerNorm weights, Dense biases, MLM output bias.
BERT_LIKE_VARIABLES = {
    "embeddings/token_embedding/embeddings": (6, 4),
    "encoder/layer_0/attention/dense/kernel": (4, 3),
    "encoder/layer_0/attention/dense/bias": (3,),
    "encoder/layer_0/layer_norm/gamma": (3,),
    "encoder/layer_0/layer_norm/beta": (3,),
    "mlm_head/output_bias": (6,),
}
DECAYED_PATHS = ("embeddings/token_embedding/embeddings", "encoder/layer_0/attention/dense/kernel")


def make_variable(path, value):
    """A `keras.Variable` whose `path` is exactly `path` (scopes from the leading parts)."""
    *scopes, name = path.split("/")
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(keras.name_scope(scope))
        variable = keras.Variable(np.asarray(value, "float32"), name=name)
    assert variable.path == path
    return variable


def bert_like_values(rng):
    """Initial values per path; the beta is all zeros, like a fresh LayerNorm, to cover zero norms."""
    values = {path: rng.normal(size=shape).astype("float32") for path, shape in BERT_LIKE_VARIABLES.items()}
    values["encoder/layer_0/layer_norm/beta"] = np.zeros(3, "float32")
    return values


def gradient_steps(rng, shapes, num_steps, scale):
    """`num_steps` lists of float32 gradients, one per shape, normal with standard deviation `scale`."""
    return [[(scale * rng.normal(size=shape)).astype("float32") for shape in shapes] for _ in range(num_steps)]


def apply_steps(optimizer, variables, steps):
    for gradients in steps:
        optimizer.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in gradients], variables))
    return [keras.ops.convert_to_numpy(v) for v in variables]


def global_norm(gradients):
    return float(np.sqrt(sum(np.sum(np.square(g.astype("float64"))) for g in gradients)))
