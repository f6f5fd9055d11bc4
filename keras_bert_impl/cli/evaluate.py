"""Score a predictions file: SQuAD (the official v1.1 / v2.0 evaluation) or classification (GLUE metrics).

    keras-bert evaluate --squad-file dev-v2.0.json --predictions predictions.json --null-odds null_odds.json
    keras-bert evaluate --gold-file MRPC/dev.tsv --task mrpc --predictions runs/mrpc/dev_predictions.tsv

SQuAD scores are the official scripts' (v2.0 from the file, or `--version`; `--null-odds` adds the best
thresholds). A classification predictions TSV (`index<TAB>prediction`) is scored against row `index` of the
gold file with GLUE's metrics for `--task`, else accuracy and F1, or Pearson / Spearman with `--regression`.
"""

import json

from keras_bert_impl.cli.arguments import UsageError


def add_arguments(parser):
    parser.add_argument("--predictions", required=True, help="predictions.json (SQuAD) or a predictions TSV "
                        "(classification)")
    parser.add_argument("--output-file", help="also write the scores here as JSON")
    squad = parser.add_argument_group("SQuAD")
    squad.add_argument("--squad-file", help="the SQuAD v1.1 or v2.0 dataset JSON with the gold answers")
    squad.add_argument("--null-odds", help="v2.0: null_odds.json (question id -> null score - best score)")
    squad.add_argument("--version", default="auto", choices=("auto", "1.1", "2.0"),
                       help="evaluation script to use (default: auto, from the dataset file)")
    squad.add_argument("--na-prob-thresh", type=float, default=1.0,
                       help="v2.0: predict no answer where null odds exceed this (default: %(default)s)")
    squad.add_argument("--skip-unscorable-questions", action="store_true",
                       help="leave out questions that repeat an id or lack 'answers' without is_impossible (counted "
                       "in the scores as skipped_unscorable_questions) instead of refusing the file")
    classification = parser.add_argument_group("classification")
    classification.add_argument("--gold-file", help="the labeled TSV, CSV or JSONL file the predictions are for")
    classification.add_argument("--task", help="GLUE task name: its file layout and official metrics")
    classification.add_argument("--label-column", help="gold label column (name, or 0-based index) without --task")
    classification.add_argument("--file-format", choices=("tsv", "csv", "jsonl"), help="default: the extension")
    classification.add_argument("--no-header", action="store_true", help="TSV/CSV gold file without a header row")
    classification.add_argument("--regression", action="store_true", help="float labels (--task stsb sets it)")


def check_arguments(args):
    """Raise `UsageError` unless exactly one kind of evaluation is asked for, with what it needs."""
    if (args.squad_file is None) == (args.gold_file is None):
        raise UsageError("give --squad-file (SQuAD) or --gold-file (classification), not both")
    if args.gold_file and not args.task and args.label_column is None:
        raise UsageError("a classification gold file needs --task or --label-column")


def run(args):
    """Score and print the results as JSON."""
    if args.squad_file:
        from keras_bert_impl.squad import evaluate_squad_files

        version_2 = {"auto": None, "1.1": False, "2.0": True}[args.version]
        results = evaluate_squad_files(args.squad_file, args.predictions, na_prob_path=args.null_odds,
                                       version_2=version_2, na_prob_thresh=args.na_prob_thresh,
                                       skip_unscorable=args.skip_unscorable_questions)
    else:
        from keras_bert_impl.training.finetuning_results import evaluate_classification_files

        results = evaluate_classification_files(args.gold_file, args.predictions, task=args.task,
                                                label_column=args.label_column, file_format=args.file_format,
                                                has_header=not args.no_header, regression=args.regression)
    # NumPy scalars -> plain numbers for JSON.
    results = {key: value.item() if hasattr(value, "item") else value for key, value in results.items()}
    print(json.dumps(results, indent=2))
    if args.output_file:
        from keras_bert_impl.utils.atomic_io import atomic_write_json

        atomic_write_json(args.output_file, results)
    return 0
