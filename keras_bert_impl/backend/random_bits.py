"""Dropout with cheaper random bits on XLA backends, through public APIs only.

Dropout masks are the largest non-matmul cost of a BERT training step, and each backend's default generator
is slow on XLA:CPU (`benchmarks/RESULTS.md`, section 1). `dropout()` is `keras.random.dropout` (training mode)
with the same distribution and seeds (one `SeedGenerator.next()` per call), but these bits:

- **JAX**: Threefry-2x32-20 written out in `jax.numpy`, the algorithm, key and counters of `jax.random`, so
  the masks are bit-identical to Keras' `Dropout`; XLA fuses the 20 rounds that `jax.random` runs as a rolled
  loop. Other JAX PRNG settings run Keras' dropout.
- **TensorFlow**: `tf.random.stateless_uniform(alg="threefry")` in a small `tf.function(jit_compile=True)`
  (about 4x cheaper than Philox under XLA:CPU): a different stream from Keras', the same in eager, graph and
  XLA-compiled calls.
- **torch**: Keras' dropout, unchanged.

`KERAS_BERT_IMPL_FAST_DROPOUT=0`, set before the first step is traced, runs Keras' own dropout everywhere.
"""

import math
import os

import keras
import numpy as np

FAST_DROPOUT_ENV = "KERAS_BERT_IMPL_FAST_DROPOUT"

# Threefry-2x32-20 (Salmon et al., 2011, "Parallel random numbers: as easy as 1, 2, 3"; Random123).
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA
_FLOAT32_MANTISSA_BITS = 23

_tensorflow_uniform = None  # the jit-compiled tf.function, created on first use


def fast_dropout_enabled():
    """False when `KERAS_BERT_IMPL_FAST_DROPOUT` is set to `0` / `false` / `no` / `off`."""
    return os.environ.get(FAST_DROPOUT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def dropout(inputs, rate, seed_generator, noise_shape=None):
    """`keras.random.dropout(inputs, rate, noise_shape, seed=seed_generator)` with the module docstring's bits.

    Args:
        inputs: tensor of the active backend.
        rate: float in [0, 1]. Probability of dropping a unit.
        seed_generator: `keras.random.SeedGenerator`; advanced once per call, as Keras' dropout does.
        noise_shape: optional mask shape broadcast to `inputs`; given, Keras' own dropout runs.
    """
    if 0 < rate < 1 and noise_shape is None and fast_dropout_enabled():
        backend = keras.backend.backend()
        if backend == "jax" and math.prod(inputs.shape) < 2**32 and _jax_prng_is_partitionable_threefry():
            return _jax_dropout(inputs, rate, seed_generator)
        if backend == "tensorflow":
            return _tensorflow_dropout(inputs, rate, seed_generator)
    return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed_generator)


# JAX
def threefry_2x32(key1, key2, count1, count2):
    """Threefry-2x32 with 20 rounds (`jax.random`'s default PRNG), written out round by round so XLA fuses it:
    uint32 key words `key1`, `key2` (scalars) and counter words `count1`, `count2` (arrays of one shape) -> the
    two uint32 output words, each of the counters' shape."""
    import jax.numpy as jnp

    def rotate_left(x, distance):
        return (x << np.uint32(distance)) | (x >> np.uint32(32 - distance))

    keys = (key1, key2, key1 ^ key2 ^ np.uint32(_THREEFRY_PARITY))
    x0, x1 = jnp.asarray(count1) + keys[0], jnp.asarray(count2) + keys[1]
    for block in range(5):
        for distance in _THREEFRY_ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = rotate_left(x1, distance) ^ x0
        x0 = x0 + keys[(block + 1) % 3]
        x1 = x1 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def _jax_prng_is_partitionable_threefry():
    """True under the JAX PRNG settings `jax_random_bits` reproduces: `jax_default_prng_impl="threefry2x32"` and
    `jax_threefry_partitionable` (False, so Keras' dropout runs, when a JAX release lacks either flag)."""
    import jax

    implementation = getattr(jax.config, "jax_default_prng_impl", None)
    return implementation == "threefry2x32" and getattr(jax.config, "jax_threefry_partitionable", False) is True


def jax_random_bits(seed, shape):
    """uint32 bits `shape` from a raw 2-word threefry key: `jax.random.bits(seed, shape)` with JAX's default
    (partitionable) threefry, for arrays of fewer than 2**32 elements."""
    import jax
    import jax.numpy as jnp

    seed = jnp.asarray(seed, jnp.uint32)
    size = math.prod(shape)
    # The counter of each element is its row-major index, as a (high, low) pair of words; high is 0 here.
    low = jax.lax.iota(jnp.uint32, size).reshape(shape)
    bits1, bits2 = threefry_2x32(seed[0], seed[1], jnp.zeros_like(low), low)
    return bits1 ^ bits2


def _jax_dropout(inputs, rate, seed_generator):
    import jax
    import jax.numpy as jnp

    keep_prob = 1.0 - rate
    bits = jax_random_bits(seed_generator.next(), tuple(inputs.shape))
    # `jax.random.bernoulli(key, keep_prob)`: uniform = mantissa / 2**23 (from the top 23 bits) < keep_prob
    # (in float32), i.e. mantissa < ceil(float32(keep_prob) * 2**23).
    threshold = math.ceil(float(np.float32(keep_prob)) * 2**_FLOAT32_MANTISSA_BITS)
    keep = (bits >> np.uint32(32 - _FLOAT32_MANTISSA_BITS)) < np.uint32(threshold)
    return jax.lax.select(keep, inputs / keep_prob, jnp.zeros_like(inputs))


# TensorFlow
def tensorflow_threefry_uniform(shape, seed):
    """float32 uniform [0, 1) values from `tf.random.stateless_uniform(alg="threefry")`, always computed by XLA
    (TensorFlow has no Threefry kernel outside XLA; inside an XLA-compiled step it is inlined)."""
    global _tensorflow_uniform
    import tensorflow as tf

    if _tensorflow_uniform is None:

        def uniform(shape, seed):
            return tf.random.stateless_uniform(shape, seed=seed, dtype=tf.float32, alg="threefry")

        signature = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([2], tf.int32)]
        _tensorflow_uniform = tf.function(uniform, jit_compile=True, input_signature=signature)
    return _tensorflow_uniform(tf.cast(shape, tf.int32), seed)


def _tensorflow_dropout(inputs, rate, seed_generator):
    import tensorflow as tf

    seed = seed_generator.next()
    if seed.dtype != tf.int32:  # as Keras' dropout: the stateless ops take int32 seeds under XLA
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    uniform = tf.ensure_shape(tensorflow_threefry_uniform(tf.shape(inputs), seed), inputs.shape)
    return tf.where(uniform >= rate, inputs / tf.cast(1.0 - rate, inputs.dtype), tf.zeros_like(inputs))


__all__ = ["FAST_DROPOUT_ENV", "dropout", "fast_dropout_enabled", "jax_random_bits", "tensorflow_threefry_uniform",
           "threefry_2x32"]
