"""Issue #16 item 10: messages that did not say what is wrong, where and what to do now do, in one line."""

import json

import pytest

from keras_bert_impl.data.documents import read_documents
from tests.cli.cli_test_utils import run_cli, write_corpus
from tests.cli.test_convert import tiny_classifier_dir  # noqa: F401 (a fixture)
from tests.training.finetuning_test_utils import write_tiny_checkpoint


def _one_line_error(status, err, *parts):
    lines = err.strip().splitlines()
    assert status == 1 and len(lines) == 1, err
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.mark.backend_independent
def test_squad_training_file_without_questions_names_the_file(tmp_path, capsys):
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"data": []}))
    status, _, err = run_cli(capsys, "finetune-squad", "--train-file", train, "--init-checkpoint",
                             write_tiny_checkpoint(tmp_path / "checkpoint"), "--output-dir", tmp_path / "run",
                             "--max-seq-length", 64, "--doc-stride", 32, "--max-query-length", 16)
    _one_line_error(status, err, f"{train} has no training questions (0 skipped)", "or train 0 epochs (--epochs 0)")
    assert "total_steps" not in err


@pytest.mark.backend_independent
@pytest.mark.parametrize("content", ["", "sentence\tlabel\n"])
def test_classification_file_without_rows_names_the_file(tmp_path, capsys, content):
    train = tmp_path / "train.tsv"
    train.write_text(content)
    status, _, err = run_cli(capsys, "finetune-classifier", "--train-file", train, "--text-column", "sentence",
                             "--label-column", "label", "--init-checkpoint", write_tiny_checkpoint(tmp_path / "c"),
                             "--output-dir", tmp_path / "run")
    _one_line_error(status, err, f"{train} has no examples (it is empty or has only its header row)",
                    "give a file with at least one row")


@pytest.mark.backend_independent
def test_predict_input_file_that_is_not_utf8_names_file_and_line(tmp_path, capsys, tiny_classifier_dir):  # noqa: F811
    texts = tmp_path / "texts.txt"
    texts.write_bytes(b"the cat sat.\n\xd7\xff binary\n")
    status, _, err = run_cli(capsys, "predict", "--model", tiny_classifier_dir, "--input-file", texts)
    _one_line_error(status, err, f"{texts}, line 2: bytes b'\\xd7' at byte 0", "Convert the file to UTF-8")


@pytest.mark.backend_independent
def test_missing_init_checkpoint_is_named(tmp_path, capsys):
    write_corpus(tmp_path)
    (tmp_path / "bad").mkdir()
    missing = tmp_path / "bad" / "nope"
    status, _, err = run_cli(capsys, "finetune-classifier", "--train-file", tmp_path / "corpus.txt",
                             "--text-column", "0", "--label-column", "1", "--file-format", "tsv", "--no-header",
                             "--init-checkpoint", missing, "--output-dir", tmp_path / "run")
    _one_line_error(status, err, f"{missing} does not exist", "check the --init-checkpoint path")
    assert "No vocab.txt" not in err


@pytest.mark.backend_independent
def test_empty_context_says_it_is_empty(capsys, tmp_path):
    status, _, err = run_cli(capsys, "predict", "--model", tmp_path, "--question", "who?", "--context", "")
    assert status == 2 and "--context is empty: give the text the answer is taken from" in err


@pytest.mark.backend_independent
def test_pretrain_output_dir_that_is_a_file_is_named(tmp_path, capsys):
    write_corpus(tmp_path)
    blocker = tmp_path / "run"
    blocker.write_text("keep me")
    status, _, err = run_cli(capsys, "pretrain", "--input-files", tmp_path / "corpus.txt", "--vocab-file",
                             tmp_path / "vocab.txt", "--preset", "tiny", "--output-dir", blocker)
    _one_line_error(status, err, f"{str(blocker)!r} is a file, not a directory; choose another output path")
    assert blocker.read_text() == "keep me"


@pytest.mark.backend_independent
def test_corpus_encoding_error_gives_only_advice_the_user_can_follow(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"caf\xe9 au lait.\n")
    with pytest.raises(ValueError) as error:
        list(read_documents(str(corpus)))
    assert f"{corpus}, line 1: bytes b'\\xe9' at byte 3" in str(error.value)
    assert "errors=" not in str(error.value) and "iconv" in str(error.value)


def test_a_keras_wrapped_layer_error_shows_the_layers_own_reason(tmp_path, capsys, monkeypatch):
    """Issue #29 item 7: Keras wraps a layer's error ("Exception encountered when calling BertEmbeddings.call()",
    the reason in bold, then the arguments); the command printed only that first line."""
    import numpy as np

    from keras_bert_impl.cli import predict
    from tests.helpers import tiny_backbone

    backbone = tiny_backbone()
    too_long = np.zeros([1, backbone.max_sequence_length + 1], "int32")

    def run(args):  # what a model fed a sequence longer than its position table raises
        backbone({"token_ids": too_long, "segment_ids": too_long, "padding_mask": too_long + 1})

    monkeypatch.setattr(predict, "run", run)
    status, _, err = run_cli(capsys, "predict", "--model", tmp_path, "--text", "a")
    _one_line_error(status, err, f"keras-bert predict: error: Sequence length {too_long.shape[1]} exceeds the "
                    f"position table (max_sequence_length={backbone.max_sequence_length}); truncate or window")
    assert "Exception encountered" not in err and "Arguments received" not in err


@pytest.mark.backend_independent
def test_the_reason_inside_keras_output_shape_wrapper_is_shown():
    from keras_bert_impl.cli.command_line import _one_line

    wrapped = ValueError(
        "Exception encountered when calling BertBackbone.call().\n\nCould not automatically infer the output shape "
        "/ dtype of 'bert_backbone' (of type BertBackbone). Either the `BertBackbone.call()` method is incorrect, "
        "or you need to implement the `BertBackbone.compute_output_spec() / compute_output_shape()` method. Error "
        "encountered:\n\nSequence length 100000 exceeds the position table (max_sequence_length=512).\n\n"
        "Arguments received by BertBackbone.call():\n  • inputs={'token_ids': 'tf.Tensor(shape=(1, 100000))'}")
    assert _one_line(wrapped) == "Sequence length 100000 exceeds the position table (max_sequence_length=512)."
    assert _one_line(ValueError("a plain message")) == "a plain message"
