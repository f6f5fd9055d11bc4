import os

import pytest

from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
from keras_bert_impl.data.label_vocabulary import ClassificationDataError

pytestmark = pytest.mark.backend_independent

CONLL_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "conll2003"))
TYPES = ["LOC", "MISC", "ORG", "PER"]


def write(tmp_path, text, name="data.txt", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_two_and_four_column_files_iob1_and_iob2_read_the_same(tmp_path):
    iob2 = write(tmp_path, "EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n", "iob2.txt")
    iob1 = write(tmp_path, "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\nGerman JJ I-NP I-MISC\n"
                 "\n\nPeter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\n", "iob1.txt")
    for path in (iob2, iob1):
        sentences = read_conll_sentences(path)
        assert [(s.words, s.tags) for s in sentences] == [
            (("EU", "rejects", "German"), ("B-ORG", "O", "B-MISC")), (("Peter", "Blackburn"), ("B-PER", "I-PER"))]
    assert [s.line for s in read_conll_sentences(iob1)] == [3, 8]


def test_tag_vocabulary_has_both_tags_of_every_type_and_encoding_names_unknown_tags(tmp_path):
    train = read_conll_sentences(write(tmp_path, "Paris B-LOC\n"))
    tags = tag_vocabulary(train)
    assert tags.labels == ["O", "B-LOC", "I-LOC"]
    test = read_conll_sentences(write(tmp_path, "in O\nBonn B-LOC\nEU B-ORG\n", "test.txt"))
    with pytest.raises(ClassificationDataError, match=r"test.txt, line 3: label 'B-ORG'"):
        encode_tags(test, tags)


@pytest.mark.parametrize("content,message", [
    ("EU B-ORG\nrejects\n", r"line 2: expected 'word TAG'.*one column 'rejects'"),
    ("EU B-ORG\n\nPeter PER\n", r"line 3: tag 'PER' is not an IOB tag"),
    ("EU X-ORG\n", r"line 1: tag 'X-ORG'"),
    ("\n-DOCSTART- O\n\n", "has no sentences"),
])
def test_bad_rows_name_file_and_line(tmp_path, content, message):
    path = write(tmp_path, content)
    with pytest.raises(ClassificationDataError, match=message) as error:
        read_conll_sentences(path)
    assert path in str(error.value)


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = write(tmp_path, b"EU B-ORG\nK\xf6ln B-LOC\n", mode="wb")
    with pytest.raises(ClassificationDataError, match="line 2: bytes"):
        read_conll_sentences(path)


@pytest.mark.skipif(not os.path.isdir(CONLL_DIR), reason=f"{CONLL_DIR} is absent (CoNLL-2003, see "
                    "../shared/data/README.md)")
def test_real_conll_2003_files():
    # Sentence counts of ../shared/data/README.md.
    counts = {"train.txt": 14041, "dev.txt": 3250, "test.txt": 3453}
    for name, count in counts.items():
        sentences = read_conll_sentences(os.path.join(CONLL_DIR, name))
        assert len(sentences) == count, name
        assert tag_vocabulary(sentences).labels == ["O"] + [f"{p}-{t}" for t in TYPES for p in ("B", "I")]
    first = read_conll_sentences(os.path.join(CONLL_DIR, "train.txt"))[0]
    assert first.words[:3] == ("EU", "rejects", "German") and first.tags[:3] == ("B-ORG", "O", "B-MISC")
