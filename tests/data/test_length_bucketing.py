import numpy as np
import pytest

from keras_bert_impl.data.length_bucketing import (
    PADDED_LOGIT,
    bucket_lengths,
    bucket_padded_lengths,
    bucketed_batch_count,
    length_bucketed_dataset,
    predict_with_length_buckets,
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


def test_bucket_lengths_end_at_the_packed_length():
    assert bucket_lengths(128, 32) == [32, 64, 96, 128]
    assert bucket_lengths(24, 8) == [8, 16, 24]
    assert bucket_lengths(10, 32) == [10]
    with pytest.raises(ValueError, match="bucket_width"):
        bucket_lengths(128, 0)


def test_bucket_padded_lengths_refuse_rows_longer_than_the_packed_length():
    assert bucket_padded_lengths([1, 8, 9, 24], MAX_LENGTH, 8).tolist() == [8, 8, 16, 24]
    with pytest.raises(ValueError, match="length 25 does not fit the packed length max_length=24"):
        bucket_padded_lengths([3, 25], MAX_LENGTH, 8)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("pad_to", ["bucket", "batch"])
def test_batches_hold_every_row_once_cut_to_its_length(pad_to):
    inputs = packed_rows()
    labels = np.arange(len(inputs["token_ids"]), dtype="int32") * 10
    lengths = sequence_lengths(inputs["padding_mask"])
    dataset = length_bucketed_dataset(inputs, labels, batch_size=4, bucket_width=8, pad_to=pad_to,
                                      with_index=True)
    seen = []
    for x, y, index in dataset.as_numpy_iterator():
        width = x["token_ids"].shape[1]
        batch_lengths = lengths[index]
        if pad_to == "bucket":
            assert width in (8, 16, 24)
            assert np.all(batch_lengths <= width) and np.all(batch_lengths > width - 8)
            assert np.all(bucket_padded_lengths(batch_lengths, MAX_LENGTH, 8) == width)
        else:
            assert width == batch_lengths.max()
        np.testing.assert_array_equal(x["padding_mask"], np.arange(width)[None] < batch_lengths[:, None])
        for key in ("token_ids", "segment_ids"):
            np.testing.assert_array_equal(x[key], np.where(x["padding_mask"], inputs[key][index, :width], 0))
        np.testing.assert_array_equal(y, labels[index])
        seen += index.tolist()
    assert sorted(seen) == list(range(len(labels)))


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("drop_remainder", [False, True])
def test_batch_count_matches_the_dataset(drop_remainder):
    inputs = packed_rows(53)
    dataset = length_bucketed_dataset(inputs, batch_size=5, bucket_width=8, drop_remainder=drop_remainder)
    expected = bucketed_batch_count(sequence_lengths(inputs["padding_mask"]), 5, MAX_LENGTH, 8, drop_remainder)
    assert sum(1 for _ in dataset) == expected
    assert expected < 53 / 5 + 3 + 1


@pytest.mark.tensorflow_only
def test_shuffling_changes_the_order_not_the_rows():
    inputs = packed_rows(40)
    dataset = length_bucketed_dataset(inputs, batch_size=4, bucket_width=8, shuffle=True, seed=3, with_index=True)
    epochs = [np.concatenate([index for _, index in dataset.as_numpy_iterator()]) for _ in range(2)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(40))
    assert not np.array_equal(epochs[0], epochs[1])


@pytest.mark.tensorflow_only
def test_squad_style_dict_labels_travel_with_their_rows():
    inputs = packed_rows(12)
    labels = {"start_positions": np.arange(12, dtype="int32"), "end_positions": np.arange(12, dtype="int32") + 1}
    for x, y, index in length_bucketed_dataset(inputs, labels, batch_size=3, with_index=True).as_numpy_iterator():
        np.testing.assert_array_equal(y["start_positions"], index)
        np.testing.assert_array_equal(y["end_positions"], index + 1)


@pytest.mark.tensorflow_only
def test_padding_that_is_not_a_suffix_is_rejected():
    inputs = packed_rows(4)
    inputs["padding_mask"][2, 0] = False
    with pytest.raises(ValueError, match="Row 2: padding_mask"):
        length_bucketed_dataset(inputs)


@pytest.mark.parametrize("pad_to", ["bucket", "batch"])
def test_classifier_predictions_equal_fixed_padding(pad_to):
    model = BertClassifier(tiny_backbone(), num_classes=3)
    inputs = packed_rows(29)
    fixed = model.predict(inputs, batch_size=8, verbose=0)
    bucketed = predict_with_length_buckets(model, inputs, batch_size=8, bucket_width=8, pad_to=pad_to)
    np.testing.assert_allclose(bucketed, fixed, atol=1e-5, rtol=0)


def test_span_predictions_equal_fixed_padding_on_real_tokens():
    model = BertQuestionAnswerer(tiny_backbone())
    inputs = packed_rows(29, seed=1)
    fixed = model.predict(inputs, batch_size=8, verbose=0)
    bucketed = predict_with_length_buckets(model, inputs, batch_size=8, bucket_width=8)
    mask = inputs["padding_mask"]
    for name in ("start_logits", "end_logits"):
        assert bucketed[name].shape == (29, MAX_LENGTH)
        np.testing.assert_allclose(bucketed[name][mask], fixed[name][mask], atol=1e-5, rtol=0)
        # Positions beyond a row's bucket were never computed.
        widths = -(-sequence_lengths(mask) // 8) * 8
        beyond = np.arange(MAX_LENGTH)[None] >= widths[:, None]
        assert np.all(bucketed[name][beyond] == PADDED_LOGIT)
