import os

import numpy as np
import pytest

from keras_bert_impl.data.classification_data import (
    ClassificationDataError,
    ClassificationExample,
    LabelVocabulary,
    classification_arrays,
    has_label_column,
    read_classification_examples,
    read_glue_examples,
)

pytestmark = pytest.mark.backend_independent

MRPC_TSV = (
    "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    '1\t702876\t702977\tAmrozi accused his brother , whom he called " the witness " , of deliberately '
    'distorting his evidence .\tReferring to him as only " the witness " , Amrozi accused his brother .\n'
    "0\t2108705\t2108831\tYucaipa owned Dominick 's before selling the chain to Safeway in 1998 .\t"
    "Yucaipa bought Dominick 's in 1995 .\n"
    '1\t1330381\t1330521\t"Unbalanced quote at the start\tAnd \'single\' quotes\n'
)
STSB_TSV = (
    "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air plane is taking off.\t5.000\n"
    "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man is playing a large flute.\t"
    "A man is playing a flute.\t3.800\n"
)
COLA_TSV = (
    "gj04\t1\t\tOur friends won't buy this analysis, let alone the next one we propose.\n"
    "gj04\t0\t*\tThey drank the pub.\n"
)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_mrpc_layout_loads_with_bom_and_unbalanced_quotes(tmp_path):
    path = write(tmp_path, "train.tsv", MRPC_TSV)
    examples = read_classification_examples(path, ("#1 String", "#2 String"), "Quality")
    assert [e.label for e in examples] == ["1", "0", "1"]
    assert examples[0].texts[0].startswith("Amrozi accused his brother , whom he called \" the witness \"")
    assert examples[2].texts == ('"Unbalanced quote at the start', "And 'single' quotes")
    assert [e.line for e in examples] == [2, 3, 4] and examples[1].location == f"{path}, line 3"
    assert read_glue_examples("MRPC", path) == examples


def test_stsb_layout_regression_labels(tmp_path):
    path = write(tmp_path, "dev.tsv", STSB_TSV)
    examples = read_glue_examples("sts-b", path)
    assert [e.label for e in examples] == [5.0, 3.8]
    assert examples[1].texts == ("A man is playing a large flute.", "A man is playing a flute.")


def test_cola_layout_without_header(tmp_path):
    path = write(tmp_path, "train.tsv", COLA_TSV)
    examples = read_glue_examples("cola", path)
    assert [(e.texts, e.label, e.line) for e in examples] == [
        (("Our friends won't buy this analysis, let alone the next one we propose.",), "1", 1),
        (("They drank the pub.",), "0", 2),
    ]
    assert read_glue_examples("cola", path, labeled=False)[0].label is None


def test_csv_with_quoted_multiline_fields_and_line_numbers(tmp_path):
    path = write(tmp_path, "data.csv", 'text,label\n"first, with comma",pos\n"two\nlines",neg\n\nlast,pos\n')
    examples = read_classification_examples(path, "text", "label")
    assert [(e.texts[0], e.label, e.line) for e in examples] == [
        ("first, with comma", "pos", 2),
        ("two\nlines", "neg", 3),
        ("last", "pos", 6),
    ]


def test_jsonl(tmp_path):
    path = write(tmp_path, "data.jsonl", '{"a": "x", "b": "y", "label": 1}\n\n{"a": "z", "b": "w", "label": "0"}\n')
    examples = read_classification_examples(path, ["a", "b"], "label")
    assert [(e.texts, e.label, e.line) for e in examples] == [(("x", "y"), "1", 1), (("z", "w"), "0", 3)]


@pytest.mark.parametrize(
    "name, text, kwargs, message",
    [
        ("bad.jsonl", '{"a": "x", "label": 1}\n{"a": "y", "label": }\n', {},
         r"bad.jsonl, line 2: malformed JSON at column 21"),
        ("bad.jsonl", '{"a": "x"}\n', {}, r"line 1: missing the label field 'label'"),
        ("bad.jsonl", '{"a": 3, "label": 1}\n', {}, r"line 1: text field 'a' must be a string"),
        ("bad.jsonl", '{"a": "x", "label": true}\n', {},
         r"line 1: label True in column 'label' must be a string or an integer"),
        ("bad.tsv", "a\tlabel\nx\t1\ny\n", {}, r"bad.tsv, line 3: expected at least 2 columns, found 1"),
        ("bad.tsv", "text\tlabel\nx\t1\n", {}, r"bad.tsv: no column 'a' in the header \['text', 'label'\]"),
        ("bad.tsv", "a\tscore\nx\t1.5\ny\thigh\n", dict(label_column="score", regression=True),
         r"bad.tsv, line 3: regression label 'high' in column 'score' is not a number"),
        ("bad.tsv", "x\t1\n", dict(has_header=False), "without a header, columns are 0-based indices"),
        ("bad.txt", "a\n", {}, r"cannot tell the file format"),
    ],
)
def test_bad_input_names_file_line_and_value(tmp_path, name, text, kwargs, message):
    path = write(tmp_path, name, text)
    arguments = dict(text_columns="a", label_column="label")
    arguments.update(kwargs)
    with pytest.raises(ClassificationDataError, match=message):
        read_classification_examples(path, **arguments)


def test_label_outside_label_set_names_row_and_value(tmp_path):
    train = read_classification_examples(write(tmp_path, "train.tsv", "s\tl\na\tpos\nb\tneg\n"), "s", "l")
    vocabulary = LabelVocabulary.from_examples(train)
    dev_path = write(tmp_path, "dev.tsv", "s\tl\na\tpos\nb\tneutral\n")
    dev = read_classification_examples(dev_path, "s", "l")
    with pytest.raises(ClassificationDataError) as error:
        vocabulary.encode(dev)
    assert str(error.value) == f"{dev_path}, line 3: label 'neutral' is not one of the known labels ['neg', 'pos']."


def test_label_vocabulary_ids_and_round_trip(tmp_path):
    examples = [ClassificationExample(("t",), label) for label in ["10", "2", "0", "2"]]
    vocabulary = LabelVocabulary.from_examples(examples)
    assert vocabulary.labels == ["0", "2", "10"]  # integer labels sort numerically
    assert vocabulary.encode(examples).tolist() == [2, 1, 0, 1]
    assert vocabulary.id_to_label(2) == "10" and len(vocabulary) == 3
    path = str(tmp_path / "model" / "label_vocabulary.json")
    vocabulary.save(path)
    LabelVocabulary(["x"]).save(path)  # overwritten in place, no temporary files left behind
    assert os.listdir(tmp_path / "model") == ["label_vocabulary.json"]
    assert LabelVocabulary.load(path) == LabelVocabulary(["x"])
    words = [ClassificationExample(("t",), "b"), ClassificationExample(("t",), "a")]
    assert LabelVocabulary.from_examples(words).labels == ["a", "b"]


def test_label_vocabulary_errors(tmp_path):
    with pytest.raises(ValueError, match=r"Repeated labels in the label vocabulary: \['a'\]"):
        LabelVocabulary(["a", "b", "a"])
    with pytest.raises(ValueError, match=r"outside \[0, 2\)"):
        LabelVocabulary(["a", "b"]).id_to_label(2)
    bad = write(tmp_path, "labels.json", '{"labels": ["a",]}')
    with pytest.raises(ClassificationDataError, match="labels.json: malformed JSON at line 1, column 17"):
        LabelVocabulary.load(bad)


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def tokenizer():
    from keras_bert_impl.tokenization import BertTokenizer

    return BertTokenizer(SPECIALS + ["a", "b", "c", "d", "e", "f", "g", "."])


def test_pairs_are_packed_longest_first(tokenizer):
    from keras_bert_impl.preprocessing import BertPreprocessor

    examples = [ClassificationExample(("a b c d e f", "g ."), "1"), ClassificationExample(("a", "b c"), "0")]
    x, y = classification_arrays(examples, LabelVocabulary(["0", "1"]))
    x, y = BertPreprocessor(tokenizer, sequence_length=8)(x, y)
    t = tokenizer.token_to_id
    # Room 8 - 3 = 5: A is cut to 3 tokens, B keeps 2.
    assert x["token_ids"][0].tolist() == [t("[CLS]"), t("a"), t("b"), t("c"), t("[SEP]"), t("g"), t("."), t("[SEP]")]
    assert x["segment_ids"][0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert x["token_ids"][1].tolist() == [t("[CLS]"), t("a"), t("[SEP]"), t("b"), t("c"), t("[SEP]"), 0, 0]
    assert x["padding_mask"][1].tolist() == [True] * 6 + [False] * 2
    assert y.tolist() == [1, 0] and y.dtype == np.int32


@pytest.mark.slow
def test_dataset_classification_regression_and_unlabeled(tokenizer, tmp_path):
    from keras_bert_impl.preprocessing import BertPreprocessor

    preprocessor = BertPreprocessor(tokenizer, sequence_length=6)
    examples = read_classification_examples(write(tmp_path, "train.tsv", "s\tl\na b\tx\nc\ty\nd e f\tx\n"), "s", "l")
    vocabulary = LabelVocabulary.from_examples(examples)
    x, y = next(iter(preprocessor.make_dataset(*classification_arrays(examples, vocabulary), batch_size=2)))
    assert {k: (v.shape, v.dtype.name) for k, v in x.items()} == {
        "token_ids": ((2, 6), "int32"), "segment_ids": ((2, 6), "int32"), "padding_mask": ((2, 6), "bool")
    }
    assert y.numpy().tolist() == [0, 1]

    scores = [ClassificationExample(("a", "b"), 4.2), ClassificationExample(("c", "d"), 0.5)]
    _, y = next(iter(preprocessor.make_dataset(*classification_arrays(scores, regression=True))))
    assert y.dtype.name == "float32" and y.numpy().tolist() == pytest.approx([4.2, 0.5])

    unlabeled = [ClassificationExample(("a",)), ClassificationExample(("b",))]
    x, y = classification_arrays(unlabeled)
    assert x == ["a", "b"] and y is None
    batch = next(iter(preprocessor.make_dataset(x)))
    assert sorted(batch) == ["padding_mask", "segment_ids", "token_ids"]

    with pytest.raises(ValueError, match="needs a label_vocabulary"):
        classification_arrays(examples)
    mixed = [ClassificationExample(("a",), "x", "f.tsv", 2), ClassificationExample(("b",), None, "f.tsv", 3)]
    with pytest.raises(ClassificationDataError, match=r"f.tsv, line 3: the example has no label"):
        classification_arrays(mixed, vocabulary)
    with pytest.raises(ValueError, match="Mix of single-text and text-pair"):
        classification_arrays([ClassificationExample(("a",), "x"), ClassificationExample(("b", "c"), "x")], vocabulary)


@pytest.mark.parametrize("name, text, file_format, expected", [
    ("named.tsv", "s\tl\na\tx\n", None, True),
    ("named.tsv", "s\tother\na\tx\n", None, False),
    ("named.csv", "\n\ns,l\na,x\n", None, True),
    ("records.jsonl", '{"s": "a", "l": "x"}\n', None, True),
    ("records.jsonl", '{"s": "a"}\n', None, False),
    ("records.txt", '{"s": "a"}\n', "jsonl", False),
])
def test_has_label_column_reads_the_header(tmp_path, name, text, file_format, expected):
    assert has_label_column(write(tmp_path, name, text), "l", file_format) is expected
    assert has_label_column(write(tmp_path, name, text), 1, file_format) is True  # by index: taken to be there


# -- the real MSR paraphrase release (../shared/data/mrpc) --------------------------------------------------

MRPC_DIRECTORY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "mrpc")
requires_mrpc = pytest.mark.skipif(
    not os.path.isdir(MRPC_DIRECTORY),
    reason="../shared/data/mrpc (the real MSR paraphrase files, see ../shared/data/README.md) is absent",
)


@requires_mrpc
@pytest.mark.parametrize("split", ["train", "test"])
def test_real_msr_paraphrase_files_read_every_row(split):
    path = os.path.join(MRPC_DIRECTORY, f"msr_paraphrase_{split}.txt")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        lines = handle.read().splitlines()
    assert lines[0].split("\t") == ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    examples = read_glue_examples("mrpc", path)
    # One example per data line, none lost or merged (the strings hold unbalanced quotes, read as text).
    assert len(examples) == len(lines) - 1 and [e.line for e in examples] == list(range(2, len(lines) + 1))
    for example, line in zip(examples, lines[1:]):
        label, _, _, first, second = line.split("\t")
        assert (example.label, example.texts) == (label, (first, second))
    assert {e.label for e in examples} == {"0", "1"}
    if split == "test":
        assert len(examples) == 1725  # the README's count


@requires_mrpc
def test_bad_rows_of_the_msr_format_name_file_and_line(tmp_path):
    with open(os.path.join(MRPC_DIRECTORY, "msr_paraphrase_train.txt"), encoding="utf-8-sig", newline="") as handle:
        lines = handle.read().splitlines()[:5]
    short = lines[:3] + [lines[3].rsplit("\t", 1)[0]] + lines[4:]  # line 4 lost its second string
    path = write(tmp_path, "short.txt", "\r\n".join(short) + "\r\n")
    with pytest.raises(ClassificationDataError, match=r"short.txt, line 4: expected at least 5 columns, found 4"):
        read_glue_examples("mrpc", path)
    relabelled = lines[:2] + ["yes" + lines[2][1:]] + lines[3:]
    path = write(tmp_path, "label.txt", "\r\n".join(relabelled) + "\r\n")
    with pytest.raises(ClassificationDataError, match=r"label.txt, line 3: label 'yes' is not one of the known labels"):
        LabelVocabulary(["0", "1"]).encode(read_glue_examples("mrpc", path))
