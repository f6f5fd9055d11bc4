"""`BertPretrainingPreprocessor`: raw text to BertPretrainer inputs and targets; owns every masking setting."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.data.masking import MaskedLMMasker
from keras_bert_impl.data.packing import SegmentPacker
from keras_bert_impl.data.pretraining_batches import pretraining_dataset
from keras_bert_impl.data.pretraining_tfrecords import write_pretraining_tfrecords
from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
from keras_bert_impl.tokenization import BertTokenizer

WORDS = [f"word{i}" for i in range(40)]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "##s"] + WORDS
X_KEYS = {"token_ids", "segment_ids", "padding_mask", "mask_positions"}
Y_KEYS = {"mask_ids", "mask_weights", "next_sentence_labels"}


def _preprocessor(**settings):
    return BertPretrainingPreprocessor(BertTokenizer(VOCABULARY), **{"sequence_length": 16, **settings})


def _texts(count, seed=0, words=(3, 12)):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS + ["word3s"], rng.integers(*words))) for _ in range(count)]


@pytest.mark.backend_independent
def test_pairs_equal_tokenizer_packer_and_masker_with_the_same_seed():
    preprocessor = _preprocessor(max_predictions_per_seq=4, mask_rate=0.3, seed=3)
    tokenizer = preprocessor.tokenizer
    first, second = _texts(5, 1), _texts(5, 2)
    x, y = preprocessor((first, second), np.array([0, 1, 1, 0, 1]), seed=[7, 8])
    assert set(x) == X_KEYS and set(y) == Y_KEYS
    packer = SegmentPacker(16, tokenizer.cls_token_id, tokenizer.sep_token_id, truncation="random_front_back",
                           seed=3)
    packed = packer(tf.ragged.constant(tokenizer.tokenize(first)), tf.ragged.constant(tokenizer.tokenize(second)))
    masked = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=4, mask_rate=0.3)(packed, seed=[7, 8])
    for key in ("token_ids", "segment_ids", "padding_mask", "mask_positions"):
        np.testing.assert_array_equal(x[key], masked[key].numpy(), err_msg=key)
    for key in ("mask_ids", "mask_weights"):
        np.testing.assert_array_equal(y[key], masked[key].numpy(), err_msg=key)
    assert y["next_sentence_labels"].tolist() == [0, 1, 1, 0, 1]
    assert x["token_ids"].dtype == np.int32 and x["padding_mask"].dtype == bool
    assert x["mask_positions"].shape == (5, 4) and y["mask_weights"].dtype == np.float32


@pytest.mark.backend_independent
def test_single_texts_default_labels_and_one_string():
    preprocessor = _preprocessor(max_predictions_per_seq=3)
    x, y = preprocessor(_texts(3))
    assert x["token_ids"].shape == (3, 16) and y["next_sentence_labels"].tolist() == [0, 0, 0]
    assert (x["segment_ids"] == 0).all()
    x, y = preprocessor("word1 word2 word3")
    assert x["token_ids"].shape == (16,) and x["mask_positions"].shape == (3,) and int(y["next_sentence_labels"]) == 0


@pytest.mark.backend_independent
def test_already_packed_rows_are_masked_only():
    preprocessor = _preprocessor(max_predictions_per_seq=3)
    packed = _preprocessor(mask_rate=0.0, max_predictions_per_seq=1)(_texts(4))[0]
    packed = {key: packed[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    x, y = preprocessor(packed, seed=[1, 1])
    masked = preprocessor.mask({key: tf.constant(value) for key, value in packed.items()}, seed=[1, 1])
    np.testing.assert_array_equal(x["token_ids"], masked["token_ids"].numpy())
    np.testing.assert_array_equal(y["mask_ids"], masked["mask_ids"].numpy())
    np.testing.assert_array_equal(x["segment_ids"], packed["segment_ids"])


@pytest.mark.backend_independent
def test_mask_rate_is_the_share_of_tokens_masked():
    preprocessor = _preprocessor(sequence_length=64, max_predictions_per_seq=40, mask_rate=0.3)
    x, y = preprocessor(_texts(64, words=(40, 70)))
    share = y["mask_weights"].sum() / x["padding_mask"].sum()
    assert abs(share - 0.3) < 0.01


@pytest.mark.slow
def test_make_dataset_is_reproducible_with_new_masks_every_epoch():
    texts = (_texts(10, 1), _texts(10, 2))
    labels = np.arange(10) % 2

    def epochs(preprocessor):
        dataset = preprocessor.make_dataset(texts, labels, batch_size=4)
        return [[batch[0]["mask_positions"].numpy() for batch in dataset] for _ in range(2)]

    first, again = epochs(_preprocessor(seed=5)), epochs(_preprocessor(seed=5))
    assert [len(epoch) for epoch in first] == [3, 3]
    for a, b in zip(first, again):
        for batch_a, batch_b in zip(a, b):
            np.testing.assert_array_equal(batch_a, batch_b)
    assert any(not np.array_equal(a, b) for a, b in zip(*first))  # new masks in the second epoch
    batch = next(iter(_preprocessor().make_dataset(texts, labels, batch_size=4)))
    assert set(batch[0]) == X_KEYS and batch[1]["next_sentence_labels"].numpy().tolist() == [0, 1, 0, 1]
    # Masked inputs pass through; a string dataset is mapped.
    x, y = _preprocessor()(texts[0])
    passed = next(iter(_preprocessor().make_dataset(x, y, batch_size=10)))
    np.testing.assert_array_equal(passed[0]["token_ids"].numpy(), x["token_ids"])
    mapped = next(iter(_preprocessor().make_dataset(tf.data.Dataset.from_tensor_slices(texts[0]).batch(5))))
    assert mapped[0]["token_ids"].shape == (5, 16)


@pytest.mark.backend_independent
def test_config_and_settings_round_trip():
    preprocessor = _preprocessor(mask_rate=0.25, max_predictions_per_seq=5, counting="ceil", whole_word_masking=True,
                                 replacement_unit="token", mask_token_rate=0.7, random_token_rate=0.2, seed=9,
                                 truncation="longest_first")
    restored = BertPretrainingPreprocessor.from_config(preprocessor.get_config())
    assert restored.get_config() == preprocessor.get_config()
    assert BertPretrainingPreprocessor(preprocessor.tokenizer, **preprocessor.settings()).settings() == (
        preprocessor.settings())
    texts = _texts(6)
    for a, b in zip(preprocessor(texts, seed=[2, 3]), restored(texts, seed=[2, 3])):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert restored.masker.counting == "ceil" and restored.masker.whole_word_masking


@pytest.mark.backend_independent
@pytest.mark.parametrize("settings, message", [
    (dict(counting="sometimes"), "counting must be one of"),
    (dict(replacement_unit="piece"), "replacement_unit must be one of"),
    (dict(truncation="middle"), "truncation must be one of"),
    (dict(mask_rate=1.5), "mask_rate must be in"),
    (dict(mask_token_rate=0.9, random_token_rate=0.2), "sum <= 1"),
    (dict(max_predictions_per_seq=0), "max_predictions_per_seq must be >= 1"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        _preprocessor(**settings)


@pytest.mark.backend_independent
@pytest.mark.parametrize("masking", ["dynamic", "static"])
def test_pretraining_dataset_takes_its_settings_from_the_preprocessor(masking):
    documents = [". ".join(_texts(6, seed)) + "." for seed in range(12)]
    preprocessor = _preprocessor(sequence_length=24, max_predictions_per_seq=6, mask_rate=0.3, whole_word_masking=True)
    batches = list(pretraining_dataset(preprocessor, documents=documents, batch_size=4, masking=masking, seed=1))
    assert batches
    for x, y in batches:
        assert x["token_ids"].shape == (4, 24) and x["mask_positions"].shape == (4, 6)
        assert y["mask_ids"].shape == (4, 6)
    with pytest.raises(TypeError, match="mask_rate"):  # the preprocessor owns the settings
        pretraining_dataset(preprocessor, documents=documents, mask_rate=0.2)
    # The data functions take the preprocessor they need (data sits below preprocessing): a tokenizer is refused
    # in one line that says what to build.
    with pytest.raises(TypeError, match=r"pretraining_dataset takes a BertPretrainingPreprocessor .*got BertTokenizer; "
                                        r"build one: BertPretrainingPreprocessor\(tokenizer"):
        pretraining_dataset(preprocessor.tokenizer, documents=documents)
    with pytest.raises(TypeError, match="write_pretraining_tfrecords takes a BertPretrainingPreprocessor"):
        write_pretraining_tfrecords("corpus.txt", "out", "vocab.txt")
