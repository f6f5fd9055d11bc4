"""`keras-bert finetune-classifier` / `finetune-squad` end to end with their defaults: XLA-compiled steps on
TensorFlow, length buckets, a converted (original TF format) initial checkpoint, official metrics and files."""

import json
import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints.name_map import backbone_weight_specs
from keras_bert_impl.models.backbone import BertBackbone
from tests.cli.cli_test_utils import run_cli
from tests.helpers import original_bert_config, write_original_tf_checkpoint
from tests.training.finetuning_test_utils import (
    TINY_CHECKPOINT_BACKBONE,
    VOCABULARY,
    tokenizer,
    write_mrpc_tsv,
    write_squad_json,
)

pytestmark = pytest.mark.backend_independent


@pytest.fixture(scope="module")
def original_checkpoint(tmp_path_factory):
    """A tiny encoder saved as an original google-research/bert checkpoint, with its vocab.txt."""
    from keras_bert_impl.checkpoints.conversion import ORIGINAL, export_tensors

    directory = tmp_path_factory.mktemp("original")
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), hidden_activation="gelu_approximate",
                            **TINY_CHECKPOINT_BACKBONE)
    write_original_tf_checkpoint(directory, export_tensors(backbone, backbone_weight_specs(backbone.num_layers), ORIGINAL),
                                 original_bert_config(backbone))
    tokenizer().save_pretrained(directory)
    return str(directory)


@pytest.mark.slow
def test_finetune_classifier_on_a_glue_layout(tmp_path, capsys, original_checkpoint):
    train = write_mrpc_tsv(tmp_path / "train.tsv", 48, seed=0)
    dev = write_mrpc_tsv(tmp_path / "dev.tsv", 16, seed=1)
    status, out, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--train-file", train,
                               "--dev-file", dev, "--init-checkpoint", original_checkpoint, "--max-seq-length", 48,
                               "--epochs", 2, "--batch-size", 8, "--learning-rate", 1e-3, "--verbose", 0,
                               "--output-dir", tmp_path / "run")
    assert status == 0, err
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert {"accuracy", "f1"} <= set(results)
    assert len((tmp_path / "run" / "dev_predictions.tsv").read_text().splitlines()) == 16 + 1  # header + rows
    for kept in ("best", "last"):
        assert os.path.isfile(tmp_path / "run" / kept / "label_vocabulary.json")


@pytest.mark.slow
def test_finetune_squad_v2_tunes_the_null_threshold(tmp_path, capsys, original_checkpoint):
    train = write_squad_json(tmp_path / "train.json", 12, seed=0)
    dev = write_squad_json(tmp_path / "dev.json", 4, seed=1)
    status, out, err = run_cli(capsys, "finetune-squad", "--version-2", "--train-file", train, "--dev-file", dev,
                               "--init-checkpoint", original_checkpoint, "--max-seq-length", 32, "--doc-stride", 8,
                               "--max-query-length", 8, "--epochs", 1, "--batch-size", 8, "--verbose", 0,
                               "--output-dir", tmp_path / "run")
    assert status == 0, err
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert {"exact", "f1", "HasAns_total", "NoAns_total", "null_score_diff_threshold"} <= set(results)
    assert results["HasAns_total"] == 4 and results["NoAns_total"] == 4
    predictions = json.loads((tmp_path / "run" / "predictions.json").read_text())
    assert len(predictions) == 8
    for name in ("nbest_predictions.json", "null_odds.json"):
        assert os.path.isfile(tmp_path / "run" / name)


def _last_preprocessor(run_dir):
    return json.loads((run_dir / "last" / "preprocessor.json").read_text())["config"]


@pytest.mark.slow
def test_finetune_classifier_scores_a_labelled_test_file_and_keeps_only_last_without_a_selection_set(
        tmp_path, capsys, original_checkpoint):
    train = write_mrpc_tsv(tmp_path / "train.tsv", 32, seed=0)
    test = write_mrpc_tsv(tmp_path / "test.tsv", 16, seed=2)
    common = ("--task", "mrpc", "--test-file", test, "--max-seq-length", 24, "--batch-size", 8, "--verbose", 0,
              "--no-jit")
    status, out, err = run_cli(capsys, "finetune-classifier", *common, "--train-file", train, "--epochs", 1,
                               "--init-checkpoint", original_checkpoint, "--output-dir", tmp_path / "run")
    assert status == 0, err
    assert "only last/ is written" in out
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir()) == ["last", "training_state"]
    scored = json.loads((tmp_path / "run" / "test_results.json").read_text())
    assert {"accuracy", "f1"} <= set(scored)
    assert _last_preprocessor(tmp_path / "run")["sequence_length"] == 24  # what predict and export pack to

    # --epochs 0: the same rule as finetune-squad; scores the saved model, which reproduces the test scores.
    status, out, err = run_cli(capsys, "finetune-classifier", *common, "--epochs", 0,
                               "--init-checkpoint", tmp_path / "run" / "last", "--output-dir", tmp_path / "again")
    assert status == 0, err
    assert json.loads((tmp_path / "again" / "test_results.json").read_text()) == pytest.approx(scored)
    assert not (tmp_path / "again" / "last").exists()

    # A held-out share of the training rows gives best/ something to select on.
    status, out, err = run_cli(capsys, "finetune-classifier", *common, "--train-file", train, "--epochs", 1,
                               "--tune-fraction", 0.25, "--init-checkpoint", original_checkpoint,
                               "--output-dir", tmp_path / "tuned")
    assert status == 0, err
    assert "8 of 32 training rows held out" in out and "best epoch 1: held-out accuracy" in out
    assert (tmp_path / "tuned" / "best" / "config.json").is_file()


@pytest.mark.slow
def test_predict_packs_to_the_length_the_classifier_was_finetuned_with(tmp_path, capsys, original_checkpoint):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor

    model = BertClassifier.from_pretrained(original_checkpoint, num_classes=2, labels=["0", "1"],
                                           preprocessor=BertPreprocessor(tokenizer(), sequence_length=6))
    text = "the cat sat on the mat and the dog ran far away home today"
    head = model.get_layer("classifier_dense")
    head.kernel.assign(head.kernel * 1000.0)  # probabilities that show the packing in their 4 printed digits
    logits = model.predict([text], verbose=0)[0]
    # Both classes equally likely at the saved length (0.5000), so any other packing shows in the digits.
    head.bias.assign(head.bias + np.array([0.0, logits[0] - logits[1]], "float32"))
    model.save_pretrained(tmp_path / "model")

    def probability(*flags):
        status, out, err = run_cli(capsys, "predict", "--model", tmp_path / "model", "--text", text, *flags)
        assert status == 0, err
        return out.split("\t")[2]

    assert probability() == probability("--sequence-length", 6) == "0.5000" != probability("--sequence-length", 32)


@pytest.fixture(scope="module")
def squad_run(tmp_path_factory, original_checkpoint):
    """A SQuAD v2.0 run whose null threshold is tuned on held-out training articles, with a labelled test file."""
    from keras_bert_impl.cli import main

    directory = tmp_path_factory.mktemp("squad_run")
    files = {name: write_squad_json(directory / f"{name}.json", count, seed=seed)
             for name, count, seed in (("train", 12, 0), ("test", 4, 1), ("threshold", 4, 2))}
    assert main(["finetune-squad", "--version-2", "--train-file", files["train"], "--tune-fraction", "0.25",
                 "--test-file", files["test"], "--init-checkpoint", original_checkpoint, "--max-seq-length", "32",
                 "--doc-stride", "8", "--max-query-length", "8", "--epochs", "1", "--batch-size", "8",
                 "--verbose", "0", "--no-jit", "--output-dir", str(directory / "run")]) == 0
    return directory, files


@pytest.mark.slow
def test_finetune_squad_tunes_the_threshold_off_the_test_file_and_saves_it(tmp_path, capsys, squad_run):
    directory, files = squad_run
    run = directory / "run"
    tested = json.loads((run / "test" / "eval_results.json").read_text())
    assert tested["HasAns_total"] == 4 and tested["NoAns_total"] == 4
    saved = _last_preprocessor(run)
    # The threshold the test file was scored with is the one tuned on the held-out articles, saved with last/
    # and best/ (which the held-out articles picked).
    assert tested["null_score_diff_threshold"] == saved["null_score_diff_threshold"]
    assert json.loads((run / "best" / "eval_results.json").read_text())["null_score_diff_threshold"] == (
        saved["null_score_diff_threshold"])
    assert saved["sequence_length"] == 32 and saved["version_2_with_negative"] is True

    # --epochs 0 on the saved model: its saved threshold, so the same test scores.
    common = ("finetune-squad", "--version-2", "--epochs", 0, "--init-checkpoint", run / "last",
              "--max-seq-length", 32, "--doc-stride", 8, "--max-query-length", 8, "--verbose", 0)
    status, out, err = run_cli(capsys, *common, "--test-file", files["test"], "--output-dir", tmp_path / "again")
    assert status == 0, err
    assert json.loads((tmp_path / "again" / "test" / "eval_results.json").read_text()) == pytest.approx(tested)

    # --threshold-file tunes on that file only: the threshold a dev run tunes on the same file.
    status, out, err = run_cli(capsys, *common, "--dev-file", files["threshold"], "--output-dir", tmp_path / "dev")
    assert status == 0, err
    on_dev = json.loads((tmp_path / "dev" / "eval_results.json").read_text())["null_score_diff_threshold"]
    status, out, err = run_cli(capsys, *common, "--threshold-file", files["threshold"], "--test-file", files["test"],
                               "--output-dir", tmp_path / "file")
    assert status == 0, err
    assert json.loads((tmp_path / "file" / "test" / "eval_results.json").read_text())[
        "null_score_diff_threshold"] == on_dev


@pytest.mark.slow
def test_predict_and_the_saved_model_use_the_saved_null_threshold_and_length(tmp_path, capsys, squad_run):
    import shutil

    import tensorflow as tf

    directory, files = squad_run
    model_dir = tmp_path / "model"
    shutil.copytree(directory / "run" / "last", model_dir)

    def save_threshold(value):
        document = json.loads((model_dir / "preprocessor.json").read_text())
        document["config"]["null_score_diff_threshold"] = value
        (model_dir / "preprocessor.json").write_text(json.dumps(document))

    def predicted_answers():
        status, out, err = run_cli(capsys, "predict", "--model", model_dir, "--squad-file", files["test"])
        assert status == 0, err
        return set(json.loads(out).values())

    save_threshold(1e9)  # null odds never exceed it: no question goes unanswered
    assert "" not in predicted_answers()
    save_threshold(-1e9)  # always exceeded: every answer is "" (SQuAD v2.0 from the saved model, no flag)
    assert predicted_answers() == {""}

    status, out, err = run_cli(capsys, "export", "--model", model_dir, "--output", tmp_path / "exported")
    assert status == 0, err
    config = json.loads((tmp_path / "exported" / "assets" / "export_config.json").read_text())
    assert config["settings"]["sequence_length"] == 32  # the fine-tuning length, not the position table
    assert config["settings"]["null_score_diff_threshold"] == -1e9
    assert config["settings"]["version_2_with_negative"] is True
    served = tf.saved_model.load(str(tmp_path / "exported"))
    answers = served.signatures["serve_text"](question=tf.constant(["where is the cat ?"]),
                                              context=tf.constant(["the cat sat in paris today ."]))["answer"]
    assert answers.numpy().tolist() == [b""]


@pytest.mark.parametrize("command, flags, message", [
    ("finetune-classifier", ("--epochs", 0, "--init-checkpoint", "ckpt"), "give --dev-file or --test-file"),
    ("finetune-squad", ("--epochs", 0, "--init-checkpoint", "ckpt"), "give --dev-file or --test-file"),
    ("finetune-classifier", ("--epochs", 0, "--preset", "tiny", "--dev-file", "d"), "give --init-checkpoint"),
    ("finetune-squad", ("--epochs", 2, "--init-checkpoint", "ckpt"), "--epochs 2 trains: give --train-file"),
    ("finetune-classifier", ("--epochs", 2, "--init-checkpoint", "ckpt"), "--epochs 2 trains: give --train-file"),
    ("finetune-classifier", ("--epochs", 0, "--init-checkpoint", "ckpt", "--test-file", "t", "--tune-fraction",
                             0.1), "--tune-fraction holds out part of the training data"),
    ("finetune-classifier", ("--train-file", "t", "--init-checkpoint", "ckpt", "--dev-file", "d", "--tune-fraction",
                             0.1), "give one"),
    ("finetune-squad", ("--train-file", "t", "--init-checkpoint", "ckpt", "--threshold-file", "t"),
     "add --version-2"),
    ("finetune-squad", ("--version-2", "--train-file", "t", "--init-checkpoint", "ckpt", "--threshold-file", "t",
                        "--tune-fraction", 0.1), "--threshold-file and --tune-fraction each set the null threshold"),
])
def test_one_rule_for_epochs_0_and_the_tuning_flags(capsys, command, flags, message):
    extra = ("--task", "mrpc") if command == "finetune-classifier" else ()
    status, _, err = run_cli(capsys, command, *extra, *flags, "--output-dir", "unused")
    assert status == 2 and message in err
