"""Pieces the subcommand modules share: the usage error and argument types.

Kept free of TensorFlow and Keras imports at module level.
"""

import argparse

from keras_bert_impl.training.pretraining import PREPROCESSOR_SETTINGS


class UsageError(ValueError):
    """Flags that do not fit together (e.g. neither of two required alternatives); exits 2 with the usage."""


def positive_int(text):
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text):
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def positive_float(text):
    """argparse type: a finite float > 0 (learning rates): NaN or inf would train steps before failing."""
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text):
    """argparse type: a finite float >= 0 (weight decay)."""
    value = _finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def fraction(text):
    """argparse type: a float in [0, 1]."""
    value = _finite_float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def tune_fraction(text):
    """argparse type: a float in (0, 1), the share of the training data held out (`--tune-fraction`)."""
    value = _finite_float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def add_verbose_argument(parser, default=1):
    """`--verbose 0|1|2`: Keras' fit verbosity (1: a progress bar per epoch)."""
    from keras_bert_impl.training.callbacks import PROGRESS_EVERY_SECONDS, PROGRESS_EVERY_STEPS

    parser.add_argument("--verbose", type=int, default=default, choices=(0, 1, 2),
                        help="training output: 0 silent, 1 progress bar, 2 a line per epoch and a progress line "
                             f"(steps, examples/s, loss, elapsed) every {PROGRESS_EVERY_STEPS} steps or "
                             f"{PROGRESS_EVERY_SECONDS:.0f} s, whichever comes first (default: {default})")


# The masked-LM flags (`add_masking_arguments`): flag dest -> `BertPretrainingPreprocessor` argument.
MASKING_FLAGS = {dest: name for dest, name in PREPROCESSOR_SETTINGS.items() if dest != "sequence_length"}


def add_masking_arguments(group, masking_default=None):
    """The masked-LM flags `create-data` and `pretrain` share: one definition of each setting.

    Every masking setting defaults to None ("not given"): `masking_settings(args)` returns the given ones and
    `BertPretrainingPreprocessor` supplies the rest, so `pretrain` can tell a flag given explicitly (which
    must agree with the settings `create-data` recorded) from a default.

    Args:
        group: an `argparse` parser or argument group.
        masking_default: str or None. The default of `--masking` ("static" / "dynamic"); None to resolve it
            later. Defaults to None.
    """
    group.add_argument("--masking", default=masking_default, choices=("dynamic", "static"),
                       help="static: one mask per instance, written with the data; dynamic: new masks every "
                            "pass (RoBERTa) (default: " + (masking_default or "dynamic; the recorded one for TFRecords")
                            + ")")
    group.add_argument("--max-predictions", "--max-predictions-per-seq", dest="max_predictions_per_seq",
                       type=positive_int, default=None,
                       help="masked-LM slots per instance, ~15%% of the sequence length (default: 20)")
    group.add_argument("--mask-rate", type=fraction, default=None, help="share of tokens to predict (default: 0.15)")
    group.add_argument("--masking-rule", default=None, choices=("original", "ceil", "bernoulli"),
                       help="how many tokens a sequence predicts: original (round(length * rate), at least 1), "
                            "ceil (of the candidates, as tensorflow-text), bernoulli (each word with probability "
                            "rate, as Hugging Face) (default: original)")
    group.add_argument("--whole-word-masking", action="store_true", default=None,
                       help='mask "##" word pieces together with their word')
    group.add_argument("--replacement-unit", default=None, choices=("word", "token"),
                       help="with --whole-word-masking: one 80/10/10 draw per word, or per token as the original "
                            "script (default: word)")
    group.add_argument("--mask-token-rate", type=fraction, default=None,
                       help="share of the chosen tokens replaced by [MASK] (default: 0.8)")
    group.add_argument("--random-token-rate", type=fraction, default=None,
                       help="share of the chosen tokens replaced by a random token; the rest stay (default: 0.1)")


def masking_settings(args):
    """`{BertPretrainingPreprocessor argument: value}` of the masking flags given (from the command line or a
    config file); the flags left out are not in it."""
    return {name: getattr(args, dest) for dest, name in MASKING_FLAGS.items() if getattr(args, dest, None) is not None}


def add_finetuning_model_arguments(parser):
    """The `model` flags both fine-tuning commands take; returns the group for a command's own model flags."""
    model = parser.add_argument_group("model")
    model.add_argument("--init-checkpoint",
                       help="any checkpoint from_pretrained reads (ours, Hugging Face, original TF)")
    model.add_argument("--preset", help="train from scratch: a BertBackbone preset (tiny, mini, small, ...)")
    model.add_argument("--vocab", help="vocab.txt or its directory (default: the checkpoint's directory)")
    model.add_argument("--cased", action="store_true", help="keep case (default: the tokenizer config's)")
    return model


def add_finetuning_training_arguments(parser, *, epochs, batch_size, eval_batch_size, learning_rate,
                                      warmup_fraction, weight_decay, bucket_width, seed):
    """The `training` flags every fine-tuning command takes, with each command's defaults.

    `--epochs 0` means the same in every command: train nothing, score `--init-checkpoint` on the dev and
    test files (`check_finetuning_arguments`).

    Args:
        parser: `argparse.ArgumentParser`.
        epochs, batch_size, eval_batch_size, learning_rate, warmup_fraction, weight_decay, bucket_width, seed:
            the defaults of the flags of the same names.

    Returns:
        The argument group, for a command's own training flags.
    """
    train = parser.add_argument_group("training")
    train.add_argument("--output-dir", required=True, help="last/ (best/ with a --dev-file or --tune-fraction), "
                       "predictions and results files")
    train.add_argument("--epochs", type=non_negative_int, default=epochs,
                       help="passes over the training data; 0 trains nothing and scores --init-checkpoint on "
                            "--dev-file / --test-file (default: %(default)s)")
    train.add_argument("--batch-size", type=positive_int, default=batch_size, help="(default: %(default)s)")
    train.add_argument("--eval-batch-size", type=positive_int, default=eval_batch_size, help="(default: %(default)s)")
    train.add_argument("--learning-rate", type=positive_float, default=learning_rate, help="peak learning rate "
                       "(default: %(default)s)")
    train.add_argument("--warmup-fraction", type=fraction, default=warmup_fraction,
                       help="share of the updates with linear warmup (default: %(default)s)")
    train.add_argument("--weight-decay", type=non_negative_float, default=weight_decay, help="(default: %(default)s)")
    train.add_argument("--no-length-bucketing", action="store_true", help="pad every batch to --sequence-length")
    train.add_argument("--bucket-width", type=positive_int, default=bucket_width,
                       help="length-bucket granularity in tokens (default: %(default)s)")
    train.add_argument("--no-jit", action="store_true", help="run the step without XLA")
    train.add_argument("--seed", type=int, default=seed, help="seed of shuffling, dropout and the head")
    train.add_argument("--keep-training-state", action="store_true",
                       help="keep training_state/ after the run finishes (removed by default)")
    add_verbose_argument(train)
    return train


def check_finetuning_arguments(args):
    """Raise `UsageError` for fine-tuning flags that do not fit together; the one rule of every command.

    A model comes from `--init-checkpoint` or `--preset`. `--epochs N > 0` trains on `--train-file`;
    `--epochs 0` trains nothing: it scores `--init-checkpoint` (a fine-tuned model) on `--dev-file` and / or
    `--test-file`, so it needs one of them and a checkpoint (a preset's weights are random).
    `--tune-fraction`, where a command has it, holds out training data, so it needs training.
    """
    if not args.init_checkpoint and not args.preset:
        raise UsageError("give --init-checkpoint (fine-tune) or --preset (from scratch)")
    if args.epochs > 0 and not args.train_file:
        raise UsageError(f"--epochs {args.epochs} trains: give --train-file (or --epochs 0 to score "
                         "--init-checkpoint on --dev-file / --test-file)")
    if args.epochs == 0:
        if not args.init_checkpoint:
            raise UsageError("--epochs 0 scores a trained model: give --init-checkpoint (a --preset has random "
                             "weights)")
        if not (args.dev_file or args.test_file):
            raise UsageError("--epochs 0 trains nothing and scores --init-checkpoint: give --dev-file or --test-file")
        if getattr(args, "tune_fraction", None):
            raise UsageError("--tune-fraction holds out part of the training data, which --epochs 0 does not read; "
                             "leave it out")


def model_source(args):
    """The `training.finetuning.ModelSource` of the `add_finetuning_model_arguments` flags."""
    from keras_bert_impl.training.finetuning import ModelSource

    return ModelSource(init_checkpoint=args.init_checkpoint, preset=args.preset, vocab=args.vocab, cased=args.cased)


def finetuning_run_settings(args):
    """The `training.finetuning.FinetuningSettings` of the `add_finetuning_training_arguments` flags."""
    from keras_bert_impl.training.finetuning import FinetuningSettings

    return FinetuningSettings(
        output_dir=args.output_dir, epochs=args.epochs, batch_size=args.batch_size,
        eval_batch_size=args.eval_batch_size, learning_rate=args.learning_rate, warmup_fraction=args.warmup_fraction,
        weight_decay=args.weight_decay, length_bucketing=not args.no_length_bucketing, bucket_width=args.bucket_width,
        jit_compile=not args.no_jit, seed=args.seed, verbose=args.verbose,
        keep_training_state=args.keep_training_state)


def column(text):
    """A column named on the command line: a 0-based index for digits, else the name."""
    return int(text) if text.isdigit() else text


def expand_input_files(spec):
    """Comma-separated paths and glob patterns -> the list of files, in order; a pattern matching nothing or
    a missing file raises `FileNotFoundError` naming it.

    Example:
    >>> expand_input_files("/etc/hostname")  # doctest: +SKIP
    ['/etc/hostname']
    """
    import glob
    import os

    files = []
    for part in (piece.strip() for piece in spec.split(",")):
        if not part:
            continue
        matches = sorted(glob.glob(part)) if glob.has_magic(part) else [part]
        missing = [path for path in matches if not os.path.isfile(path)]
        if not matches or missing:
            raise FileNotFoundError(f"No input file {part!r}" + (" matches." if not matches else " exists."))
        files.extend(matches)
    if not files:
        raise ValueError("No input files given.")
    return files


def add_model_class_argument(parser, what):
    """Define `--model-class` on `parser`: "auto" (the checkpoint's own task, `models.load_task`) or a kind."""
    from keras_bert_impl.models.registry import TASK_KINDS

    choices = ("auto",) + tuple(kind.replace("_", "-") for kind in TASK_KINDS.values())
    parser.add_argument("--model-class", default="auto", choices=choices,
                        help=f"{what} (default: auto, the checkpoint's own)")


def model_class(flag):
    """`--model-class` as `models.load_task` takes it: None for "auto", else the kind."""
    return None if flag == "auto" else flag

