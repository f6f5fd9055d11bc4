"""Pieces the subcommand modules share: the usage error, argument types and the flags of several commands.

Kept free of TensorFlow and Keras imports at module level.
"""

import argparse
import dataclasses
import math
import os

from keras_bert_impl.utils.file_patterns import expand_paths


class UsageError(ValueError):
    """Flags that do not fit together (e.g. neither of two required alternatives); exits 2 with the usage."""


def _finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):  # NaN or inf would train steps before failing
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _bounded(name, convert, accepts, requirement):
    """An argparse type called `name` (argparse names it in "invalid <name> value"): `convert(text)`, refused
    with "must be <requirement>" unless `accepts` it."""

    def parse(text):
        value = convert(text)
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"must be {requirement}, got {text}")
        return value

    parse.__name__ = name
    return parse


positive_int = _bounded("positive_int", int, lambda value: value >= 1, "a positive integer")
non_negative_int = _bounded("non_negative_int", int, lambda value: value >= 0, ">= 0")
positive_float = _bounded("positive_float", _finite_float, lambda value: value > 0, "a positive number")
non_negative_float = _bounded("non_negative_float", _finite_float, lambda value: value >= 0, ">= 0")
fraction = _bounded("fraction", _finite_float, lambda value: 0 <= value <= 1, "between 0 and 1")
# The share of the training data held out (`--tune-fraction`).
fraction_held_out = _bounded("tune_fraction", _finite_float, lambda value: 0 < value < 1,
                         "between 0 and 1 (exclusive)")


def add_verbose_argument(parser):
    """`--verbose 0|1|2`: Keras' fit verbosity; `command_line.main` sets the default (1 on a terminal, else 2)."""
    from keras_bert_impl.training import PROGRESS_EVERY_SECONDS, PROGRESS_EVERY_STEPS

    parser.add_argument("--verbose", type=int, choices=(0, 1, 2),
                        help="training output: 0 silent, 1 progress bar, 2 a line per epoch and a progress line "
                             f"(steps, examples/s, loss, elapsed) every {PROGRESS_EVERY_STEPS} steps or "
                             f"{PROGRESS_EVERY_SECONDS:.0f} s, whichever comes first (default: 1 when stdout is a "
                             "terminal, else 2: a redrawn bar would fill a log file with carriage returns)")


def add_masking_arguments(group, masking_default=None):
    """The masked-LM flags of `create-data` and `pretrain` on `group`. The others default to None ("not given"),
    so `pretrain` tells a flag given explicitly, which must agree with the settings `create-data` recorded, from
    a default."""
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


def add_finetuning_arguments(parser, data_files, sequence_length_help, *, dev_help="", test_help="",
                             tune_help="without --dev-file: hold out this share of the training rows (seeded) to "
                             "pick best/", classifier_dropout=False, **defaults):
    """The flags every `finetune-*` command takes on `parser`; returns the `(data, model, training)` argument
    groups for the command's own flags.

    `data_files` says what the train, dev and test files hold (e.g. "CoNLL file with tags"), `dev_help` /
    `test_help` are appended to their help; `tune_help` is the help of `--tune-fraction`, `classifier_dropout` adds
    `--classifier-dropout`; `defaults` are the `FinetuningSettings` fields (and `sequence_length`) whose default
    the command changes.
    """
    from keras_bert_impl.training.finetuning import FinetuningSettings

    defaults = {field.name: field.default for field in dataclasses.fields(FinetuningSettings)} | defaults
    data = parser.add_argument_group("data")
    data.add_argument("--train-file", help=f"{data_files} to train on (omit with --epochs 0)")
    data.add_argument("--dev-file", help=f"{data_files}: scored after every epoch, picks best/{dev_help}")
    data.add_argument("--test-file", help=f"{data_files} to predict; scored when it has labels, never picks a "
                      f"model{test_help}")
    data.add_argument("--tune-fraction", type=fraction_held_out, help=tune_help)
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int,
                      default=defaults.get("sequence_length", 128),
                      help=f"{sequence_length_help} (default: %(default)s)")
    model = parser.add_argument_group("model")
    model.add_argument("--init-checkpoint",
                       help="any checkpoint from_pretrained reads (ours, Hugging Face, original TF)")
    model.add_argument("--preset", help="a model size from scratch (tiny, mini, small, medium, base, large), or a "
                       "keras-hub preset directory or handle: its pretrained backbone and tokenizer, under a new head")
    model.add_argument("--vocab", help="vocab.txt or its directory (default: the checkpoint's directory)")
    model.add_argument("--cased", action="store_true", help="keep case (default: the tokenizer config's)")
    if classifier_dropout:
        model.add_argument("--classifier-dropout", type=float,
                           help="dropout before the head (default: the checkpoint's, else 0.1)")
    train = parser.add_argument_group("training")
    train.add_argument("--output-dir", required=True, help="last/ (best/ with a --dev-file or --tune-fraction), "
                       "predictions and results files")
    train.add_argument("--epochs", type=non_negative_int, default=defaults["epochs"],
                       help="passes over the training data; 0 trains nothing and scores --init-checkpoint on "
                            "--dev-file / --test-file (default: %(default)s)")
    for flag, kind, help_text in (("batch-size", positive_int, ""), ("eval-batch-size", positive_int, ""),
                                  ("learning-rate", positive_float, "peak learning rate "),
                                  ("warmup-fraction", fraction, "share of the updates with linear warmup "),
                                  ("weight-decay", non_negative_float, "")):
        train.add_argument(f"--{flag}", type=kind, default=defaults[flag.replace("-", "_")],
                           help=help_text + "(default: %(default)s)")
    train.add_argument("--no-length-bucketing", action="store_true", help="pad every batch to --sequence-length")
    train.add_argument("--bucket-width", type=positive_int, default=defaults["bucket_width"],
                       help="length-bucket granularity in tokens (default: %(default)s)")
    train.add_argument("--no-jit", action="store_true", help="run the step without XLA")
    train.add_argument("--seed", type=int, default=defaults["seed"], help="seed of shuffling, dropout and the head")
    train.add_argument("--keep-training-state", action="store_true",
                       help="keep training_state/ after the run finishes (removed by default)")
    add_verbose_argument(train)
    return data, model, train


def check_finetuning_arguments(args, tune_fraction_picks_best=True):
    """Raise `UsageError` for fine-tuning flags that do not fit together: a model from `--init-checkpoint` or
    `--preset`; `--epochs N > 0` trains on `--train-file`, `--epochs 0` scores `--init-checkpoint` on the dev /
    test files; `--tune-fraction` needs training and, where it only picks best/, no `--dev-file`."""
    tune = args.tune_fraction
    if not args.init_checkpoint and not args.preset:
        raise UsageError("give --init-checkpoint (fine-tune) or --preset (from scratch)")
    if args.epochs > 0 and not args.train_file:
        raise UsageError(f"--epochs {args.epochs} trains: give --train-file (or --epochs 0 to score "
                         "--init-checkpoint on --dev-file / --test-file)")
    if args.epochs == 0:
        if not args.init_checkpoint:
            raise UsageError("--epochs 0 scores a trained model: give --init-checkpoint (a --preset's head is "
                             "new)")
        if not (args.dev_file or args.test_file):
            raise UsageError("--epochs 0 trains nothing and scores --init-checkpoint: give --dev-file or --test-file")
        if tune:
            raise UsageError("--tune-fraction holds out part of the training data, which --epochs 0 does not read; "
                             "leave it out")
    if tune and args.dev_file and tune_fraction_picks_best:
        raise UsageError("--dev-file picks best/, so --tune-fraction would only take rows from training: give one")


def settings_from(settings_class, args, **values):
    """The `settings_class` dataclass (e.g. `SquadSettings`) of the flags named as its fields; `values` give the
    fields that no flag holds as is (e.g. `has_header=not args.no_header`)."""
    named = {field.name: getattr(args, field.name) for field in dataclasses.fields(settings_class)
             if hasattr(args, field.name)}
    return settings_class(**named | values)


def finetuning_inputs(files_class, args, **file_values):
    """`(files, ModelSource, FinetuningSettings)` of the `add_finetuning_arguments` flags, the arguments every
    `training.*_finetuning` recipe takes: `files` is the `files_class` dataclass (`file_values` as in
    `settings_from`)."""
    from keras_bert_impl.training.finetuning import FinetuningSettings, ModelSource

    return (settings_from(files_class, args, **file_values), settings_from(ModelSource, args),
            settings_from(FinetuningSettings, args, length_bucketing=not args.no_length_bucketing,
                          jit_compile=not args.no_jit))


def column(text):
    """A column named on the command line: a 0-based index for digits, else the name."""
    return int(text) if text.isdigit() else text


def expand_input_files(spec):
    """Comma-separated paths and glob patterns -> the files, in order (`utils.file_patterns.expand_paths`); a
    pattern that matches nothing or a missing file raises `FileNotFoundError` naming it."""
    files = expand_paths([part.strip() for part in spec.split(",") if part.strip()])
    missing = [path for path in files if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError(f"No input file {missing[0]!r} exists.")
    return files


# The question-answering flags (dests): `BertQuestionAnsweringPreprocessor` settings.
QUESTION_ANSWERING_SETTINGS = ("doc_stride", "max_query_length", "n_best_size", "max_answer_length",
                               "null_score_diff_threshold")


def add_question_answering_arguments(group, fine_tuning=False, version_2_help=None, threshold_help=None):
    """The SQuAD window and decoding flags on `group`: for fine-tuning (`finetune-squad`) defaulting to the
    values shown; for `predict` and `export` to the setting the model was fine-tuned with (its
    `preprocessor.json`), else to the value shown."""
    for flag, default, what in (("doc-stride", 128, "distance between context windows"),
                                ("max-query-length", 64, "question tokens kept"),
                                ("n-best-size", 20, "start/end candidates per window"),
                                ("max-answer-length", 30, "longest answer in tokens")):
        shown = default if fine_tuning else f"the model's, else {default}"
        group.add_argument(f"--{flag}", type=positive_int, default=default if fine_tuning else None,
                           help=f"{what} (default: {shown})")
    group.add_argument("--version-2", action="store_true", help=version_2_help or "SQuAD v2.0: answer \"\" when "
                       "the null score wins (default: on for a model fine-tuned with --version-2)")
    group.add_argument("--null-score-diff-threshold", type=float, help=threshold_help or "v2.0: answer \"\" when "
                       "null score - best span score exceeds this (default: the threshold the fine-tuning run tuned "
                       "and saved with the model, else 0.0)")


def question_answering_settings(args):
    """`{BertQuestionAnsweringPreprocessor setting: value}` of the `add_question_answering_arguments` flags
    given; the ones left out are not in it."""
    settings = {name: getattr(args, name) for name in QUESTION_ANSWERING_SETTINGS if getattr(args, name) is not None}
    return settings | ({"version_2_with_negative": True} if args.version_2 else {})


def add_model_class_argument(parser, what):
    """Define `--model-class` on `parser`: "auto" (the checkpoint's own task, `models.load_task` with
    `task=None`) or a kind."""
    from keras_bert_impl.models.registry import TASK_KINDS

    choices = ("auto",) + tuple(kind.replace("_", "-") for kind in TASK_KINDS.values())
    parser.add_argument("--model-class", default="auto", choices=choices,
                        help=f"{what} (default: auto, the checkpoint's own)")

