"""`keras-bert` itself: help for every subcommand, exit statuses, one-line failures, --debug."""

import re

import pytest

from keras_bert_impl.checkpoints import CheckpointError
from keras_bert_impl.cli import SUBCOMMANDS, main
from tests.cli.cli_test_utils import run_cli

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize("subcommand", sorted(SUBCOMMANDS))
def test_every_subcommand_explains_its_flags(capsys, subcommand):
    status, out, _ = run_cli(capsys, subcommand, "--help")
    assert status == 0
    assert out.startswith(f"usage: keras-bert {subcommand}")
    for common_flag in ("--config", "--debug", "--log-level"):
        assert common_flag in out
    # Every flag has a help text: argparse prints "  --flag VALUE" followed by its explanation.
    flags = [line.split()[0] for line in out.splitlines() if line.startswith("  --")]
    assert flags and all(f"{flag} " in out or f"{flag}\n" in out for flag in flags)


# The packing length is `--sequence-length` in every command (`max_sequence_length` is the position table); the
# name each command had before (the original BERT scripts' `--max_seq_length`) stays as its alias.
LENGTH_ALIASES = {"create-data": "--max-seq-length", "pretrain": "--seq-length", "finetune-classifier": "--max-seq-length",
                  "finetune-squad": "--max-seq-length", "predict": "--max-seq-length", "export": "--max-sequence-length"}


@pytest.mark.parametrize("subcommand, alias", sorted(LENGTH_ALIASES.items()))
def test_the_packing_length_is_sequence_length_with_the_old_name_as_its_alias(capsys, subcommand, alias):
    status, out, _ = run_cli(capsys, subcommand, "--help")
    assert status == 0
    assert re.search(rf"^  --sequence-length SEQUENCE_LENGTH, {alias} SEQUENCE_LENGTH", out, re.M), out
    assert set(re.findall(r"--[\w-]*seq-length|--max-sequence-length", out)) <= {alias, "--phase2-seq-length"}


def test_top_level_help_lists_the_subcommands_and_version(capsys):
    status, out, _ = run_cli(capsys, "--help")
    assert status == 0 and all(name in out for name in SUBCOMMANDS)
    status, out, _ = run_cli(capsys, "--version")
    assert status == 0 and out.startswith("keras-bert ")


def test_missing_checkpoint_fails_with_one_line_and_status_1(capsys, tmp_path):
    status, out, err = run_cli(capsys, "convert", "--input", tmp_path / "missing", "--output", tmp_path / "out")
    assert status == 1 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("keras-bert convert: error: ") and "missing" in err and "does not exist" in err


def test_debug_shows_the_original_error(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        main(["convert", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "out"), "--debug"])


def test_unknown_flag_and_flags_that_do_not_fit_exit_2(capsys, tmp_path):
    status, _, err = run_cli(capsys, "vocab", "--input-files", "x.txt", "--no-such-flag")
    assert status == 2 and "unrecognized arguments: --no-such-flag" in err
    status, _, err = run_cli(capsys, "pretrain", "--vocab-file", "vocab.txt")
    assert status == 2 and "give exactly one of --input-files and --input-tfrecords" in err
    status, _, err = run_cli(capsys, "evaluate", "--predictions", "p.json")
    assert status == 2 and "--squad-file" in err


def test_missing_input_file_fails_with_one_line(capsys, tmp_path):
    status, _, err = run_cli(capsys, "vocab", "--input-files", tmp_path / "none.txt", "--output-dir", tmp_path)
    assert status == 1 and err.count("\n") == 1 and "none.txt" in err
