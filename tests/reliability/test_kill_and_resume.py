"""Kill -9 a training run mid-epoch, start it again with the same command, and compare with a run that was
never interrupted.

The interrupted run is a real process (`python -m keras_bert_impl.cli pretrain ...`, and the library-driven
`tests.reliability.finetune_worker` for fine-tuning), killed with SIGKILL: no `finally`, no atexit, no flush.
The same command then runs again, and the uninterrupted reference once, in the pytest process (what they check
needs no fresh process, and each would pay TensorFlow's start-up again). The resumed run must continue from the
newest checkpoint (step, learning rate, optimizer state, data position, dropout RNG) and end with the
uninterrupted run's weights.

Sources of non-determinism, and why they do not show here: both runs use the same seeds and the TensorFlow
backend on CPU with one process, where the step is deterministic; the data order is a function of the seed
and the step or epoch (not of the process history); the dropout RNG state is saved with each checkpoint.
The tolerance (1e-5) absorbs reductions whose order could differ between two XLA compilations; on GPUs or
with several workers, reductions are not bit-reproducible and the weights agree only approximately.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.cli.cli_test_utils import write_corpus

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 1e-5


def start(argv):
    environment = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
                       PYTHONPATH=REPOSITORY + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, *argv], cwd=REPOSITORY, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_when_exists(process, path, grace=0.5, timeout=120):
    """SIGKILL `process` `grace` seconds after `path` appears; fail if the process ends before."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert process.poll() is None, f"ended before {path} appeared:\n{process.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout} s"
        time.sleep(0.05)
    time.sleep(grace)
    assert process.poll() is None, "the run finished before it could be killed; give it more steps"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


def test_pretraining_killed_mid_run_resumes_to_the_uninterrupted_weights(tmp_path, caplog):
    from safetensors.numpy import load_file

    from keras_bert_impl.cli import main

    write_corpus(tmp_path)

    def command(output):
        return ["pretrain", "--input-files", str(tmp_path / "corpus.txt"),
                "--vocab-file", str(tmp_path / "vocab.txt"), "--preset", "tiny", "--seq-length", "24",
                "--max-predictions-per-seq", "4", "--batch-size", "4", "--learning-rate", "1e-3",
                "--warmup-fraction", "0.25", "--steps", "48", "--checkpoint-every", "4", "--keep-checkpoints", "2",
                "--output-dir", str(output), "--verbose", "0", "--log-level", "INFO"]

    killed = start(["-m", "keras_bert_impl.cli", *command(tmp_path / "resumed")])
    checkpoints = tmp_path / "resumed" / "checkpoints" / "phase1"
    kill_when_exists(killed, checkpoints / "latest", grace=0.2)
    assert not (tmp_path / "resumed" / "final").exists()
    with open(checkpoints / "latest", encoding="utf-8") as handle:
        killed_at = int(handle.read().strip().split("_")[1])
    assert 4 <= killed_at < 48 and killed_at % 4 == 0
    state = json.loads((checkpoints / f"step_{killed_at:08d}" / "training_state.json").read_text())
    assert state["step"] == killed_at

    with caplog.at_level(logging.INFO):
        assert main(command(tmp_path / "resumed")) == 0
    assert f"Resuming phase 1 at step {killed_at} from {checkpoints / f'step_{killed_at:08d}'}" in caplog.text
    assert main(command(tmp_path / "straight")) == 0

    straight_weights = load_file(str(tmp_path / "straight" / "final" / "model.safetensors"))
    resumed_weights = load_file(str(tmp_path / "resumed" / "final" / "model.safetensors"))
    assert sorted(straight_weights) == sorted(resumed_weights)
    for name, value in straight_weights.items():
        np.testing.assert_allclose(resumed_weights[name], value, atol=TOLERANCE, err_msg=name)

    from keras_bert_impl.training.callbacks import read_metrics_log

    straight_log = read_metrics_log(tmp_path / "straight" / "metrics.jsonl")
    resumed_log = read_metrics_log(tmp_path / "resumed" / "metrics.jsonl")
    assert [e["step"] for e in resumed_log] == [e["step"] for e in straight_log] == list(range(4, 49, 4))
    for a, b in zip(straight_log, resumed_log):  # the same learning rate and loss at every step after the kill
        assert b["learning_rate"] == pytest.approx(a["learning_rate"], rel=1e-6), a["step"]
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-4), a["step"]


def test_finetuning_killed_mid_epoch_resumes_to_the_uninterrupted_weights(tmp_path, capsys, caplog):
    from tests.reliability import finetune_worker

    killed = start(["-m", "tests.reliability.finetune_worker", str(tmp_path / "resumed"), "--slow", "0.3"])
    state_dir = tmp_path / "resumed" / "training_state"
    kill_when_exists(killed, state_dir / "latest")
    assert (tmp_path / "resumed" / "last").is_dir() and (tmp_path / "resumed" / "best").is_dir()
    assert not (tmp_path / "resumed" / "final.weights.npz").exists()
    state = json.loads((state_dir / (state_dir / "latest").read_text().strip() / "training_state.json").read_text())
    assert state["epoch"] == 1 and state["selection"]["best_epoch"] == 0
    lock = tmp_path / "resumed" / ".keras_bert.lock"  # the killed run's output lock (`utils.output_lock`) is left
    assert json.loads(lock.read_text())["pid"] == killed.pid

    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        finetune_worker.main([str(tmp_path / "resumed")])
    resumed_out, log = capsys.readouterr().out, caplog.text
    assert f"Taking over the stale lock {lock} of pid {killed.pid}" in log and not lock.exists()
    finetune_worker.main([str(tmp_path / "straight")])
    straight_out = capsys.readouterr().out
    assert "started at epoch 1" in resumed_out and "started at epoch 0" in straight_out
    assert f"Resuming fine-tuning after epoch 1 of 3 (step {state['step']}) from {state_dir}" in log
    # Same optimizer step count and best-checkpoint bookkeeping as the uninterrupted run.
    assert resumed_out.split("; ", 1)[1] == straight_out.split("; ", 1)[1]

    straight_weights = np.load(tmp_path / "straight" / "final.weights.npz")
    resumed_weights = np.load(tmp_path / "resumed" / "final.weights.npz")
    assert sorted(straight_weights.files) == sorted(resumed_weights.files)
    for name in straight_weights.files:
        np.testing.assert_allclose(resumed_weights[name], straight_weights[name], atol=TOLERANCE, err_msg=name)
    for name in ("last", "best"):
        a = json.loads((tmp_path / "straight" / name / "eval_results.json").read_text())
        b = json.loads((tmp_path / "resumed" / name / "eval_results.json").read_text())
        assert a["epoch"] == b["epoch"] and a["accuracy"] == b["accuracy"]
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-5)

