import json
import math

import keras
import numpy as np
import pytest

from keras_bert_impl.training.callbacks import (
    MetricsLog,
    NonFiniteLossError,
    TrainingCheckpoint,
    latest_training_checkpoint,
    plot_training_curves,
    read_metrics_log,
    restore_training_checkpoint,
)
from tests.helpers import tiny_backbone, to_numpy
from tests.models.test_pretrainer import pretraining_batch


def small_pretrainer():
    from keras_bert_impl.models.pretrainer import BertPretrainer

    model = BertPretrainer(tiny_backbone(num_layers=1))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


@pytest.mark.slow
def test_checkpoints_restore_weights_optimizer_and_dropout_rng(tmp_path):
    x, y = pretraining_batch()
    model = small_pretrainer()
    checkpoint = TrainingCheckpoint(tmp_path, steps_per_epoch=1, keep=2, extra_state={"phase": 1})
    model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=[checkpoint])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step_00000002", "step_00000003"]
    path, state = latest_training_checkpoint(tmp_path)
    assert state["step"] == 3 and state["epoch"] == 3 and state["phase"] == 1 and "mlm_loss" in state["logs"]

    restored = small_pretrainer()
    restore_training_checkpoint(restored, path)
    assert int(to_numpy(restored.optimizer.iterations)) == 3
    for a, b in zip(model.variables + model.optimizer.variables, restored.variables + restored.optimizer.variables):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    # Dropout is on (rate 0.1): identical continuations need the RNG state too. Torch's Keras dropout draws
    # from torch's global generator, so only TensorFlow and JAX continue bit for bit.
    if keras.backend.backend() != "torch":
        continued = [m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
                     for m in (model, restored)]
        assert continued[0] == continued[1]


def test_missing_or_broken_checkpoints_are_reported(tmp_path):
    assert latest_training_checkpoint(tmp_path) is None
    (tmp_path / "latest").write_text("step_00000005\n")
    with pytest.raises(FileNotFoundError, match="step_00000005.*lacks"):
        latest_training_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="Compile the model"):
        from keras_bert_impl.models.pretrainer import BertPretrainer

        restore_training_checkpoint(BertPretrainer(tiny_backbone(num_layers=1)), tmp_path)


def test_non_finite_loss_stops_training_without_checkpointing(tmp_path):
    model = small_pretrainer()
    checkpoint = TrainingCheckpoint(tmp_path, steps_per_epoch=10)
    checkpoint.set_model(model)
    checkpoint.on_train_batch_end(0, {"loss": 1.5})
    with pytest.raises(NonFiniteLossError, match="Loss became nan at batch 3"):
        checkpoint.on_train_batch_end(3, {"loss": float("nan")})
    with pytest.raises(NonFiniteLossError, match="Not checkpointing step 10"):
        checkpoint.on_epoch_end(0, {"loss": float("inf")})
    assert not (tmp_path / "step_00000010").exists()


@pytest.mark.slow
def test_a_finished_run_keeps_its_record_restores_its_model_and_refuses_other_settings(tmp_path):
    x, y = pretraining_batch()
    model = small_pretrainer()
    settings = {"batch_size": 4, "steps": 2}

    def checkpoint(delete_checkpoint=True, **changed):
        return TrainingCheckpoint(tmp_path / "state", 1, {**settings, **changed}, changeable=("steps",),
                                  allow_changed=True, model_dir=str(tmp_path / "final"),
                                  delete_checkpoint=delete_checkpoint)

    kept = checkpoint(delete_checkpoint=False)
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[kept])
    model.save_pretrained(str(tmp_path / "final"))
    kept.finish()  # kept: the record beside the states, and a resume extends the run exactly
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["finished.json", "latest", "step_00000002"]
    longer = small_pretrainer()
    assert checkpoint(steps=4).restore(longer)["restored_from"] == str(tmp_path / "state" / "step_00000002")
    assert int(to_numpy(longer.optimizer.iterations)) == 2

    checkpoint().finish()  # removed, as BackupAndRestore does: the record stays
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["finished.json"]
    assert json.loads((tmp_path / "state" / "finished.json").read_text())["step"] == 2
    again = small_pretrainer()
    state = checkpoint().restore(again)
    assert (state["step"], state["restored_from"]) == (2, str(tmp_path / "final"))
    for a, b in zip(model.weights, again.weights):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    with pytest.raises(ValueError, match=r"the run finished with steps=2, this run asks for steps=4, and its "
                                         r"training state was removed. Run with the same settings, or choose"):
        checkpoint(steps=4).restore(small_pretrainer())  # nothing to extend from, even where steps may change
    with pytest.raises(ValueError, match=r"finished with batch_size=4, this run asks for batch_size=8"):
        checkpoint(batch_size=8).restore(small_pretrainer())


@pytest.mark.slow
def test_a_resume_with_other_settings_is_refused_in_one_line(tmp_path):
    x, y = pretraining_batch()
    model = small_pretrainer()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0,
              callbacks=[TrainingCheckpoint(tmp_path, 1, {"seed": 1, "steps": 2}, changeable=("steps",))])
    with pytest.raises(ValueError) as refused:
        TrainingCheckpoint(tmp_path, 1, {"seed": 2, "steps": 4}, changeable=("steps",)).restore(small_pretrainer())
    assert str(refused.value) == (
        f"Cannot resume {tmp_path / 'step_00000001'}: it was trained with seed=1, this run asks for seed=2 (and "
        f"steps). Run with the same settings to resume, choose a new --output-dir to start over.")
    with pytest.raises(ValueError, match=r"steps=2, this run asks for steps=4. .* or pass --allow-changed-settings"):
        TrainingCheckpoint(tmp_path, 1, {"seed": 1, "steps": 4}, changeable=("steps",)).restore(small_pretrainer())
    allowed = TrainingCheckpoint(tmp_path, 1, {"seed": 1, "steps": 4}, changeable=("steps",), allow_changed=True)
    assert allowed.restore(small_pretrainer())["step"] == 1


@pytest.mark.slow
def test_a_state_in_another_layout_is_refused_not_resumed_unchecked(tmp_path):
    x, y = pretraining_batch()
    small_pretrainer().fit(x, y, batch_size=4, epochs=1, verbose=0,
                           callbacks=[TrainingCheckpoint(tmp_path, 1, {"seed": 1})])
    state_file = tmp_path / "step_00000001" / "training_state.json"
    state = json.loads(state_file.read_text())
    state["run_settings"] = state.pop("settings")  # the pretraining recipe's key before 0.x
    state_file.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"step_00000001.*records no settings.*new --output-dir"):
        TrainingCheckpoint(tmp_path, 1, {"seed": 1}).restore(small_pretrainer())


def test_metrics_log_keeps_one_curve_across_resumes_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    model = small_pretrainer()
    log = MetricsLog(tmp_path / "metrics.jsonl", steps_per_epoch=5, extra={"phase": 1})
    log.set_model(model)
    for epoch, loss in ((0, 3.0), (1, 2.5), (1, 2.4), (2, 2.0)):  # epoch 1 repeated after a resume
        log.on_epoch_end(epoch, {"loss": loss, "mlm_accuracy": 0.1 * epoch, "nsp_accuracy": 0.5})
    with open(tmp_path / "metrics.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"step": 20, "lo')  # a line cut short by a crash
    entries = read_metrics_log(tmp_path / "metrics.jsonl")
    assert [e["step"] for e in entries] == [5, 10, 15]
    assert entries[1]["loss"] == 2.4 and entries[0]["phase"] == 1
    assert math.isfinite(entries[0]["learning_rate"])
    plot_training_curves(entries + [dict(entries[-1], step=20, val_loss=2.2)], tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="empty"):
        plot_training_curves([], tmp_path / "empty.png")
    json.dumps(entries)  # plain JSON values


def _fit_with_progress(progress, epochs=2, rows=24, batch_size=4):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(rows, 3)).astype("float32")
    model.fit(x, x[:, :1], batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0, callbacks=[progress])


def test_progress_log_prints_every_n_steps_within_an_epoch():
    import io

    from keras_bert_impl.training.callbacks import ProgressLog

    stream = io.StringIO()
    _fit_with_progress(ProgressLog(batch_size=4, every_steps=2, every_seconds=1e9, stream=stream))
    lines = stream.getvalue().splitlines()
    # 6 steps per epoch: a line after steps 2, 4 and 6 of each of the 2 epochs.
    assert [line.split(":")[0] for line in lines] == [
        f"epoch {epoch}/2 step {step}/6" for epoch in (1, 2) for step in (2, 4, 6)]
    for line in lines:
        assert "examples/s, loss " in line and line.endswith(" elapsed")
        assert math.isfinite(float(line.split("loss ")[1].split(",")[0]))


def test_progress_log_prints_after_every_seconds_even_before_n_steps():
    import io

    from keras_bert_impl.training.callbacks import ProgressLog

    stream = io.StringIO()
    _fit_with_progress(ProgressLog(batch_size=4, every_steps=1000, every_seconds=1e-9, stream=stream), epochs=1)
    assert len(stream.getvalue().splitlines()) == 6  # every step is past the time limit
    with pytest.raises(ValueError, match="every_steps must be >= 1"):
        ProgressLog(batch_size=4, every_steps=0, every_seconds=1.0)
