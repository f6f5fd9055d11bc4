import math

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.pretraining_heads import MaskedLMHead, NextSentenceHead
from tests.helpers import to_numpy


def built_embedding(vocabulary_size=20, hidden_dim=8, dtype=None):
    embedding = keras.layers.Embedding(vocabulary_size, hidden_dim, dtype=dtype, name="token_embedding")
    embedding.build((None,))
    return embedding


def numpy_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def numpy_layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def test_masked_lm_head_gathers_then_transforms_then_scores_against_tied_embedding(rng):
    embedding = built_embedding()
    head = MaskedLMHead(embedding)
    sequence = rng.normal(size=(2, 6, 8)).astype("float32")
    positions = np.array([[1, 4, 0], [5, 2, 2]], "int32")
    head(sequence, positions)
    head.output_bias.assign(rng.normal(size=(20,)).astype("float32"))
    head.transform_layer_norm.gamma.assign(rng.normal(size=(8,)).astype("float32"))
    logits = to_numpy(head(sequence, positions))

    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)  # (B, P, H)
    kernel, bias = (to_numpy(w) for w in head.transform_dense.weights)
    gamma, beta = (to_numpy(w) for w in head.transform_layer_norm.weights)
    x = numpy_layer_norm(numpy_gelu_tanh(gathered @ kernel + bias), gamma, beta, 1e-12)
    expected = x @ to_numpy(embedding.embeddings).T + to_numpy(head.output_bias)
    assert logits.shape == (2, 3, 20) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected, atol=1e-5)


def test_masked_lm_head_takes_already_gathered_rows(rng):
    head = MaskedLMHead(built_embedding())
    sequence = rng.normal(size=(2, 6, 8)).astype("float32")
    positions = np.array([[1, 4, 0], [5, 5, 2]])
    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)
    logits = to_numpy(head(gathered))
    assert logits.shape == (2, 3, 20)
    np.testing.assert_allclose(logits, to_numpy(head(sequence, positions)), atol=1e-6)


def test_masked_lm_head_ties_weights_and_names_its_variables():
    embedding = built_embedding()
    head = MaskedLMHead(embedding, name="masked_lm_head")
    head(np.zeros((1, 4, 8), "float32"), np.zeros((1, 2), "int32"))
    paths = sorted(v.path for v in head.weights if v is not embedding.embeddings)
    assert paths == [
        "masked_lm_head/output_bias",
        "masked_lm_head/transform_dense/bias",
        "masked_lm_head/transform_dense/kernel",
        "masked_lm_head/transform_layer_norm/beta",
        "masked_lm_head/transform_layer_norm/gamma",
    ]
    assert sum(tuple(v.shape) == (20, 8) for v in head.weights) == 1  # no second vocabulary table
    np.testing.assert_array_equal(to_numpy(head.output_bias), np.zeros(20))


def test_masked_lm_head_logits_are_float32_under_mixed_precision():
    embedding = built_embedding(dtype="mixed_bfloat16")
    head = MaskedLMHead(embedding, dtype="mixed_bfloat16")
    logits = head(np.ones((1, 4, 8), "float32"), np.array([[0, 3]]))
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert head.transform_dense.compute_dtype == "bfloat16"


def test_masked_lm_head_rejects_width_mismatch_and_bad_activation():
    with pytest.raises(ValueError, match="token embedding width \\(8\\).*sequence output width \\(6\\)"):
        MaskedLMHead(built_embedding())(np.zeros((1, 4, 6), "float32"), np.zeros((1, 2), "int32"))
    with pytest.raises(ValueError, match="Unsupported activation 'tanh'"):
        MaskedLMHead(built_embedding(), hidden_activation="tanh")


def test_masked_lm_head_config_round_trip():
    head = MaskedLMHead(built_embedding(), hidden_activation="gelu", layer_norm_epsilon=1e-6)
    restored = MaskedLMHead.from_config(head.get_config())
    assert restored.get_config() == head.get_config()
    assert restored.token_embedding.input_dim == 20


def test_next_sentence_head_is_dense_two_on_pooled_output(rng):
    head = NextSentenceHead(name="next_sentence_head")
    pooled = rng.normal(size=(3, 8)).astype("float32")
    logits = to_numpy(head(pooled))
    assert [v.path for v in head.weights] == ["next_sentence_head/kernel", "next_sentence_head/bias"]
    assert tuple(head.kernel.shape) == (8, 2)
    np.testing.assert_allclose(logits, pooled @ to_numpy(head.kernel) + to_numpy(head.bias), atol=1e-6)
    assert NextSentenceHead.from_config(head.get_config()).get_config() == head.get_config()
