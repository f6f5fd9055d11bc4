"""How `BertSelfAttention` calls `keras.ops.dot_product_attention`, the call that decides the fused kernel on GPUs.

Measured on an H200 (benchmarks/RESULTS.md, section 3): JAX's cuDNN fused attention takes the padding mask only
as a full `(B, N, T, T)` tensor (a `(B, 1, 1, T)` one falls back to XLA's unfused attention, 2x slower at T=512),
and rejects a few query rows over all keys (P != T: "Unsupported sequence length Q 21, KV 128"), after logging
a traceback at every trace. These tests pin both choices on any device by recording the call.
"""

import keras
import numpy as np
import pytest

from keras_bert_impl.layers import self_attention
from keras_bert_impl.layers.self_attention import BertSelfAttention


@pytest.fixture
def recorded_calls(monkeypatch):
    calls = []
    real = keras.ops.dot_product_attention

    def recording(query, key, value, **kwargs):
        calls.append({"query_shape": tuple(query.shape), "mask_shape": tuple(kwargs["mask"].shape),
                      "flash_attention": kwargs.get("flash_attention")})
        return real(query, key, value, **kwargs)

    monkeypatch.setattr(self_attention.ops, "dot_product_attention", recording)
    return calls


def test_all_rows_leave_the_kernel_to_keras_with_a_full_mask(recorded_calls):
    layer = BertSelfAttention(hidden_dim=8, num_heads=2, attention_dropout=0.0)
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype("float32")
    layer(x, np.ones((3, 5), bool))
    (call,) = recorded_calls
    assert call["mask_shape"] == (3, 2, 5, 5)  # (B, N, T, T): the form cuDNN's fused kernel takes
    assert call["flash_attention"] is None  # Keras picks the fused kernel where there is one


def test_few_query_rows_ask_for_no_fused_kernel(recorded_calls):
    # 4 query rows of 5 tokens: too many for the few-query path, so the projection path with queries runs.
    layer = BertSelfAttention(hidden_dim=8, num_heads=2, attention_dropout=0.0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 8)).astype("float32")
    assert not self_attention.few_queries_are_cheaper(4, 5, hidden_dim=8, num_heads=2)
    output = layer(x, np.ones((2, 5), bool), queries=x[:, :4])
    assert tuple(output.shape) == (2, 4, 8)
    (call,) = recorded_calls
    assert call["query_shape"] == (2, 4, 2, 4) and call["mask_shape"] == (2, 2, 4, 5)
    assert call["flash_attention"] is False
