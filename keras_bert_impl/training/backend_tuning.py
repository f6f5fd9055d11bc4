"""Backend-specific speedups of the training step, kept in this one module: the dropout random bits.

Dropout masks are the largest cost of a BERT training step that is not a matmul (13 masks per step at mini
size, 18M random words at batch 32 x 128). Each backend's default generator is slow on XLA:CPU, in a
different way (`benchmarks/RESULTS.md`, section 1):

- **JAX**: `jax.random` (threefry2x32) lowers on CPU with its 5 rounds as a *rolled* `while` loop (shorter
  compiles), so every round reads and writes the whole counter arrays. `use_unrolled_jax_threefry()`
  registers JAX's own unrolled lowering (the one used on GPU and TPU) for CPU too: XLA fuses the rounds into
  one elementwise loop. The random bits are **bit-identical** (same algorithm, same keys); a dropout mask costs
  about 2.7x less CPU, and the mini pretraining step about 1.2x less. It changes the lowering process-wide,
  for every `jax.random` call lowered afterwards (other models included), and compiles take slightly longer.
- **TensorFlow**: Keras' `Dropout` draws with `tf.random.stateless_uniform`'s default algorithm (Philox on
  CPU). Inside XLA-compiled functions (`jit_compile=True`, which this package's training uses) `dropout()`
  draws with the Threefry algorithm instead: about 4x less CPU per element under XLA on this CPU and about
  1.14x on the whole mini pretraining step. The masks follow the same distribution (keep with probability
  `1 - rate`, kept values scaled by `1 / (1 - rate)`) from the same per-call Keras seeds, but they are a
  different random stream from Keras' `Dropout`. Threefry has no TensorFlow kernel outside XLA, so eager
  and non-XLA graph steps use Keras' dropout unchanged.
- **torch**: Keras' dropout, unchanged.

Opt out (Keras' own dropout on every backend, JAX's rolled CPU lowering): set the environment variable
`KERAS_BERT_IMPL_FAST_DROPOUT=0` before the first training step is traced.

XLA flags: none is set here. Measured on this package's mini pretraining step with jaxlib 0.10.2 on a 2-core
AVX-512 CPU, none of `--xla_cpu_use_xnnpack=false`, `--xla_cpu_use_onednn=true`,
`--xla_cpu_experimental_onednn_custom_call=true`, `--xla_cpu_multi_thread_eigen=false`,
`--xla_cpu_experimental_ynn_fusion_type=-dot|-reduce|-eltwise` or
`--xla_cpu_experimental_xnn_fusion_type=-dot|-reduce` was faster by more than the noise (several were
slower), so the package leaves `XLA_FLAGS` to the user. (A library could only set it before JAX creates its
CPU client, i.e. before the first JAX array exists, which an import-time side effect cannot guarantee.)
"""

import logging
import os

import keras

logger = logging.getLogger(__name__)

FAST_DROPOUT_ENV = "KERAS_BERT_IMPL_FAST_DROPOUT"

_jax_unrolled_threefry = None  # None: not tried yet; True / False: installed / unavailable


def fast_dropout_enabled():
    """False when `KERAS_BERT_IMPL_FAST_DROPOUT` is set to `0` / `false` / `no` / `off`."""
    return os.environ.get(FAST_DROPOUT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def use_unrolled_jax_threefry():
    """Lower `jax.random`'s threefry2x32 on CPU with JAX's unrolled rule (bit-identical bits, faster).

    Idempotent. Returns True when the unrolled rule is registered, False when this JAX does not have the
    private names it needs (then JAX's default lowering stays, and nothing else changes).
    """
    global _jax_unrolled_threefry
    if _jax_unrolled_threefry is None:
        try:
            from jax._src.interpreters import mlir
            from jax._src.random import threefry2x32

            mlir.register_lowering(
                threefry2x32.threefry2x32_p, threefry2x32._threefry2x32_lowering_rule, platform="cpu"
            )
            _jax_unrolled_threefry = True
        except (ImportError, AttributeError) as error:  # JAX moved its private names: keep its default
            logger.info("JAX's threefry lowering was left as is (%s).", error)
            _jax_unrolled_threefry = False
    return _jax_unrolled_threefry


def _in_xla_compiled_tensorflow_function():
    try:
        from tensorflow.python.framework import ops as tf_ops
        from tensorflow.python.ops import control_flow_util
    except ImportError:
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph()))


def _tensorflow_threefry_dropout(inputs, rate, seed_generator):
    import tensorflow as tf

    seed = seed_generator.next()
    if seed.dtype != tf.int32:  # as Keras' `_cast_seed`: the stateless ops take int32 seeds under XLA
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    uniform = tf.random.stateless_uniform(tf.shape(inputs), seed=seed, dtype=tf.float32, alg="threefry")
    keep_prob = 1.0 - rate
    return tf.where(uniform >= rate, inputs / tf.cast(keep_prob, inputs.dtype), tf.zeros_like(inputs))


def dropout(inputs, rate, seed_generator, noise_shape=None):
    """`keras.random.dropout(inputs, rate, noise_shape, seed=seed_generator)`, with the faster random bits
    described in the module docstring (training mode; the caller checks `training`)."""
    if rate > 0 and rate < 1 and noise_shape is None and fast_dropout_enabled():
        backend = keras.backend.backend()
        if backend == "jax":
            use_unrolled_jax_threefry()  # before the step is lowered: layers are called while tracing
        elif backend == "tensorflow" and _in_xla_compiled_tensorflow_function():
            return _tensorflow_threefry_dropout(inputs, rate, seed_generator)
    return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed_generator)


__all__ = ["FAST_DROPOUT_ENV", "dropout", "fast_dropout_enabled", "use_unrolled_jax_threefry"]
