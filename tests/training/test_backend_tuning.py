"""The backend-specific dropout speedups (`keras_bert_impl.training.backend_tuning`) stay in place and keep
dropout's semantics. If one of these fails after a Keras / JAX / TensorFlow upgrade, the speedup was lost
(see the module docstring and benchmarks/RESULTS.md, section 1)."""

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.training import backend_tuning

BACKEND = keras.backend.backend()


def _keep_fraction_and_values(outputs, rate):
    outputs = np.asarray(outputs)
    kept = outputs != 0
    np.testing.assert_allclose(outputs[kept], 1.0 / (1.0 - rate), rtol=1e-6)
    return kept.mean()


def test_dropout_layer_is_dropout():
    layer = BertDropout(0.1, seed=3)
    x = np.ones((64, 128, 32), "float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(x, training=False)), x)
    first = keras.ops.convert_to_numpy(layer(x, training=True))
    second = keras.ops.convert_to_numpy(layer(x, training=True))
    for outputs in (first, second):
        assert abs(_keep_fraction_and_values(outputs, 0.1) - 0.9) < 0.005
    assert (first != second).any()  # the seed generator advances per call
    assert isinstance(BertDropout.from_config(layer.get_config()), BertDropout)


def test_fast_dropout_opt_out(monkeypatch):
    monkeypatch.setenv(backend_tuning.FAST_DROPOUT_ENV, "0")
    assert not backend_tuning.fast_dropout_enabled()
    monkeypatch.setenv(backend_tuning.FAST_DROPOUT_ENV, "1")
    assert backend_tuning.fast_dropout_enabled()


@pytest.mark.skipif(BACKEND != "jax", reason="JAX's threefry lowering")
def test_jax_threefry_lowers_unrolled_on_cpu_with_the_same_bits():
    import jax
    import jax.numpy as jnp
    from jax.extend.random import threefry_2x32

    BertDropout(0.1, seed=0)(np.ones((4, 4), "float32"), training=True)  # installs it, as a traced step does
    assert backend_tuning.use_unrolled_jax_threefry()
    compiled = jax.jit(threefry_2x32).lower(jnp.zeros(2, jnp.uint32), jnp.zeros(2, jnp.uint32)).compile()
    assert " while(" not in compiled.as_text()  # the default CPU lowering is a rolled 5-iteration while loop
    # Known-answer vectors of Threefry-2x32-20 (Salmon et al., 2011; Random123 kat_vectors), as JAX's tests.
    for key, count, expected in [
        ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]:
        bits = jax.jit(threefry_2x32)(np.array(key, np.uint32), np.array(count, np.uint32))
        assert [int(b) for b in np.asarray(bits)] == list(expected)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's Threefry dropout under XLA")
def test_tensorflow_dropout_uses_threefry_under_xla_and_keras_dropout_elsewhere():
    import tensorflow as tf

    rate, shape = 0.1, (32, 64)
    x = tf.ones(shape)

    def masks(layer, compiled):
        seed = tf.identity(layer.seed_generator.state)  # the seed this call draws (Keras: state, then +[0, 1])
        call = tf.function(lambda x: layer(x, training=True), jit_compile=True) if compiled else layer
        outputs = np.asarray(call(x, training=True) if not compiled else call(x))
        return outputs != 0, seed

    layer = BertDropout(rate, seed=7)
    kept, seed = masks(layer, compiled=True)
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    threefry = tf.function(lambda seed: tf.random.stateless_uniform(shape, seed=seed, alg="threefry"),
                           jit_compile=True)  # TensorFlow has a Threefry kernel under XLA only
    expected = threefry(seed) >= rate
    np.testing.assert_array_equal(kept, np.asarray(expected))

    # Eager (no XLA, where TensorFlow has no Threefry kernel): Keras' own dropout, same seed, same mask.
    layer, reference = BertDropout(rate, seed=11), keras.layers.Dropout(rate, seed=11)
    kept, _ = masks(layer, compiled=False)
    np.testing.assert_array_equal(kept, np.asarray(reference(x, training=True)) != 0)
