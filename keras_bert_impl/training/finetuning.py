"""Fine-tuning glue of `keras-bert finetune-classifier` / `finetune-squad` (the examples use `save_finetuned`).

The pieces, each usable alone:

- `load_tokenizer`: the vocabulary from `--vocab` or from the initial checkpoint's directory.
- `build_classifier` / `build_question_answerer`: from any checkpoint `from_pretrained` reads, or a preset
  (random weights, from scratch).
- `training_dataset` / `predict_logits`: fixed padding or length bucketing (`data.length_bucketing`).
- `compile_for_finetuning`: `AdamWeightDecay` + `WarmupLinearDecay` (the original recipe), `jit_compile`.
- `FinetuningCheckpoint`: at each epoch end, evaluate and save `last/` and `best/` atomically, each a
  `save_pretrained` directory with the tokenizer beside (what `--init-checkpoint` and `from_pretrained` read).
- `fit_finetuning`: `model.fit` that also saves a resumable training state each epoch (`training_state/`:
  weights, optimizer, RNG, epoch, best-so-far) and, run again on the same output directory, resumes from it on
  the same batches (epoch `e`'s order is fixed by `(seed, e)`).
- `check_model_inputs`: empty data, over-long rows and out-of-range ids named before the compiled steps.
- `classification_scores`, `write_classification_predictions`, `evaluate_squad_predictions`: the official
  metrics (GLUE; SQuAD v1.1 / v2.0 with automatic null-threshold tuning) and prediction files.

TensorFlow at the data edge: datasets are `tf.data` pipelines (they feed every Keras backend).
"""

import logging
import os

import keras
import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_directory, atomic_write_json, atomic_write_text

logger = logging.getLogger(__name__)

EVAL_RESULTS_FILENAME = "eval_results.json"
CLASSIFICATION_PREDICTIONS_FILENAME = "predictions.tsv"
TRAINING_STATE_DIRNAME = "training_state"


# -- models and tokenizer -----------------------------------------------------------------------------------


def load_tokenizer(vocab=None, checkpoint=None, lowercase=None):
    """The `BertTokenizer` of a fine-tuning run.

    Args:
        vocab: str or None. A `vocab.txt` file or a directory holding one (and maybe `tokenizer_config.json`).
            Defaults to None: the checkpoint's directory.
        checkpoint: str or None. The initial checkpoint (directory or original-TF prefix). Defaults to None.
        lowercase: bool or None. Override the tokenizer config's casing. Defaults to None.

    Returns:
        `BertTokenizer`.
    """
    from keras_bert_impl.tokenization import BertTokenizer

    overrides = {} if lowercase is None else {"lowercase": lowercase}
    source = vocab
    if source is None and checkpoint is not None:
        source = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(os.path.abspath(checkpoint))
    if source is None:
        raise ValueError("No vocabulary: pass a vocab.txt (or its directory), or a checkpoint directory holding one.")
    if os.path.isfile(source):
        return BertTokenizer(source, **({"lowercase": True} | overrides))
    if not os.path.isfile(os.path.join(source, "vocab.txt")):
        raise FileNotFoundError(f"No vocab.txt in {source!r}; pass the vocabulary explicitly (--vocab).")
    return BertTokenizer.from_pretrained(source, **overrides)


def _check_vocabulary_fits(model, tokenizer):
    size = model.backbone.vocabulary_size
    if tokenizer.vocabulary_size() > size:
        raise ValueError(
            f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model's embedding table has {size} "
            f"rows; use the vocabulary the checkpoint was trained with."
        )
    if tokenizer.vocabulary_size() < size:
        # Legal (some checkpoints pad the table to a multiple of 8), but usually a different vocabulary.
        logger.warning("The tokenizer has %d tokens but the model's embedding table has %d rows; unless the "
                       "table is padded, this is not the checkpoint's vocabulary.", tokenizer.vocabulary_size(), size)


def check_model_inputs(model, inputs, what="inputs"):
    """Raise a ValueError naming the problem when packed NumPy `inputs` cannot go through `model`.

    Compiled steps (`fit`, `predict`) cannot check values: an id beyond the embedding table gathers garbage on
    GPUs and JAX, and an empty array fails deep inside Keras. Checked here, once, before the data is batched:
    at least one row; `(N, T)` arrays with `T` within the position table; `token_ids` in
    `[0, vocabulary_size)` and `segment_ids` in `[0, num_segments)`.

    Args:
        model: a task model (with `backbone`) or a `BertBackbone`.
        inputs: dict of NumPy arrays `token_ids`, `segment_ids`, `padding_mask` `(N, T)`.
        what: str. Names the data in the message (e.g. "training data"). Defaults to "inputs".
    """
    from keras_bert_impl.layers.input_validation import check_token_ids_in_range

    backbone = getattr(model, "backbone", model)
    missing = [key for key in ("token_ids", "segment_ids", "padding_mask") if key not in inputs]
    if missing:
        raise ValueError(f"The {what} lack {missing}; got keys {sorted(inputs)}.")
    token_ids = np.asarray(inputs["token_ids"])
    if token_ids.ndim != 2 or token_ids.shape[0] == 0:
        raise ValueError(f"The {what} are empty or not (N, T) arrays: token_ids has shape {token_ids.shape}; "
                         f"give at least one example.")
    if token_ids.shape[1] > backbone.max_sequence_length:
        raise ValueError(f"The {what} are {token_ids.shape[1]} tokens long but the model's position table has "
                         f"{backbone.max_sequence_length} rows; pack to at most that length (--max-seq-length).")
    for key in ("segment_ids", "padding_mask"):
        if np.shape(inputs[key]) != token_ids.shape:
            raise ValueError(f"The {what}: {key} has shape {np.shape(inputs[key])} but token_ids {token_ids.shape}.")
    check_token_ids_in_range(token_ids, backbone.vocabulary_size, f"{what} token_ids")
    check_token_ids_in_range(np.asarray(inputs["segment_ids"]), backbone.num_segments, f"{what} segment_ids")


def _dropout_overrides(backbone_dropout):
    """Backbone config overrides setting hidden and attention dropout to `backbone_dropout` (none for None)."""
    if backbone_dropout is None:
        return {}
    return {"dropout": backbone_dropout, "attention_dropout": backbone_dropout}


def _preset_backbone(preset, tokenizer, max_sequence_length, dropout):
    from keras_bert_impl.models.backbone import BertBackbone

    return BertBackbone.from_preset(preset, vocabulary_size=tokenizer.vocabulary_size(),
                                    max_sequence_length=max_sequence_length, **_dropout_overrides(dropout))


def build_classifier(tokenizer, num_classes, labels=None, init_checkpoint=None, preset=None,
                     max_sequence_length=512, classifier_dropout=None, backbone_dropout=None):
    """A `BertClassifier` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        num_classes: int or None. Classes (1 = regression); None takes the checkpoint head's.
        labels: sequence of str or None. Class names saved with the model. Defaults to None.
        init_checkpoint: str or None. Any checkpoint `BertClassifier.from_pretrained` reads. Defaults to None.
        preset: str or None. `BertBackbone` preset for training from scratch (used without a checkpoint).
            Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        classifier_dropout: float or None. Head dropout; None: the checkpoint's or 0.1. Defaults to None.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).

    Returns:
        `BertClassifier`.
    """
    from keras_bert_impl.models.classifier import DEFAULT_DROPOUT, BertClassifier

    if init_checkpoint:
        model = BertClassifier.from_pretrained(init_checkpoint, num_classes=num_classes, labels=labels,
                                               classifier_dropout=classifier_dropout,
                                               **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertClassifier(
            _preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout), num_classes,
            dropout=DEFAULT_DROPOUT if classifier_dropout is None else classifier_dropout, labels=labels,
        )
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model


def build_question_answerer(tokenizer, init_checkpoint=None, preset=None, max_sequence_length=512,
                            backbone_dropout=None):
    """A `BertQuestionAnswerer` from a checkpoint (`init_checkpoint`) or a randomly initialised preset.

    Args:
        tokenizer: `BertTokenizer`. Checked against the embedding table.
        init_checkpoint: str or None. Any checkpoint `BertQuestionAnswerer.from_pretrained` reads. Defaults
            to None.
        preset: str or None. `BertBackbone` preset for training from scratch. Defaults to None.
        max_sequence_length: int. Position table of a preset model. Defaults to 512.
        backbone_dropout: float or None. Encoder dropout override. Defaults to None (the config's).

    Returns:
        `BertQuestionAnswerer`.
    """
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    if init_checkpoint:
        model = BertQuestionAnswerer.from_pretrained(init_checkpoint, **_dropout_overrides(backbone_dropout))
    elif preset:
        model = BertQuestionAnswerer(_preset_backbone(preset, tokenizer, max_sequence_length, backbone_dropout))
    else:
        raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
    _check_vocabulary_fits(model, tokenizer)
    return model


# -- data and training --------------------------------------------------------------------------------------


def batches_per_epoch(inputs, batch_size, length_bucketing=True, bucket_width=32):
    """The number of batches one epoch of `training_dataset` yields (its `steps_per_epoch`).

    Args:
        inputs: dict of NumPy arrays `(N, T)`.
        batch_size: int.
        length_bucketing: bool. Defaults to True.
        bucket_width: int. Defaults to 32.

    Returns:
        int.
    """
    from keras_bert_impl.data.length_bucketing import bucketed_batch_count, sequence_lengths

    if length_bucketing:
        return bucketed_batch_count(sequence_lengths(inputs["padding_mask"]), batch_size,
                                    int(np.shape(inputs["token_ids"])[1]), bucket_width)
    return -(-len(inputs["token_ids"]) // batch_size)


def training_dataset(inputs, labels, batch_size, length_bucketing=True, bucket_width=32, seed=None, epochs=None,
                     initial_epoch=0):
    """A shuffled `tf.data.Dataset` of `(x, y)` batches and the number of batches per epoch.

    Args:
        inputs: dict of NumPy arrays `(N, T)` (`token_ids`, `segment_ids`, `padding_mask`).
        labels: array or dict of arrays `(N,)`.
        batch_size: int.
        length_bucketing: bool. Bucket rows by length and pad each batch to its bucket
            (`data.length_bucketing`); False: every batch is `(B, T)`. Defaults to True.
        bucket_width: int. Defaults to 32.
        seed: int or None. Shuffle seed (required with `epochs`). Defaults to None.
        epochs: int or None. Return one stream of the batches of epochs `initial_epoch .. epochs - 1`, epoch
            `e` in an order fixed by `(seed, e)` (`length_bucketing.epoch_order`), for
            `fit(..., steps_per_epoch=steps, initial_epoch=initial_epoch, epochs=epochs)`: a resumed run sees
            the batches an uninterrupted one sees. None: one epoch that tf.data reshuffles on every iteration.
            Defaults to None.
        initial_epoch: int. First epoch of the stream when `epochs` is given. Defaults to 0.

    Returns:
        `(dataset, steps_per_epoch)`. The dataset's `cardinality()` is its number of batches (`steps_per_epoch`,
        times the epochs of the stream when `epochs` is given), so `fit`'s progress bar knows its length.
    """
    import tensorflow as tf

    from keras_bert_impl.data.length_bucketing import length_bucketed_dataset, rows_by_epoch

    num_rows = len(inputs["token_ids"])
    if num_rows == 0:
        raise ValueError("No training examples: the training data is empty after reading and packing.")
    steps = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    if length_bucketing:
        dataset = length_bucketed_dataset(inputs, labels, batch_size=batch_size, bucket_width=bucket_width,
                                          shuffle=True, seed=seed, epochs=epochs, initial_epoch=initial_epoch)
        # tf.data cannot count bucketed batches (cardinality UNKNOWN); `batches_per_epoch` can. A finite stream:
        # one epoch, or epochs `initial_epoch .. epochs - 1` (`length_bucketed_dataset` checked the range).
        batches = steps if epochs is None else steps * (int(epochs) - int(initial_epoch))
        return dataset.apply(tf.data.experimental.assert_cardinality(batches)), steps
    if epochs is None:
        dataset = tf.data.Dataset.from_tensor_slices((inputs, labels))
        dataset = dataset.shuffle(num_rows, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        epoch_rows = rows_by_epoch((inputs, labels), seed, epochs, initial_epoch) or [
            tf.data.Dataset.from_tensor_slices((inputs, labels)).take(0)]
        dataset = epoch_rows[0].batch(batch_size)
        for more in epoch_rows[1:]:
            dataset = dataset.concatenate(more.batch(batch_size))
    return dataset.prefetch(tf.data.AUTOTUNE), steps


def predict_logits(model, inputs, batch_size=64, length_bucketing=True, bucket_width=32):
    """The model's outputs on `inputs`, in row order, with or without length bucketing.

    Returns:
        NumPy array (classifier logits `(N, C)`) or dict of arrays (span logits `(N, T)`).
    """
    from keras_bert_impl.data.length_bucketing import predict_with_length_buckets

    check_model_inputs(model, inputs, "prediction inputs")
    if length_bucketing:
        return predict_with_length_buckets(model, inputs, batch_size=batch_size, bucket_width=bucket_width)
    return model.predict(inputs, batch_size=batch_size, verbose=0)


def compile_for_finetuning(model, learning_rate, total_steps, warmup_fraction=0.1, weight_decay=0.01,
                           optimizer_name="adamw_original", schedule_variant="original", jit_compile=True):
    """Compile `model` with the BERT fine-tuning optimizer and its default task loss.

    `AdamWeightDecay` (no bias correction, epsilon 1e-6, decay 0.01 except LayerNorm and biases, clip 1.0)
    with `WarmupLinearDecay` (linear warmup over `warmup_fraction` of the updates, then linear decay to 0),
    as `run_classifier.py` / `run_squad.py`.

    Args:
        model: `BertClassifier` or `BertQuestionAnswerer`.
        learning_rate: float. Peak learning rate (the paper: 5e-5, 3e-5 or 2e-5).
        total_steps: int. Optimizer updates of the whole run.
        warmup_fraction: float. Defaults to 0.1.
        weight_decay: float. Defaults to 0.01.
        optimizer_name: str. See `optimization.create_optimizer`. Defaults to "adamw_original".
        schedule_variant: str. "original" or "huggingface". Defaults to "original".
        jit_compile: bool. XLA on TensorFlow and JAX; torch runs eagerly either way
            (`jit_compile.xla_jit_compile`). Defaults to True.

    Returns:
        The optimizer.
    """
    from keras_bert_impl.optimization import create_optimizer
    from keras_bert_impl.training.jit_compile import xla_jit_compile

    optimizer = create_optimizer(name=optimizer_name, learning_rate=learning_rate, total_steps=total_steps,
                                 warmup_fraction=warmup_fraction, weight_decay=weight_decay,
                                 schedule_variant=schedule_variant)
    model.compile(optimizer=optimizer, jit_compile=xla_jit_compile(jit_compile))
    return optimizer


def save_finetuned(model, directory, tokenizer=None, results=None):
    """Write a model directory atomically: `save_pretrained` files, the tokenizer, and `eval_results.json`.

    Args:
        model: a task model with `save_pretrained`.
        directory: str. Replaced only when complete.
        tokenizer: `BertTokenizer` or None. Its `vocab.txt` + `tokenizer_config.json` go beside the weights.
            Defaults to None.
        results: dict or None. Evaluation results to store. Defaults to None.
    """
    with atomic_directory(directory) as tmp:
        model.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        if results is not None:
            atomic_write_json(os.path.join(tmp, EVAL_RESULTS_FILENAME), _json_ready(results))


def _json_ready(results):
    return {key: (float(value) if isinstance(value, (int, float, np.floating, np.integer)) else value)
            for key, value in results.items()}


class FinetuningCheckpoint(keras.callbacks.Callback):
    """At each epoch end: evaluate, save `directory/last`, and `directory/best` when the score improves.

    Each directory is complete or absent (written atomically) and holds the `save_pretrained` files, the
    tokenizer and `eval_results.json`, so it can be passed to `from_pretrained` / `--init-checkpoint`.

    Under `fit_finetuning` it also saves, after `last/` and `best/`, the resumable training state into
    `directory/training_state/` (`training.callbacks.TrainingCheckpoint`: weights, optimizer variables,
    dropout RNG states, the epoch, and this callback's `history` / `best_score` / `best_epoch`), from which an
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
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}.")
        if monitor is not None and evaluate is None:
            raise ValueError("`monitor` needs an `evaluate` function to score each epoch.")
        self.directory = directory
        self.tokenizer = tokenizer
        self.evaluate = evaluate
        self.monitor = monitor
        self.mode = mode
        self.history = []
        self.best_score = None
        self.best_epoch = None
        self.training_state = None  # a TrainingCheckpoint, set by `track_training_state`

    @property
    def training_state_directory(self):
        """`directory/training_state`: the resumable state `fit_finetuning` saves and resumes from."""
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

    def progress(self):
        """This callback's JSON-ready state: `history`, `best_score`, `best_epoch`."""
        return {"history": self.history, "best_score": self.best_score, "best_epoch": self.best_epoch}

    def restore_progress(self, progress):
        """Set `history`, `best_score`, `best_epoch` from a `progress()` dict (a resumed run)."""
        self.history = list(progress.get("history", []))
        self.best_score = progress.get("best_score")
        self.best_epoch = progress.get("best_epoch")

    def _improved(self, score):
        if self.best_score is None:
            return True
        return score > self.best_score if self.mode == "max" else score < self.best_score

    def on_epoch_end(self, epoch, logs=None):
        results = {"epoch": epoch + 1, **{key: float(value) for key, value in (logs or {}).items()}}
        if self.evaluate is not None:
            results.update(self.evaluate(self.model))
        self.history.append(_json_ready(results))
        save_finetuned(self.model, os.path.join(self.directory, "last"), self.tokenizer, results)
        if self.monitor is not None:
            if self.monitor not in results:
                raise KeyError(f"monitor {self.monitor!r} is not among the epoch's results {sorted(results)}.")
            score = float(results[self.monitor])
            if self._improved(score):
                self.best_score, self.best_epoch = score, epoch
                save_finetuned(self.model, os.path.join(self.directory, "best"), self.tokenizer, results)
                logger.info("Epoch %d: %s %.4f, the best so far; saved %s/best.", epoch + 1, self.monitor, score,
                            self.directory)
        if self.training_state is not None:
            # Last: a state for epoch e promises that last/ and best/ already reflect epoch e.
            self.training_state.extra_state["finetuning"] = self.progress()
            self.training_state.set_model(self.model)
            self.training_state.on_epoch_end(epoch, logs)


def fit_finetuning(model, inputs, labels, checkpoint, epochs, batch_size, length_bucketing=True, bucket_width=32,
                   seed=0, resume=True, callbacks=(), verbose="auto"):
    """`model.fit` for fine-tuning that survives interruption: it resumes from `checkpoint`'s training state.

    Every epoch end saves `last/`, `best/` and then the training state (`FinetuningCheckpoint`). Called again
    with the same output directory and settings after a crash or a kill, it restores the weights, optimizer
    variables (step, hence learning rate; Adam moments), dropout RNG states and the best-so-far bookkeeping of
    the last finished epoch, and continues with the next epoch on the same batches (each epoch's order is
    fixed by `(seed, epoch)`): the final weights equal an uninterrupted run's (bit for bit on TensorFlow and
    JAX on one device; torch draws dropout from its global generator). Work done in the interrupted epoch is
    redone. A NaN or infinite loss stops training (`callbacks.NonFiniteLossGuard`) naming the step and the
    state to resume from.

    Args:
        model: a compiled task model (`compile_for_finetuning`), its optimizer's schedule sized for
            `epochs * steps_per_epoch` updates.
        inputs: dict of NumPy arrays `(N, T)`.
        labels: array or dict of arrays `(N,)`.
        checkpoint: `FinetuningCheckpoint` whose `directory` is the run's output directory.
        epochs: int. Total epochs of the run (not the ones left).
        batch_size: int.
        length_bucketing: bool. See `training_dataset`. Defaults to True.
        bucket_width: int. Defaults to 32.
        seed: int. Data order seed. Defaults to 0.
        resume: bool. Continue from `checkpoint.training_state_directory` when it holds a state; False starts
            over (the old state is replaced at the first epoch end). Defaults to True.
        callbacks: sequence of `keras.callbacks.Callback`. More callbacks for `fit`. Defaults to ().
        verbose: "auto", 0, 1 or 2. Passed to `fit`. Defaults to "auto".

    Returns:
        int: the epoch training started from (0 for a fresh run; `epochs` when the run had already finished
        and nothing was trained).

    Raises:
        ValueError: the saved state comes from a run with other settings (batch size, seed, epochs, data
            size, bucketing); the message names them.
    """
    from keras_bert_impl.training.callbacks import (
        NonFiniteLossGuard,
        latest_training_checkpoint,
        restore_training_checkpoint,
    )

    if getattr(model, "optimizer", None) is None:
        raise ValueError("Compile the model (compile_for_finetuning) before fit_finetuning.")
    check_model_inputs(model, inputs, "training data")
    steps_per_epoch = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    settings = {"epochs": int(epochs), "steps_per_epoch": int(steps_per_epoch), "batch_size": int(batch_size),
                "seed": int(seed), "num_examples": int(len(inputs["token_ids"])),
                "length_bucketing": bool(length_bucketing), "bucket_width": int(bucket_width)}
    initial_epoch = 0
    found = latest_training_checkpoint(checkpoint.training_state_directory) if resume else None
    if found is not None:
        path, state = found
        saved = state.get("settings", {})
        different = {key: (saved.get(key), value) for key, value in settings.items() if saved.get(key) != value}
        if different:
            details = ", ".join(f"{key} {old} -> {new}" for key, (old, new) in sorted(different.items()))
            raise ValueError(
                f"{checkpoint.training_state_directory} holds the state of a run with other settings ({details}); "
                f"rerun with the same settings to resume, or use another output directory (or delete that "
                f"folder) to start over."
            )
        restore_training_checkpoint(model, path)
        checkpoint.restore_progress(state.get("finetuning", {}))
        initial_epoch = int(state["epoch"])
        logger.info("Resuming fine-tuning after epoch %d of %d (step %d) from %s", initial_epoch, epochs,
                    state["step"], path)
    checkpoint.track_training_state(steps_per_epoch, settings)
    if initial_epoch >= epochs:
        return initial_epoch
    dataset, _ = training_dataset(inputs, labels, batch_size, length_bucketing, bucket_width, seed, epochs=epochs,
                                  initial_epoch=initial_epoch)
    guard = NonFiniteLossGuard(checkpoint_directory=checkpoint.training_state_directory)
    model.fit(dataset, epochs=epochs, initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch,
              callbacks=[guard, checkpoint, *callbacks], verbose=verbose, shuffle=False)
    return initial_epoch


# -- evaluation and predictions ----------------------------------------------------------------------------


def classification_scores(labels, logits, task=None, regression=False):
    """The metrics of a classification or regression run.

    Args:
        labels: array `(N,)`. Gold class ids (float scores for regression).
        logits: array `(N, C)`. Model outputs (`(N, 1)` scores for regression).
        task: str or None. A GLUE task name: its official metrics (`metrics.glue_metrics`). Otherwise
            accuracy (plus F1 for two classes) or, for regression, Pearson and Spearman. Defaults to None.
        regression: bool. Defaults to False.

    Returns:
        dict metric name -> float.
    """
    from keras_bert_impl import metrics

    logits = np.asarray(logits)
    predictions = logits[:, 0] if regression else np.argmax(logits, axis=-1)
    if task is not None:
        return metrics.glue_metrics(task, labels, predictions)
    if regression:
        return {"pearson": metrics.pearson_correlation(labels, predictions),
                "spearman": metrics.spearman_correlation(labels, predictions)}
    scores = {"accuracy": metrics.accuracy(labels, predictions)}
    if logits.shape[-1] == 2:
        scores["f1"] = metrics.f1(labels, predictions)
    return scores


def classification_monitor(task=None, regression=False):
    """The metric of `classification_scores` that selects the best checkpoint: the GLUE task's first official
    metric, else "pearson" for regression and "accuracy" otherwise."""
    from keras_bert_impl.metrics import GLUE_TASK_METRICS

    if task is not None:
        key = task.lower().replace("-", "")
        if key not in GLUE_TASK_METRICS:
            raise ValueError(f"Unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_METRICS)}.")
        return GLUE_TASK_METRICS[key][0]
    return "pearson" if regression else "accuracy"


def write_classification_predictions(path, logits, label_vocabulary=None, regression=False):
    """Write `index<TAB>prediction` lines (GLUE's submission layout) atomically.

    Args:
        path: str. Output file.
        logits: array `(N, C)`.
        label_vocabulary: `LabelVocabulary` or None. Class names; None writes class ids. Defaults to None.
        regression: bool. Write the score. Defaults to False.
    """
    logits = np.asarray(logits)
    lines = ["index\tprediction"]
    for index, row in enumerate(logits):
        if regression:
            prediction = f"{float(row[0]):.6f}"
        else:
            class_id = int(np.argmax(row))
            prediction = label_vocabulary.id_to_label(class_id) if label_vocabulary is not None else str(class_id)
        lines.append(f"{index}\t{prediction}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def evaluate_squad_predictions(examples, features, start_logits, end_logits, dataset_json, output_dir=None,
                               version_2_with_negative=False, n_best_size=20, max_answer_length=30,
                               null_score_diff_threshold=None, tune_metric="f1"):
    """Decode SQuAD logits, score them with the official metrics, and write the prediction files.

    SQuAD v2.0 with `null_score_diff_threshold=None` tunes the threshold on this data
    (`squad.tune_null_threshold`) and reports the scores at the tuned threshold; give a number to use it as is
    (e.g. one tuned on dev, for test data).

    Args:
        examples: `SquadExamples` the features were built from.
        features: `SquadFeatures`.
        start_logits: array `(F, T)`.
        end_logits: array `(F, T)`.
        dataset_json: dict. The SQuAD JSON with gold answers (`squad_reader.load_squad_json`).
        output_dir: str or None. Where predictions.json, nbest_predictions.json, null_odds.json (v2.0) and
            eval_results.json go. Defaults to None (nothing written).
        version_2_with_negative: bool. SQuAD v2.0. Defaults to False.
        n_best_size: int. Defaults to 20.
        max_answer_length: int. Defaults to 30.
        null_score_diff_threshold: float or None. Defaults to None (tune on this data for v2.0).
        tune_metric: str. "f1" or "exact" for tuning. Defaults to "f1".

    Returns:
        dict: v1.1 `exact_match`, `f1`; v2.0 the official `evaluate_v2` keys plus `null_score_diff_threshold`.
    """
    from keras_bert_impl.squad import (
        decode_squad_predictions,
        evaluate_v1,
        evaluate_v2,
        tune_null_threshold,
        write_squad_predictions,
    )

    threshold = 0.0 if null_score_diff_threshold is None else null_score_diff_threshold
    decoded = decode_squad_predictions(
        examples, features, start_logits, end_logits, n_best_size=n_best_size,
        max_answer_length=max_answer_length, version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=threshold,
    )
    if version_2_with_negative:
        if null_score_diff_threshold is None:
            tuned = tune_null_threshold(dataset_json, decoded.best_non_null, decoded.null_odds, metric=tune_metric)
            decoded = decoded.with_null_threshold(tuned.threshold)
        results = dict(evaluate_v2(dataset_json, decoded.predictions, na_probs=decoded.null_odds))
        results["null_score_diff_threshold"] = decoded.null_score_diff_threshold
    else:
        results = dict(evaluate_v1(dataset_json, decoded.predictions))
    if output_dir is not None:
        write_squad_predictions(decoded, output_dir)
        atomic_write_json(os.path.join(output_dir, EVAL_RESULTS_FILENAME), _json_ready(results))
    return results
