"""Issue #16 items 7 and 8: lengths that would silently go wrong or run for minutes are refused up front:
`--doc-stride` longer than a window's document part (it would skip context), and a pretraining length above the
position table of `--init-checkpoint` or above the longest table a new model is built with."""

import time

import pytest

from tests.cli.cli_test_utils import run_cli, write_corpus
from tests.training.finetuning_test_utils import write_tiny_checkpoint

pytestmark = pytest.mark.backend_independent


def test_doc_stride_longer_than_the_window_is_refused(tmp_path, capsys):
    status, _, err = run_cli(capsys, "finetune-squad", "--train-file", tmp_path / "train.json", "--preset", "tiny",
                             "--output-dir", tmp_path / "out", "--doc-stride", "400", "--max-seq-length", "128")
    assert status == 2
    assert ("--doc-stride 400 is longer than the document part of a window (61 = --sequence-length 128 - "
            "--max-query-length 64 - 3)") in err and "use --doc-stride 61 or less" in err
    assert not (tmp_path / "out").exists()


def test_pretraining_length_above_a_new_models_limit_is_refused_before_building_anything(tmp_path, capsys):
    write_corpus(tmp_path)
    started = time.monotonic()
    status, _, err = run_cli(capsys, "pretrain", "--input-files", tmp_path / "corpus.txt", "--vocab-file",
                             tmp_path / "vocab.txt", "--seq-length", "10000", "--output-dir", tmp_path / "run")
    assert status == 1 and time.monotonic() - started < 30
    assert "Sequence length 10000 is above 4096, the longest position table a new model is built with" in err
    assert len(err.strip().splitlines()) == 1


def test_pretraining_length_above_the_checkpoints_position_table_is_refused(tmp_path, capsys):
    write_corpus(tmp_path)
    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")
    status, _, err = run_cli(capsys, "pretrain", "--input-files", tmp_path / "corpus.txt", "--init-checkpoint",
                             checkpoint, "--seq-length", "600", "--output-dir", tmp_path / "run")
    assert status == 1, err
    assert f"Sequence length 600 exceeds the position table of {checkpoint} (max_sequence_length=" in err
