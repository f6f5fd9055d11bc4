"""End-to-end runs of `keras-bert pretrain`: two phases, checkpoints, exact resume, continued pretraining.

`keras_bert_impl.cli.main` runs in the pytest process (the TensorFlow pass): each run then costs its steps,
not a TensorFlow start. An interruption is `--max-steps-this-run`, which stops after a checkpoint as a
killed job would have.
"""

import json
import logging
import os

import numpy as np
import pytest

from keras_bert_impl.cli import main
from tests.cli.cli_test_utils import write_corpus

pytestmark = [pytest.mark.slow, pytest.mark.tensorflow_only]


def run_pretrain(caplog, directory, output, *extra):
    caplog.clear()
    argv = [
        "pretrain", "--input-files", str(directory / "corpus.txt"), "--vocab-file",
        str(directory / "vocab.txt"), "--preset", "tiny", "--seq-length", "24", "--max-predictions-per-seq", "4",
        "--batch-size", "4", "--learning-rate", "1e-3", "--warmup-fraction", "0.25", "--checkpoint-every", "2",
        "--output-dir", str(output), "--verbose", "0", *extra,
    ]
    with caplog.at_level(logging.INFO):
        assert main(argv) == 0
    return caplog.text


def final_weights(output):
    from safetensors.numpy import load_file

    return load_file(str(output / "final" / "model.safetensors"))


def test_two_phases_interrupted_and_resumed_equal_an_uninterrupted_run(tmp_path, caplog):
    write_corpus(tmp_path)
    phases = ("--steps", "4", "--phase2-steps", "2", "--phase2-seq-length", "32",
              "--phase2-max-predictions-per-seq", "5")
    run_pretrain(caplog, tmp_path, tmp_path / "straight", *phases)
    log = run_pretrain(caplog, tmp_path, tmp_path / "resumed", *phases, "--max-steps-this-run", "2")
    assert "Stopped at step 2 of phase 1" in log
    assert not (tmp_path / "resumed" / "final").exists()
    log = run_pretrain(caplog, tmp_path, tmp_path / "resumed", *phases)
    assert "Resuming phase 1 at step 2" in log

    straight, resumed = final_weights(tmp_path / "straight"), final_weights(tmp_path / "resumed")
    assert sorted(straight) == sorted(resumed)
    for name in straight:
        np.testing.assert_allclose(resumed[name], straight[name], atol=1e-6, err_msg=name)

    def metrics(output):
        return [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]

    straight_log, resumed_log = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert [e["step"] for e in straight_log] == [2, 4, 6] and [e["phase"] for e in straight_log] == [1, 1, 2]
    assert [e["step"] for e in resumed_log] == [2, 4, 6]
    for a, b in zip(straight_log, resumed_log):
        assert a["learning_rate"] == pytest.approx(b["learning_rate"]) and a["loss"] == pytest.approx(b["loss"])
    assert sorted(os.listdir(tmp_path / "straight" / "checkpoints")) == ["phase1", "phase2"]
    png = (tmp_path / "straight" / "training_curves.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert os.listdir(tmp_path / "straight" / "tensorboard" / "phase1")

    # Continued pretraining from the finished run's directory (any path from_pretrained reads).
    log = run_pretrain(caplog, tmp_path, tmp_path / "continued", "--steps", "2", "--init-checkpoint",
                     str(tmp_path / "straight" / "final"))
    assert "Loaded BertPretrainer from" in log
    summary = json.loads((tmp_path / "continued" / "summary.json").read_text())
    assert summary["final_step"] == 2 and np.isfinite(summary["train"]["loss"])
