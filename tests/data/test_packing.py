import os
import random

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker, truncate_pair

pytestmark = pytest.mark.backend_independent

CLS, SEP, PAD = 101, 102, 0


def _packer(**kwargs):
    settings = dict(sequence_length=10, cls_token_id=CLS, sep_token_id=SEP, pad_token_id=PAD)
    settings.update(kwargs)
    return SegmentPacker(**settings)


def _random_segments(rng, rows, longest):
    return [rng.integers(1, 100, rng.integers(0, longest)).tolist() for _ in range(rows)]


def test_pair_layout_segments_and_padding():
    out = _packer().pack([5, 6, 7], [8, 9])
    np.testing.assert_array_equal(out["token_ids"], [CLS, 5, 6, 7, SEP, 8, 9, SEP, PAD, PAD])
    np.testing.assert_array_equal(out["segment_ids"], [0, 0, 0, 0, 0, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(out["padding_mask"], [1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
    assert out["token_ids"].dtype == np.int32 and out["padding_mask"].dtype == bool


def test_single_segment_and_dynamic_padding():
    out = _packer(padding="dynamic").pack([[5, 6], [7]])
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 6, SEP], [CLS, 7, SEP, PAD]])
    np.testing.assert_array_equal(out["segment_ids"], np.zeros((2, 4)))
    np.testing.assert_array_equal(out["padding_mask"], [[1, 1, 1, 1], [1, 1, 1, 0]])


def test_longest_first_trims_the_longer_side_from_the_end():
    out = _packer(sequence_length=9).pack([1, 2, 3, 4, 5, 6], [7, 8, 9])  # room 6
    np.testing.assert_array_equal(out["token_ids"], [CLS, 1, 2, 3, SEP, 7, 8, 9, SEP])
    # On a tie the second segment loses the token (run_classifier's rule).
    out = _packer(sequence_length=8).pack([1, 2, 3], [4, 5, 6])  # room 5
    np.testing.assert_array_equal(out["token_ids"], [CLS, 1, 2, 3, SEP, 4, 5, SEP])


def test_longest_first_matches_the_token_by_token_loop():
    rng = np.random.default_rng(0)
    firsts, seconds = _random_segments(rng, 300, 20), _random_segments(rng, 300, 20)
    packer = _packer(sequence_length=16)
    out = packer.pack(firsts, seconds)
    for row, (a, b) in enumerate(zip(firsts, seconds)):
        a, b = truncate_pair(a, b, 13)
        n = len(a) + len(b) + 3
        assert out["token_ids"][row, :n].tolist() == [CLS, *a, SEP, *b, SEP]
        assert not out["padding_mask"][row, n:].any()


def test_random_front_back_keeps_a_slice_of_each_side_with_front_and_back_removals():
    rng = np.random.default_rng(1)
    firsts = [list(range(1, 1 + int(n))) for n in rng.integers(5, 30, 400)]
    seconds = [list(range(200, 200 + int(n))) for n in rng.integers(5, 30, 400)]
    packer = _packer(sequence_length=20, truncation="random_front_back", seed=3)
    out = packer.pack(firsts, seconds)
    fronts = backs = 0
    for row, (a, b) in enumerate(zip(firsts, seconds)):
        expected_a, expected_b = truncate_pair(a, b, 17)  # lengths are those of longest-first
        tokens = out["token_ids"][row][out["padding_mask"][row]].tolist()
        kept_a = tokens[1 : 1 + len(expected_a)]
        kept_b = tokens[2 + len(expected_a) : -1]
        assert len(kept_b) == len(expected_b)
        for original, kept in ((a, kept_a), (b, kept_b)):
            start = original.index(kept[0])
            assert original[start : start + len(kept)] == kept  # contiguous
            fronts += start
            backs += len(original) - start - len(kept)
    assert abs(fronts / (fronts + backs) - 0.5) < 0.03


def test_truncate_pair_with_rng_is_the_original_loop():
    rng, again = random.Random(5), random.Random(5)
    a, b = truncate_pair(list(range(10)), list(range(10, 14)), 8, "random_front_back", rng)
    expected_a, expected_b = list(range(10)), list(range(10, 14))
    while len(expected_a) + len(expected_b) > 8:
        longer = expected_a if len(expected_a) > len(expected_b) else expected_b
        if again.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    assert (a, b) == (expected_a, expected_b)
    with pytest.raises(ValueError, match="needs `rng`"):
        truncate_pair([1], [2], 1, "random_front_back")


def test_over_long_and_empty_inputs_never_fail():
    packer = _packer(sequence_length=12, truncation="random_front_back")
    out = packer.pack([list(range(1, 10_001)), []], [list(range(1, 5_001)), []])
    assert out["token_ids"].shape == (2, 12)
    assert out["padding_mask"][0].all()
    np.testing.assert_array_equal(out["token_ids"][1, :3], [CLS, SEP, SEP])


def test_bad_settings_raise_clear_errors():
    with pytest.raises(ValueError, match="truncation"):
        _packer(truncation="middle")
    with pytest.raises(ValueError, match="padding"):
        _packer(padding="none")
    with pytest.raises(ValueError, match="no room"):
        _packer(sequence_length=4).pack([1], [2])
    with pytest.raises(ValueError, match="rows"):
        _packer().pack([[1], [2]], [[3]])


def test_get_config_round_trip():
    packer = _packer(truncation="random_front_back", padding="dynamic", seed=9)
    assert SegmentPacker.from_config(packer.get_config()).get_config() == packer.get_config()


def test_random_front_back_coins_are_pinned():
    # The counter-based coins of `random_front_back` (module docstring); a changed hash changes every
    # packed pretraining pair, so the exact result is pinned.
    packer = _packer(sequence_length=12, truncation="random_front_back", seed=4)
    out = packer.pack([list(range(1, 15)), list(range(30, 36))], [list(range(50, 56)), list(range(60, 75))])
    assert out["token_ids"].tolist() == [
        [CLS, 3, 4, 5, 6, 7, SEP, 51, 52, 53, 54, SEP],
        [CLS, 31, 32, 33, 34, 35, SEP, 64, 65, 66, 67, SEP],
    ]


MRPC_TRAIN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "mrpc",
                          "msr_paraphrase_train.txt")


@pytest.mark.skipif(not os.path.isfile(MRPC_TRAIN), reason="../shared/data/mrpc is absent (real MRPC pairs)")
@pytest.mark.parametrize("truncation", ["longest_first", "random_front_back"])
def test_real_mrpc_pairs_pack_as_the_original_loop_in_tf_data_and_eagerly(truncation):
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.helpers import real_checkpoint_dir

    with open(MRPC_TRAIN, encoding="utf-8-sig") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle][1:801]
    tokenizer = BertTokenizer.from_pretrained(real_checkpoint_dir())
    firsts, seconds = tokenizer.tokenize([row[3] for row in rows]), tokenizer.tokenize([row[4] for row in rows])
    packer = SegmentPacker(32, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
                           truncation=truncation, seed=7)
    eager = packer.pack(firsts, seconds)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant(firsts, dtype=tf.int32), tf.ragged.constant(seconds, dtype=tf.int32))
    )
    batched = [batch for batch in dataset.batch(64).map(packer).as_numpy_iterator()]
    for key in eager:
        np.testing.assert_array_equal(np.concatenate([batch[key] for batch in batched]), eager[key])
    for row, (a, b) in enumerate(zip(firsts, seconds)):
        kept_a, kept_b = truncate_pair(a, b, 29)  # the lengths every rule keeps
        tokens = eager["token_ids"][row][eager["padding_mask"][row]].tolist()
        assert len(tokens) == len(kept_a) + len(kept_b) + 3
        if truncation == "longest_first":
            assert tokens == [tokenizer.cls_token_id, *kept_a, tokenizer.sep_token_id, *kept_b, tokenizer.sep_token_id]


@pytest.mark.slow
def test_packer_in_dataset_map_on_ragged_ids():
    rng = np.random.default_rng(3)
    firsts, seconds = _random_segments(rng, 40, 30), _random_segments(rng, 40, 30)
    packer = _packer(sequence_length=24, truncation="random_front_back", seed=1)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.ragged.constant(firsts, dtype=tf.int32), tf.ragged.constant(seconds, dtype=tf.int32))
    )
    per_example = list(dataset.map(packer).as_numpy_iterator())
    batched = next(iter(dataset.batch(40).map(packer)))
    for row, (a, b) in enumerate(zip(firsts, seconds)):
        expected = packer.pack(a, b)
        for key in expected:
            np.testing.assert_array_equal(per_example[row][key], expected[key])
            np.testing.assert_array_equal(batched[key][row].numpy(), expected[key])


@pytest.mark.parametrize("pairs", [False, True])
def test_special_ids_other_than_zero_and_unbatched_rows(pairs):
    rng = np.random.default_rng(6)
    firsts, seconds = _random_segments(rng, 60, 30), _random_segments(rng, 60, 30)
    packer = SegmentPacker(sequence_length=20, cls_token_id=7, sep_token_id=8, pad_token_id=9, padding="dynamic")
    expected = packer.pack(firsts, seconds if pairs else None)
    actual = packer(tf.ragged.constant(firsts, dtype=tf.int64), tf.ragged.constant(seconds) if pairs else None)
    for key in expected:
        np.testing.assert_array_equal(actual[key].numpy(), expected[key])
    for row in (0, 5):
        single = packer(tf.constant(firsts[row], tf.int32), tf.constant(seconds[row], tf.int32) if pairs else None)
        reference = packer.pack(firsts[row], seconds[row] if pairs else None)
        for key in reference:
            np.testing.assert_array_equal(single[key].numpy(), reference[key])


def test_packer_without_its_required_settings_is_a_clear_error():
    with pytest.raises(TypeError, match="needs sequence_length, cls_token_id and sep_token_id"):
        SegmentPacker(cls_token_id=CLS, sep_token_id=SEP)
