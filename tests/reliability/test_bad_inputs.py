"""The bad-input table of docs/reliability.md, one test per row: each bad input gets an error that
says what is wrong, where (file, line, field, index), with which value or limit, and what to do; none crashes
with an index error or loses data.

| row | input |
|-----|-------|
| 1 | truncated or corrupt checkpoint files (model weights, training state) |
| 2 | config / weight shape mismatch |
| 3 | a vocabulary of another size than the checkpoint's |
| 4 | token ids >= the vocabulary size |
| 5 | sequences longer than the position table |
| 6 | an empty batch / no training examples |
| 7 | empty or non-UTF-8 corpus files |
| 8 | malformed SQuAD / GLUE files |
| 9 | unknown command-line flags |
| 10 | an unwritable output directory |
| 11 | a full disk during a write (more in `test_crash_safe_writes.py`) |
"""

import errno
import json
import logging
import os

import numpy as np
import pytest

from tests.helpers import random_batch, tiny_backbone
from tests.training.finetuning_test_utils import VOCABULARY, tokenizer, write_tiny_checkpoint


# -- 1. truncated or corrupt checkpoint files ---------------------------------------------------------------


@pytest.mark.backend_independent
@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_row01_corrupt_model_weights_name_the_file(tmp_path, damage):
    from keras_bert_impl.checkpoints.conversion import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = write_tiny_checkpoint(tmp_path / "checkpoint")
    weights = tmp_path / "checkpoint" / "model.safetensors"
    content = weights.read_bytes()
    weights.write_bytes({"truncated": content[: len(content) // 2], "garbage": b"\x00garbage" * 64,
                         "empty": b""}[damage])
    with pytest.raises(CheckpointError, match=f"Cannot read {weights}: the file is truncated or corrupt"):
        BertBackbone.from_pretrained(directory)


@pytest.mark.backend_independent
def test_row01_malformed_checkpoint_config_names_the_file(tmp_path):
    from keras_bert_impl.checkpoints.conversion import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = write_tiny_checkpoint(tmp_path / "checkpoint")
    (tmp_path / "checkpoint" / "config.json").write_text('{"format": ')
    with pytest.raises(CheckpointError, match="config.json: malformed JSON at line 1, column "):
        BertBackbone.from_pretrained(directory)


@pytest.mark.backend_independent
@pytest.mark.parametrize("filename", ["training.weights.h5", "rng_state.npz", "training_state.json"])
@pytest.mark.slow
def test_row01_corrupt_training_checkpoint_says_how_to_fall_back(tmp_path, filename):
    from keras_bert_impl.training.callbacks import (
        CorruptCheckpointError,
        TrainingCheckpoint,
        latest_training_checkpoint,
        restore_training_checkpoint,
    )
    from tests.models.test_pretrainer import pretraining_batch
    from tests.training.test_callbacks import small_pretrainer

    x, y = pretraining_batch()
    small_pretrainer().fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[TrainingCheckpoint(tmp_path, 1, keep=2)])
    damaged = tmp_path / "step_00000002" / filename
    damaged.write_bytes(damaged.read_bytes()[:20])
    expected = (f"step_00000002: {filename} is truncated or corrupt .*delete .*step_00000002 and write "
                f"'step_00000001' into .*latest")
    with pytest.raises(CorruptCheckpointError, match=expected):
        path, _ = latest_training_checkpoint(tmp_path)
        restore_training_checkpoint(small_pretrainer(), path)


# -- 2. config / weight shape mismatch ----------------------------------------------------------------------


@pytest.mark.backend_independent
def test_row02_native_checkpoint_shape_mismatch_names_tensor_and_shapes(tmp_path):
    from keras_bert_impl.checkpoints.conversion import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = write_tiny_checkpoint(tmp_path / "checkpoint")
    config_path = tmp_path / "checkpoint" / "config.json"
    document = json.loads(config_path.read_text())
    document["config"].update(hidden_dim=32, intermediate_dim=64)
    config_path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match=r"config.json does not match the weights .*config.hidden_dim is 32 "
                                              r"but the weights have 16 \(embeddings/token_embedding/embeddings has "
                                              r"shape \[\d+, 16\]\)"):
        BertBackbone.from_pretrained(directory)


@pytest.mark.backend_independent
def test_row02_huggingface_shape_mismatch_says_config_and_weights_disagree(tmp_path):
    from keras_bert_impl.checkpoints import save_huggingface
    from keras_bert_impl.checkpoints.conversion import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    save_huggingface(tiny_backbone(num_layers=1), str(tmp_path / "hf"))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    config.update(hidden_size=32, intermediate_size=64)
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="config.json does not match the weights .*hidden_size is 32 but the "
                                              "weights have 16"):
        BertBackbone.from_pretrained(str(tmp_path / "hf"))


# -- 3. vocabulary size different from the checkpoint's -----------------------------------------------------


@pytest.mark.backend_independent
def test_row03_larger_vocabulary_than_the_embedding_table_is_rejected(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from keras_bert_impl.training import finetuning

    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")
    with pytest.raises(ValueError, match=f"tokenizer has {len(VOCABULARY) + 2} tokens but the model's embedding "
                                         f"table has {len(VOCABULARY)} rows; use the vocabulary the checkpoint"):
        finetuning.ModelSource(checkpoint).build(BertClassifier, BertTokenizer(VOCABULARY + ["extra1", "extra2"]),
                                                 num_classes=2)


@pytest.mark.backend_independent
def test_row03_smaller_vocabulary_is_allowed_with_a_warning(tmp_path, caplog):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from keras_bert_impl.training import finetuning

    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")
    with caplog.at_level(logging.WARNING):
        finetuning.ModelSource(checkpoint).build(BertClassifier, BertTokenizer(VOCABULARY[:-3]), num_classes=2)
    assert f"tokenizer has {len(VOCABULARY) - 3} tokens but the model's embedding table has" in caplog.text


@pytest.mark.slow
@pytest.mark.backend_independent
def test_row03_pretraining_with_another_vocabulary_than_the_checkpoint_fails(tmp_path, capsys):
    from tests.cli.cli_test_utils import run_cli, write_corpus

    corpus, vocab = write_corpus(tmp_path)
    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")  # 43 tokens; the corpus vocabulary has 32
    status, _, err = run_cli(capsys, "pretrain", "--input-files", corpus, "--vocab-file", vocab,
                             "--init-checkpoint", checkpoint, "--steps", "2", "--checkpoint-every", "2",
                             "--sequence-length", "32",  # within the checkpoint's 64 positions (see test_length_limits)
                             "--output-dir", tmp_path / "out")
    assert status == 1
    assert "The vocabulary has 32 tokens but the model" in err and "43" in err and "vocab.txt" in err


# -- 4. token ids >= vocabulary size ------------------------------------------------------------------------


def test_row04_out_of_range_token_id_in_a_direct_call_names_value_and_index():
    backbone = tiny_backbone()
    batch = random_batch(2, 10)
    batch["token_ids"][1, 4] = 50
    with pytest.raises(ValueError, match=r"contains id 50 at index \(1, 4\), outside the vocabulary \[0, 50\)"):
        backbone(batch)


def test_row04_out_of_range_token_id_is_caught_before_compiled_fit(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training import finetuning
    from tests.training.finetuning_test_utils import tokenizer

    model = BertClassifier(tiny_backbone(), 2, preprocessor=BertPreprocessor(tokenizer(), sequence_length=10))
    batch = random_batch(3, 10)
    batch["token_ids"][2, 1] = 77
    settings = finetuning.FinetuningSettings(str(tmp_path), epochs=1, batch_size=2, jit_compile=False, verbose=0)
    with pytest.raises(ValueError, match=r"training data token_ids` contains id 77"):
        finetuning.finetune(model, batch, np.zeros(3, "int32"), settings, counts="3 rows")
    assert not os.listdir(tmp_path)


# -- 5. sequences longer than the position table ------------------------------------------------------------


def test_row05_sequence_longer_than_the_position_table():
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training import finetuning

    backbone = tiny_backbone()  # max_sequence_length 24
    batch = random_batch(2, 30)
    with pytest.raises(ValueError, match=r"Sequence length 30 exceeds the position table \(max_sequence_length=24\)"):
        backbone(batch)
    with pytest.raises(ValueError, match="are 30 tokens long but the model's position table has 24 rows; pack"):
        finetuning.check_model_inputs(BertClassifier(backbone, 2), batch, "training data")


@pytest.mark.backend_independent
def test_row05_packer_never_exceeds_its_length():
    from keras_bert_impl.data.packing import SegmentPacker

    packer = SegmentPacker(sequence_length=8, cls_token_id=2, sep_token_id=3)
    packed = packer.pack([list(range(10, 40))], [list(range(40, 60))])
    assert np.shape(packed["token_ids"]) == (1, 8)


# -- 6. empty batch -----------------------------------------------------------------------------------------


def test_row06_empty_inputs_are_named_instead_of_failing_inside_keras():
    from keras_bert_impl.data.length_bucketing import packed_batches
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training import finetuning

    empty = {key: value[:0] for key, value in random_batch(2, 10).items()}
    model = BertClassifier(tiny_backbone(), 2)
    with pytest.raises(ValueError, match=r"training data are empty .*shape \(0, 10\); give at least one"):
        finetuning.check_model_inputs(model, empty, "training data")
    with pytest.raises(ValueError, match="No examples: the data is empty"):
        packed_batches(empty, np.zeros(0, "int32"), batch_size=4)
    # A direct call on an empty batch is well defined: an empty output.
    assert tuple(model(empty).shape) == (0, 2)


# -- 7. empty or non-UTF-8 corpus files ---------------------------------------------------------------------


@pytest.mark.backend_independent
@pytest.mark.parametrize("content, message", [
    (b"", "No documents with tokens: the input is empty"),
    (b"\n\n   \n", "No documents with tokens: the input is empty"),
    ("caf\xe9 au lait.\n".encode("latin-1"), r"corpus.txt, line 1: bytes b'\\xe9' at byte 3 of the line are not "
                                             r"valid UTF-8. Convert the file to UTF-8"),
])
def test_row07_empty_or_non_utf8_corpus(tmp_path, content, message):
    from keras_bert_impl.data import pretraining_dataset
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor

    (tmp_path / "corpus.txt").write_bytes(content)
    preprocessor = BertPretrainingPreprocessor(tokenizer(), sequence_length=16, max_predictions_per_seq=3)
    with pytest.raises(ValueError, match=message):
        dataset = pretraining_dataset(preprocessor, files=[str(tmp_path / "corpus.txt")], batch_size=2, seed=0)
        next(iter(dataset))


@pytest.mark.backend_independent
def test_row07_missing_corpus_file(tmp_path):
    from keras_bert_impl.data import pretraining_dataset
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor

    preprocessor = BertPretrainingPreprocessor(tokenizer(), sequence_length=16, max_predictions_per_seq=3)
    with pytest.raises(FileNotFoundError, match="No input file matches .*nothing-here"):
        pretraining_dataset(preprocessor, files=[str(tmp_path / "nothing-here*.txt")], batch_size=2, seed=0)


@pytest.mark.backend_independent
def test_row07_non_utf8_vocabulary(tmp_path):
    from keras_bert_impl.tokenization import BertTokenizer

    (tmp_path / "vocab.txt").write_bytes(b"[PAD]\n[UNK]\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"vocab.txt.*line 3|line 3.*vocab.txt"):
        BertTokenizer(str(tmp_path / "vocab.txt"))


# -- 8. malformed SQuAD / GLUE files ------------------------------------------------------------------------


@pytest.mark.backend_independent
@pytest.mark.parametrize("content, message", [
    ("{oops", r"s.json: malformed JSON at line 1, column 2"),
    (json.dumps({"version": "1.1"}), "s.json: the top level is missing the field 'data'"),
    (json.dumps({"data": [{"paragraphs": [{"qas": [{"id": "q", "question": "x"}]}]}]}),
     r"s.json: data\[0\].paragraphs\[0\] is missing the field 'context'"),
    (b"{\"data\": [\"caf\xe9\"]}", r"s.json.*(UTF-8|utf-8)"),
])
def test_row08_malformed_squad(tmp_path, content, message):
    from keras_bert_impl.squad import read_squad_examples
    from keras_bert_impl.squad.squad_reader import SquadFormatError

    path = tmp_path / "s.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SquadFormatError, match=message):
        read_squad_examples(str(path))


@pytest.mark.backend_independent
def test_row08_squad_answer_outside_its_context_is_skipped_and_named(tmp_path, caplog):
    from keras_bert_impl.squad import read_squad_examples

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b c", "qas": [
        {"id": "q", "question": "x", "answers": [{"text": "zz", "answer_start": 99}]}]}]}]}))
    with caplog.at_level(logging.WARNING):
        examples = read_squad_examples(str(path), is_training=True)
    assert len(examples) == 0 and len(examples.skipped) == 1
    assert "answer_start 99 + length 2 is outside the context (5 characters)" in caplog.text


GLUE_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


@pytest.mark.backend_independent
@pytest.mark.parametrize("content, message", [
    (GLUE_HEADER + "1\t2\t3\tonly four\n", r"g.tsv, line 2: expected at least 5 columns, found 4"),
    ((GLUE_HEADER + "1\t2\t3\tcaf\xe9\tb\n").encode("latin-1"),
     r"g.tsv, line 2: bytes b'\\xe9' at byte 9 of the line are not valid UTF-8"),
])
def test_row08_malformed_glue_file(tmp_path, content, message):
    from keras_bert_impl.data.classification_data import read_glue_examples
    from keras_bert_impl.data.label_vocabulary import ClassificationDataError

    path = tmp_path / "g.tsv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ClassificationDataError, match=message):
        read_glue_examples("mrpc", str(path))


@pytest.mark.backend_independent
def test_row08_unknown_glue_label_names_file_line_and_value(tmp_path):
    from keras_bert_impl.data.classification_data import glue_layout, read_glue_examples
    from keras_bert_impl.data.label_vocabulary import ClassificationDataError, LabelVocabulary

    path = tmp_path / "g.tsv"
    path.write_text(GLUE_HEADER + "1\t2\t3\ta\tb\nmaybe\t4\t5\tc\td\n")
    examples = read_glue_examples("mrpc", str(path))
    with pytest.raises(ClassificationDataError, match=r"g.tsv, line 3.*'maybe'"):
        LabelVocabulary(glue_layout("mrpc").labels).encode(examples)


@pytest.mark.backend_independent
def test_row08_malformed_jsonl_line(tmp_path):
    from keras_bert_impl.data.classification_data import read_classification_examples
    from keras_bert_impl.data.label_vocabulary import ClassificationDataError

    path = tmp_path / "e.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n{broken\n')
    with pytest.raises(ClassificationDataError, match=r"e.jsonl, line 2: malformed JSON at column 2"):
        read_classification_examples(str(path), ["text"], "label")


# -- 9. unknown command-line flags --------------------------------------------------------------------------


@pytest.mark.backend_independent
@pytest.mark.parametrize("command", ["pretrain", "finetune-classifier", "finetune-squad", "convert"])
def test_row09_unknown_flag_exits_2_naming_it(capsys, command):
    from tests.cli.cli_test_utils import run_cli

    status, _, err = run_cli(capsys, command, "--no-such-flag", "1")
    assert status == 2
    assert "unrecognized arguments: --no-such-flag" in err or "the following arguments are required" in err


@pytest.mark.backend_independent
def test_row09_unknown_subcommand(capsys):
    from tests.cli.cli_test_utils import run_cli

    status, _, err = run_cli(capsys, "pretrian")
    assert status == 2 and "invalid choice: 'pretrian'" in err


# -- 10. unwritable output directory ------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_row10_output_directory_under_a_file(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training import finetuning

    (tmp_path / "blocker").write_text("a file where a directory should be")
    expected = r"Cannot create output directory .*blocker.*: .*blocker' is a file, not a directory; choose another"
    with pytest.raises(NotADirectoryError, match=expected):
        finetuning.save_finetuned(BertClassifier(tiny_backbone(num_layers=1), 2), str(tmp_path / "blocker" / "out"))


@pytest.mark.backend_independent
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write to read-only folders")
def test_row10_read_only_output_directory(tmp_path):
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o555)
    try:
        with pytest.raises(PermissionError, match=r"Output directory .*ro' is not writable; choose another path"):
            atomic_write_json(str(tmp_path / "ro" / "eval_results.json"), {})
    finally:
        os.chmod(tmp_path / "ro", 0o755)


@pytest.mark.backend_independent
def test_row10_cli_reports_an_unwritable_output_in_one_line(tmp_path, capsys):
    from tests.cli.cli_test_utils import run_cli

    (tmp_path / "predictions.json").write_text(json.dumps({"q1": "paris"}))
    (tmp_path / "gold.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "in paris", "qas": [{"id": "q1", "question": "where?", "answers": [
            {"text": "paris", "answer_start": 3}]}]}]}]}))
    (tmp_path / "blocker").write_text("")
    status, _, err = run_cli(capsys, "evaluate", "--predictions", tmp_path / "predictions.json", "--squad-file",
                             tmp_path / "gold.json", "--output-file", tmp_path / "blocker" / "scores.json")
    assert status == 1
    assert err.startswith("keras-bert evaluate: error: Cannot create output directory")
    assert "blocker' is a file, not a directory; choose another output path" in err


# -- 11. a full disk ----------------------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_row11_disk_full_keeps_the_previous_file(tmp_path, monkeypatch):
    from keras_bert_impl.utils import atomic_io

    path = tmp_path / "eval_results.json"
    atomic_io.atomic_write_json(str(path), {"f1": 90.0})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_io.os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        atomic_io.atomic_write_json(str(path), {"f1": 91.0})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"f1": 90.0} and os.listdir(tmp_path) == ["eval_results.json"]
