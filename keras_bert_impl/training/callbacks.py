"""`fit` callbacks for long runs: checkpoint / resume / model selection (`TrainingCheckpoint`, `FinetuningCheckpoint`),
a metrics log, progress lines within an epoch and the training-curve plot. An exact resume needs the weights with the
optimizer state, the dropout RNG states (`save_weights` leaves them out) and a deterministic input stream to skip into.
Files go through `utils.atomic_io`; `latest` is written last.
"""

import io
import json
import logging
import math
import os
import shutil
import sys
import time
import zipfile

import keras
import numpy as np

from keras_bert_impl.training import PROGRESS_EVERY_SECONDS, PROGRESS_EVERY_STEPS
from keras_bert_impl.utils.atomic_io import (atomic_directory, atomic_write, atomic_write_json, atomic_write_text,
                                             remove_stale_temporaries, require_free_space)
from keras_bert_impl.training.finetuning_results import json_ready, save_finetuned
from keras_bert_impl.utils.file_patterns import POSITIVE, read_json

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "training.weights.h5"
RNG_STATE_FILE = "rng_state.npz"
STATE_FILE = "training_state.json"
LATEST_FILE = "latest"
FINISHED_FILE = "finished.json"  # the record of a finished run, which outlives its removed states
# What a saved state (`training_state.json`, `finished.json`) must hold for `restore` to use it.
STATE_SCHEMA = {"step": POSITIVE, "epoch": POSITIVE, "settings?": (dict, type(None))}


def _as_float(value):
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss; the message names the step and the last good checkpoint."""


class TrainingCheckpoint(keras.callbacks.Callback):
    """Keras' `BackupAndRestore` with an exact resume and a settings check: each epoch end writes
    `backup_dir/step_XXXXXXXX/` (weights with optimizer state, dropout RNG states, `training_state.json`), then
    `latest`; a non-finite loss raises `NonFiniteLossError` before anything diverged is saved. `finish()` writes
    `finished.json` and removes the states; `restore` of a finished run loads the weights of `model_dir`.

    Args:
        backup_dir: str. Folder of this run's states (created when missing).
        steps_per_epoch: int or None. Batches per `fit` epoch (epoch `e` ends at step `(e + 1) * steps_per_epoch`);
            None: `fit`'s. Defaults to None.
        settings: dict or None. JSON values a resumed run must match (batch size, seed, ...). Defaults to None.
        changeable: sequence of str. Settings that may change on resume when `allow_changed`. Defaults to ().
        allow_changed: bool. Let the `changeable` settings change. Defaults to False.
        model_dir: str or None. The directory of the finished run's weights (`final/`, `last/`). Defaults to None.
        keep: int. Number of newest states kept. Defaults to 1.
        delete_checkpoint: bool. Remove the states when the run finishes (False: it can be extended). Defaults to True.
        extra_state: dict or None. More JSON values stored in every state (e.g. the phase). Defaults to None.
        write: bool. Whether this process writes (False on non-chief workers of a multi-worker run). Defaults to True.

    Example:
    >>> checkpoint = TrainingCheckpoint("/tmp/run/checkpoints", steps_per_epoch=100, model_dir="/tmp/run/final")
    >>> # state = checkpoint.restore(model); start = state["step"] if state else 0
    >>> # model.fit(dataset.skip(start), initial_epoch=start // 100, epochs=10, steps_per_epoch=100,
    >>> #           callbacks=[checkpoint]); model.save_pretrained("/tmp/run/final"); checkpoint.finish()
    """

    def __init__(self, backup_dir, steps_per_epoch=None, settings=None, changeable=(), allow_changed=False,
                 model_dir=None, keep=1, delete_checkpoint=True, extra_state=None, write=True):
        super().__init__()
        if int(keep) < 1:
            raise ValueError(f"`keep` must be >= 1, got {keep}.")
        self.backup_dir, self.steps_per_epoch, self.model_dir = os.fspath(backup_dir), steps_per_epoch, model_dir
        self.settings, self.extra_state = dict(settings or {}), dict(extra_state or {})
        self.changeable, self.allow_changed = tuple(changeable), allow_changed
        self.keep, self.delete_checkpoint, self.write = int(keep), delete_checkpoint, write

    def saved_state(self):
        """`(path, state)` of the newest state, `(None, record)` of a finished run whose states are gone, or None."""
        found = latest_training_checkpoint(self.backup_dir)
        record = os.path.join(self.backup_dir, FINISHED_FILE)
        if found is None and os.path.isfile(record):
            return None, read_json(record, schema=STATE_SCHEMA)
        return found

    def check_settings(self, path, state):
        """Raise `ValueError` naming the first setting that differs from those `state` was saved with (`path`:
        its state, None for a finished run's record), both values, and the way out."""
        if "settings" not in state:  # another layout (before 0.x): a changed setting could not be refused
            raise ValueError(
                f"Cannot resume {path or self.backup_dir}: its training state records no settings (an older "
                f"keras_bert_impl wrote it), so this run cannot check them. Choose a new --output-dir to start over.")
        saved = state["settings"]
        if saved is None:  # saved without settings: nothing to compare
            return
        now = json.loads(json.dumps(self.settings))
        changed = {name: (saved.get(name), value) for name, value in now.items() if saved.get(name) != value}
        allowed = self.changeable if self.allow_changed and path is not None else ()
        refused = {name: values for name, values in changed.items() if name not in allowed}
        if not refused:
            return
        name, (old, new) = next(iter(refused.items()))
        more = f" (and {', '.join(list(refused)[1:])})" if len(refused) > 1 else ""
        if path is None:
            raise ValueError(
                f"Cannot resume {self.backup_dir}: the run finished with {name}={old!r}, this run asks for "
                f"{name}={new!r}{more}, and its training state was removed. Run with the same settings, or choose "
                f"a new --output-dir (--keep-training-state keeps a run's state so that it can be extended).")
        allow_hint = (" or pass --allow-changed-settings to continue with the new value"
                      if name in self.changeable else "")
        raise ValueError(
            f"Cannot resume {path}: it was trained with {name}={old!r}, this run asks for {name}={new!r}{more}. "
            f"Run with the same settings to resume, choose a new --output-dir to start over{allow_hint}.")

    def restore(self, model):
        """Restore the saved state (weights, optimizer variables, dropout RNG states; a finished run: the weights of
        `model_dir`) into the compiled `model`.

        Returns:
            dict or None: the saved state (`step`, `epoch`, ...) with `restored_from`; None: nothing to resume.

        Raises:
            ValueError: the state was saved with other `settings` (see `check_settings`).
        """
        found = self.saved_state()
        if found is None:
            return None
        path, state = found
        self.check_settings(path, state)
        if path is not None:
            restore_training_checkpoint(model, path)
            return {**state, "restored_from": path}
        from keras_bert_impl.checkpoints.native import assign_native, read_native

        if not (self.model_dir and os.path.isdir(self.model_dir)):
            raise ValueError(f"{self.backup_dir} records a finished run, but its model {self.model_dir} is missing; "
                             f"choose a new --output-dir to start over.")
        assign_native(model, read_native(self.model_dir)[3], self.model_dir)
        return {**state, "restored_from": self.model_dir}

    def finish(self):
        """Mark the run finished (`finished.json`: its last state's record) and, with `delete_checkpoint`, remove
        its states. Call it once the run's final model is saved in `model_dir`."""
        if not self.write or not os.path.isdir(self.backup_dir):
            return
        found = latest_training_checkpoint(self.backup_dir)
        if found is not None:
            atomic_write_json(os.path.join(self.backup_dir, FINISHED_FILE), found[1])
        if self.delete_checkpoint:  # the pointer first: a kill midway leaves the record, not a dangling pointer
            if found is not None:
                os.remove(os.path.join(self.backup_dir, LATEST_FILE))
            for name in os.listdir(self.backup_dir):
                if name.startswith("step_"):
                    shutil.rmtree(os.path.join(self.backup_dir, name), ignore_errors=True)

    def on_train_begin(self, logs=None):
        """Remove the temp folders of checkpoint writes a kill interrupted (`.step_*.tmp-*`); also at the end."""
        if self.write and os.path.isdir(self.backup_dir):
            for path in remove_stale_temporaries(self.backup_dir, "step_", prefix=True):
                logger.info("Removed %s, left by an interrupted checkpoint write", path)

    on_train_end = on_train_begin

    def _last_good(self):
        try:
            found = latest_training_checkpoint(self.backup_dir)
        except FileNotFoundError as error:
            return f"unreadable ({error})"
        return (f"none yet in {self.backup_dir} (the run restarts from the beginning)" if found is None
                else f"{found[0]} (step {found[1]['step']})")

    def on_train_batch_end(self, batch, logs=None):
        loss = _as_float(logs["loss"]) if logs and "loss" in logs else 0.0
        if not math.isfinite(loss):
            step = _as_float(self.model.optimizer.iterations)
            raise NonFiniteLossError(
                f"Loss became {loss} at batch {batch} of this epoch (optimizer step {step:.0f}); logs: "
                f"{ {name: _as_float(value) for name, value in logs.items()} }. The last good checkpoint is "
                f"{self._last_good()}; resume from it with a lower learning rate or more warmup.")

    def _checkpoint_bytes(self):
        """About what a checkpoint takes: every model and optimizer variable, plus HDF5 overhead."""
        optimizer = getattr(self.model, "optimizer", None)
        variables = list(self.model.weights) + list(getattr(optimizer, "variables", None) or [])
        return int(sum(math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in variables) * 1.05) + 65536

    def on_epoch_end(self, epoch, logs=None):
        step = (epoch + 1) * (self.steps_per_epoch or self.params["steps"])
        logs = {name: _as_float(value) for name, value in (logs or {}).items()}
        non_finite = {name: value for name, value in logs.items() if not math.isfinite(value)}
        if non_finite:
            raise NonFiniteLossError(f"Not checkpointing step {step}: non-finite values {non_finite}. The last good "
                                     f"checkpoint is {self._last_good()}.")
        if not self.write:
            return
        path = os.path.join(self.backup_dir, f"step_{step:08d}")
        state = {"step": step, "epoch": epoch + 1, "logs": logs, "settings": self.settings, **self.extra_state}
        found = latest_training_checkpoint(self.backup_dir) if os.path.isdir(self.backup_dir) else None
        keep = f"the last checkpoint {found[0]} is kept" if found else "no checkpoint was written yet"
        require_free_space(self.backup_dir, self._checkpoint_bytes(),
                           then=f"{keep}; free some space and run the same command again to resume")
        with atomic_directory(path, what="training checkpoint") as tmp:
            self.model.save_weights(os.path.join(tmp, WEIGHTS_FILE))
            np.savez(os.path.join(tmp, RNG_STATE_FILE), *[
                keras.ops.convert_to_numpy(v.value) for v in _seed_states(self.model)])
            atomic_write_json(os.path.join(tmp, STATE_FILE), state)
        atomic_write_text(os.path.join(self.backup_dir, LATEST_FILE), os.path.basename(path) + "\n")
        logger.info("Checkpoint at step %d: %s", step, path)
        self._delete_old_checkpoints(os.path.basename(path))

    def _delete_old_checkpoints(self, current):
        """Keep `current` (what `latest` names) and the `keep - 1` newest checkpoints before it; a later step is
        an earlier run's, which this one started over from, so it goes too."""
        names = sorted(name for name in os.listdir(self.backup_dir) if name.startswith("step_"))
        earlier = [name for name in names if name < current]  # step numbers are zero-padded: names sort by step
        stale = earlier[: max(0, len(earlier) - (self.keep - 1))] + [name for name in names if name > current]
        for name in stale:
            shutil.rmtree(os.path.join(self.backup_dir, name), ignore_errors=True)


class FinetuningCheckpoint(TrainingCheckpoint):
    """The `TrainingCheckpoint` of a fine-tuning run that also selects models (`ModelCheckpoint` with a `monitor`):
    each epoch end evaluates, saves `directory/last/` (and `best/` when `monitor` improves), then the training
    state in `directory/training_state/` with the selection record a resumed run continues.

    Args:
        directory: str. Output directory.
        tokenizer: `BertTokenizer` or None. Saved with the model. Defaults to None.
        evaluate: callable or None. `evaluate(model) -> dict` of metrics; None: save `last` only. Defaults to None.
        monitor: str or None. Key of `evaluate`'s result that selects `best` (higher is better). Defaults to None.
        steps_per_epoch: int or None. As `TrainingCheckpoint`'s. Defaults to None.
        settings: dict or None. As `TrainingCheckpoint`'s. Defaults to None.
        delete_checkpoint: bool. Remove `training_state/` when the run finishes. Defaults to True.

    After `fit`: `history` (a list of each epoch's results), `best_score`, `best_epoch` (0-based).
    """

    def __init__(self, directory, tokenizer=None, evaluate=None, monitor=None, steps_per_epoch=None, settings=None,
                 delete_checkpoint=True):
        if monitor is not None and evaluate is None:
            raise ValueError("`monitor` needs an `evaluate` function to score each epoch.")
        super().__init__(os.path.join(directory, "training_state"), steps_per_epoch, settings,
                         model_dir=os.path.join(directory, "last"), delete_checkpoint=delete_checkpoint)
        self.directory, self.tokenizer, self.evaluate, self.monitor = directory, tokenizer, evaluate, monitor
        self.history, self.best_score, self.best_epoch = [], None, None

    def on_epoch_end(self, epoch, logs=None):
        results = {"epoch": epoch + 1, **{key: float(value) for key, value in (logs or {}).items()}}
        if self.evaluate is not None:
            results.update(self.evaluate(self.model))
        self.history.append(json_ready(results))
        save_finetuned(self.model, os.path.join(self.directory, "last"), self.tokenizer, results)
        if self.monitor is not None:
            if self.monitor not in results:
                raise KeyError(f"monitor {self.monitor!r} is not among the epoch's results {sorted(results)}.")
            score = float(results[self.monitor])
            if self.best_score is None or score > self.best_score:
                self.best_score, self.best_epoch = score, epoch
                save_finetuned(self.model, os.path.join(self.directory, "best"), self.tokenizer, results)
                logger.info("Epoch %d: %s %.4f, the best so far; saved %s/best.", epoch + 1, self.monitor, score,
                            self.directory)
        self.extra_state["selection"] = {"history": self.history, "best_score": self.best_score,
                                         "best_epoch": self.best_epoch}
        super().on_epoch_end(epoch, logs)

    def restore(self, model):
        """`TrainingCheckpoint.restore`, and the selection's `history`, `best_score` and `best_epoch`."""
        state = super().restore(model)
        selection = (state or {}).get("selection", {})
        self.history = list(selection.get("history", []))
        self.best_score, self.best_epoch = selection.get("best_score"), selection.get("best_epoch")
        return state


def _seed_generators(model):
    """Every `keras.random.SeedGenerator` reachable from `model` through `Model.layers` and public attributes
    (layers, generators, lists / tuples / dicts of them), each once; every layer here names its dropout publicly."""
    found, seen = [], set()

    def visit(value):
        if isinstance(value, (keras.random.SeedGenerator, keras.layers.Layer)):
            if id(value) in seen:
                return
            seen.add(id(value))
            if isinstance(value, keras.random.SeedGenerator):
                found.append(value)
                return
            if isinstance(value, keras.Model):
                for layer in value.layers:
                    visit(layer)
            # `__dict__`, and what `dir()` lists beyond the class (torch keeps an `nn.Module`'s submodules there)
            names = set(vars(value)) | (set(dir(value)) - set(dir(type(value))))
            for name in sorted(name for name in names if not name.startswith("_")):
                visit(getattr(value, name))
        elif isinstance(value, (list, tuple, dict)):
            for item in value.values() if isinstance(value, dict) else value:
                visit(item)

    visit(model)
    return found


def _seed_states(model):
    """The state variables of the model's seed generators in `model.variables` order: saved and restored by
    position, since SeedGenerator names carry a process-wide counter."""
    states = {id(generator.state): generator.state for generator in _seed_generators(model)}
    ordered = [variable for variable in model.variables if id(variable) in states]
    listed = {id(variable) for variable in ordered}
    return ordered + [state for key, state in states.items() if key not in listed]


def latest_training_checkpoint(directory):
    """`(path, state)` of the newest complete checkpoint under `directory`, or None when there is none."""
    directory = os.fspath(directory)
    pointer = os.path.join(directory, LATEST_FILE)
    if not os.path.isfile(pointer):
        return None
    with open(pointer, encoding="utf-8") as handle:
        path = os.path.join(directory, handle.read().strip())
    state_path = os.path.join(path, STATE_FILE)
    if not os.path.isfile(state_path) or not os.path.isfile(os.path.join(path, WEIGHTS_FILE)):
        raise FileNotFoundError(
            f"{pointer} names {path}, which lacks {WEIGHTS_FILE} or {STATE_FILE}; the checkpoint directory was "
            f"modified by hand. Remove {pointer} to start over.")
    try:
        return path, read_json(state_path, schema=STATE_SCHEMA)
    except ValueError as error:  # malformed JSON, or not the fields a state holds
        raise CorruptCheckpointError(_corrupt_message(path, STATE_FILE, error)) from None


class CorruptCheckpointError(ValueError):
    """A training checkpoint file cannot be read (truncated or corrupt); the message says how to go back."""


def _corrupt_message(path, filename, error):
    directory = os.path.dirname(path)
    older = sorted(name for name in os.listdir(directory)
                   if name.startswith("step_") and name < os.path.basename(path))
    if older:
        remedy = (f"delete {path} and write {older[-1]!r} into {os.path.join(directory, LATEST_FILE)} to resume "
                  f"from the previous checkpoint")
    else:
        remedy = f"delete {directory} to start over"
    return (f"Cannot restore the training checkpoint {path}: {filename} is truncated or corrupt ({error}); "
            f"{remedy}.")


def restore_training_checkpoint(model, path):
    """Load the weights, optimizer state and dropout RNG states of a `TrainingCheckpoint` into a compiled `model`."""
    if getattr(model, "optimizer", None) is None:
        raise ValueError("Compile the model (with the same optimizer) before restoring a training checkpoint.")
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    path = os.fspath(path)
    try:
        model.load_weights(os.path.join(path, WEIGHTS_FILE))
    except (OSError, KeyError) as error:  # h5py: truncated / not HDF5; a missing group
        raise CorruptCheckpointError(_corrupt_message(path, WEIGHTS_FILE, error)) from error
    try:
        with np.load(os.path.join(path, RNG_STATE_FILE)) as saved:
            values = [saved[f"arr_{index}"] for index in range(len(saved.files))]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise CorruptCheckpointError(_corrupt_message(path, RNG_STATE_FILE, error)) from error
    states = _seed_states(model)
    if len(values) != len(states):
        raise ValueError(
            f"{path}/{RNG_STATE_FILE} holds {len(values)} RNG states but the model has {len(states)} dropout "
            f"seed generators: the checkpoint is from a different architecture.")
    for variable, value in zip(states, values):
        variable.assign(value)


class ProgressLog(keras.callbacks.Callback):
    """Print a progress line within each `fit` epoch every `every_steps` steps or `every_seconds` seconds, so a
    long epoch under `fit(verbose=2)` is not silent, e.g.
    `epoch 1/3 step 100/128: 41.2 examples/s, loss 0.6215, 0:02:35 elapsed`.

    Args:
        batch_size: int. Examples per step (for examples/s).
        every_steps: int. Print after this many steps since the previous line. Defaults to 100.
        every_seconds: float. Or after this many seconds since the previous line, whichever comes first.
            Defaults to 60.
        stream: a text stream. Defaults to None (`sys.stdout` at print time).

    Example:
    >>> progress = ProgressLog(batch_size=32)
    >>> # model.fit(dataset, epochs=3, verbose=2, callbacks=[progress])
    """

    def __init__(self, batch_size, every_steps=PROGRESS_EVERY_STEPS, every_seconds=PROGRESS_EVERY_SECONDS,
                 stream=None):
        super().__init__()
        if int(every_steps) < 1 or not float(every_seconds) > 0:
            raise ValueError(f"every_steps must be >= 1 and every_seconds > 0, got {every_steps} and "
                             f"{every_seconds}.")
        self.batch_size = int(batch_size)
        self.every_steps = int(every_steps)
        self.every_seconds = float(every_seconds)
        self.stream = stream
        self._train_start = self._last_time = None
        self._epoch = self._last_step = 0

    def on_train_begin(self, logs=None):
        self._train_start = time.monotonic()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._last_step, self._last_time = epoch, 0, time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        now, step = time.monotonic(), batch + 1
        if step - self._last_step < self.every_steps and now - self._last_time < self.every_seconds:
            return
        rate = (step - self._last_step) * self.batch_size / max(now - self._last_time, 1e-9)
        params = self.params or {}
        steps = f"/{params['steps']}" if params.get("steps") else ""
        epochs = f"/{params['epochs']}" if params.get("epochs") else ""
        loss = f", loss {_as_float(logs['loss']):.4f}" if logs and "loss" in logs else ""
        elapsed = int(now - (self._train_start if self._train_start is not None else self._last_time))
        print(f"epoch {self._epoch + 1}{epochs} step {step}{steps}: {rate:.1f} examples/s{loss}, "
              f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d} elapsed",
              file=self.stream or sys.stdout, flush=True)
        self._last_step, self._last_time = step, now


class MetricsLog(keras.callbacks.Callback):
    """Append one JSON line per `fit` epoch (`step`, the epoch's mean metrics, `learning_rate`) to `path`; a
    resumed run appends again from its checkpoint's step, and `read_metrics_log` keeps the last line per step.

    Args:
        path: str. The `.jsonl` file.
        steps_per_epoch: int. Batches per `fit` epoch.
        extra: dict. Values added to every line (e.g. `{"phase": 1}`). Defaults to None.
        step_offset: int. Added to the step (e.g. the steps of earlier phases). Defaults to 0.
        write: bool. Whether this process writes. Defaults to True.
    """

    def __init__(self, path, steps_per_epoch, extra=None, step_offset=0, write=True):
        super().__init__()
        self.path, self.extra, self.write = os.fspath(path), dict(extra or {}), write
        self.steps_per_epoch, self.step_offset = int(steps_per_epoch), int(step_offset)

    def on_epoch_end(self, epoch, logs=None):
        if not self.write:
            return
        entry = {"step": self.step_offset + (epoch + 1) * self.steps_per_epoch, **self.extra}
        entry.update({name: _as_float(value) for name, value in (logs or {}).items()})
        entry["learning_rate"] = _as_float(self.model.optimizer.learning_rate)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def read_metrics_log(path):
    """Entries of a `MetricsLog` file sorted by step, the last line winning for a repeated step."""
    entries = {}
    with open(os.fspath(path), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                # A crash can cut the last line short; anything earlier is corruption worth naming.
                logger.warning("%s, line %d: skipping an unreadable entry (%s).", path, number, error)
                continue
            entries[entry["step"]] = entry
    return [entries[step] for step in sorted(entries)]


def plot_training_curves(entries, path, title="BERT pretraining"):
    """Write a PNG (atomically; needs matplotlib) of loss, accuracy and learning-rate panels from `read_metrics_log`
    entries, `val_*` dashed.

    Args:
        entries: list of dict. Each has `step` and any of `loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy`,
            `nsp_accuracy`, `learning_rate` (and `val_` versions).
        path: str. The PNG file.
        title: str. Figure title. Defaults to "BERT pretraining".
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError as error:
        raise ImportError("plot_training_curves needs matplotlib: `pip install matplotlib`.") from error
    if not entries:
        raise ValueError("No metrics to plot: the log is empty.")
    panels = (("loss", ("loss", "mlm_loss", "nsp_loss")), ("accuracy", ("mlm_accuracy", "nsp_accuracy")),
              ("learning rate", ("learning_rate",)))
    figure, axes = pyplot.subplots(1, len(panels), figsize=(15, 4))
    for axis, (label, names) in zip(axes, panels):
        for name in names:
            for prefix, style in (("", "-"), ("val_", "--")):
                points = [(e["step"], e[prefix + name]) for e in entries if prefix + name in e]
                if points:
                    steps, values = zip(*points)
                    axis.plot(steps, values, style, marker=".", label=prefix + name)
        if label == "accuracy":
            axis.axhline(0.5, color="grey", linewidth=0.8, linestyle=":", label="NSP chance")
        axis.set_xlabel("step")
        axis.set_title(label)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot.close(figure)
    with atomic_write(os.fspath(path), "wb") as handle:
        handle.write(buffer.getvalue())
