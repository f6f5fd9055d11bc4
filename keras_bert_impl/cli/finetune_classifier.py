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

import json
import os

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    positive_int,
    tune_fraction,
)
from keras_bert_impl.cli.finetuning_command import fit_from_arguments

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


def read_examples(args, path, labeled=True):
    from keras_bert_impl.data.classification_data import read_classification_examples, read_glue_examples

    if args.task:
        return read_glue_examples(args.task, path, labeled=labeled)
    columns = [int(c) if c.isdigit() else c for c in args.text_columns.split(",")]
    label_column = args.label_column if labeled else None
    if label_column is not None and label_column.isdigit():
        label_column = int(label_column)
    return read_classification_examples(path, columns, label_column, file_format=args.file_format,
                                        has_header=not args.no_header, regression=args.regression)


def has_label_column(args, path):
    """Whether the file holds the label column: a named column in its header (JSONL: its first record's keys);
    a label column given by index (files without a header) is taken to be there."""
    import csv

    from keras_bert_impl.data.classification_data import glue_layout

    label_column = glue_layout(args.task).label_column if args.task else args.label_column
    if isinstance(label_column, int) or label_column.isdigit():
        return True
    file_format = args.file_format or ("tsv" if args.task else os.path.splitext(path)[1].lstrip(".").lower())
    with open(path, encoding="utf-8-sig", newline="") as handle:
        first = next((line for line in handle if line.strip()), "")
    if file_format == "jsonl":
        try:
            return label_column in json.loads(first)
        except (json.JSONDecodeError, TypeError):
            return True  # the labelled read names the bad line
    delimiter = "\t" if file_format == "tsv" else ","
    return label_column in next(csv.reader([first], delimiter=delimiter), [])


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score) and evaluate as `args` say; return 0."""
    import keras

    from keras_bert_impl.data.classification_data import LabelVocabulary, glue_layout, pack_classification_examples
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.training.held_out_data import split_rows
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    keras.utils.set_random_seed(args.seed)
    if args.task and glue_layout(args.task).regression:
        args.regression = True
    bucketing = not args.no_length_bucketing
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)

    train = read_examples(args, args.train_file) if args.epochs else []
    labels = None
    if not args.regression:
        layout_labels = glue_layout(args.task).labels if args.task else None
        labels = LabelVocabulary(layout_labels) if layout_labels else (
            LabelVocabulary.from_examples(train) if train else None)  # --epochs 0: the checkpoint's labels
    tune = []
    if args.tune_fraction:
        train, tune = split_rows(train, args.tune_fraction, args.seed)
        print(f"--tune-fraction {args.tune_fraction}: {len(tune)} of {len(train) + len(tune)} training rows held "
              f"out to pick best/")
    model = finetuning.build_classifier(
        tokenizer, 1 if args.regression else (len(labels) if labels else None),
        labels=labels.labels if labels else None, init_checkpoint=args.init_checkpoint, preset=args.preset,
        max_sequence_length=max(512, args.sequence_length), classifier_dropout=args.classifier_dropout,
        preprocessor=BertPreprocessor(tokenizer, sequence_length=args.sequence_length),
    )
    if labels is None and not args.regression:
        labels = LabelVocabulary(model.labels or [str(index) for index in range(model.num_classes)])
    pack = lambda examples: pack_classification_examples(  # noqa: E731 - one call site per split
        examples, tokenizer, args.sequence_length, labels, args.regression)

    def scores(data):
        inputs, gold = data
        logits = finetuning.predict_logits(model, inputs, args.eval_batch_size, bucketing, args.bucket_width)
        return logits, finetuning.classification_scores(gold, logits, args.task, args.regression)

    dev = pack(read_examples(args, args.dev_file)) if args.dev_file else None
    selection = dev if dev is not None else (pack(tune) if tune else None)
    monitor = (args.monitor or finetuning.classification_monitor(args.task, args.regression)) if selection else None
    if args.epochs:
        train_x, train_y = pack(train)
        fit_from_arguments(model, train_x, train_y, args, tokenizer, counts=f"{len(train)} training examples",
                           details=f"; labels: {labels.labels if labels else 'regression'}",
                           evaluate=(lambda m: scores(selection)[1]) if selection else None, monitor=monitor,
                           selection_name="dev" if dev else "held-out", length_bucketing=bucketing,
                           bucket_width=args.bucket_width)

    if dev is not None:
        logits, results = scores(dev)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "dev_predictions.tsv"), logits,
                                                    labels, args.regression)
        atomic_write_json(os.path.join(args.output_dir, "eval_results.json"),
                          {key: float(value) for key, value in results.items()})
        print("dev:", json.dumps(results))
    if args.test_file:
        labelled = has_label_column(args, args.test_file)
        test_x, test_y = pack(read_examples(args, args.test_file, labeled=labelled))
        logits = finetuning.predict_logits(model, test_x, args.eval_batch_size, bucketing, args.bucket_width)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "test_predictions.tsv"), logits,
                                                    labels, args.regression)
        if labelled:
            results = finetuning.classification_scores(test_y, logits, args.task, args.regression)
            atomic_write_json(os.path.join(args.output_dir, "test_results.json"),
                              {key: float(value) for key, value in results.items()})
            print("test:", json.dumps(results))
    return 0
