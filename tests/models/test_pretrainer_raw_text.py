"""A `BertPretrainer` with a `BertPretrainingPreprocessor`: `fit`, `evaluate` and `predict` on raw text pairs
(packed and masked in tf.data with the preprocessor's settings), on every backend; the settings travel with
`save_pretrained` and `.keras` files."""

import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
from keras_bert_impl.tokenization import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran",
              "to", "park", "it", "was", "sunny", "rained"]
FIRST = ["the cat sat", "a dog ran", "it was sunny", "the dog sat", "a cat ran", "it rained"] * 2
SECOND = ["on the mat", "to the park", "the cat ran", "on a mat", "to a park", "the dog sat"] * 2
NEXT_SENTENCE = np.array([0, 0, 1, 0, 0, 1] * 2)


def _pretrainer(**settings):
    return BertPretrainer.from_scratch("tiny", vocabulary=VOCABULARY, sequence_length=12, max_sequence_length=16,
                                       num_layers=1, **settings)


def test_from_scratch_attaches_a_pretraining_preprocessor():
    model = _pretrainer()
    assert isinstance(model.preprocessor, BertPretrainingPreprocessor)
    assert model.preprocessor.sequence_length == 12
    assert model.backbone.vocabulary_size == len(VOCABULARY)
    assert BertPretrainer.from_scratch("tiny", num_layers=1).preprocessor is None


@pytest.mark.slow
def test_raw_text_fit_moves_the_loss_and_predict_equals_ids():
    model = _pretrainer(dropout=0.0, attention_dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    # The same masks in both evaluations: each make_dataset starts from the preprocessor's seed.
    before = model.evaluate((FIRST, SECOND), NEXT_SENTENCE, batch_size=4, verbose=0, return_dict=True)
    model.fit((FIRST, SECOND), NEXT_SENTENCE, batch_size=4, epochs=3, verbose=0)
    after = model.evaluate((FIRST, SECOND), NEXT_SENTENCE, batch_size=4, verbose=0, return_dict=True)
    assert after["loss"] < before["loss"] - 0.1, (before, after)

    raw = model.predict((FIRST[:4], SECOND[:4]), batch_size=4, verbose=0)
    (x, _), = model.preprocessor.make_dataset((FIRST[:4], SECOND[:4]), batch_size=4).take(1).as_numpy_iterator()
    assert x["mask_positions"].shape == (4, model.preprocessor.max_predictions_per_seq)
    ids = model.predict(x, verbose=0)
    assert raw["mlm_logits"].shape == (4, model.preprocessor.max_predictions_per_seq, len(VOCABULARY))
    np.testing.assert_allclose(raw["mlm_logits"], ids["mlm_logits"], atol=1e-5)
    np.testing.assert_allclose(raw["nsp_logits"], ids["nsp_logits"], atol=1e-5)


def test_save_pretrained_and_keras_file_keep_the_masking_settings(tmp_path):
    tokenizer = BertTokenizer(VOCABULARY)
    preprocessor = BertPretrainingPreprocessor(tokenizer, sequence_length=10, mask_rate=0.3, max_predictions_per_seq=4,
                                               whole_word_masking=True, seed=7)
    model = BertPretrainer(_pretrainer().backbone, preprocessor=preprocessor)
    x, _ = preprocessor((["the cat sat"], ["on the mat"]), seed=np.array([1, 2]))
    expected = model.predict(x, verbose=0)

    model.save_pretrained(tmp_path / "checkpoint")
    assert {"vocab.txt", "tokenizer_config.json", "preprocessor.json"} <= set(os.listdir(tmp_path / "checkpoint"))
    restored = BertPretrainer.from_pretrained(tmp_path / "checkpoint")
    assert restored.preprocessor.get_config() == preprocessor.get_config()
    np.testing.assert_allclose(restored.predict(x, verbose=0)["mlm_logits"], expected["mlm_logits"], atol=1e-6)
    assert BertPretrainer.from_pretrained(tmp_path / "checkpoint", preprocessor=None).preprocessor is None
    assert BertPretrainer.from_pretrained(tmp_path / "checkpoint", sequence_length=16).preprocessor.sequence_length == 16

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.preprocessor.get_config() == preprocessor.get_config()
    np.testing.assert_allclose(loaded.predict(x, verbose=0)["nsp_logits"], expected["nsp_logits"], atol=1e-6)


def test_calling_the_model_on_strings_says_to_use_predict():
    with pytest.raises(ValueError, match="predict"):
        _pretrainer()(["the cat sat"])
