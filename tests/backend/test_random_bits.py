"""`keras_bert_impl.backend.random_bits`: the dropout of our layers keeps Keras' semantics with cheaper bits.

If one of these fails after a Keras / JAX / TensorFlow upgrade, either the masks changed (the JAX bits must
equal `jax.random`'s, the TensorFlow ones XLA's Threefry) or the speedup was lost (see the module docstring).
"""

import keras
import numpy as np
import pytest

from keras_bert_impl.backend import random_bits
from keras_bert_impl.layers.dropout import BertDropout

BACKEND = keras.backend.backend()

# Known-answer vectors of Threefry-2x32-20 (Salmon et al., 2011; Random123 kat_vectors), as JAX's tests.
THREEFRY_KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


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


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dropout_keeps_the_input_dtype(dtype):
    layer = BertDropout(0.25, seed=3, dtype=dtype)
    outputs = layer(keras.ops.ones((16, 64), dtype=dtype), training=True)
    assert keras.backend.standardize_dtype(outputs.dtype) == dtype
    values = np.unique(keras.ops.convert_to_numpy(keras.ops.cast(outputs, "float32")))
    np.testing.assert_allclose(values, [0.0, 1 / 0.75], rtol=1e-2)


def test_fast_dropout_opt_out(monkeypatch):
    monkeypatch.setenv(random_bits.FAST_DROPOUT_ENV, "0")
    assert not random_bits.fast_dropout_enabled()
    x = np.ones((8, 16, 32), "float32")
    layer, reference = BertDropout(0.1, seed=11), keras.layers.Dropout(0.1, seed=11)
    for _ in range(2):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(x, training=True)),
                                      keras.ops.convert_to_numpy(reference(x, training=True)))
    monkeypatch.setenv(random_bits.FAST_DROPOUT_ENV, "1")
    assert random_bits.fast_dropout_enabled()


@pytest.mark.skipif(BACKEND != "torch", reason="torch keeps Keras' dropout")
def test_torch_dropout_is_keras_dropout():
    x = np.ones((8, 16, 32), "float32")
    layer, reference = BertDropout(0.1, seed=11), keras.layers.Dropout(0.1, seed=11)
    for _ in range(2):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(x, training=True)),
                                      keras.ops.convert_to_numpy(reference(x, training=True)))


@pytest.mark.skipif(BACKEND != "jax", reason="the Threefry written out in jax.numpy")
def test_jax_threefry_known_answers_and_jax_random_bits():
    import jax
    import jax.numpy as jnp

    threefry = jax.jit(random_bits.threefry_2x32)
    for key, count, expected in THREEFRY_KNOWN_ANSWERS:
        key, count = np.array(key, np.uint32), np.array(count, np.uint32)
        bits = threefry(key[0], key[1], count[:1], count[1:])
        assert [int(np.asarray(b)[0]) for b in bits] == list(expected)
    seed = jnp.array([12345, 678], jnp.uint32)
    for shape in [(1,), (7,), (3, 5, 11), (2, 4, 33, 65)]:
        expected = jax.random.bits(seed, shape, jnp.uint32)
        np.testing.assert_array_equal(jax.jit(random_bits.jax_random_bits, static_argnums=1)(seed, shape), expected)


@pytest.mark.skipif(BACKEND != "jax", reason="the Threefry written out in jax.numpy")
def test_jax_fast_path_only_under_the_prng_settings_it_reproduces():
    import jax

    assert random_bits._jax_prng_is_partitionable_threefry()  # JAX's defaults (the flags still exist)
    x = np.ones((8, 16, 32), "float32")
    with jax.threefry_partitionable(False):  # jax.random's bits change; ours would not: Keras' dropout runs
        assert not random_bits._jax_prng_is_partitionable_threefry()
        layer, reference = BertDropout(0.1, seed=11), keras.layers.Dropout(0.1, seed=11)
        np.testing.assert_array_equal(np.asarray(layer(x, training=True)), np.asarray(reference(x, training=True)))


@pytest.mark.skipif(BACKEND != "jax", reason="the Threefry written out in jax.numpy")
def test_jax_dropout_is_bit_identical_to_keras_and_compiles_without_a_loop():
    import jax

    x = np.random.default_rng(0).normal(size=(4, 16, 33)).astype("float32")
    for rate in (0.1, 0.5, 1 / 3, 1e-9):
        layer, reference = BertDropout(rate, seed=5), keras.layers.Dropout(rate, seed=5)
        for _ in range(2):
            np.testing.assert_array_equal(np.asarray(layer(x, training=True)), np.asarray(reference(x, training=True)))
    # Compiled: one elementwise loop. jax.random's threefry compiles on CPU to a rolled 5-iteration `while`.
    generator = keras.random.SeedGenerator(0)
    state = generator.state.value

    def stateless(x, state):
        with keras.StatelessScope(state_mapping=[(generator.state, state)]):
            return random_bits.dropout(x, 0.1, generator)

    compiled = jax.jit(stateless).lower(x, state).compile()
    assert " while(" not in compiled.as_text()
    outputs = np.asarray(compiled(x, state))
    expected = np.asarray(keras.random.dropout(x, 0.1, seed=keras.random.SeedGenerator(0)))
    np.testing.assert_array_equal(outputs != 0, expected != 0)
    np.testing.assert_allclose(outputs, expected, rtol=1e-6)  # XLA may multiply by 1 / keep_prob instead


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's Threefry through XLA")
@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_tensorflow_dropout_uses_xla_threefry_in_every_mode(mode):
    import tensorflow as tf

    rate, shape = 0.1, (32, 64)
    x = tf.random.normal(shape)
    layer = BertDropout(rate, seed=7)
    seed = tf.identity(layer.seed_generator.state)  # the seed this call draws (Keras: state, then +[0, 1])

    def call(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs = layer(x, training=True)
        return outputs, tape.gradient(outputs, x)

    if mode != "eager":
        call = tf.function(call, jit_compile=mode == "xla")
    outputs, gradient = (np.asarray(value) for value in call(x))
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    threefry = tf.function(lambda seed: tf.random.stateless_uniform(shape, seed=seed, alg="threefry"),
                           jit_compile=True)  # TensorFlow has a Threefry kernel under XLA only
    kept = np.asarray(threefry(seed) >= rate)
    np.testing.assert_array_equal(outputs != 0, kept)
    np.testing.assert_allclose(outputs[kept], np.asarray(x)[kept] / (1 - rate), rtol=1e-6)
    np.testing.assert_allclose(gradient, kept / np.float32(1 - rate), rtol=1e-6)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's Threefry through XLA")
def test_tensorflow_dropout_in_a_graph_with_unknown_dimensions():
    import tensorflow as tf

    layer = BertDropout(0.5, seed=2)
    call = tf.function(lambda x: layer(x, training=True), input_signature=[tf.TensorSpec([None, None, 8])])
    assert call.get_concrete_function().structured_outputs.shape.as_list() == [None, None, 8]
    for shape in [(2, 3, 8), (5, 1, 8)]:
        assert call(tf.ones(shape)).shape == shape
