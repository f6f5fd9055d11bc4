import numpy as np
import pytest

from keras_bert_impl.models.token_classifier import IGNORED_LABEL, BertTokenClassifier
from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
from keras_bert_impl.tokenization import BertTokenizer
from tests.helpers import assert_config_round_trip, tiny_backbone

pytestmark = pytest.mark.backend_independent  # the preprocessor is TensorFlow ops under every backend

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "lives", "in", "par", "##is", "koln", ".",
              "u", "s", "and", "the", "eu", ",", "##er"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCABULARY)


def test_labels_sit_on_the_first_sub_token_of_each_word(tokenizer):
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=10)
    x, y = preprocessor([["Peter", "lives", "in", "U.S.", "Paris"]], [[1, 0, 0, 3, 3]])
    # [CLS] peter lives in u . s . par ##is [SEP]: "U.S." is four tokens, "Paris" two.
    assert x["token_ids"].shape == (2, 10)  # 10 tokens do not fit 8: a second window
    features = preprocessor.featurize([["Peter", "lives", "in", "U.S.", "Paris"]], [[1, 0, 0, 3, 3]])
    scored = features["labels"] != IGNORED_LABEL
    tokens = features["inputs"]["token_ids"][scored]
    assert [VOCABULARY[t] for t in tokens] == ["peter", "lives", "in", "u", "par"]
    assert features["labels"][scored].tolist() == [1, 0, 0, 3, 3]
    np.testing.assert_array_equal(x["token_ids"], features["inputs"]["token_ids"])
    np.testing.assert_array_equal(y, features["labels"])


@pytest.mark.parametrize("sequence_length,stride", [(5, 1), (6, 2), (7, 5), (12, 5), (40, None)])
def test_long_sentences_are_windowed_and_every_word_is_scored_once(tokenizer, sequence_length, stride):
    rng = np.random.default_rng(sequence_length)
    words = [[VOCABULARY[i] if VOCABULARY[i] != "##is" else "Paris" for i in rng.integers(5, 18, n)]
             for n in (1, 7, 23)]
    tags = [rng.integers(0, len(TAGS), len(sentence)).tolist() for sentence in words]
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=sequence_length, stride=stride)
    features = preprocessor.featurize(words, tags)
    assert features["inputs"]["token_ids"].shape[1] == sequence_length
    # Each word is scored in exactly one window, with its own tag.
    for example, sentence_tags in enumerate(tags):
        rows = features["example_index"] == example
        word_index = features["word_index"][rows]
        assert sorted(word_index[word_index >= 0].tolist()) == list(range(len(sentence_tags)))
        assert features["labels"][rows][word_index >= 0].tolist() == [
            sentence_tags[w] for w in word_index[word_index >= 0]]
    # Logits that favour the gold tags decode to exactly the gold tags, whatever the windows.
    logits = np.eye(len(TAGS), dtype="float32")[np.maximum(features["labels"], 0)]
    decoded = preprocessor.decode(features, logits, TAGS)
    assert [[word["tag"] for word in sentence["words"]] for sentence in decoded] == [
        [TAGS[t] for t in sentence] for sentence in tags]


def test_raw_text_words_offsets_and_entities(tokenizer):
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=8, stride=3)
    text = "Péter lives in  Köln, the EU."
    features = preprocessor.featurize([text])
    # Byte offsets: "é" and "ö" are two bytes each; decode turns them into character offsets.
    assert features["word_starts"][0].tolist() == [0, 7, 13, 17, 22, 24, 28, 30]
    tags = {"Péter": "B-PER", "Köln": "B-LOC", "EU": "B-LOC"}
    word_texts = ["Péter", "lives", "in", "Köln", ",", "the", "EU", "."]
    logits = np.zeros(features["word_index"].shape + (len(TAGS),), "float32")
    for row, column in zip(*np.nonzero(features["word_index"] >= 0)):
        word = word_texts[features["word_index"][row, column]]
        logits[row, column, TAGS.index(tags.get(word, "O"))] = 5.0
    decoded = preprocessor.decode(features, logits, TAGS)[0]
    assert [word["text"] for word in decoded["words"]] == word_texts
    assert [(e["text"], e["type"]) for e in decoded["entities"]] == [("Péter", "PER"), ("Köln", "LOC"),
                                                                     ("EU", "LOC")]
    for entity in decoded["entities"]:
        assert text[entity["start"]:entity["end"]] == entity["text"] and 0.9 < entity["score"] <= 1.0


def test_decoded_entities_are_the_metrics_chunks_of_the_decoded_tags(tokenizer):
    """The graph decoder reads entities as `metrics.entity_chunks` (conlleval) reads them, I- tags that break
    IOB2 and words split over windows included; tags are the argmax, the first of tied logits."""
    from keras_bert_impl.metrics import entity_chunks

    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=6, stride=2)
    features = preprocessor.featurize(["Peter lives in U.S. and the EU, Paris.", "", "koln koln koln peter"])
    rng = np.random.default_rng(3)
    for logits in (rng.normal(0.0, 2.0, features["word_index"].shape + (len(TAGS),)).astype("float32"),
                   np.round(rng.normal(0.0, 0.5, features["word_index"].shape + (len(TAGS),))).astype("float32")):
        for example, decoded in enumerate(preprocessor.decode(features, logits, TAGS)):
            tags = [word["tag"] for word in decoded["words"]]
            rows, columns = np.nonzero((features["word_index"] >= 0) & (features["example_index"][:, None] == example))
            order = np.argsort(features["word_index"][rows, columns])
            assert tags == [TAGS[np.argmax(logits[row, column])] for row, column in zip(rows[order], columns[order])]
            assert [(e["type"], e["start"], e["end"]) for e in decoded["entities"]] == [
                (chunk.type, decoded["words"][chunk.start]["start"], decoded["words"][chunk.end - 1]["end"])
                for chunk in entity_chunks(tags)]
    with pytest.raises(ValueError, match="needs IOB tags with 'O' among the labels"):
        preprocessor.decode(features, logits, ["B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"])


@pytest.mark.slow
def test_tiny_model_fits_word_lists_and_tags_raw_text(tokenizer):
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=8)
    model = BertTokenClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), num_classes=len(TAGS),
                                labels=TAGS, preprocessor=preprocessor)
    model.compile(optimizer="adam")
    history = model.fit([["Peter", "lives", "in", "Paris"], ["the", "EU"]], [[1, 0, 0, 3], [0, 3]], batch_size=2,
                        epochs=1, verbose=0).history
    assert np.isfinite(history["loss"][0])
    tagged = model.predict(["Peter lives in Paris", "the EU"], verbose=0)
    assert [[word["text"] for word in sentence["words"]] for sentence in tagged] == [
        ["Peter", "lives", "in", "Paris"], ["the", "EU"]]
    single = model.predict("Peter lives in Paris", verbose=0)
    assert single["words"] == tagged[0]["words"]


def test_config_round_trip_and_bad_stride(tokenizer):
    restored = assert_config_round_trip(BertTokenClassificationPreprocessor(tokenizer, sequence_length=16, stride=4))
    assert (restored.sequence_length, restored.stride) == (16, 4)
    assert BertTokenClassificationPreprocessor(tokenizer, sequence_length=16).stride == 7
    with pytest.raises(ValueError, match=r"stride must be an int in \[1, sequence_length - 2 = 6\]"):
        BertTokenClassificationPreprocessor(tokenizer, sequence_length=8, stride=7)
    with pytest.raises(ValueError, match="Tags \\(y\\) go with pre-split words"):
        BertTokenClassificationPreprocessor(tokenizer)(["Peter lives"], [[1, 0]])
