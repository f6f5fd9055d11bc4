"""Fine-tune BERT for sentence (pair) classification or regression, as `run_classifier.py`, with `model.fit`.

    # a GLUE task from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-classifier --task mrpc --train-file glue/MRPC/train.tsv \\
        --dev-file glue/MRPC/dev.tsv --init-checkpoint path/to/bert --output-dir runs/mrpc
    # STS-B (regression), any TSV/CSV/JSONL with named columns, or from scratch with a preset
    keras-bert finetune-classifier --task stsb --train-file glue/STS-B/train.tsv --dev-file ...
    keras-bert finetune-classifier --train-file reviews.jsonl --text-columns text \\
        --label-column label --dev-file dev.jsonl --preset tiny --vocab vocab.txt --output-dir runs/reviews

Which file does what: `--train-file` trains; `--dev-file` is scored after every epoch and picks `best/`
(else `--tune-fraction F` holds out that share of the training rows to pick it); `--test-file` is only
predicted, and scored when it has the label column: it never picks a model. `--epochs 0` trains nothing and
scores `--init-checkpoint` (a fine-tuned classifier) on the dev and test files.

Outputs in `--output-dir`: `last/` after every epoch and, when there is something to select on (a dev file or
a held-out fraction), `best/` (by `--monitor`), each a `BertClassifier.save_pretrained` directory with
`label_vocabulary.json`, the tokenizer, the preprocessor (packing length: what `predict` and `export` use) and
`eval_results.json`; `training_state/` (weights + optimizer + RNG state of the last finished epoch: run the
same command again after an interruption and it resumes there). Without a dev file or `--tune-fraction` no
score can tell the epochs apart, so only `last/` is written. At the end, for the final model (the last epoch,
or `--init-checkpoint` with `--epochs 0`): `dev_predictions.tsv` (`index<TAB>label`) and `eval_results.json`
(its dev metrics: GLUE's official ones for `--task`), and `test_predictions.tsv` plus, for a labelled test
file, `test_results.json`.

The step runs under `jit_compile=True` (XLA on TensorFlow and JAX). Rows are bucketed by length
(`--bucket-width`) so that batches carry little padding; `--no-length-bucketing` pads every batch to
`--sequence-length`. The learning rate warms up linearly over `--warmup-fraction` of the updates, then decays
linearly to 0 (`AdamWeightDecay`, the original optimizer).
"""

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    column,
    finetuning_run_settings,
    model_source,
    positive_int,
    tune_fraction,
)

# -- defaults (run_classifier.py's where one exists) ---------------------------------------------------------
SEQUENCE_LENGTH = 128
BATCH_SIZE = 32
EVAL_BATCH_SIZE = 64
LEARNING_RATE = 2e-5  # the paper picks from {5e-5, 3e-5, 2e-5}
EPOCHS = 3
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01
BUCKET_WIDTH = 32
SEED = 12345


def add_arguments(parser):
    """Define the `keras-bert finetune-classifier` flags on `parser`."""
    data = parser.add_argument_group("data")
    data.add_argument("--task", help="GLUE task (cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte, wnli): its file "
                      "layout and official metrics")
    data.add_argument("--train-file", help="labeled training examples (TSV, CSV or JSONL; omit with --epochs 0)")
    data.add_argument("--dev-file", help="labeled dev examples: scored after every epoch, picks best/")
    data.add_argument("--test-file", help="examples to predict (same columns); scored when the file has the label "
                      "column, never used to pick a model")
    data.add_argument("--tune-fraction", type=tune_fraction,
                      help="without --dev-file: hold out this share of the training rows (seeded) to pick best/")
    data.add_argument("--text-columns", help="comma-separated text columns (names or 0-based indices) without --task; "
                      "two columns make sentence pairs")
    data.add_argument("--label-column", help="label column (name or 0-based index) without --task")
    data.add_argument("--file-format", choices=("tsv", "csv", "jsonl"), help="default: the file extension")
    data.add_argument("--no-header", action="store_true", help="TSV/CSV without a header row (columns by index)")
    data.add_argument("--regression", action="store_true", help="float labels, one output, MSE (--task stsb sets it)")
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=SEQUENCE_LENGTH,
                      help="tokens per packed example, longer texts are truncated (default: %(default)s)")
    model = add_finetuning_model_arguments(parser)
    model.add_argument("--classifier-dropout", type=float, help="dropout before the head (default: the "
                       "checkpoint's, else 0.1)")
    train = add_finetuning_training_arguments(
        parser, epochs=EPOCHS, batch_size=BATCH_SIZE,
        eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE, warmup_fraction=WARMUP_FRACTION,
        weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)
    train.add_argument("--monitor", help="dev (or held-out) metric that picks best/ (default: the task's first "
                       "metric)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    check_finetuning_arguments(args)
    if args.tune_fraction and args.dev_file:
        raise UsageError("--dev-file picks best/, so --tune-fraction would only take rows from training: give one")
    if not args.task and (not args.text_columns or not args.label_column):
        raise UsageError("without --task, name the columns: --text-columns and --label-column")


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score) and evaluate as `args` say; return 0."""
    from keras_bert_impl.training.classifier_finetuning import ClassificationFiles, finetune_classifier

    files = ClassificationFiles(
        train_file=args.train_file, dev_file=args.dev_file, test_file=args.test_file, tune_fraction=args.tune_fraction,
        task=args.task, text_columns=tuple(column(name) for name in (args.text_columns or "").split(",") if name),
        label_column=column(args.label_column) if args.label_column else None, file_format=args.file_format,
        has_header=not args.no_header, regression=args.regression, sequence_length=args.sequence_length)
    finetune_classifier(files, model_source(args), finetuning_run_settings(args),
                        classifier_dropout=args.classifier_dropout, monitor=args.monitor)
    return 0
