"""Resumable fine-tuning (`fit_finetuning`), the fine-tuning recipe every `keras-bert finetune-*` command runs
(`FinetuningSettings` -> `finetune`), and the fine-tuning API in one namespace.

Each piece lives in the module named for it, and is importable from here too:

- `tokenizer_loading.load_tokenizer`: the vocabulary from `--vocab` or from the initial checkpoint's directory.
- `model_input_checks.check_model_inputs`: empty data, over-long rows and out-of-range ids named before the
  compiled steps.
- `finetuning_batches.training_dataset` / `batches_per_epoch` / `predict_logits`: fixed padding or length
  bucketing (`data.length_bucketing`).
- `finetuning_optimizer.compile_for_finetuning`: `AdamWeightDecay` + `WarmupLinearDecay` (the original
  recipe), `jit_compile`.
- `callbacks.FinetuningCheckpoint`: at each epoch end, evaluate, keep `last/` and `best/` (each a
  `save_pretrained` directory with the tokenizer beside) and save the resumable training state.
- `finetuning_metrics.classification_scores` / `classification_monitor` / `evaluate_squad_predictions`: the
  official metrics (GLUE; SQuAD v1.1 / v2.0 with automatic null-threshold tuning).
- `finetuning_outputs.save_finetuned` / `write_classification_predictions`: model directories and prediction
  files, written atomically.
- `ModelSource`, `FinetuningSettings` and `finetune` (here): where the model comes from, the run's training
  settings, and the recipe on them (optimizer and schedule, `last/` / `best/`, resumable `fit_finetuning`, the
  lines that say what it trains and what it picked).
- `fit_finetuning` (here): `model.fit` that also saves a resumable training state each epoch
  (`training_state/`: weights, optimizer, RNG, epoch, best-so-far) and, run again on the same output
  directory, resumes from it on the same batches (epoch `e`'s order is fixed by `(seed, e)`); the state is
  removed when the run finishes, unless kept (`keep_training_state`).
"""

import dataclasses
import inspect
import logging

# The names callers use as `finetuning.<name>` (the CLI, examples and tests); defined in the modules above.
from keras_bert_impl.training.finetuning_batches import batches_per_epoch, predict_logits, training_dataset
from keras_bert_impl.training.finetuning_metrics import (
    classification_monitor,
    classification_scores,
    evaluate_squad_predictions,
)
from keras_bert_impl.training.finetuning_optimizer import compile_for_finetuning
from keras_bert_impl.training.finetuning_outputs import (
    EVAL_RESULTS_FILENAME,
    save_finetuned,
    write_classification_predictions,
)
from keras_bert_impl.training.callbacks import FinetuningCheckpoint
from keras_bert_impl.training.model_input_checks import check_model_inputs
from keras_bert_impl.training.tokenizer_loading import load_tokenizer

logger = logging.getLogger(__name__)

__all__ = [
    "EVAL_RESULTS_FILENAME",
    "FinetuningCheckpoint",
    "FinetuningSettings",
    "ModelSource",
    "batches_per_epoch",
    "check_model_inputs",
    "classification_monitor",
    "classification_scores",
    "compile_for_finetuning",
    "evaluate_squad_predictions",
    "finetune",
    "fit_finetuning",
    "load_tokenizer",
    "predict_logits",
    "save_finetuned",
    "training_dataset",
    "write_classification_predictions",
]


def fit_finetuning(model, inputs, labels, checkpoint, epochs, batch_size, length_bucketing=True, bucket_width=32,
                   seed=0, resume=True, callbacks=(), verbose="auto"):
    """`model.fit` for fine-tuning that survives interruption: it resumes from `checkpoint`'s training state.

    Every epoch end saves `last/`, `best/` and then the training state (`FinetuningCheckpoint`). Called again
    with the same output directory and settings after a crash or a kill, it restores the weights, optimizer
    variables (step, hence learning rate; Adam moments), dropout RNG states and the best-so-far bookkeeping of
    the last finished epoch, and continues with the next epoch on the same batches (each epoch's order is
    fixed by `(seed, epoch)`): the final weights equal an uninterrupted run's (bit for bit on TensorFlow and
    JAX on one device; torch draws dropout from its global generator). Work done in the interrupted epoch is
    redone. A NaN or infinite loss stops training naming the step and the state to resume from. Once the last
    epoch is saved the state is removed (`FinetuningCheckpoint.finish`) unless the checkpoint keeps it; run
    again, a finished run trains nothing and restores `last/` (or, kept, the state).

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
        resume: bool. Continue from `checkpoint.backup_dir` when it holds a state; False starts over (the old
            state is replaced at the first epoch end). Defaults to True.
        callbacks: sequence of `keras.callbacks.Callback`. More callbacks for `fit`. Defaults to ().
        verbose: "auto", 0, 1 or 2. Passed to `fit`. Defaults to "auto".

    Returns:
        int: the epoch training started from (0 for a fresh run; `epochs` when the run had already finished
        and nothing was trained).

    Raises:
        ValueError: the saved state comes from a run with other settings (batch size, seed, epochs, data
            size, bucketing); the message names them.
    """
    if getattr(model, "optimizer", None) is None:
        raise ValueError("Compile the model (compile_for_finetuning) before fit_finetuning.")
    check_model_inputs(model, inputs, "training data")
    steps_per_epoch = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    # What a resumed run must share with the saved one; the ones given first, so the message names those.
    checkpoint.steps_per_epoch, checkpoint.settings = steps_per_epoch, dict(
        batch_size=batch_size, seed=seed, epochs=epochs, length_bucketing=length_bucketing,
        bucket_width=bucket_width, num_examples=len(inputs["token_ids"]), steps_per_epoch=steps_per_epoch)
    state = checkpoint.restore(model) if resume else None
    initial_epoch = state["epoch"] if state else 0
    if state:
        logger.info("Resuming fine-tuning after epoch %d of %d (step %d) from %s", initial_epoch, epochs,
                    state["step"], state["restored_from"])
    if initial_epoch < epochs:
        dataset, _ = training_dataset(inputs, labels, batch_size, length_bucketing, bucket_width, seed,
                                      epochs=epochs, initial_epoch=initial_epoch)
        model.fit(dataset, epochs=epochs, initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch,
                  callbacks=[checkpoint, *callbacks], verbose=verbose, shuffle=False)
    checkpoint.finish()
    return initial_epoch


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """Where a fine-tuning run's model and vocabulary come from.

    Args:
        init_checkpoint: str or None. Any checkpoint `from_pretrained` reads (ours, Hugging Face, original TF).
            Defaults to None.
        preset: str or None. Train from scratch: a `BertBackbone` size ("tiny" ... "large"), random weights.
            Defaults to None.
        vocab: str or None. `vocab.txt` or its directory; None: the checkpoint's directory. Defaults to None.
        cased: bool. Keep case; False: the tokenizer config's casing. Defaults to False.
    """

    init_checkpoint: str = None
    preset: str = None
    vocab: str = None
    cased: bool = False

    def tokenizer(self):
        """The run's `BertTokenizer` (`load_tokenizer`)."""
        return load_tokenizer(self.vocab, self.init_checkpoint, lowercase=False if self.cased else None)

    def build(self, task_class, tokenizer, preprocessor=None, max_sequence_length=512, backbone_dropout=None,
              **head):
        """The run's task model: `task_class.from_pretrained(init_checkpoint)`, or from scratch a backbone of size
        `preset` sized to `tokenizer` under a new head; checked against `tokenizer`.

        Args:
            task_class: a `BertTask` subclass, e.g. `BertClassifier`.
            tokenizer: `BertTokenizer`. A vocabulary larger than the embedding table is refused in one line; a
                smaller one is allowed with a WARNING (some checkpoints pad the table).
            preprocessor: a preprocessor or None. Attached and saved with the model (the run's packing length,
                windows, null threshold); None: a checkpoint's own, if any. Defaults to None.
            max_sequence_length: int. Position table of a model from scratch. Defaults to 512.
            backbone_dropout: float or None. The encoder's hidden and attention dropout; None: the config's.
                Defaults to None.
            **head: the head's constructor arguments (e.g. `num_classes`, `labels`, `dropout`); a checkpoint's
                head fills those that are None.

        Returns:
            The `task_class` model.

        Example:
            model = ModelSource(preset="tiny").build(BertClassifier, tokenizer, num_classes=2)
        """
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.models.task import AUTO

        overrides = {} if backbone_dropout is None else {"dropout": backbone_dropout,
                                                          "attention_dropout": backbone_dropout}
        if self.init_checkpoint:
            names = inspect.signature(task_class.pretrained_head_arguments).parameters
            if "dropout" in head and "dropout" not in names:  # the classifiers call it classifier_dropout there
                head["classifier_dropout"] = head.pop("dropout")
            attached = AUTO if preprocessor is None else preprocessor
            model = task_class.from_pretrained(self.init_checkpoint, preprocessor=attached, **head, **overrides)
        elif self.preset:
            backbone = BertBackbone.from_scratch(self.preset, vocabulary_size=tokenizer.vocabulary_size(),
                                                 max_sequence_length=max_sequence_length, **overrides)
            model = task_class(backbone, preprocessor=preprocessor,
                               **{name: value for name, value in head.items() if value is not None})
        else:
            raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
        table = model.backbone.vocabulary_size
        if tokenizer.vocabulary_size() > table:
            raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model's embedding table "
                             f"has {table} rows; use the vocabulary the checkpoint was trained with.")
        if tokenizer.vocabulary_size() < table:
            logger.warning("The tokenizer has %d tokens but the model's embedding table has %d rows; unless the "
                           "table is padded, this is not the checkpoint's vocabulary.", tokenizer.vocabulary_size(),
                           table)
        return model


@dataclasses.dataclass(frozen=True)
class FinetuningSettings:
    """How a fine-tuning run trains and where it writes: the settings every `finetune-*` command shares.

    Args:
        output_dir: str. Where `last/`, `best/`, `training_state/` (while the run is unfinished) and the results
            go.
        epochs: int. Passes over the training data (0: train nothing). Defaults to 3.
        batch_size: int. Training rows per update. Defaults to 32.
        eval_batch_size: int. Rows per prediction batch. Defaults to 64.
        learning_rate: float. Peak learning rate. Defaults to 2e-5.
        warmup_fraction: float. Share of the updates with linear warmup. Defaults to 0.1.
        weight_decay: float. Defaults to 0.01.
        length_bucketing: bool. Batch rows of similar length, each batch padded to its bucket
            (`data.length_bucketing`); False pads every batch to the packed length. Defaults to True.
        bucket_width: int. Bucket granularity in tokens. Defaults to 32.
        jit_compile: bool. XLA on TensorFlow and JAX. Defaults to True.
        seed: int. Seed of the data order, dropout and the head. Defaults to 12345.
        verbose: int. `fit`'s verbosity; 2 adds progress lines within an epoch (`callbacks.ProgressLog`).
            Defaults to 1.
        keep_training_state: bool. Keep `training_state/` after the run finishes (it is removed by default).
            Defaults to False.

    Example:
    >>> FinetuningSettings("runs/mrpc", epochs=2).batch_size
    32
    """

    output_dir: str
    epochs: int = 3
    batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    length_bucketing: bool = True
    bucket_width: int = 32
    jit_compile: bool = True
    seed: int = 12345
    verbose: int = 1
    keep_training_state: bool = False


def finetune(model, train_x, train_y, settings, tokenizer=None, *, counts, details="", evaluate=None, monitor=None,
             selection_name="dev"):
    """The fine-tuning recipe: compile `model` for `settings.epochs` over `train_x` and fit it, resumably.

    `AdamWeightDecay` with linear warmup and decay (`compile_for_finetuning`), `last/` after every epoch and
    `best/` when `monitor` improves (`FinetuningCheckpoint`), and a `fit_finetuning` that resumes an
    interrupted run in `settings.output_dir`. Prints what it trains (`counts`, steps per epoch, updates) and,
    with a monitor, the best epoch.

    Args:
        model: the task model to fine-tune.
        train_x: dict of NumPy arrays `(N, T)` (or `(N, C, T)` for multiple choice): the packed inputs.
        train_y: array or dict of arrays `(N,)`: the targets.
        settings: `FinetuningSettings`.
        tokenizer: `BertTokenizer` or None. Saved beside each model directory. Defaults to None.
        counts: str. What the training data holds, e.g. `"3668 training examples"`.
        details: str. Appended to that line, e.g. `"; labels: [...]"`. Defaults to "".
        evaluate: `evaluate(model) -> dict` run at each epoch end, or None. Defaults to None.
        monitor: str or None. The key of `evaluate`'s results that picks `best/`; None writes `last/` only.
            Defaults to None.
        selection_name: str. What `evaluate` scores ("dev", "held-out"), for the best-epoch line. Defaults to
            "dev".

    Returns:
        `FinetuningCheckpoint`: its `trained_from` is the epoch the run started from (0, or where it resumed),
        and `history`, `best_epoch`, `best_score` say what it picked.
    """
    from keras_bert_impl.training.callbacks import progress_callbacks

    steps_per_epoch = batches_per_epoch(train_x, settings.batch_size, settings.length_bucketing,
                                        settings.bucket_width)
    total_steps = steps_per_epoch * settings.epochs
    compile_for_finetuning(model, settings.learning_rate, total_steps, settings.warmup_fraction,
                           settings.weight_decay, jit_compile=settings.jit_compile)
    print(f"{counts}, {steps_per_epoch} steps per epoch, {total_steps} updates{details}")
    if monitor is None:
        print("no dev or held-out data: nothing tells the epochs apart, so only last/ is written")
    checkpoint = FinetuningCheckpoint(settings.output_dir, tokenizer, evaluate=evaluate, monitor=monitor,
                                      delete_checkpoint=not settings.keep_training_state)
    checkpoint.trained_from = fit_finetuning(
        model, train_x, train_y, checkpoint, settings.epochs, settings.batch_size, settings.length_bucketing,
        settings.bucket_width, seed=settings.seed, verbose=settings.verbose,
        callbacks=progress_callbacks(settings.verbose, settings.batch_size))
    if monitor is not None and checkpoint.best_epoch is not None:
        print(f"best epoch {checkpoint.best_epoch + 1}: {selection_name} {monitor} {checkpoint.best_score:.4f}, "
              f"saved in {settings.output_dir}/best")
    return checkpoint
