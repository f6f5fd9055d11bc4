"""Resumable fine-tuning (`fit_finetuning`), and the fine-tuning API of `keras-bert finetune-classifier` /
`finetune-squad` in one namespace.

Each piece lives in the module named for it, and is importable from here too:

- `tokenizer_loading.load_tokenizer`: the vocabulary from `--vocab` or from the initial checkpoint's directory.
- `task_model_builders.build_classifier` / `build_question_answerer`: from any checkpoint `from_pretrained`
  reads, or a preset (random weights, from scratch).
- `model_input_checks.check_model_inputs`: empty data, over-long rows and out-of-range ids named before the
  compiled steps.
- `finetuning_batches.training_dataset` / `batches_per_epoch` / `predict_logits`: fixed padding or length
  bucketing (`data.length_bucketing`).
- `finetuning_optimizer.compile_for_finetuning`: `AdamWeightDecay` + `WarmupLinearDecay` (the original
  recipe), `jit_compile`.
- `model_selection.ModelSelection`: `last/` and `best/`, each a `save_pretrained` directory with the tokenizer
  beside (what `--init-checkpoint` and `from_pretrained` read).
- `finetuning_state.FinetuningCheckpoint`: at each epoch end, evaluate, keep `last/` / `best/` and save the
  resumable training state; `restore_finetuning_state` reads it back.
- `finetuning_metrics.classification_scores` / `classification_monitor` / `evaluate_squad_predictions`: the
  official metrics (GLUE; SQuAD v1.1 / v2.0 with automatic null-threshold tuning).
- `finetuning_outputs.save_finetuned` / `write_classification_predictions`: model directories and prediction
  files, written atomically.
- `finetune` (here): the recipe every `keras-bert finetune-*` command and the quickstart run: compile for the
  run's update count (`compile_for_finetuning`), then `fit_finetuning` with per-epoch `last/` (and `best/`).
- `fit_finetuning` (here): `model.fit` that also saves a resumable training state each epoch
  (`training_state/`: weights, optimizer, RNG, epoch, best-so-far) and, run again on the same output
  directory, resumes from it on the same batches (epoch `e`'s order is fixed by `(seed, e)`).
"""

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
from keras_bert_impl.training.finetuning_state import (
    TRAINING_STATE_DIRNAME,
    FinetuningCheckpoint,
    finetuning_settings,
    restore_finetuning_state,
)
from keras_bert_impl.training.model_input_checks import check_model_inputs
from keras_bert_impl.training.task_model_builders import build_classifier, build_question_answerer
from keras_bert_impl.training.tokenizer_loading import load_tokenizer

__all__ = [
    "EVAL_RESULTS_FILENAME",
    "TRAINING_STATE_DIRNAME",
    "FinetuningCheckpoint",
    "batches_per_epoch",
    "build_classifier",
    "build_question_answerer",
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
    from keras_bert_impl.training.callbacks import NonFiniteLossGuard

    if getattr(model, "optimizer", None) is None:
        raise ValueError("Compile the model (compile_for_finetuning) before fit_finetuning.")
    check_model_inputs(model, inputs, "training data")
    steps_per_epoch = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    settings = finetuning_settings(epochs, steps_per_epoch, batch_size, seed, len(inputs["token_ids"]),
                                   length_bucketing, bucket_width)
    initial_epoch = restore_finetuning_state(model, checkpoint, settings) if resume else 0
    checkpoint.track_training_state(steps_per_epoch, settings)
    if initial_epoch >= epochs:
        return initial_epoch
    dataset, _ = training_dataset(inputs, labels, batch_size, length_bucketing, bucket_width, seed, epochs=epochs,
                                  initial_epoch=initial_epoch)
    guard = NonFiniteLossGuard(checkpoint_directory=checkpoint.training_state_directory)
    model.fit(dataset, epochs=epochs, initial_epoch=initial_epoch, steps_per_epoch=steps_per_epoch,
              callbacks=[guard, checkpoint, *callbacks], verbose=verbose, shuffle=False)
    return initial_epoch


def finetune(model, inputs, labels, output_dir, tokenizer=None, *, epochs, batch_size, learning_rate,
             warmup_fraction=0.1, weight_decay=0.01, jit_compile=True, length_bucketing=True, bucket_width=32, seed=0,
             evaluate=None, monitor=None, verbose="auto"):
    """Fine-tune `model` as the original recipe does, resumably: the one training path of every fine-tune.

    Compiles `model` with `AdamWeightDecay` under linear warmup over `warmup_fraction` of the run's updates
    and linear decay to 0 (`compile_for_finetuning`), then trains `epochs` epochs (`fit_finetuning`): every
    epoch end saves `output_dir/last` (and `best/` by `monitor` when `evaluate` scores the epochs) and the
    training state, from which the same call resumes after an interruption.

    Args:
        model: a task model (e.g. `BertClassifier`, `BertQuestionAnswerer`).
        inputs: dict of NumPy arrays `(N, T)`; labels: array or dict of arrays `(N,)`.
        output_dir: str. Where `last/`, `best/` and `training_state/` go.
        tokenizer: `BertTokenizer` or None. Saved beside each model directory. Defaults to None.
        epochs, batch_size, learning_rate: int, int, float.
        warmup_fraction, weight_decay: float. Defaults to 0.1 and 0.01.
        jit_compile: bool. Defaults to True.
        length_bucketing, bucket_width: batch by length (`finetuning_batches`). Defaults to True and 32.
        seed: int. Data order seed. Defaults to 0.
        evaluate: `evaluate(model) -> dict` run at each epoch end, or None. Defaults to None.
        monitor: str or None. The key of `evaluate`'s results that picks `best/`. Defaults to None.
        verbose: "auto", 0, 1 or 2 (2 adds progress lines within an epoch). Defaults to "auto".

    Returns:
        `(checkpoint, trained_from)`: the `FinetuningCheckpoint` (its `best_epoch`, `best_score`) and the epoch
        training started from (0, or where it resumed).

    Example:
        checkpoint, _ = finetune(classifier, train_x, train_y, "runs/mrpc", tokenizer, epochs=3, batch_size=32,
                                 learning_rate=2e-5)
    """
    from keras_bert_impl.training.callbacks import progress_callbacks

    steps_per_epoch = batches_per_epoch(inputs, batch_size, length_bucketing, bucket_width)
    compile_for_finetuning(model, learning_rate, steps_per_epoch * epochs, warmup_fraction, weight_decay,
                           jit_compile=jit_compile)
    checkpoint = FinetuningCheckpoint(output_dir, tokenizer, evaluate=evaluate, monitor=monitor)
    trained_from = fit_finetuning(model, inputs, labels, checkpoint, epochs, batch_size, length_bucketing,
                                  bucket_width, seed=seed, verbose=verbose,
                                  callbacks=progress_callbacks(verbose, batch_size))
    return checkpoint, trained_from
