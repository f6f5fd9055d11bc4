"""The training half that every `keras-bert finetune-*` command shares.

The flags of `arguments.add_finetuning_training_arguments` become the arguments of the library's fine-tuning
recipe (`training.finetuning.finetune`: optimizer and schedule, per-epoch `last/` and `best/`, resumable `fit`). Each command keeps what is its own: reading and packing its data, and how an
epoch is scored.
"""

from keras_bert_impl.training import finetuning


def fit_from_arguments(model, train_x, train_y, args, tokenizer, *, counts, details="", evaluate=None, monitor=None,
                       selection_name="dev", selection_flags="--dev-file or --tune-fraction", length_bucketing=False,
                       bucket_width=32):
    """Compile `model` for `args.epochs` over `train_x` and fit it, saving each epoch into `args.output_dir`.

    Args:
        model: the task model to fine-tune.
        train_x, train_y: the packed training inputs and labels, NumPy arrays or dicts of them.
        args: the parsed command line (`epochs`, `batch_size`, `learning_rate`, `warmup_fraction`,
            `weight_decay`, `no_jit`, `output_dir`, `seed`, `verbose`).
        tokenizer: saved beside each model directory.
        counts: what the training data holds, e.g. `"3668 training examples"`; printed with the step counts.
        details: appended to that line, e.g. `"; labels: [...]"`.
        evaluate: `evaluate(model) -> dict` run at each epoch end, or None.
        monitor: the key of `evaluate`'s results that picks `best/`; None writes `last/` only.
        selection_name: what `evaluate` scores ("dev", "held-out"), for the best-epoch line.
        selection_flags: the flags that would let the epochs be told apart, named when `monitor` is None.
        length_bucketing, bucket_width: batch by length (`finetuning_batches`).

    Returns:
        The epoch the run started from (0, or where it resumed from an earlier run's training state).

    Example:
        trained_from = fit_from_arguments(model, train_x, train_y, args, tokenizer,
                                          counts=f"{len(train)} training examples")
    """
    steps_per_epoch = finetuning.batches_per_epoch(train_x, args.batch_size, length_bucketing, bucket_width)
    print(f"{counts}, {steps_per_epoch} steps per epoch, {steps_per_epoch * args.epochs} updates{details}")
    if monitor is None:
        print(f"no {selection_flags}: nothing tells the epochs apart, so only last/ is written")
    checkpoint, trained_from = finetuning.finetune(
        model, train_x, train_y, args.output_dir, tokenizer, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_fraction=args.warmup_fraction, weight_decay=args.weight_decay,
        jit_compile=not args.no_jit, length_bucketing=length_bucketing, bucket_width=bucket_width, seed=args.seed,
        evaluate=evaluate, monitor=monitor, verbose=args.verbose)
    if monitor is not None and checkpoint.best_epoch is not None:
        print(f"best epoch {checkpoint.best_epoch + 1}: {selection_name} {monitor} {checkpoint.best_score:.4f}, "
              f"saved in {args.output_dir}/best")
    return trained_from
