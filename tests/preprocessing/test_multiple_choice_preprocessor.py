"""`BertMultipleChoicePreprocessor` and `BertMultipleChoice` on raw text, in tf.data and eagerly, under every
backend."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor, BertPreprocessor
from keras_bert_impl.tokenization import BertTokenizer
from tests.helpers import to_numpy

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "she", "sat", "ran", "down", "away", "home", "."]
CONTEXTS = ["he sat.", "she ran away home ."]
ENDINGS = [["he sat down", "he ran", "she sat"], ["she ran home", "he sat down away home", "."]]


def _preprocessor(sequence_length=8):
    return BertMultipleChoicePreprocessor(BertTokenizer(VOCABULARY), sequence_length=sequence_length)


@pytest.mark.backend_independent
def test_each_choice_is_packed_as_bert_preprocessor_packs_the_pair():
    preprocessor = _preprocessor()
    out = preprocessor((CONTEXTS, ENDINGS))
    pairs = BertPreprocessor(preprocessor.tokenizer, sequence_length=8)(
        ([context for context in CONTEXTS for _ in range(3)], [ending for row in ENDINGS for ending in row]))
    assert set(out) == {"token_ids", "segment_ids", "padding_mask"}
    for key, value in out.items():
        assert value.shape == (2, 3, 8)
        np.testing.assert_array_equal(value, pairs[key].reshape(2, 3, 8))
    # [CLS] he sat . [SEP] he sat down [SEP], truncated longest-first to 8 tokens.
    assert out["token_ids"][0, 0].tolist() == [2, 5, 7, 12, 3, 5, 7, 3]
    one = preprocessor((CONTEXTS[1], ENDINGS[1]))
    np.testing.assert_array_equal(one["token_ids"], out["token_ids"][1])


@pytest.mark.backend_independent
def test_uneven_or_misaligned_inputs_are_refused():
    preprocessor = _preprocessor()
    with pytest.raises(ValueError, match="x must be a tuple"):
        preprocessor(CONTEXTS)
    with pytest.raises(ValueError, match="same number of choices"):
        preprocessor((CONTEXTS, [["he sat"], ["she ran", "."]]))
    with pytest.raises(ValueError, match="same number of choices; got a RaggedTensor"):
        preprocessor((CONTEXTS, tf.ragged.constant([["he sat"], ["she ran", "."]])))
    with pytest.raises(ValueError, match=r"shape \(B, C\) \(or one example\), got shape \(1, 1, 1\)"):
        preprocessor((CONTEXTS[:1], [[["he sat"]]]))
    with pytest.raises(Exception, match="must hold as many examples"):
        preprocessor((CONTEXTS, ENDINGS[:1]))


@pytest.mark.slow
def test_raw_text_fit_predict_and_save_pretrained_keep_the_preprocessor(tmp_path):
    model = BertMultipleChoice.from_scratch("tiny", vocabulary=VOCABULARY, sequence_length=8, dropout=0.0,
                                            max_sequence_length=16)
    assert isinstance(model.preprocessor, BertMultipleChoicePreprocessor)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit((CONTEXTS, ENDINGS), np.array([0, 1]), batch_size=2, epochs=1, verbose=0).history
    assert np.isfinite(history["loss"][0])
    logits = model.predict((CONTEXTS, ENDINGS), verbose=0)
    assert logits.shape == (2, 3)
    np.testing.assert_allclose(logits, to_numpy(model(model.preprocessor((CONTEXTS, ENDINGS)))), atol=1e-5)
    model.save_pretrained(tmp_path / "mc")
    restored = BertMultipleChoice.from_pretrained(str(tmp_path / "mc"))
    assert isinstance(restored.preprocessor, BertMultipleChoicePreprocessor)
    assert restored.preprocessor.sequence_length == 8
    np.testing.assert_allclose(restored.predict((CONTEXTS, ENDINGS), verbose=0), logits, atol=1e-5)
