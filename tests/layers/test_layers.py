import math

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.encoder_block import BertEncoderBlock
from keras_bert_impl.layers.self_attention import BertSelfAttention, few_queries_are_cheaper
from tests.helpers import assert_config_round_trip, to_numpy


def numpy_attention(x, mask, kernel, bias, out_kernel, out_bias, num_heads, return_probabilities=False):
    batch, length, hidden = x.shape
    head = hidden // num_heads
    qkv = (x @ kernel + bias).reshape(batch, length, 3, num_heads, head)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = np.einsum("btnd,bsnd->bnts", q, k) / math.sqrt(head)
    scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0  # the original additive mask
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    if return_probabilities:
        return probs
    context = np.einsum("bnts,bsnd->btnd", probs, v).reshape(batch, length, hidden)
    return context @ out_kernel + out_bias


@pytest.mark.parametrize("training_path", [False, True])
def test_self_attention_matches_numpy_reference(rng, training_path):
    # training_path=True exercises the explicit (dropout-capable) path with a negligible dropout rate.
    layer = BertSelfAttention(hidden_dim=8, num_heads=2, attention_dropout=1e-12 if training_path else 0.1)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype="float32")
    out = to_numpy(layer(x, mask.astype(bool), training=training_path))
    weights = [to_numpy(w) for w in layer.query_key_value.weights + layer.attention_output.weights]
    expected = numpy_attention(x, mask, *weights, num_heads=2)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_attention_probabilities_match_numpy_reference(rng):
    layer = BertSelfAttention(hidden_dim=8, num_heads=2)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype="float32")
    layer(x, mask.astype(bool))  # builds the weights
    probabilities = to_numpy(layer.attention_probabilities(x, mask.astype(bool)))
    weights = [to_numpy(w) for w in layer.query_key_value.weights + layer.attention_output.weights]
    expected = numpy_attention(x, mask, *weights, num_heads=2, return_probabilities=True)
    assert probabilities.shape == (2, 2, 5, 5) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities, expected, atol=1e-6)
    assert np.all(probabilities[0, :, :, 3:] == 0)


def test_attention_ignores_padded_keys(rng):
    layer = BertSelfAttention(hidden_dim=8, num_heads=2)
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    mask = np.array([[True, True, False, False]])
    changed = x.copy()
    changed[:, 2:] = rng.normal(size=(1, 2, 8))
    np.testing.assert_allclose(to_numpy(layer(x, mask))[:, :2], to_numpy(layer(changed, mask))[:, :2], atol=1e-6)


def test_attention_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        BertSelfAttention(hidden_dim=10, num_heads=3)


def test_embeddings_sum_then_normalise(rng):
    layer = BertEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=8, dropout=0.0)
    token_ids = np.array([[1, 4, 7]])
    segment_ids = np.array([[0, 1, 1]])
    out = to_numpy(layer(token_ids, segment_ids))
    summed = (
        to_numpy(layer.token_embedding.embeddings)[token_ids]
        + to_numpy(layer.segment_embedding.embeddings)[segment_ids]
        + to_numpy(layer.position_embeddings)[None, :3]
    )
    mean, var = summed.mean(-1, keepdims=True), summed.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (summed - mean) / np.sqrt(var + 1e-12), atol=1e-5)


def test_embeddings_errors_name_the_problem():
    layer = BertEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=4)
    with pytest.raises(ValueError, match=r"id 25 at index \(0, 1\).*\[0, 20\)"):
        layer(np.array([[1, 25]]), np.zeros((1, 2), "int32"))
    with pytest.raises(ValueError, match="segment_ids.*id 2"):
        layer(np.array([[1, 2]]), np.array([[0, 2]]))
    with pytest.raises(ValueError, match="Sequence length 5 exceeds.*max_sequence_length=4"):
        layer(np.ones((1, 5), "int32"), np.zeros((1, 5), "int32"))


@pytest.mark.parametrize("name,approximate", [("gelu", False), ("gelu_approximate", True)])
def test_gelu_variants(name, approximate):
    from scipy.special import erf

    x = np.linspace(-4, 4, 41).astype("float32")
    if approximate:
        expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    else:
        expected = 0.5 * x * (1 + erf(x / np.sqrt(2)))
    np.testing.assert_allclose(to_numpy(get_activation(name)(x)), expected, atol=1e-6)


def test_unknown_activation_is_rejected():
    with pytest.raises(ValueError, match="Unsupported activation 'swishy'"):
        BertEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16, hidden_activation="swishy")


@pytest.mark.parametrize(
    "layer",
    [
        lambda: BertEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=8),
        lambda: BertSelfAttention(hidden_dim=8, num_heads=2, attention_dropout=0.2),
        lambda: BertEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16, hidden_activation="gelu"),
    ],
)
def test_layer_configs_round_trip(layer):
    restored = assert_config_round_trip(layer())
    assert isinstance(restored, keras.layers.Layer)


def test_encoder_block_outputs_are_layer_normalised(rng):
    block = BertEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16)
    out = to_numpy(block(rng.normal(size=(2, 3, 8)).astype("float32"), np.ones((2, 3), bool)))
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.std(-1), 1.0, atol=1e-3)


@pytest.mark.parametrize("training_path", [False, True])
@pytest.mark.parametrize(
    "hidden_dim, length, positions, few_queries_path",
    [(8, 5, [[0, 2, 2], [4, 1, 0]], False), (32, 16, [[0], [9]], True)],
)
def test_self_attention_queries_give_the_gathered_rows(rng, training_path, hidden_dim, length, positions,
                                                       few_queries_path):
    # The dropout-capable paths run with a negligible rate, as above.
    layer = BertSelfAttention(hidden_dim=hidden_dim, num_heads=2, attention_dropout=1e-12 if training_path else 0.1)
    x = rng.normal(size=(2, length, hidden_dim)).astype("float32")
    mask = np.arange(length)[None, :] < np.array([[length - 2], [length]])
    layer(x, mask)  # builds the weights; nonzero biases, so their terms count
    layer.query_key_value.bias.assign(rng.normal(size=(3 * hidden_dim,)).astype("float32"))
    full = to_numpy(layer(x, mask, training=training_path))
    positions = np.array(positions)
    assert layer._few_queries_are_cheaper(positions.shape[1], length) == few_queries_path
    queries = np.take_along_axis(x, positions[:, :, None], axis=1)
    rows = to_numpy(layer(x, mask, training=training_path, queries=queries))
    assert rows.shape == (2, positions.shape[1], hidden_dim)
    np.testing.assert_allclose(rows, np.take_along_axis(full, positions[:, :, None], axis=1), atol=1e-5)


def test_encoder_block_query_positions_give_the_gathered_rows(rng):
    block = BertEncoderBlock(hidden_dim=8, num_heads=2, intermediate_dim=16, dropout=0.0, attention_dropout=0.0)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 0, 0], [1] * 6], dtype=bool)
    full = to_numpy(block(x, mask))
    for positions in (np.array([[0, 3], [5, 0]]), np.zeros((2, 1), "int32"), np.zeros((2, 0), "int32")):
        rows = to_numpy(block(x, mask, query_positions=positions))
        assert rows.shape == (2, positions.shape[1], 8)
        np.testing.assert_allclose(rows, np.take_along_axis(full, positions[:, :, None], axis=1), atol=1e-5)


def test_few_queries_are_cheaper_is_the_layers_choice_built_or_not():
    # The public function answers without a layer; the layer asks it, before and after `build`.
    assert few_queries_are_cheaper(1, 128, hidden_dim=256, num_heads=4)  # [CLS] alone, mini: 40x fewer
    assert not few_queries_are_cheaper(21, 128, hidden_dim=256, num_heads=4)  # [CLS] + 20 masked slots
    assert not few_queries_are_cheaper(1, 128, hidden_dim=256, num_heads=4, quantized=True)
    assert not few_queries_are_cheaper(None, 128, hidden_dim=256, num_heads=4)  # a symbolic count
    grid = [(rows, length) for rows in (0, 1, 2, 3, 5, 21) for length in (4, 16, 32, 128)]
    for hidden_dim, num_heads in ((8, 2), (32, 2), (64, 4)):
        layer = BertSelfAttention(hidden_dim=hidden_dim, num_heads=num_heads)
        expected = [few_queries_are_cheaper(r, t, hidden_dim, num_heads) for r, t in grid]
        assert [layer._few_queries_are_cheaper(r, t) for r, t in grid] == expected
        layer.build((None, 16, hidden_dim))
        assert [layer._few_queries_are_cheaper(r, t) for r, t in grid] == expected
    assert any(expected) and not all(expected)


def test_quantized_self_attention_never_takes_the_few_query_path():
    layer = BertSelfAttention(hidden_dim=32, num_heads=2)
    layer.build((None, 16, 32))
    assert layer._few_queries_are_cheaper(1, 16) == few_queries_are_cheaper(1, 16, 32, 2) is True
    layer.query_key_value.quantize("int8")
    assert layer._few_queries_are_cheaper(1, 16) is False
