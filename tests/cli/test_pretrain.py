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

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]


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
    # Finished: every phase's checkpoints are removed; the last phase's record stays.
    assert os.listdir(tmp_path / "straight" / "checkpoints") == ["phase2"]
    assert os.listdir(tmp_path / "straight" / "checkpoints" / "phase2") == ["finished.json"]
    png = (tmp_path / "straight" / "training_curves.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert os.listdir(tmp_path / "straight" / "tensorboard" / "phase1")

    # Continued pretraining from the finished run's directory (any path from_pretrained reads).
    log = run_pretrain(caplog, tmp_path, tmp_path / "continued", "--steps", "2", "--init-checkpoint",
                     str(tmp_path / "straight" / "final"))
    assert "Loaded BertPretrainer from" in log
    summary = json.loads((tmp_path / "continued" / "summary.json").read_text())
    assert summary["final_step"] == 2 and np.isfinite(summary["train"]["loss"])



@pytest.fixture(scope="module")
def dynamic_records(tmp_path_factory):
    """`create-data --masking dynamic --mask-rate 0.3` shards and a pretrain command line that reads them."""
    directory = tmp_path_factory.mktemp("records")
    corpus, vocab = write_corpus(directory)
    assert main(["create-data", "--input-files", str(corpus), "--vocab", str(vocab), "--output-prefix",
                 str(directory / "data" / "train"), "--max-seq-length", "24", "--max-predictions-per-seq", "8",
                 "--masking", "dynamic", "--mask-rate", "0.3", "--dupe-factor", "2"]) == 0
    argv = ["pretrain", "--input-tfrecords", str(directory / "data" / "train-*"), "--vocab-file", str(vocab),
            "--preset", "tiny", "--batch-size", "4", "--steps", "2", "--checkpoint-every", "2", "--verbose", "0",
            "--jit-compile", "false"]
    return directory, argv


def test_pretrain_masks_tfrecords_with_the_settings_create_data_recorded(tmp_path, caplog, dynamic_records):
    from keras_bert_impl.cli.command_line import parse_arguments
    from keras_bert_impl.cli.pretrain import settings_from_arguments
    from keras_bert_impl.training.finetuning import load_tokenizer
    from keras_bert_impl.training.pretraining import phase_dataset, training_phases

    directory, argv = dynamic_records
    argv = [*argv, "--output-dir", str(tmp_path / "out")]
    with caplog.at_level(logging.INFO):
        assert main([*argv, "--mask-rate", "0.3"]) == 0  # a flag that agrees with the records is fine
    assert "masking=dynamic, sequence_length=24" in caplog.text and "mask_rate=0.3" in caplog.text
    assert str(directory / "data" / "train.settings.json") in caplog.text
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["final_step"] == 2

    # The batches pretrain trains on: built as `pretrain` builds them, from the recorded settings.
    settings = settings_from_arguments(parse_arguments(argv))
    phase = training_phases(settings, load_tokenizer(settings.vocab_file))[0]
    assert (phase.masking, phase.preprocessor.mask_rate, phase.preprocessor.sequence_length) == ("dynamic", 0.3, 24)
    masked = tokens = 0
    for x, y in phase_dataset(settings, phase).take(20):
        assert x["token_ids"].shape == (4, 24) and x["mask_positions"].shape == (4, 8)
        masked += float(y["mask_weights"].numpy().sum())
        tokens += int(x["padding_mask"].numpy().sum())
    assert abs(masked / tokens - 0.3) < 0.03


@pytest.mark.parametrize("flags, message", [
    (("--mask-rate", "0.15"), "--mask-rate 0.15 conflicts with mask_rate=0.3 in {settings}, the settings create-data "
                              "wrote the TFRecords with: drop --mask-rate to train with 0.3, or re-run create-data "
                              "with --mask-rate 0.15."),
    (("--seq-length", "32"), "--sequence-length 32 conflicts with sequence_length=24 in {settings}"),
    (("--masking", "static"), "re-run create-data with --masking static."),
    (("--whole-word-masking",), "--whole-word-masking conflicts with whole_word_masking=False in {settings}"),
    (("--max-predictions", "20"), "--max-predictions-per-seq 20 conflicts with max_predictions_per_seq=8"),
])
def test_pretrain_refuses_a_flag_that_conflicts_with_the_recorded_settings(tmp_path, capsys, dynamic_records, flags,
                                                                           message):
    from tests.cli.cli_test_utils import run_cli

    directory, argv = dynamic_records
    status, _, err = run_cli(capsys, *argv, "--output-dir", tmp_path / "out", *flags)
    assert status == 1
    assert message.format(settings=directory / "data" / "train.settings.json") in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "checkpoints").exists()


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def worker_command(directory, output, devices, *extra):
    """The command line of `keras-bert pretrain` in a fresh process with `devices` logical CPUs (JAX host
    devices), tiny and without dropout, so that distributed and one-device runs can be compared."""
    import sys

    argv = [
        "pretrain", "--input-files", str(directory / "corpus.txt"), "--vocab-file", str(directory / "vocab.txt"),
        "--preset", "tiny", "--seq-length", "24", "--max-predictions-per-seq", "4", "--batch-size", "4",
        "--learning-rate", "1e-3", "--warmup-fraction", "0.25", "--checkpoint-every", "2", "--dropout", "0",
        "--output-dir", str(output), "--verbose", "0", *extra,
    ]
    return [sys.executable, os.path.join(REPO_ROOT, "tests", "cli", "pretrain_worker.py"), str(devices), *argv]


def worker_environment(backend="tensorflow", **variables):
    return dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="3", **variables)


def run_pretrain_process(directory, output, devices, *extra, backend="tensorflow"):
    """`keras-bert pretrain` in a fresh process with `devices` logical CPUs (JAX host devices): its log (stderr)."""
    import subprocess

    completed = subprocess.run(worker_command(directory, output, devices, *extra), env=worker_environment(backend),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stderr


def assert_same_final_weights(one_device_output, distributed_output, distribution, atol=1e-5):
    """The two runs' final weights agree to `atol`; prints the largest difference."""
    one_device, distributed = final_weights(one_device_output), final_weights(distributed_output)
    assert sorted(one_device) == sorted(distributed)
    moved = max(float(np.abs(one_device[name] - distributed[name]).max()) for name in one_device)
    print(f"max |{distribution} - one device| of the final weights from the command line: {moved:.2e}")
    for name in one_device:
        np.testing.assert_allclose(distributed[name], one_device[name], atol=atol, rtol=0, err_msg=name)


def test_mirrored_on_two_cpu_devices_trains_and_resumes_from_the_command_line(tmp_path):
    """2 replicas on 2 logical CPUs, default optimizer (AdamWeightDecay, global_clipnorm=1.0), equal to one
    device on the same global batch of 4: the input stream is the same on every read, and the clip factor
    comes from the global gradient. One prediction per sequence gives every replica the same mask-weight sum
    (each replica normalises the MLM loss by its own weights, as the original's per-TPU-core loss does)."""
    from keras_bert_impl.cli import main

    write_corpus(tmp_path)
    steps = ("--steps", "4", "--max-predictions-per-seq", "1")
    # The one-device reference needs no fresh process (no logical devices to set up): it runs in this one.
    assert main(worker_command(tmp_path, tmp_path / "one_device", 1, *steps)[3:]) == 0
    steps += ("--distribution", "mirrored")
    log = run_pretrain_process(tmp_path, tmp_path / "straight", 2, *steps)
    assert "MirroredStrategy with 2 replicas in sync" in log
    assert_same_final_weights(tmp_path / "one_device", tmp_path / "straight", "mirrored")
    log = run_pretrain_process(tmp_path, tmp_path / "resumed", 2, *steps, "--max-steps-this-run", "2")
    assert "Stopped at step 2 of phase 1" in log and not (tmp_path / "resumed" / "final").exists()
    log = run_pretrain_process(tmp_path, tmp_path / "resumed", 2, *steps)
    assert "Resuming phase 1 at step 2" in log and "MirroredStrategy with 2 replicas in sync" in log

    straight, resumed = final_weights(tmp_path / "straight"), final_weights(tmp_path / "resumed")
    assert sorted(straight) == sorted(resumed)
    for name in straight:
        np.testing.assert_allclose(resumed[name], straight[name], atol=1e-6, err_msg=name)
    assert json.loads((tmp_path / "straight" / "summary.json").read_text())["final_step"] == 4


def test_tpu_without_a_tpu_is_one_clear_line(tmp_path, capsys, monkeypatch):
    """Without --tpu or TPU_NAME, TensorFlow would search for a Cloud TPU for minutes before failing with
    "Please provide a TPU Name to connect to."; the command stops at once, naming the ways to give one."""
    from tests.cli.cli_test_utils import run_cli

    monkeypatch.delenv("TPU_NAME", raising=False)
    write_corpus(tmp_path)
    status, _, err = run_cli(capsys, "pretrain", "--input-files", tmp_path / "corpus.txt", "--vocab-file",
                             tmp_path / "vocab.txt", "--steps", "2", "--checkpoint-every", "2", "--distribution",
                             "tpu", "--output-dir", tmp_path / "out")
    assert status == 1
    assert err.strip() == ("keras-bert pretrain: error: --distribution tpu needs a TPU: give --tpu NAME (or "
                           "grpc://HOST:PORT), or set TPU_NAME; on a Cloud TPU VM, --tpu local.")
    assert not (tmp_path / "out").exists()
