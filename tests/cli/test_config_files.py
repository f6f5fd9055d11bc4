"""`--config FILE`: JSON and YAML flag values, command-line precedence, clear errors for bad keys."""

import json

import pytest

from keras_bert_impl.cli.command_line import parse_arguments
from tests.cli.cli_test_utils import run_cli

pytestmark = pytest.mark.backend_independent

PRETRAIN_REQUIRED = ["--input-files", "corpus.txt", "--vocab-file", "vocab.txt"]


def write_config(tmp_path, content, name="run.json"):
    path = tmp_path / name
    path.write_text(json.dumps(content) if name.endswith(".json") else content)
    return str(path)


def test_config_values_become_defaults_and_command_line_flags_win(tmp_path):
    config = write_config(tmp_path, {"steps": 400, "--learning-rate": 5e-4, "whole_word_masking": True,
                                     "input-files": ["a.txt", "b.txt"], "vocab-file": "vocab.txt"})
    args = parse_arguments(["pretrain", "--config", config, "--steps", "200", "--checkpoint-every", "100"])
    assert args.steps == 200  # the command line wins
    assert args.learning_rate == 5e-4 and args.whole_word_masking is True
    assert args.input_files == "a.txt,b.txt"  # a list for a comma-separated flag
    assert args.seed == 12345  # untouched defaults stay


def test_a_repeatable_flag_takes_a_list_or_one_value_and_the_command_line_adds_to_it(tmp_path):
    config = write_config(tmp_path, {"text": ["a cat", "a dog"]})
    assert parse_arguments(["predict", "--model", "m", "--config", config]).text == ["a cat", "a dog"]
    args = parse_arguments(["predict", "--model", "m", "--config", config, "--text", "a bird"])
    assert args.text == ["a cat", "a dog", "a bird"]
    config = write_config(tmp_path, {"text": "a cat"}, name="one.json")
    assert parse_arguments(["predict", "--model", "m", "--config", config]).text == ["a cat"]


def test_config_satisfies_required_flags(tmp_path):
    config = write_config(tmp_path, {"train-file": "train.tsv", "output-dir": "out", "task": "sst2",
                                     "preset": "tiny", "epochs": "2"})
    args = parse_arguments(["finetune-classifier", "--config", config])
    assert (args.train_file, args.output_dir, args.epochs) == ("train.tsv", "out", 2)


def test_yaml_config(tmp_path):
    pytest.importorskip("yaml")
    config = write_config(tmp_path, "steps: 300\ncheckpoint-every: 100\nmasking: static\n", name="run.yaml")
    args = parse_arguments(["pretrain", "--config", config, *PRETRAIN_REQUIRED])
    assert (args.steps, args.checkpoint_every, args.masking) == (300, 100, "static")


@pytest.mark.parametrize("content, message", [
    ({"stepz": 3}, "unknown key 'stepz'"),
    ({"masking": "sometimes"}, "'masking' must be one of dynamic, static"),
    ({"whole-word-masking": "yes"}, "give true or false"),
    ({"steps": "many"}, "'steps': 'many' is not a valid value"),
])
def test_bad_config_values_exit_2_naming_the_key(capsys, tmp_path, content, message):
    status, _, err = run_cli(capsys, "pretrain", "--config", write_config(tmp_path, content), *PRETRAIN_REQUIRED)
    assert status == 2 and message in err


def test_missing_or_malformed_config_file(capsys, tmp_path):
    status, _, err = run_cli(capsys, "vocab", "--config", tmp_path / "none.json")
    assert status == 2 and "does not exist" in err
    (tmp_path / "bad.json").write_text("{steps: ")
    status, _, err = run_cli(capsys, "vocab", "--config", tmp_path / "bad.json")
    assert status == 2 and "malformed JSON at line 1" in err
