"""`BertPreprocessor`: raw text to backbone inputs, in tf.data and eagerly, under every backend."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.preprocessing import BertPreprocessor
from keras_bert_impl.tokenization import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "the", "##s", ",", "!"]


def _preprocessor(**settings):
    return BertPreprocessor(BertTokenizer(VOCABULARY), **{"sequence_length": 8, **settings})


@pytest.mark.backend_independent
def test_single_texts_and_pairs_equal_tokenizer_plus_packer():
    preprocessor = _preprocessor()
    tokenizer = preprocessor.tokenizer
    packer = SegmentPacker(8, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    first, second = ["Good films!", "the bad, the good, the film"], ["bad", "THE FILMS"]
    for x, expected in (
        (first, packer(tf.ragged.constant(tokenizer.tokenize(first)))),
        ((first, second), packer(tf.ragged.constant(tokenizer.tokenize(first)),
                                 tf.ragged.constant(tokenizer.tokenize(second)))),
    ):
        out = preprocessor(x)
        assert set(out) == {"token_ids", "segment_ids", "padding_mask"}
        for key in out:
            assert isinstance(out[key], np.ndarray)
            np.testing.assert_array_equal(out[key], expected[key].numpy())
    assert preprocessor(("good", "bad"))["token_ids"].tolist() == [2, 5, 3, 6, 3, 0, 0, 0]


@pytest.mark.backend_independent
def test_labels_and_weights_pass_through():
    x, y, weights = _preprocessor()(["good"], np.array([1]), np.array([0.5]))
    assert x["token_ids"].shape == (1, 8)
    assert y.tolist() == [1] and weights.tolist() == [0.5]


def test_runs_inside_tf_data_map_and_make_dataset():
    preprocessor = _preprocessor()
    texts = ["good film", "bad", "the films", "good, bad!"]
    dataset = tf.data.Dataset.from_tensor_slices((texts, [1, 0, 1, 0])).batch(2).map(preprocessor)
    batches = list(dataset)
    np.testing.assert_array_equal(batches[0][0]["token_ids"].numpy(), preprocessor(texts[:2])["token_ids"])
    made = list(preprocessor.make_dataset(texts, np.array([1, 0, 1, 0]), batch_size=3))
    assert [int(batch[0]["token_ids"].shape[0]) for batch in made] == [3, 1]
    np.testing.assert_array_equal(made[1][0]["token_ids"].numpy(), preprocessor(texts[3:])["token_ids"])
    # Already packed inputs pass through.
    ids = preprocessor(texts)
    passed = next(iter(preprocessor.make_dataset(ids, batch_size=4)))
    np.testing.assert_array_equal(passed["token_ids"].numpy(), ids["token_ids"])


@pytest.mark.backend_independent
def test_config_round_trip_keeps_tokenizer_and_settings():
    preprocessor = _preprocessor(truncation="random_front_back")
    restored = BertPreprocessor.from_config(preprocessor.get_config())
    assert restored.get_config() == preprocessor.get_config()
    assert restored.tokenizer.get_vocabulary() == VOCABULARY
    texts = ["good film, the bad films!"] * 2
    np.testing.assert_array_equal(restored(texts)["token_ids"], preprocessor(texts)["token_ids"])


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "settings, message",
    [({"sequence_length": 2}, "sequence_length"), ({"truncation": "middle"}, "truncation")],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        _preprocessor(**settings)


@pytest.mark.backend_independent
def test_bad_inputs_name_the_problem():
    preprocessor = _preprocessor()
    with pytest.raises(TypeError, match="list of str"):
        preprocessor(np.array([1, 2]))  # numbers, not texts
    with pytest.raises(TypeError, match="tuple of two lists"):
        preprocessor.make_dataset([("good", "bad")])
    with pytest.raises(ValueError, match="1 or 2"):
        preprocessor((["a"], ["b"], ["c"]))


@pytest.mark.backend_independent
def test_make_dataset_of_texts_gives_the_batches_finetune_trains_on():
    """Raw texts with `bucket_width` / `epochs` are featurized, then batched as the packed inputs are."""
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "very"])
    preprocessor = BertPreprocessor(tokenizer, sequence_length=12)
    texts = [" ".join(["very"] * n + ["good", "film"]) for n in range(9)] + ["bad"] * 5
    labels = np.arange(len(texts))
    options = dict(batch_size=3, shuffle=True, seed=7, bucket_width=4, epochs=2)
    from_texts = list(preprocessor.make_dataset(texts, labels, **options).as_numpy_iterator())
    from_packed = list(preprocessor.make_dataset(*preprocessor(texts, labels), **options).as_numpy_iterator())
    assert len(from_texts) == len(from_packed) > 2 * len(texts) // 3
    for (tx, ty), (px, py) in zip(from_texts, from_packed):
        np.testing.assert_array_equal(ty, py)
        for key in tx:
            np.testing.assert_array_equal(tx[key], px[key])
    assert {x["token_ids"].shape[1] for x, _ in from_texts} == {4, 8, 12}
    with pytest.raises(ValueError, match="give no `bucket_width`"):
        preprocessor.make_dataset(preprocessor.make_dataset(texts, labels), bucket_width=4)
