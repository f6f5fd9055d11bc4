"""Score a predictions file: SQuAD (the official v1.1 / v2.0 evaluation) or classification (GLUE metrics).

    # SQuAD: predictions.json ({question id: answer text}) against the dataset file with the gold answers
    keras-bert evaluate --squad-file dev-v1.1.json --predictions runs/squad/predictions.json
    keras-bert evaluate --squad-file dev-v2.0.json --predictions predictions.json --null-odds null_odds.json
    # classification: a predictions TSV (`index<TAB>prediction`, as finetune-classifier writes) against the
    # labeled file, row i of the gold file being index i
    keras-bert evaluate --gold-file MRPC/dev.tsv --task mrpc --predictions runs/mrpc/dev_predictions.tsv
    keras-bert evaluate --gold-file dev.jsonl --label-column label --predictions dev_predictions.tsv

SQuAD scores are the official scripts': answers normalised (lowercase, no punctuation or articles a/an/the,
single spaces), exact match and token F1 taking the best gold answer, in percent. v2.0 (picked from the
file's `version`, or any `is_impossible` question; `--version` forces it) adds HasAns_* / NoAns_* and, with
`--null-odds`, the best thresholds. Classification reports GLUE's metrics for `--task` (accuracy; F1 for
MRPC and QQP; Matthews correlation for CoLA; Pearson and Spearman for STS-B), else accuracy (and F1 of the
second label for two labels), or Pearson and Spearman with `--regression`. The scores print as JSON and go
to `--output-file` when given.
"""

import csv
import json

from keras_bert_impl.cli.arguments import UsageError


def add_arguments(parser):
    """Define the `keras-bert evaluate` flags on `parser`."""
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


def read_prediction_tsv(path):
    """`index<TAB>prediction` rows (a header row "index ..." is skipped) -> list of predictions by index."""
    predictions = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for line_number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or (line_number == 1 and row[0].strip().lower() == "index"):
                continue
            if len(row) < 2 or not row[0].strip().isdigit():
                raise ValueError(f"{path}, line {line_number}: expected 'index<TAB>prediction', got {row!r}.")
            predictions[int(row[0])] = row[1].strip()
    if sorted(predictions) != list(range(len(predictions))):
        raise ValueError(f"{path}: the indices are not 0..{len(predictions) - 1} (missing or repeated rows).")
    return [predictions[index] for index in range(len(predictions))]


def classification_scores(args):
    """The metrics of a predictions TSV against the gold file, as `args` describe them."""
    from keras_bert_impl import metrics
    from keras_bert_impl.data.classification_data import (
        LabelVocabulary,
        glue_layout,
        read_classification_examples,
        read_glue_examples,
    )

    layout = glue_layout(args.task) if args.task else None
    regression = args.regression or bool(layout and layout.regression)
    if layout is not None:
        gold = read_glue_examples(args.task, args.gold_file)
    else:
        label_column = int(args.label_column) if args.label_column.isdigit() else args.label_column
        # Only the labels are scored; the label column stands in for the text column the reader requires.
        gold = read_classification_examples(args.gold_file, label_column, label_column, file_format=args.file_format,
                                            has_header=not args.no_header, regression=regression)
    predicted = read_prediction_tsv(args.predictions)
    if len(predicted) != len(gold):
        raise ValueError(f"{args.predictions} has {len(predicted)} predictions but {args.gold_file} has "
                         f"{len(gold)} labeled rows.")
    if regression:
        labels = [float(example.label) for example in gold]
        try:
            scores = [float(value) for value in predicted]
        except ValueError as error:
            raise ValueError(f"{args.predictions}: a regression prediction is not a number ({error}).") from None
        if args.task:
            return metrics.glue_metrics(args.task, labels, scores)
        return {"pearson": metrics.pearson_correlation(labels, scores),
                "spearman": metrics.spearman_correlation(labels, scores)}
    vocabulary = LabelVocabulary(layout.labels) if layout is not None else LabelVocabulary.from_examples(gold)
    label_ids = vocabulary.encode(gold)
    predicted_ids = [vocabulary.label_to_id(value, f"{args.predictions}, row {index}")
                     for index, value in enumerate(predicted)]
    if args.task:
        return metrics.glue_metrics(args.task, label_ids, predicted_ids)
    scores = {"accuracy": metrics.accuracy(label_ids, predicted_ids)}
    if len(vocabulary) == 2:
        scores["f1"] = metrics.f1(label_ids, predicted_ids, positive_label=1)
    return scores


def run(args):
    """Score and print the results as JSON."""
    if args.squad_file:
        from keras_bert_impl.squad import evaluate_squad_files

        version_2 = {"auto": None, "1.1": False, "2.0": True}[args.version]
        results = evaluate_squad_files(args.squad_file, args.predictions, na_prob_path=args.null_odds,
                                       version_2=version_2, na_prob_thresh=args.na_prob_thresh,
                                       skip_unscorable=args.skip_unscorable_questions)
    else:
        results = classification_scores(args)
    # NumPy scalars -> plain numbers for JSON.
    results = {key: value.item() if hasattr(value, "item") else value for key, value in results.items()}
    print(json.dumps(results, indent=2))
    if args.output_file:
        from keras_bert_impl.utils.atomic_io import atomic_write_json

        atomic_write_json(args.output_file, results)
    return 0
