"""Model FLOPs of BERT steps, for throughput and utilisation (MFU) figures.

The benchmark scripts import it as `flops` (their own directory is on `sys.path`), the tests as
`benchmarks.flops`; it is not part of the package, whose lower layers must not import `layers`.

Shape legend: B batch, T tokens, L layers, H hidden width, I intermediate width, P masked slots per sequence,
V vocabulary, C classes.

Only matrix multiplications count (2 FLOPs per multiply-add); embedding gathers, LayerNorm, softmax,
activations, dropout and the optimizer update are left out, as in the usual MFU accounting (Kaplan et al.,
2020; Chowdhery et al., 2022, appendix B). Per sequence, forward:

    encoder    2 * T * L * (4 H^2 + 2 H I)     query/key/value (3 H^2) + output (H^2) + feed-forward (2 H I)
    attention  4 * T^2 * L * H                 scores Q K^T and the weighted sum of V, all heads together
    pooler     2 * H^2                         the [CLS] Dense(H, tanh)
    MLM head   2 * P * (H^2 + H V)             gather-before-vocab: transform Dense(H) and tied logits on
                                               the P masked slots only (the original `get_masked_lm_output`)
    NSP head   2 * 2 H
    classifier 2 * H * C

`last_block_rows` gives the FLOPs a model executes when its last block computes outputs for only some rows
(`BertBackbone(..., output_positions=...)`: [CLS] and the P masked slots in pretraining, [CLS] alone for a
classifier): that block then projects keys and values for all T tokens (4 H^2 per token) but queries, the
attention output and the feed-forward only for those rows. With `absorbed_keys_values` (its path for a few rows,
`BertSelfAttention._attend_few_queries`) it projects no keys or values: per row, 2 H^2 for the query mapped into
input space and the value projection, plus 2 N T H for the scores and the weighted sum of inputs.
`absorbed_keys_values="auto"` counts the path the layer itself takes at these sizes
(`keras_bert_impl.layers.self_attention.few_queries_are_cheaper`, the function the layer calls). Utilisation
figures use the nominal count (`last_block_rows=None`), the same for every implementation.

A training step is 3x the forward FLOPs (the backward pass multiplies twice per forward matmul: gradients of
the inputs and of the weights). A model that scores the vocabulary at all `T` positions (Hugging Face
`BertForPreTraining`) does more work than this; utilisation counts only the work the objective needs.
"""

WORKLOADS = ("pretraining", "pretraining_mlm", "classifier_training", "inference")


def bert_flops_per_sequence(
    workload,
    num_layers,
    hidden_dim,
    intermediate_dim,
    sequence_length,
    vocabulary_size=30522,
    num_predictions=20,
    num_classes=2,
    last_block_rows=None,
    absorbed_keys_values=False,
    num_heads=None,
):
    """Model FLOPs of one sequence in a BERT step (see the module docstring for the formula).

    Args:
        workload: str. "pretraining" (MLM + NSP training step), "pretraining_mlm" (MLM only),
            "classifier_training" (pooled output -> Dense(C) training step) or "inference" (classifier
            forward pass).
        num_layers: int. `L`.
        hidden_dim: int. `H`.
        intermediate_dim: int. `I`.
        sequence_length: int. `T` (the padded length: the model computes on padding too).
        vocabulary_size: int. `V`. Defaults to 30522.
        num_predictions: int. `P`, masked slots per sequence. Defaults to 20.
        num_classes: int. `C`. Defaults to 2.
        last_block_rows: int or None. Rows the last block computes outputs for (see the module docstring);
            None: all `T` (the nominal count). Defaults to None.
        absorbed_keys_values: bool or "auto". With `last_block_rows`: the last block attends without
            projecting keys and values (see the module docstring); "auto": exactly when a float
            `BertSelfAttention` of these sizes does (`few_queries_are_cheaper(last_block_rows, T, H, N)`).
            Defaults to False.
        num_heads: int. `N`; needed with `absorbed_keys_values`. Defaults to None.

    Returns:
        int. FLOPs per sequence.

    Example:
    >>> bert_flops_per_sequence("inference", num_layers=1, hidden_dim=2, intermediate_dim=4, sequence_length=3,
    ...                         num_classes=1)  # 2*3*(16 + 16) + 4*9*2 + 8 + 4
    276
    >>> bert_flops_per_sequence("inference", num_layers=1, hidden_dim=2, intermediate_dim=4, sequence_length=3,
    ...                         num_classes=1, last_block_rows=1)  # 2*3*8 + 2*1*(8 + 16) + 4*3*2 + 8 + 4
    132
    """
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}.")
    if absorbed_keys_values not in (True, False, "auto"):
        raise ValueError(f"absorbed_keys_values must be True, False or 'auto', got {absorbed_keys_values!r}.")
    if absorbed_keys_values and last_block_rows is not None and num_heads is None:
        raise ValueError("absorbed_keys_values needs num_heads.")
    if absorbed_keys_values == "auto":
        absorbed_keys_values = last_block_rows is not None and _layer_absorbs(
            last_block_rows, sequence_length, hidden_dim, num_heads)
    L, H, I, T = num_layers, hidden_dim, intermediate_dim, sequence_length  # noqa: E741
    encoder = 2 * T * L * (4 * H * H + 2 * H * I)
    attention = 4 * T * T * L * H
    if last_block_rows is not None:
        rows = last_block_rows
        encoder -= 2 * (T - rows) * (2 * H * H + 2 * H * I)  # keys and values stay for all T
        attention -= 4 * (T - rows) * T * H
        if absorbed_keys_values:
            encoder -= 2 * T * 2 * H * H  # no key / value projections, no head-space scores and context:
            attention += 2 * rows * 2 * H * H + 4 * rows * (num_heads - 1) * T * H  # input-space ones instead
    pooler = 2 * H * H
    forward = encoder + attention
    if workload in ("pretraining", "pretraining_mlm"):
        forward += 2 * num_predictions * (H * H + H * vocabulary_size)
        if workload == "pretraining":
            forward += pooler + 2 * 2 * H
    else:
        forward += pooler + 2 * H * num_classes
    return forward if workload == "inference" else 3 * forward


def _layer_absorbs(num_queries, sequence_length, hidden_dim, num_heads):
    # Imported here: this module stays free of Keras until a count needs the layer's choice.
    from keras_bert_impl.layers.self_attention import few_queries_are_cheaper

    return few_queries_are_cheaper(num_queries, sequence_length, hidden_dim, num_heads)


__all__ = ["WORKLOADS", "bert_flops_per_sequence"]
