"""In-process checks of resumable fine-tuning (`finetuning.fit_finetuning`); the SIGKILL test is in
`test_kill_and_resume.py`."""

import json

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.training import finetuning
from tests.helpers import tiny_backbone, to_numpy
from tests.models.task_test_utils import token_presence_task


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("length_bucketing", [True, False])
def test_epoch_stream_from_any_epoch_is_the_tail_of_the_full_stream(length_bucketing):
    x, y = token_presence_task(23, sequence_length=20)
    settings = dict(batch_size=4, length_bucketing=length_bucketing, bucket_width=8, seed=3)
    full, steps = finetuning.training_dataset(x, y, epochs=3, **settings)
    tail, tail_steps = finetuning.training_dataset(x, y, epochs=3, initial_epoch=2, **settings)
    full, tail = list(full.as_numpy_iterator()), list(tail.as_numpy_iterator())
    assert steps == tail_steps == finetuning.batches_per_epoch(x, 4, length_bucketing, 8)
    assert len(full) == 3 * steps and len(tail) == steps
    for (fx, fy), (tx, ty) in zip(full[2 * steps :], tail):
        np.testing.assert_array_equal(fx["token_ids"], tx["token_ids"])
        np.testing.assert_array_equal(fy, ty)
    # Every epoch is a permutation of all rows, and epochs differ in order.
    epochs = [np.concatenate([b[1] for b in full[e * steps : (e + 1) * steps]]) for e in range(3)]
    assert all(sorted(e.tolist()) == sorted(y.tolist()) for e in epochs)
    first_ids = [full[e * steps][0]["token_ids"] for e in range(3)]
    assert not all(np.array_equal(first_ids[0], other) for other in first_ids[1:])


def compiled_classifier(steps):
    keras.utils.set_random_seed(5)
    model = BertClassifier(tiny_backbone(num_layers=1), 2)
    finetuning.compile_for_finetuning(model, 1e-3, steps, jit_compile=False)
    return model


class Interrupted(Exception):
    pass


class InterruptAt(keras.callbacks.Callback):
    """Raise `Interrupted` after batch `batch` of epoch `epoch` (a crash in the middle of an epoch)."""

    def __init__(self, epoch, batch):
        super().__init__()
        self.epoch, self.batch, self.current = epoch, batch, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.current, batch) == (self.epoch, self.batch):
            raise Interrupted(f"interrupted at epoch {self.epoch}, batch {batch}")


@pytest.mark.slow
def test_interrupted_fit_finetuning_resumes_to_the_uninterrupted_weights(tmp_path):
    # Torch's Keras dropout draws from torch's global generator, which no checkpoint restores: no dropout there.
    dropout = 0.0 if keras.backend.backend() == "torch" else 0.1
    x, y = token_presence_task(20, sequence_length=12)
    steps = finetuning.batches_per_epoch(x, 4, length_bucketing=False)

    def run(output, callbacks=()):
        keras.utils.set_random_seed(11)
        backbone = tiny_backbone(num_layers=1, dropout=dropout, attention_dropout=dropout)
        model = BertClassifier(backbone, 2, dropout=dropout)
        finetuning.compile_for_finetuning(model, 1e-2, 3 * steps, warmup_fraction=0.3,
                                          jit_compile=keras.backend.backend() == "jax")
        checkpoint = finetuning.FinetuningCheckpoint(str(output))
        start = finetuning.fit_finetuning(model, x, y, checkpoint, epochs=3, batch_size=4, length_bucketing=False,
                                          seed=2, callbacks=callbacks, verbose=0)
        return model, start

    straight, _ = run(tmp_path / "straight")
    with pytest.raises(Interrupted):
        run(tmp_path / "resumed", [InterruptAt(epoch=1, batch=2)])
    assert (tmp_path / "resumed" / "training_state" / "latest").read_text().strip() == f"step_{steps:08d}"
    resumed, start = run(tmp_path / "resumed")
    assert start == 1
    assert int(to_numpy(resumed.optimizer.iterations)) == int(to_numpy(straight.optimizer.iterations)) == 3 * steps
    for a, b in zip(straight.weights, resumed.weights):
        np.testing.assert_allclose(to_numpy(b), to_numpy(a), atol=1e-6, err_msg=a.path)


@pytest.mark.parametrize("keep", [False, True])
def test_a_finished_run_is_not_trained_again_and_other_settings_are_refused(tmp_path, keep):
    x, y = token_presence_task(12, sequence_length=12)
    steps = finetuning.batches_per_epoch(x, 4, True, 32)
    model = compiled_classifier(2 * steps)

    def checkpoint():
        return finetuning.FinetuningCheckpoint(str(tmp_path), evaluate=lambda m: {"score": 1.0}, monitor="score",
                                               delete_checkpoint=not keep)

    assert finetuning.fit_finetuning(model, x, y, checkpoint(), epochs=2, batch_size=4, verbose=0) == 0
    trained = [to_numpy(w).copy() for w in model.weights]
    # Finished: the state is removed as BackupAndRestore does (its record stays), unless kept.
    kept = ["finished.json", "latest", f"step_{2 * steps:08d}"] if keep else ["finished.json"]
    assert sorted(p.name for p in (tmp_path / "training_state").iterdir()) == kept
    if keep:  # the kept state in the form written before the one mechanism (selection under "finetuning")
        state_file = tmp_path / "training_state" / f"step_{2 * steps:08d}" / "training_state.json"
        state = json.loads(state_file.read_text())
        state["finetuning"] = state.pop("selection")
        state_file.write_text(json.dumps(state))

    again = compiled_classifier(2 * steps)
    resumed = checkpoint()
    assert finetuning.fit_finetuning(again, x, y, resumed, epochs=2, batch_size=4, verbose=0) == 2
    for a, b in zip(trained, again.weights):  # the finished model: from the kept state, else from last/
        np.testing.assert_array_equal(a, to_numpy(b))
    assert int(to_numpy(again.optimizer.iterations)) == (2 * steps if keep else 0)
    assert (resumed.best_epoch, resumed.best_score, len(resumed.history)) == (0, 1.0, 2)

    with pytest.raises(ValueError, match=r"training_state.*with batch_size=4, this run asks for batch_size=8 "
                                         r"\(and steps_per_epoch\)"):
        finetuning.fit_finetuning(compiled_classifier(4), x, y, finetuning.FinetuningCheckpoint(str(tmp_path)),
                                  epochs=2, batch_size=8, verbose=0)
    fresh = finetuning.FinetuningCheckpoint(str(tmp_path))
    assert finetuning.fit_finetuning(compiled_classifier(2 * steps), x, y, fresh, epochs=2, batch_size=4,
                                     resume=False, verbose=0) == 0
    assert len(fresh.history) == 2


def test_fit_finetuning_needs_a_compiled_model(tmp_path):
    x, y = token_presence_task(4)
    with pytest.raises(ValueError, match="Compile the model"):
        finetuning.fit_finetuning(BertClassifier(tiny_backbone(num_layers=1), 2), x, y,
                                  finetuning.FinetuningCheckpoint(str(tmp_path)), epochs=1, batch_size=2)


@pytest.mark.slow
@pytest.mark.tensorflow_only
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
