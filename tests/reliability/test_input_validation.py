"""Issue #29 items 5 and 6 (inputs): inputs that cannot be what they claim are refused in one line naming the file
and line, before any model is built or trained; `predict --input-file` keeps one output row per input line; a
label list that disagrees with `num_classes` is one line naming both numbers; a keras-hub preset written by our
`save_to_preset` fine-tunes through `--preset`."""

import json

import pytest

from tests.cli.cli_test_utils import run_cli
from tests.helpers import TINY_JIT_COMPILE
from tests.training.finetuning_test_utils import VOCABULARY, write_squad_json, write_tiny_checkpoint


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if a fine-tuning run builds its model: the refusals must come first."""
    from keras_bert_impl.training.finetuning import ModelSource

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built before the input was checked")

    monkeypatch.setattr(ModelSource, "build", refuse)


@pytest.mark.backend_independent
def test_tsv_row_with_more_cells_than_the_header_is_refused_before_any_model(tmp_path, capsys, no_model):
    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\ngood film\t1\nthe cat\tsat\t0\n")  # line 3: a stray TAB shifts the label
    (tmp_path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    status, _, err = run_cli(capsys, "finetune-classifier", "--train-file", train, "--text-columns", "sentence",
                             "--label-column", "label", "--preset", "tiny", "--vocab", tmp_path / "vocab.txt",
                             "--output-dir", tmp_path / "run", "--epochs", 1)
    assert status == 1 and err.count("\n") == 1, err
    assert f"{train}, line 3: 3 cells but the header has 2 columns" in err and "fix or remove the row" in err


@pytest.mark.backend_independent
def test_dev_file_with_an_extra_cell_is_refused_before_training(tmp_path):
    from keras_bert_impl.data.classification_data import ClassificationDataError, read_classification_examples

    dev = tmp_path / "dev.csv"
    dev.write_text("text,label\ngood,yes\n\"a, quoted\",no\nbad, very,no\n")
    with pytest.raises(ClassificationDataError, match=r"dev.csv, line 4: 3 cells but the header has 2 columns"):
        read_classification_examples(str(dev), "text", "label")


@pytest.mark.backend_independent
def test_swag_row_with_empty_endings_is_refused(tmp_path):
    from keras_bert_impl.data.classification_data import ClassificationDataError
    from keras_bert_impl.data.multiple_choice_data import read_swag_examples

    path = tmp_path / "train.csv"
    path.write_text("sent1,sent2,ending0,ending1,ending2,ending3,label\nHe sat.,He,waved.,sank.,ran.,sang.,0\n"
                    "She ran.,She,,,  ,,1\n")
    with pytest.raises(ClassificationDataError, match=r"train.csv, line 3: empty endings \['ending0', 'ending1', "
                                                      r"'ending2', 'ending3'\]"):
        read_swag_examples(str(path))


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.helpers import tiny_backbone

    directory = tmp_path_factory.mktemp("predict_blank_lines") / "classifier"
    BertClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), 2, labels=["no", "yes"]).save_pretrained(directory)
    BertTokenizer(VOCABULARY).save_pretrained(directory)
    return directory


@pytest.mark.backend_independent
def test_predict_keeps_one_output_row_per_input_line(tmp_path, capsys, classifier_dir):
    texts = tmp_path / "texts.txt"
    lines = ["good cat", "", "the dog ran", "   ", "bad"]
    texts.write_text("\n".join(lines) + "\n")
    output = tmp_path / "predictions.tsv"
    status, _, err = run_cli(capsys, "predict", "--model", classifier_dir, "--input-file", texts, "--output-file",
                             output)
    assert status == 0, err
    rows = [line.split("\t") for line in output.read_text().splitlines()[1:]]
    assert [row[0] for row in rows] == ["0", "1", "2", "3", "4"] and [row[3] for row in rows] == lines
    assert rows[1][1:3] == ["", ""] and rows[3][1:3] == ["", ""]  # blank lines: a row, empty prediction
    assert all(row[1] in ("no", "yes") for row in (rows[0], rows[2], rows[4]))
    # the rows of the non-blank lines are what predicting them alone gives
    status, out, err = run_cli(capsys, "predict", "--model", classifier_dir, "--text", "good cat", "--text",
                               "the dog ran", "--text", "bad")
    assert status == 0, err
    assert [line.split("\t")[1:3] for line in out.splitlines()] == [row[1:3] for row in (rows[0], rows[2], rows[4])]


@pytest.mark.backend_independent
def test_predict_refuses_a_file_of_blank_lines(tmp_path, capsys, classifier_dir):
    texts = tmp_path / "texts.txt"
    texts.write_text("\n  \n\n")
    status, _, err = run_cli(capsys, "predict", "--model", classifier_dir, "--input-file", texts)
    assert status == 1 and err.count("\n") == 1 and f"{texts} holds only blank ones" in err


@pytest.mark.backend_independent
def test_label_list_shorter_than_the_head_is_one_line_naming_both_numbers(tmp_path, capsys):
    """A Hugging Face NER checkpoint whose id2label names 2 of its 3 classes: the labels were dropped and the run
    failed later saying the checkpoint has no tag names."""
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.helpers import tiny_backbone

    checkpoint = tmp_path / "ner"
    BertTokenClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), 3,
                        labels=["O", "B-LOC", "I-LOC"]).save_huggingface(checkpoint)
    BertTokenizer(VOCABULARY).save_pretrained(checkpoint)
    config = json.loads((checkpoint / "config.json").read_text())
    config["id2label"], config["label2id"] = {"0": "O", "1": "B-LOC"}, {"O": 0, "B-LOC": 1}
    (checkpoint / "config.json").write_text(json.dumps(config))
    dev = tmp_path / "dev.txt"
    dev.write_text("the O\ncat O\nin O\nparis B-LOC\n")
    status, _, err = run_cli(capsys, "finetune-ner", "--init-checkpoint", checkpoint, "--dev-file", dev, "--epochs", 0,
                             "--output-dir", tmp_path / "run")
    assert status == 1 and err.count("\n") == 1, err
    assert f"{checkpoint}: the config's 'id2label' names 2 labels ['O', 'B-LOC'] but the head has 3 classes" in err


@pytest.mark.backend_independent
def test_native_label_list_longer_than_num_classes_is_refused(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from tests.helpers import tiny_backbone

    BertClassifier(tiny_backbone(), 2, labels=["no", "yes"]).save_pretrained(tmp_path / "classifier")
    config_path = tmp_path / "classifier" / "config.json"
    config = json.loads(config_path.read_text())
    config["config"]["labels"] = ["no", "yes", "maybe"]
    config_path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"names 3 labels \['no', 'yes', 'maybe'\] but the head has 2 classes"):
        BertClassifier.from_pretrained(tmp_path / "classifier")


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if a fine-tuning run starts training: the checks of its files must come first."""
    from keras_bert_impl.training import finetuning

    def refuse(*args, **kwargs):
        raise AssertionError("training started before the files were checked")

    monkeypatch.setattr(finetuning, "finetune", refuse)


EMPTY_SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "the cat .", "qas": []}]}]}


@pytest.mark.backend_independent
@pytest.mark.parametrize("flag", ["--dev-file", "--test-file"])
def test_squad_file_with_no_questions_is_refused_before_training(tmp_path, capsys, no_training, flag):
    train = write_squad_json(tmp_path / "train.json", 4, seed=0)
    scored = tmp_path / "scored.json"
    scored.write_text(json.dumps(EMPTY_SQUAD))
    status, _, err = run_cli(capsys, "finetune-squad", "--train-file", train, flag, scored, "--init-checkpoint",
                             write_tiny_checkpoint(tmp_path / "checkpoint"), "--output-dir", tmp_path / "run",
                             "--max-seq-length", 64, "--doc-stride", 32, "--max-query-length", 16, "--version-2")
    assert status == 1 and err.count("\n") == 1, err
    assert f"{scored} has no questions" in err and "give a SQuAD file with at least one question" in err


@pytest.mark.backend_independent
def test_empty_classification_test_file_is_refused_before_training(tmp_path, capsys, no_training):
    from tests.training.finetuning_test_utils import write_mrpc_tsv

    train = write_mrpc_tsv(tmp_path / "train.tsv", 8, seed=0)
    test = tmp_path / "test.tsv"
    test.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
    status, _, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--train-file", train, "--test-file",
                             test, "--init-checkpoint", write_tiny_checkpoint(tmp_path / "checkpoint"),
                             "--output-dir", tmp_path / "run", "--max-seq-length", 32)
    assert status == 1 and err.count("\n") == 1, err
    assert f"{test} has no examples" in err


@pytest.mark.slow
def test_keras_hub_preset_from_save_to_preset_fine_tunes_through_preset(tmp_path, capsys):
    """`save_to_preset` -> `finetune-classifier --preset DIR`: the run starts from the preset's backbone weights,
    sizes and tokenizer (they were refused as an unknown size, or overridden with the flags' sizes)."""
    import numpy as np

    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training.finetuning import ModelSource
    from tests.training.finetuning_test_utils import write_mrpc_tsv

    pytest.importorskip("keras_hub")
    original = BertClassifier.from_scratch("tiny", vocabulary=VOCABULARY, num_classes=2, max_sequence_length=48,
                                           sequence_length=32)
    preset = tmp_path / "preset"
    original.save_to_preset(str(preset))
    source = ModelSource(preset=str(preset))
    tokenizer = source.tokenizer()
    assert tokenizer.vocabulary_size() == len(VOCABULARY)
    model = source.build(BertClassifier, tokenizer, num_classes=3)
    assert model.backbone.max_sequence_length == 48 and model.num_classes == 3
    for ours, theirs in zip(model.backbone.weights, original.backbone.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)
    train = write_mrpc_tsv(tmp_path / "train.tsv", 4, seed=0)
    no_jit = [] if TINY_JIT_COMPILE else ["--no-jit"]
    status, _, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--train-file", train, "--preset",
                             preset, "--output-dir", tmp_path / "run", "--max-seq-length", 32, "--epochs", 1,
                             "--batch-size", 2, *no_jit, "--verbose", 0)
    assert status == 0, err
    assert (tmp_path / "run" / "last" / "config.json").is_file()


@pytest.mark.backend_independent
def test_a_preset_that_is_neither_a_size_nor_a_keras_hub_preset_is_one_line(tmp_path, capsys, no_model):
    pytest.importorskip("keras_hub")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    status, _, err = run_cli(capsys, "finetune-classifier", "--train-file", tmp_path / "train.tsv", "--text-columns",
                             "sentence", "--label-column", "label", "--preset", "tinyy", "--vocab",
                             tmp_path / "vocab.txt", "--output-dir", tmp_path / "run")
    assert status == 1 and err.count("\n") == 1, err
    assert "The preset 'tinyy' is neither a model size (tiny, mini, small, medium, base, large) nor a keras-hub" in err
