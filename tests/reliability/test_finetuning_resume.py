"""In-process checks of resumable fine-tuning (`finetuning.finetune`); the SIGKILL test is in
`test_kill_and_resume.py`."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.preprocessing import BertPreprocessor
from keras_bert_impl.training import finetuning
from tests.helpers import TINY_JIT_COMPILE, tiny_backbone, to_numpy
from tests.models.task_test_utils import token_presence_task
from tests.training.finetuning_test_utils import tokenizer


def classifier(sequence_length=12, dropout=0.1):
    """A tiny classifier with a preprocessor (it batches the packed token-presence rows)."""
    keras.utils.set_random_seed(5)
    backbone = tiny_backbone(num_layers=1, dropout=dropout, attention_dropout=dropout)
    return BertClassifier(backbone, 2, dropout=dropout,
                          preprocessor=BertPreprocessor(tokenizer(), sequence_length=sequence_length))


class Interrupted(Exception):
    pass


def settings(output, **changes):
    defaults = dict(epochs=2, batch_size=4, learning_rate=1e-3, jit_compile=TINY_JIT_COMPILE, verbose=0)
    return finetuning.FinetuningSettings(str(output), **{**defaults, **changes})


@pytest.mark.slow
def test_interrupted_finetune_resumes_to_the_uninterrupted_weights(tmp_path):
    # Torch's Keras dropout draws from torch's global generator, which no checkpoint restores: no dropout there.
    dropout = 0.0 if keras.backend.backend() == "torch" else 0.1
    x, y = token_presence_task(20, sequence_length=12)
    steps = 5  # 20 rows, 4 per batch
    run_settings = dict(epochs=3, learning_rate=1e-2, warmup_fraction=0.3, length_bucketing=False, seed=2)

    def run(output, interrupt_at=None):
        """`interrupt_at`: raise at that epoch's end, before its state is saved (a crash in that epoch)."""
        keras.utils.set_random_seed(11)
        model = classifier(dropout=dropout)
        epochs_seen = []

        def evaluate(m):
            epochs_seen.append(len(epochs_seen))
            if epochs_seen[-1] == interrupt_at:
                raise Interrupted(f"interrupted in epoch {interrupt_at}")
            return {}

        checkpoint = finetuning.finetune(model, x, y, settings(output, **run_settings), counts="20 rows",
                                         evaluate=evaluate)
        return model, checkpoint.trained_from

    straight, _ = run(tmp_path / "straight")
    with pytest.raises(Interrupted):
        run(tmp_path / "resumed", interrupt_at=1)
    assert (tmp_path / "resumed" / "training_state" / "latest").read_text().strip() == f"step_{steps:08d}"
    resumed, start = run(tmp_path / "resumed")
    assert start == 1
    assert int(to_numpy(resumed.optimizer.iterations)) == int(to_numpy(straight.optimizer.iterations)) == 3 * steps
    for a, b in zip(straight.weights, resumed.weights):
        np.testing.assert_allclose(to_numpy(b), to_numpy(a), atol=1e-6, err_msg=a.path)


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.slow
def test_a_finished_run_is_not_trained_again_and_other_settings_are_refused(tmp_path, capsys, keep):
    x, y = token_presence_task(12, sequence_length=12)
    model = classifier()
    score = dict(evaluate=lambda m: {"score": 1.0}, monitor="score", counts="12 rows")
    assert finetuning.finetune(model, x, y, settings(tmp_path, keep_training_state=keep), **score).trained_from == 0
    steps = int(capsys.readouterr().out.split(" steps per epoch")[0].split(", ")[-1])
    trained = [to_numpy(w).copy() for w in model.weights]
    # Finished: the state is removed as BackupAndRestore does (its record stays), unless kept.
    kept = ["finished.json", "latest", f"step_{2 * steps:08d}"] if keep else ["finished.json"]
    assert sorted(p.name for p in (tmp_path / "training_state").iterdir()) == kept

    again = classifier()
    resumed = finetuning.finetune(again, x, y, settings(tmp_path, keep_training_state=keep), **score)
    assert resumed.trained_from == 2
    for a, b in zip(trained, again.weights):  # the finished model: from the kept state, else from last/
        np.testing.assert_array_equal(a, to_numpy(b))
    assert int(to_numpy(again.optimizer.iterations)) == (2 * steps if keep else 0)
    assert (resumed.best_epoch, resumed.best_score, len(resumed.history)) == (0, 1.0, 2)

    with pytest.raises(ValueError, match=r"training_state.*with batch_size=4, this run asks for batch_size=8 "
                                         r"\(and steps_per_epoch\)"):
        finetuning.finetune(classifier(), x, y, settings(tmp_path, batch_size=8), **score)
    with pytest.raises(ValueError, match=r"with bucket_width=32, this run asks for bucket_width=8"):
        finetuning.finetune(classifier(), x, y, settings(tmp_path, bucket_width=8), **score)


@pytest.mark.backend_independent
def test_finetune_needs_a_preprocessor_and_an_epoch(tmp_path):
    x, y = token_presence_task(4)
    with pytest.raises(ValueError, match="this BertClassifier has none"):
        finetuning.finetune(BertClassifier(tiny_backbone(num_layers=1), 2), x, y, settings(tmp_path), counts="")
    with pytest.raises(ValueError, match="at least one epoch, got epochs=0"):
        finetuning.finetune(classifier(), x, y, settings(tmp_path, epochs=0), counts="")


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_classifier_command_resumes_and_refuses_other_settings(tmp_path, capsys, caplog):
    import logging

    from tests.cli.cli_test_utils import run_cli
    from tests.training.finetuning_test_utils import write_mrpc_tsv, write_tiny_checkpoint

    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")
    argv = ["finetune-classifier", "--task", "mrpc", "--train-file", write_mrpc_tsv(tmp_path / "train.tsv", 12, 0),
            "--dev-file", write_mrpc_tsv(tmp_path / "dev.tsv", 6, 1), "--init-checkpoint", checkpoint,
            "--output-dir", tmp_path / "out", "--epochs", "2", "--batch-size", "4", "--max-seq-length", "32",
            "--no-jit", "--verbose", "0"]
    status, _, err = run_cli(capsys, *argv)
    assert status == 0, err
    state = tmp_path / "out" / "training_state"
    assert [p.name for p in state.iterdir()] == ["finished.json"]  # the state is removed, the record stays
    last = (tmp_path / "out" / "last" / "model.safetensors").read_bytes()
    predictions = (tmp_path / "out" / "dev_predictions.tsv").read_text()

    with caplog.at_level(logging.INFO):
        status, _, err = run_cli(capsys, *argv)  # the same command again: nothing left to train
    assert status == 0, err
    assert "Resuming fine-tuning after epoch 2 of 2" in caplog.text
    assert (tmp_path / "out" / "last" / "model.safetensors").read_bytes() == last
    assert (tmp_path / "out" / "dev_predictions.tsv").read_text() == predictions

    status, _, err = run_cli(capsys, *argv, "--batch-size", "2")  # the last value of a flag wins
    assert status == 1
    assert "the run finished with batch_size=4, this run asks for batch_size=2" in err

    status, _, err = run_cli(capsys, *argv, "--output-dir", tmp_path / "kept", "--keep-training-state")
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "kept" / "training_state").iterdir())[:2] == ["finished.json", "latest"]
