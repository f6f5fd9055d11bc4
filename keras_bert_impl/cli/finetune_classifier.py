"""Fine-tune BERT for sentence (pair) classification or regression, as `run_classifier.py`, with `model.fit`.

    keras-bert finetune-classifier --task mrpc --train-file glue/MRPC/train.tsv \\
        --dev-file glue/MRPC/dev.tsv --init-checkpoint path/to/bert --output-dir runs/mrpc
    keras-bert finetune-classifier --train-file reviews.jsonl --text-columns text \\
        --label-column label --dev-file dev.jsonl --preset tiny --vocab vocab.txt --output-dir runs/reviews

The recipe is `training.classifier_finetuning.finetune_classifier`. Outputs: `last/` and `best/`, each a
`save_pretrained` directory with labels, tokenizer and preprocessor; `training_state/` (rerun the same command
after an interruption and it resumes); for the final model `dev_predictions.tsv`, `eval_results.json` (GLUE's
metrics for `--task`), `test_predictions.tsv` and `test_results.json`.
"""

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_arguments,
    check_finetuning_arguments,
    column,
    finetuning_inputs,
)


def add_arguments(parser):
    """Define the `keras-bert finetune-classifier` flags on `parser`; the training defaults are
    `run_classifier.py`'s (`FinetuningSettings`'), the paper picking the rate from {5e-5, 3e-5, 2e-5}."""
    data, _, train = add_finetuning_arguments(
        parser, "labelled TSV, CSV or JSONL file", "tokens per packed example, longer texts are truncated",
        test_help=" (same columns)", classifier_dropout=True)
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
    check_finetuning_arguments(args)
    if not args.task and (not args.text_columns or not args.label_column):
        raise UsageError("without --task, name the columns: --text-columns and --label-column")


def run(args):
    from keras_bert_impl.training.classifier_finetuning import ClassificationFiles, finetune_classifier

    inputs = finetuning_inputs(
        ClassificationFiles, args, has_header=not args.no_header,
        text_columns=tuple(column(name) for name in (args.text_columns or "").split(",") if name),
        label_column=column(args.label_column) if args.label_column else None)
    finetune_classifier(*inputs, classifier_dropout=args.classifier_dropout, monitor=args.monitor)
    return 0
