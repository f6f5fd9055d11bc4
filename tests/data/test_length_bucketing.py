import numpy as np
import pytest

from keras_bert_impl.data.length_bucketing import (
    batch_count,
    bucket_lengths,
    bucket_padded_lengths,
    packed_batches,
    sequence_lengths,
)
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from tests.helpers import random_batch, tiny_backbone

MAX_LENGTH = 24


def packed_rows(num_rows=37, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, MAX_LENGTH + 1, num_rows)
    return random_batch(num_rows, MAX_LENGTH, vocabulary_size=50, seed=seed, lengths=list(lengths))


@pytest.mark.backend_independent
def test_bucket_lengths_end_at_the_packed_length():
    assert bucket_lengths(128, 32) == [32, 64, 96, 128]
    assert bucket_lengths(24, 8) == [8, 16, 24]
    assert bucket_lengths(10, 32) == [10]
    with pytest.raises(ValueError, match="bucket_width"):
        bucket_lengths(128, 0)


@pytest.mark.backend_independent
def test_bucket_padded_lengths_refuse_rows_longer_than_the_packed_length():
    assert bucket_padded_lengths([1, 8, 9, 24], MAX_LENGTH, 8).tolist() == [8, 8, 16, 24]
    with pytest.raises(ValueError, match="length 25 does not fit the packed length max_length=24"):
        bucket_padded_lengths([3, 25], MAX_LENGTH, 8)


@pytest.mark.backend_independent
def test_batches_hold_every_row_once_cut_to_its_length():
    inputs = packed_rows()
    index = np.arange(len(inputs["token_ids"]), dtype="int32")  # the labels name each row
    lengths = sequence_lengths(inputs["padding_mask"])
    seen = []
    for x, y in packed_batches(inputs, index, batch_size=4, bucket_width=8).as_numpy_iterator():
        width = x["token_ids"].shape[1]
        batch_lengths = lengths[y]
        assert width in (8, 16, 24)
        assert np.all(bucket_padded_lengths(batch_lengths, MAX_LENGTH, 8) == width)
        np.testing.assert_array_equal(x["padding_mask"], np.arange(width)[None] < batch_lengths[:, None])
        for key in ("token_ids", "segment_ids"):
            np.testing.assert_array_equal(x[key], np.where(x["padding_mask"], inputs[key][y, :width], 0))
        seen += y.tolist()
    assert sorted(seen) == index.tolist()


@pytest.mark.backend_independent
@pytest.mark.parametrize("bucket_width", [None, 8])
@pytest.mark.parametrize("epochs", [None, 0, 3])
def test_cardinality_is_the_number_of_batches(bucket_width, epochs):
    inputs = packed_rows(53)
    dataset = packed_batches(inputs, batch_size=5, bucket_width=bucket_width, shuffle=True, seed=1, epochs=epochs)
    steps = batch_count(inputs["padding_mask"], 5, bucket_width)
    assert steps == (11 if bucket_width is None else steps) and steps < 53 / 5 + 3 + 1
    assert int(dataset.cardinality()) == sum(1 for _ in dataset) == steps * (1 if epochs is None else epochs)


@pytest.mark.backend_independent
@pytest.mark.parametrize("bucket_width", [None, 8])
def test_epoch_e_is_fixed_by_seed_and_epoch(bucket_width):
    """A resumed run trains on `skip(e * steps)` of the stream: the batches an uninterrupted run sees."""
    inputs = packed_rows(23)
    rows = np.arange(23, dtype="int32")
    settings = dict(batch_size=4, bucket_width=bucket_width, shuffle=True, seed=3, epochs=3)
    steps = batch_count(inputs["padding_mask"], 4, bucket_width)
    full = list(packed_batches(inputs, rows, **settings).as_numpy_iterator())
    again = list(packed_batches(inputs, rows, **settings).skip(2 * steps).as_numpy_iterator())
    assert len(full) == 3 * steps and len(again) == steps
    for (fx, fy), (ax, ay) in zip(full[2 * steps:], again):
        np.testing.assert_array_equal(fx["token_ids"], ax["token_ids"])
        np.testing.assert_array_equal(fy, ay)
    epochs = [np.concatenate([y for _, y in full[e * steps:(e + 1) * steps]]) for e in range(3)]
    assert all(sorted(e.tolist()) == rows.tolist() for e in epochs)
    assert not np.array_equal(epochs[0], epochs[1])
    other_seed = np.concatenate([y for _, y in packed_batches(inputs, rows, **{**settings, "seed": 4}).take(steps)])
    assert not np.array_equal(epochs[0], other_seed)


@pytest.mark.backend_independent
def test_shuffling_without_epochs_reshuffles_every_pass():
    rows = np.arange(40, dtype="int32")
    dataset = packed_batches(packed_rows(40), rows, batch_size=4, bucket_width=8, shuffle=True, seed=3)
    passes = [np.concatenate([y for _, y in dataset.as_numpy_iterator()]) for _ in range(2)]
    assert sorted(passes[0]) == sorted(passes[1]) == rows.tolist()
    assert not np.array_equal(passes[0], passes[1])


@pytest.mark.backend_independent
def test_squad_style_dict_labels_and_multiple_choice_rows_travel_whole():
    inputs = packed_rows(12)
    labels = {"start_positions": np.arange(12, dtype="int32"), "end_positions": np.arange(12, dtype="int32") + 1}
    for _, y in packed_batches(inputs, labels, batch_size=3, bucket_width=8).as_numpy_iterator():
        np.testing.assert_array_equal(y["end_positions"], y["start_positions"] + 1)
    choices = {key: np.stack([value, value[::-1]], axis=1) for key, value in inputs.items()}  # (N, 2, T)
    lengths = sequence_lengths(choices["padding_mask"])
    np.testing.assert_array_equal(lengths, np.maximum(sequence_lengths(inputs["padding_mask"]),
                                                      sequence_lengths(inputs["padding_mask"])[::-1]))
    for x, y in packed_batches(choices, np.arange(12), batch_size=3, bucket_width=8).as_numpy_iterator():
        assert x["token_ids"].shape[:2] == (len(y), 2)
        np.testing.assert_array_equal(x["token_ids"], choices["token_ids"][y, :, : x["token_ids"].shape[2]])
        assert np.all(bucket_padded_lengths(lengths[y], MAX_LENGTH, 8) == x["token_ids"].shape[2])


@pytest.mark.backend_independent
def test_bad_data_is_named():
    inputs = packed_rows(4)
    inputs["padding_mask"][2, 0] = False
    with pytest.raises(ValueError, match="Row 2: padding_mask"):
        packed_batches(inputs, bucket_width=8)
    empty = {key: value[:0] for key, value in inputs.items()}
    with pytest.raises(ValueError, match="No examples: the data is empty"):
        packed_batches(empty, np.zeros(0, "int32"))


@pytest.mark.parametrize("model_class", [BertClassifier, BertQuestionAnswerer])
@pytest.mark.slow
def test_outputs_on_real_tokens_do_not_depend_on_bucket_padding(model_class):
    model = model_class(tiny_backbone(), num_classes=3) if model_class is BertClassifier else model_class(
        tiny_backbone())
    inputs = packed_rows(29, seed=1)
    fixed = model.predict(inputs, batch_size=8, verbose=0)
    for x, rows in packed_batches(inputs, np.arange(29), batch_size=8, bucket_width=8).as_numpy_iterator():
        bucketed = model.predict_on_batch(x)
        if model_class is BertClassifier:
            np.testing.assert_allclose(bucketed, fixed[rows], atol=1e-5, rtol=0)
            continue
        for name in ("start_logits", "end_logits"):
            real = x["padding_mask"]
            np.testing.assert_allclose(np.asarray(bucketed[name])[real], fixed[name][rows, : real.shape[1]][real],
                                       atol=1e-5, rtol=0)
