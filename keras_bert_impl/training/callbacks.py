"""`fit` callbacks for long training runs: crash-safe checkpoints and exact resume, a metrics log, a
non-finite-loss guard, progress lines within an epoch, and the training-curve plot.

Resuming at the same step, learning rate and data position rests on three facts:
- `TrainingCheckpoint` saves the model weights together with the optimizer state (its `iterations` drive the
  learning-rate schedule) at the end of each `fit` epoch; the pretraining script makes one epoch one
  checkpoint interval (`steps_per_epoch=N`);
- the input is a deterministic, endless stream (seeded shuffles and masks), so batch `k` is the same batch in
  every run, and a resumed run skips the `step` batches already consumed (`dataset.skip(step)`);
- the RNG states of the dropout layers (Keras `SeedGenerator` variables, which `save_weights` leaves out) are
  saved beside the weights and restored with them.
Every file goes through `utils.atomic_io`: a checkpoint directory appears complete or not at all, and the
`latest` pointer is replaced only after it.
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

from keras_bert_impl.utils.atomic_io import (
    atomic_directory, atomic_write, atomic_write_text, remove_stale_temporaries, require_free_space,
)

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "training.weights.h5"
RNG_STATE_FILE = "rng_state.npz"
STATE_FILE = "training_state.json"
LATEST_FILE = "latest"


def _as_float(value):
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss; the message names the step and the logged values."""


class TrainingCheckpoint(keras.callbacks.Callback):
    """Save weights + optimizer state every `fit` epoch into `directory/step_XXXXXXXX/`, atomically.

    Args:
        directory: str. Folder of this run's checkpoints (created when missing).
        steps_per_epoch: int. Batches per `fit` epoch, so epoch `e` ends at step `(e + 1) * steps_per_epoch`.
        keep: int. Number of most recent checkpoints kept; older ones are deleted. Defaults to 2.
        extra_state: dict. JSON values stored in every checkpoint's state file (e.g. the phase). Defaults to
            None.
        write: bool. Whether this process writes (False on non-chief workers of a multi-worker run).
            Defaults to True.

    Example:
    >>> checkpoint = TrainingCheckpoint("/tmp/run/checkpoints", steps_per_epoch=100)
    >>> # model.fit(dataset, epochs=10, steps_per_epoch=100, callbacks=[checkpoint])
    """

    def __init__(self, directory, steps_per_epoch, keep=2, extra_state=None, write=True):
        super().__init__()
        if int(keep) < 1:
            raise ValueError(f"`keep` must be >= 1, got {keep}.")
        self.directory = os.fspath(directory)
        self.steps_per_epoch = int(steps_per_epoch)
        self.keep = int(keep)
        self.extra_state = dict(extra_state or {})
        self.write = write

    def _remove_stale_temporaries(self):
        """Temp folders of checkpoint writes a kill interrupted (`.step_*.tmp-*`): no later write needs them."""
        if self.write and os.path.isdir(self.directory):
            for path in remove_stale_temporaries(self.directory, "step_"):
                logger.info("Removed %s, left by an interrupted checkpoint write", path)

    def on_train_begin(self, logs=None):
        self._remove_stale_temporaries()

    def on_train_end(self, logs=None):
        self._remove_stale_temporaries()

    def _checkpoint_bytes(self):
        """About what a checkpoint takes: every model and optimizer variable, plus HDF5 overhead."""
        optimizer = getattr(self.model, "optimizer", None)
        variables = list(self.model.weights) + list(getattr(optimizer, "variables", None) or [])
        return int(sum(math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in variables) * 1.05) + 65536

    def on_epoch_end(self, epoch, logs=None):
        step = (epoch + 1) * self.steps_per_epoch
        logs = {name: _as_float(value) for name, value in (logs or {}).items()}
        non_finite = {name: value for name, value in logs.items() if not math.isfinite(value)}
        if non_finite:
            found = latest_training_checkpoint(self.directory)
            last_good = "none yet (the run restarts from the beginning)" if found is None else found[0]
            raise NonFiniteLossError(
                f"Not checkpointing step {step}: non-finite values {non_finite}. The last good checkpoint is "
                f"{last_good}."
            )
        if not self.write:
            return
        path = os.path.join(self.directory, f"step_{step:08d}")
        state = {"step": step, "epoch": epoch + 1, "logs": logs, **self.extra_state}
        found = latest_training_checkpoint(self.directory) if os.path.isdir(self.directory) else None
        keep = f"the last checkpoint {found[0]} is kept" if found else "no checkpoint was written yet"
        require_free_space(self.directory, self._checkpoint_bytes(),
                           then=f"{keep}; free some space and run the same command again to resume")
        with atomic_directory(path, markers=(WEIGHTS_FILE, STATE_FILE), what="training checkpoint") as tmp:
            self.model.save_weights(os.path.join(tmp, WEIGHTS_FILE))
            np.savez(os.path.join(tmp, RNG_STATE_FILE), *[
                keras.ops.convert_to_numpy(v.value) for v in _seed_states(self.model)])
            with open(os.path.join(tmp, STATE_FILE), "w", encoding="utf-8") as handle:
                json.dump(state, handle, indent=2)
        atomic_write_text(os.path.join(self.directory, LATEST_FILE), os.path.basename(path) + "\n")
        logger.info("Checkpoint at step %d: %s", step, path)
        self._delete_old_checkpoints(os.path.basename(path))

    def _delete_old_checkpoints(self, current):
        """Keep `current` (just written, what `latest` names) and the `keep - 1` newest checkpoints before it.

        A checkpoint of a later step is an earlier run's, which this run started over from (`resume=False`):
        `latest` no longer names it and no resume reads it. Sorting by name alone would keep that one and
        delete `current`, leaving `latest` naming a deleted checkpoint.
        """
        names = sorted(name for name in os.listdir(self.directory) if name.startswith("step_"))
        earlier = [name for name in names if name < current]  # step numbers are zero-padded: names sort by step
        stale = earlier[: max(0, len(earlier) - (self.keep - 1))] + [name for name in names if name > current]
        for name in stale:
            shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)


def _seed_generators(model):
    """Every `keras.random.SeedGenerator` reachable from `model` through public attributes, each once.

    Walks `Model.layers` and, in every layer, the public instance attributes (names without a leading
    underscore) that hold a layer, a seed generator, or a list / tuple / dict of them:
    `Dropout.seed_generator`, a block's sublayers, a task's `backbone`. A generator held only under a private
    attribute (Keras' `MultiHeadAttention` keeps its dropout in `_dropout_layer`) is not found, so its state is
    not saved: every layer of this package holds its dropout under a public name (tests/training).
    """
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
            for name in _instance_attribute_names(value):
                visit(getattr(value, name))
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit(model)
    return found


def _instance_attribute_names(layer):
    """The public attribute names set on `layer` itself (not its class's methods or properties): its
    `__dict__`, and what `dir()` lists beyond its class (torch keeps an `nn.Module`'s submodules there)."""
    names = set(vars(layer)) | (set(dir(layer)) - set(dir(type(layer))))
    return sorted(name for name in names if not name.startswith("_"))


def _seed_states(model):
    """The state variables (`SeedGenerator.state`) of the model's seed generators, in `model.variables` order.

    Saved and restored by position (SeedGenerator names carry a process-wide counter, so paths differ between
    builds); `model.variables` lists each generator's state after its layer's own weights, layer by layer.
    """
    states = {id(generator.state): generator.state for generator in _seed_generators(model)}
    ordered = [variable for variable in model.variables if id(variable) in states]
    listed = {id(variable) for variable in ordered}
    return ordered + [state for key, state in states.items() if key not in listed]


def changed_settings(saved, settings):
    """`{name: (saved value, value now)}` for each of `settings` that differs from `saved` (the settings a
    checkpoint was written with, as read back from its JSON; None for a checkpoint that recorded none, which
    then differs in nothing). Values are compared as JSON, so a tuple equals the list it was saved as."""
    if saved is None:
        return {}
    settings = json.loads(json.dumps(settings))
    return {name: (saved.get(name), value) for name, value in settings.items() if saved.get(name) != value}


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
            f"modified by hand. Remove {pointer} to start over."
        )
    with open(state_path, encoding="utf-8") as handle:
        try:
            return path, json.load(handle)
        except json.JSONDecodeError as error:
            raise CorruptCheckpointError(_corrupt_message(path, STATE_FILE, error)) from error


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
    """Load weights, optimizer state and dropout RNG states saved by `TrainingCheckpoint` into a compiled
    `model`."""
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
            f"seed generators: the checkpoint is from a different architecture."
        )
    for variable, value in zip(states, values):
        variable.assign(value)


class NonFiniteLossGuard(keras.callbacks.Callback):
    """Stop training with `NonFiniteLossError` as soon as a batch's loss is NaN or infinite.

    Raising (rather than `TerminateOnNaN`'s quiet stop) keeps the epoch-end checkpoint from saving the
    diverged weights: the newest checkpoint stays the last good one, and the message names it (and the
    optimizer step where the loss broke) so the run can be resumed from there with other settings.

    Args:
        check_every: int. Check the loss every this many batches (reading it synchronises with the device).
            Defaults to 1.
        checkpoint_directory: str or None. The `TrainingCheckpoint` directory whose newest checkpoint the
            message names. Defaults to None (the message says no checkpoint directory is known).
    """

    def __init__(self, check_every=1, checkpoint_directory=None):
        super().__init__()
        self.check_every = int(check_every)
        self.checkpoint_directory = None if checkpoint_directory is None else os.fspath(checkpoint_directory)

    def _last_good_checkpoint(self):
        if self.checkpoint_directory is None:
            return "unknown (no checkpoint directory given)"
        try:
            found = latest_training_checkpoint(self.checkpoint_directory)
        except FileNotFoundError as error:
            return f"unreadable ({error})"
        if found is None:
            return f"none yet in {self.checkpoint_directory} (the run restarts from the beginning)"
        path, state = found
        return f"{path} (step {state['step']})"

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.check_every or not logs or "loss" not in logs:
            return
        loss = _as_float(logs["loss"])
        if not math.isfinite(loss):
            step = _as_float(self.model.optimizer.iterations)
            raise NonFiniteLossError(
                f"Loss became {loss} at batch {batch} of this epoch (optimizer step {step:.0f}); logs: "
                f"{ {name: _as_float(value) for name, value in logs.items()} }. The last good checkpoint is "
                f"{self._last_good_checkpoint()}; resume from it with a lower learning rate or more warmup."
            )


class ProgressLog(keras.callbacks.Callback):
    """Print a progress line within each `fit` epoch every `every_steps` steps or `every_seconds` seconds.

    `fit(verbose=2)` prints one line per epoch, so a long epoch (the first includes compilation) is silent
    until it ends; this callback fills the gap. Each line: the epoch and step (of the epoch's steps when
    `fit` knows them), the training examples per second since the previous line, the running loss of the
    epoch and the time since training began, e.g.
    `epoch 1/3 step 100/128: 41.2 examples/s, loss 0.6215, 0:02:35 elapsed`.

    Args:
        batch_size: int. Examples per step (for examples/s).
        every_steps: int. Print after this many steps since the previous line.
        every_seconds: float. Or after this many seconds since the previous line, whichever comes first.
        stream: a text stream. Defaults to None (`sys.stdout` at print time).

    Example:
    >>> progress = ProgressLog(batch_size=32, every_steps=100, every_seconds=60.0)
    >>> # model.fit(dataset, epochs=3, verbose=2, callbacks=[progress])
    """

    def __init__(self, batch_size, every_steps, every_seconds, stream=None):
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


# `verbose=2`: a progress line within an epoch after this many steps or seconds, whichever comes first
# (`ProgressLog`), so a long first epoch (XLA compilation included) is not silent.
PROGRESS_EVERY_STEPS = 100
PROGRESS_EVERY_SECONDS = 60.0


def progress_callbacks(verbose, batch_size):
    """`[ProgressLog]` for `fit(verbose=2)` (lines within an epoch), else `[]`.

    Args:
        verbose: int. The `fit` verbosity.
        batch_size: int. Examples per `fit` step.
    """
    if verbose != 2:
        return []
    return [ProgressLog(batch_size, every_steps=PROGRESS_EVERY_STEPS, every_seconds=PROGRESS_EVERY_SECONDS)]


class MetricsLog(keras.callbacks.Callback):
    """Append one JSON line per `fit` epoch (`step`, the epoch's mean metrics, `learning_rate`) to `path`.

    A resumed run appends again from its checkpoint's step; `read_metrics_log` keeps the last line per step,
    so the log stays one curve across interruptions.

    Args:
        path: str. The `.jsonl` file.
        steps_per_epoch: int. Batches per `fit` epoch.
        extra: dict. Values added to every line (e.g. `{"phase": 1}`). Defaults to None.
        step_offset: int. Added to the step (e.g. the steps of earlier phases). Defaults to 0.
        write: bool. Whether this process writes. Defaults to True.
    """

    def __init__(self, path, steps_per_epoch, extra=None, step_offset=0, write=True):
        super().__init__()
        self.path = os.fspath(path)
        self.steps_per_epoch = int(steps_per_epoch)
        self.extra = dict(extra or {})
        self.step_offset = int(step_offset)
        self.write = write

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
    """Write a PNG with loss, accuracy and learning-rate panels from `read_metrics_log` entries.

    Needs matplotlib (`pip install matplotlib`); uses the non-interactive Agg backend. Validation values
    (`val_*`) are drawn dashed where present.

    Args:
        entries: list of dict. Each has `step` and any of `loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy`,
            `nsp_accuracy`, `learning_rate` (and `val_` versions).
        path: str. The PNG file, written atomically.
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
    panels = (
        ("loss", ("loss", "mlm_loss", "nsp_loss")),
        ("accuracy", ("mlm_accuracy", "nsp_accuracy")),
        ("learning rate", ("learning_rate",)),
    )
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
