import random

import pytest
import tensorflow as tf

from keras_bert_impl.tokenization import BertTokenizer, train_wordpiece_vocabulary

pytestmark = pytest.mark.backend_independent


def _corpus_lines(count=300, seed=0):
    generator = random.Random(seed)
    words = ["token", "tokens", "tokenizer", "model", "models", "Café", "train", "training", "data", "the", "a"]
    return [" ".join(generator.choice(words) for _ in range(8)) + "." for _ in range(count)]


def test_learned_vocabulary_loads_and_round_trips(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_corpus_lines()) + "\n\n", encoding="utf-8")
    output = tmp_path / "out" / "vocab.txt"
    vocabulary = train_wordpiece_vocabulary(str(corpus), 60, output_path=str(output))

    assert vocabulary[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 10 < len(vocabulary) <= 60 and len(set(vocabulary)) == len(vocabulary)
    assert output.read_text(encoding="utf-8").splitlines() == vocabulary
    assert "cafe" in vocabulary and "Café" not in vocabulary  # uncased: lowercased, accents stripped

    tokenizer = BertTokenizer(str(output))
    assert tokenizer.pad_token_id == 0
    ids = tokenizer.tokenize("Tokenizer training data. Café.")
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.detokenize(ids) == "tokenizer training data . cafe ."


def test_cased_vocabulary_from_a_dataset():
    dataset = tf.data.Dataset.from_tensor_slices(_corpus_lines(100))
    vocabulary = train_wordpiece_vocabulary(dataset, 50, lowercase=False)
    assert "C" in vocabulary and "##é" in vocabulary and "cafe" not in vocabulary
    assert vocabulary[0] == "[PAD]"


def test_empty_corpus_is_an_error(tmp_path):
    corpus = tmp_path / "empty.txt"
    corpus.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="contain no text"):
        train_wordpiece_vocabulary(str(corpus), 50)
    with pytest.raises(ValueError, match="No words in the dataset"):
        train_wordpiece_vocabulary(tf.data.Dataset.from_tensor_slices(["", "\u200b"]), 50)


def test_non_utf8_corpus_names_file_and_line(tmp_path):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("fine\nstill fine\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt, line 3: .*not valid UTF-8"):
        train_wordpiece_vocabulary([str(corpus)], 50)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="must include \\[MASK\\]"):
        train_wordpiece_vocabulary(["x"], 50, reserved_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]"))
    with pytest.raises(ValueError, match="leaves no room"):
        train_wordpiece_vocabulary(["x"], 5)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_wordpiece_vocabulary([str(tmp_path / "missing.txt")], 50)
