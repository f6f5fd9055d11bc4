"""`keras-bert finetune-multiple-choice` end to end on generated SWAG CSV files: best/ and last/, dev and test
scores, prediction files, and a rerun with other settings refused."""

import csv
import json
import os

import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from tests.cli.cli_test_utils import run_cli
from tests.training.finetuning_test_utils import FILLER, TINY_CHECKPOINT_BACKBONE, VOCABULARY, tokenizer

SWAG_COLUMNS = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
                "ending2", "ending3", "label"]


def write_swag_csv(path, num_examples, seed, labelled=True):
    """A SWAG file with the full header: the right ending repeats the context's colour word."""
    rng = np.random.default_rng(seed)
    colours = ["red", "blue", "green", "old"]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SWAG_COLUMNS if labelled else SWAG_COLUMNS[:-1])
        for index in range(num_examples):
            order = rng.permutation(colours)
            label = int(rng.integers(0, 4))
            context = f"the {order[label]} {rng.choice(FILLER)} sat, on the mat."
            endings = [f"{colour} {rng.choice(FILLER)}." for colour in order]
            row = [index, f"video{index}", index, f"{context} the", context, "the", "gen", *endings]
            writer.writerow(row + [label] if labelled else row)
    return str(path)


@pytest.fixture(scope="module")
def encoder_checkpoint(tmp_path_factory):
    """A tiny encoder in our format, with its vocab.txt."""
    directory = tmp_path_factory.mktemp("encoder")
    BertBackbone(vocabulary_size=len(VOCABULARY), **TINY_CHECKPOINT_BACKBONE).save_pretrained(directory)
    tokenizer().save_pretrained(directory)
    return str(directory)


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_multiple_choice_writes_best_last_scores_and_predictions(tmp_path, capsys, encoder_checkpoint):
    from keras_bert_impl.models.multiple_choice import BertMultipleChoice
    from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor

    train = write_swag_csv(tmp_path / "train.csv", 24, seed=0)
    dev = write_swag_csv(tmp_path / "val.csv", 8, seed=1)
    test = write_swag_csv(tmp_path / "test.csv", 5, seed=2, labelled=False)
    flags = ["--train-file", train, "--dev-file", dev, "--test-file", test, "--init-checkpoint", encoder_checkpoint,
             "--sequence-length", 24, "--epochs", 2, "--learning-rate", 1e-3, "--verbose", 0,
             "--output-dir", tmp_path / "run"]
    status, out, err = run_cli(capsys, "finetune-multiple-choice", *flags, "--batch-size", 8)
    assert status == 0, err
    assert "24 training examples of 4 choices, 3 steps per epoch, 6 updates" in out
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert set(results) == {"accuracy"} and 0.0 <= results["accuracy"] <= 1.0
    dev_predictions = (tmp_path / "run" / "dev_predictions.tsv").read_text().splitlines()
    assert len(dev_predictions) == 8 + 1 and {line.split("\t")[1] for line in dev_predictions[1:]} <= set("0123")
    assert len((tmp_path / "run" / "test_predictions.tsv").read_text().splitlines()) == 5 + 1
    assert not os.path.exists(tmp_path / "run" / "test_results.json")  # the test file has no labels
    best = BertMultipleChoice.from_pretrained(str(tmp_path / "run" / "best"))
    assert isinstance(best.preprocessor, BertMultipleChoicePreprocessor) and best.preprocessor.sequence_length == 24
    assert os.path.isdir(tmp_path / "run" / "last") and os.path.isdir(tmp_path / "run" / "training_state")
    status, out, err = run_cli(capsys, "predict", "--model", tmp_path / "run" / "best",
                               "--text", "the red cat sat, on the mat.\tthe red dog.\tthe blue dog.",
                               "--text", "the old cat sat.\tthe green mat.\tthe old mat.")
    assert status == 0, err
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["0", "1"]
    assert {line.split("\t")[1] for line in lines} <= {"0", "1"}  # the index of the chosen ending
    assert lines[0].endswith("the red cat sat, on the mat. | the red dog. | the blue dog.")
    status, out, err = run_cli(capsys, "predict", "--model", tmp_path / "run" / "best", "--text", "no endings")
    assert status == 1 and "context<TAB>ending0<TAB>ending1" in err
    # The same output directory with another batch size: the saved state is not resumed with other settings.
    status, out, err = run_cli(capsys, "finetune-multiple-choice", *flags, "--batch-size", 4)
    assert status == 1 and "batch_size=8, this run asks for batch_size=4" in err, err
