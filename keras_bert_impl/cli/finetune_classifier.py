"""Fine-tune BERT for sentence (pair) classification or regression, as `run_classifier.py`, with `model.fit`.

    # a GLUE task from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-classifier --task mrpc --train-file glue/MRPC/train.tsv \\
        --dev-file glue/MRPC/dev.tsv --init-checkpoint path/to/bert --output-dir runs/mrpc
    # any TSV/CSV/JSONL with named columns, or from scratch with a preset
    keras-bert finetune-classifier --train-file reviews.jsonl --text-columns text \\
        --label-column label --dev-file dev.jsonl --preset tiny --vocab vocab.txt --output-dir runs/reviews

The recipe is `training.classifier_finetuning.finetune_classifier`. `--train-file` trains; `--dev-file` is scored
after every epoch and picks `best/` (else `--tune-fraction F` holds out that share of the training rows to pick
it); `--test-file` is only predicted, and scored when it has the label column. `--epochs 0` trains nothing and
scores `--init-checkpoint` on the dev and test files.

Outputs in `--output-dir`: `last/` after every epoch and, with something to select on, `best/` (by `--monitor`),
each a `BertClassifier.save_pretrained` directory with its labels, tokenizer and preprocessor (what `predict` and
`export` use); `training_state/` (rerun the same command after an interruption and it resumes); for the final
model `dev_predictions.tsv` and `eval_results.json` (GLUE's official metrics for `--task`), `test_predictions.tsv`
and, for a labelled test file, `test_results.json`. Rows are bucketed by length (`--bucket-width`;
`--no-length-bucketing` pads to `--sequence-length`); `AdamWeightDecay` with linear warmup and decay, under XLA.
"""

from keras_bert_impl.cli.arguments import (
    HOLD_OUT_ROWS_HELP,
    UsageError,
    add_finetuning_arguments,
    check_finetuning_arguments,
    column,
    finetuning_run_settings,
    model_source,
)


def add_arguments(parser):
    """Define the `keras-bert finetune-classifier` flags on `parser`; the training defaults are
    `run_classifier.py`'s (`FinetuningSettings`'), the paper picking the rate from {5e-5, 3e-5, 2e-5}."""
    data, _, train = add_finetuning_arguments(
        parser, "labelled TSV, CSV or JSONL file", "tokens per packed example, longer texts are truncated",
        test_help=" (same columns)", classifier_dropout=True,
        tune_fraction_help=HOLD_OUT_ROWS_HELP)
    data.add_argument("--task", help="GLUE task (cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte, wnli): its file "
                      "layout and official metrics")
    data.add_argument("--text-columns", help="comma-separated text columns (names or 0-based indices) without --task; "
                      "two columns make sentence pairs")
    data.add_argument("--label-column", help="label column (name or 0-based index) without --task")
    data.add_argument("--file-format", choices=("tsv", "csv", "jsonl"), help="default: the file extension")
    data.add_argument("--no-header", action="store_true", help="TSV/CSV without a header row (columns by index)")
    data.add_argument("--regression", action="store_true", help="float labels, one output, MSE (--task stsb sets it)")
    train.add_argument("--monitor", help="dev (or held-out) metric that picks best/ (default: the task's first "
                       "metric)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    check_finetuning_arguments(args)
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
