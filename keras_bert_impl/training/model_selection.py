"""Which models a fine-tuning run keeps: `last/` after every epoch, and `best/` when the monitored score
improves, each a complete `save_pretrained` directory (what `--init-checkpoint` and `from_pretrained` read)."""

import logging
import os

from keras_bert_impl.training.finetuning_outputs import json_ready, save_finetuned

logger = logging.getLogger(__name__)


class ModelSelection:
    """Saves `directory/last` for every epoch and `directory/best` for the best one by `monitor`.

    Each directory is complete or absent (written atomically) and holds the `save_pretrained` files, the
    tokenizer and `eval_results.json`.

    Args:
        directory: str. Output directory.
        tokenizer: `BertTokenizer` or None. Saved with the model. Defaults to None.
        monitor: str or None. Key of the epoch results that selects `best`; None saves `last` only.
            Defaults to None.
        mode: str. "max" or "min": which direction of `monitor` is better. Defaults to "max".

    Attributes: `history` (a list of each epoch's results), `best_score`, `best_epoch` (0-based).
    """

    def __init__(self, directory, tokenizer=None, monitor=None, mode="max"):
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}.")
        self.directory = directory
        self.tokenizer = tokenizer
        self.monitor = monitor
        self.mode = mode
        self.history = []
        self.best_score = None
        self.best_epoch = None

    def _improved(self, score):
        if self.best_score is None:
            return True
        return score > self.best_score if self.mode == "max" else score < self.best_score

    def add_epoch(self, model, epoch, results):
        """Record an epoch's `results`, save `model` as `last/`, and as `best/` when `monitor` improved.

        Args:
            model: a task model with `save_pretrained`.
            epoch: int. 0-based epoch.
            results: dict. The epoch's logs and evaluation results (with `monitor` when one is set).
        """
        self.history.append(json_ready(results))
        save_finetuned(model, os.path.join(self.directory, "last"), self.tokenizer, results)
        if self.monitor is None:
            return
        if self.monitor not in results:
            raise KeyError(f"monitor {self.monitor!r} is not among the epoch's results {sorted(results)}.")
        score = float(results[self.monitor])
        if self._improved(score):
            self.best_score, self.best_epoch = score, epoch
            save_finetuned(model, os.path.join(self.directory, "best"), self.tokenizer, results)
            logger.info("Epoch %d: %s %.4f, the best so far; saved %s/best.", epoch + 1, self.monitor, score,
                        self.directory)

    def progress(self):
        """The JSON-ready selection state: `history`, `best_score`, `best_epoch`."""
        return {"history": self.history, "best_score": self.best_score, "best_epoch": self.best_epoch}

    def restore_progress(self, progress):
        """Set `history`, `best_score`, `best_epoch` from a `progress()` dict (a resumed run).

        Args:
            progress: dict. What `progress()` returned.
        """
        self.history = list(progress.get("history", []))
        self.best_score = progress.get("best_score")
        self.best_epoch = progress.get("best_epoch")
