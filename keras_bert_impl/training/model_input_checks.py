"""Packed inputs checked before the compiled steps: empty data, over-long rows and out-of-range ids, named."""

import numpy as np


def check_model_inputs(model, inputs, what="inputs"):
    """Raise a ValueError naming the problem when packed NumPy `inputs` cannot go through `model`.

    Compiled steps (`fit`, `predict`) cannot check values: an id beyond the embedding table gathers garbage on
    GPUs and JAX, and an empty array fails deep inside Keras. Checked here, once, before the data is batched:
    at least one row; `(N, T)` arrays (`(N, C, T)` for multiple choice) with `T` within the position table;
    `token_ids` in `[0, vocabulary_size)` and `segment_ids` in `[0, num_segments)`.

    Args:
        model: a task model (with `backbone`) or a `BertBackbone`.
        inputs: dict of NumPy arrays `token_ids`, `segment_ids`, `padding_mask` `(N, T)` (or `(N, C, T)`).
        what: str. Names the data in the message (e.g. "training data"). Defaults to "inputs".
    """
    from keras_bert_impl.layers.input_validation import check_token_ids_in_range

    backbone = getattr(model, "backbone", model)
    missing = [key for key in ("token_ids", "segment_ids", "padding_mask") if key not in inputs]
    if missing:
        raise ValueError(f"The {what} lack {missing}; got keys {sorted(inputs)}.")
    token_ids = np.asarray(inputs["token_ids"])
    if token_ids.ndim not in (2, 3) or token_ids.shape[0] == 0:
        raise ValueError(f"The {what} are empty or not (N, T) (or (N, C, T)) arrays: token_ids has shape "
                         f"{token_ids.shape}; give at least one example.")
    if token_ids.shape[-1] > backbone.max_sequence_length:
        raise ValueError(f"The {what} are {token_ids.shape[-1]} tokens long but the model's position table has "
                         f"{backbone.max_sequence_length} rows; pack to at most that length (--sequence-length).")
    for key in ("segment_ids", "padding_mask"):
        if np.shape(inputs[key]) != token_ids.shape:
            raise ValueError(f"The {what}: {key} has shape {np.shape(inputs[key])} but token_ids {token_ids.shape}.")
    check_token_ids_in_range(token_ids, backbone.vocabulary_size, f"{what} token_ids")
    check_token_ids_in_range(np.asarray(inputs["segment_ids"]), backbone.num_segments, f"{what} segment_ids")
