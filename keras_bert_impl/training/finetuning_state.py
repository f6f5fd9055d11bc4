"""The resumable state of a fine-tuning run: the epoch-end callback that evaluates, keeps `last/` / `best/`
(`model_selection.ModelSelection`) and saves `training_state/`, and the restore of that state on a rerun."""

import logging
import os

import keras

from keras_bert_impl.training.model_selection import ModelSelection

logger = logging.getLogger(__name__)

TRAINING_STATE_DIRNAME = "training_state"


class FinetuningCheckpoint(keras.callbacks.Callback):
    """At each epoch end: evaluate, save `directory/last`, and `directory/best` when the score improves.

    Each directory is complete or absent (written atomically) and holds the `save_pretrained` files, the
    tokenizer and `eval_results.json`, so it can be passed to `from_pretrained` / `--init-checkpoint`.

    Under `finetuning.finetune` it also saves, after `last/` and `best/`, the resumable training state into
    `directory/training_state/` (`training.callbacks.TrainingCheckpoint`: weights, optimizer variables,
    dropout RNG states, the epoch, and the selection's `history` / `best_score` / `best_epoch`), from which an
    interrupted run continues.

    Args:
        directory: str. Output directory.
        tokenizer: `BertTokenizer` or None. Saved with the model. Defaults to None.
        evaluate: callable or None. `evaluate(model) -> dict` of metrics (e.g. dev GLUE / SQuAD scores).
            Defaults to None (save `last` only).
        monitor: str or None. Key of `evaluate`'s result that selects `best`. Defaults to None.
        mode: str. "max" or "min": which direction of `monitor` is better. Defaults to "max".

    After `fit`: `history` (a list of each epoch's results), `best_score`, `best_epoch` (0-based).
    """

    def __init__(self, directory, tokenizer=None, evaluate=None, monitor=None, mode="max"):
        super().__init__()
        if monitor is not None and evaluate is None:
            raise ValueError("`monitor` needs an `evaluate` function to score each epoch.")
        self.selection = ModelSelection(directory, tokenizer, monitor, mode)
        self.directory = directory
        self.evaluate = evaluate
        self.training_state = None  # a TrainingCheckpoint, set by `track_training_state`

    @property
    def monitor(self):
        """The key of `evaluate`'s result that selects `best`, or None."""
        return self.selection.monitor

    @property
    def history(self):
        """Each finished epoch's results (logs and `evaluate`'s metrics), JSON-ready."""
        return self.selection.history

    @property
    def best_score(self):
        """The best `monitor` value so far, or None."""
        return self.selection.best_score

    @property
    def best_epoch(self):
        """The 0-based epoch of `best_score`, or None."""
        return self.selection.best_epoch

    @property
    def training_state_directory(self):
        """`directory/training_state`: the resumable state `finetune` saves and resumes from."""
        return os.path.join(self.directory, TRAINING_STATE_DIRNAME)

    def track_training_state(self, steps_per_epoch, settings):
        """Also save the resumable training state at every epoch end (after `last/` and `best/`).

        Args:
            steps_per_epoch: int. Batches per epoch (the state's step is `(epoch + 1) * steps_per_epoch`).
            settings: dict. JSON values a resumed run must match (batch size, seed, epochs, ...).
        """
        from keras_bert_impl.training.callbacks import TrainingCheckpoint

        self.training_state = TrainingCheckpoint(self.training_state_directory, steps_per_epoch, keep=1,
                                                 extra_state={"settings": dict(settings)})

    def on_epoch_end(self, epoch, logs=None):
        results = {"epoch": epoch + 1, **{key: float(value) for key, value in (logs or {}).items()}}
        if self.evaluate is not None:
            results.update(self.evaluate(self.model))
        self.selection.add_epoch(self.model, epoch, results)
        if self.training_state is not None:
            # Last: a state for epoch e promises that last/ and best/ already reflect epoch e.
            self.training_state.extra_state["finetuning"] = self.selection.progress()
            self.training_state.set_model(self.model)
            self.training_state.on_epoch_end(epoch, logs)


def finetuning_settings(epochs, steps_per_epoch, batch_size, seed, num_examples, length_bucketing, bucket_width):
    """The settings a resumed run must share with the run that saved the state, as JSON values.

    Args:
        epochs: int. Total epochs of the run.
        steps_per_epoch: int. Batches per epoch.
        batch_size: int.
        seed: int. Data order seed.
        num_examples: int. Training rows.
        length_bucketing: bool.
        bucket_width: int.

    Returns:
        dict.
    """
    return {"epochs": int(epochs), "steps_per_epoch": int(steps_per_epoch), "batch_size": int(batch_size),
            "seed": int(seed), "num_examples": int(num_examples), "length_bucketing": bool(length_bucketing),
            "bucket_width": int(bucket_width)}


def restore_finetuning_state(model, checkpoint, settings):
    """Restore the last saved training state of `checkpoint`'s run into `model` and `checkpoint`, if any.

    Restores the weights, optimizer variables (step, hence learning rate; Adam moments), dropout RNG states
    and the best-so-far bookkeeping of the last finished epoch.

    Args:
        model: the compiled task model.
        checkpoint: `FinetuningCheckpoint` whose `training_state_directory` may hold a state.
        settings: dict. This run's `finetuning_settings`.

    Returns:
        int: the number of finished epochs to continue after (0 when there is no saved state).

    Raises:
        ValueError: the saved state comes from a run with other settings; the message names them.
    """
    from keras_bert_impl.training.callbacks import (
        changed_settings, latest_training_checkpoint, restore_training_checkpoint,
    )

    found = latest_training_checkpoint(checkpoint.training_state_directory)
    if found is None:
        return 0
    path, state = found
    different = changed_settings(state.get("settings", {}), settings)
    if different:
        details = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in sorted(different.items()))
        raise ValueError(
            f"{checkpoint.training_state_directory} holds the state of a run with other settings ({details}); "
            f"rerun with the same settings to resume, or use another output directory (or delete that "
            f"folder) to start over."
        )
    restore_training_checkpoint(model, path)
    checkpoint.selection.restore_progress(state.get("finetuning", {}))
    initial_epoch = int(state["epoch"])
    logger.info("Resuming fine-tuning after epoch %d of %d (step %d) from %s", initial_epoch, settings["epochs"],
                state["step"], path)
    return initial_epoch
