"""Fine-tune BERT for sentence (pair) classification or regression, as `run_classifier.py`, with `model.fit`.

    # a GLUE task from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-classifier --task mrpc --train-file glue/MRPC/train.tsv \\
        --dev-file glue/MRPC/dev.tsv --init-checkpoint path/to/bert --output-dir runs/mrpc
    # STS-B (regression), any TSV/CSV/JSONL with named columns, or from scratch with a preset
    keras-bert finetune-classifier --task stsb --train-file glue/STS-B/train.tsv --dev-file ...
    keras-bert finetune-classifier --train-file reviews.jsonl --text-columns text \\
        --label-column label --dev-file dev.jsonl --preset tiny --vocab vocab.txt --output-dir runs/reviews

Outputs in `--output-dir`: `last/` and `best/` (by the dev metric `--monitor`) after every epoch, each a
`BertClassifier.save_pretrained` directory with `label_vocabulary.json`, the tokenizer and
`eval_results.json`, and `training_state/` (weights + optimizer + RNG state of the last finished epoch: run
the same command again after an interruption and it resumes there); at the end `dev_predictions.tsv`
(`index<TAB>label`), `eval_results.json` (the final model's dev metrics: GLUE's official ones for `--task`)
and, with `--test-file`, `test_predictions.tsv`.

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
    positive_int,
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
    data.add_argument("--train-file", required=True, help="labeled training examples (TSV, CSV or JSONL)")
    data.add_argument("--dev-file", help="labeled dev examples: scored after every epoch, picks best/")
    data.add_argument("--test-file", help="unlabeled file to predict (same columns, no label column needed)")
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
        parser, epochs=(positive_int, EPOCHS, "passes over the training data"), batch_size=BATCH_SIZE,
        eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE, warmup_fraction=WARMUP_FRACTION,
        weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)
    train.add_argument("--monitor", help="dev metric that picks best/ (default: the task's first metric)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    if not args.init_checkpoint and not args.preset:
        raise UsageError("give --init-checkpoint (fine-tune) or --preset (from scratch)")
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


def run(args):
    """Fine-tune and evaluate as `args` say; return 0."""
    import keras

    from keras_bert_impl.data.classification_data import LabelVocabulary, glue_layout, pack_classification_examples
    from keras_bert_impl.training import finetuning

    keras.utils.set_random_seed(args.seed)
    if args.task and glue_layout(args.task).regression:
        args.regression = True
    bucketing = not args.no_length_bucketing
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)

    train = read_examples(args, args.train_file)
    labels = None
    if not args.regression:
        layout_labels = glue_layout(args.task).labels if args.task else None
        labels = LabelVocabulary(layout_labels) if layout_labels else LabelVocabulary.from_examples(train)
    model = finetuning.build_classifier(
        tokenizer, 1 if args.regression else len(labels), labels=labels.labels if labels else None,
        init_checkpoint=args.init_checkpoint, preset=args.preset, max_sequence_length=max(512, args.sequence_length),
        classifier_dropout=args.classifier_dropout,
    )
    pack = lambda examples: pack_classification_examples(  # noqa: E731 - one call site per split
        examples, tokenizer, args.sequence_length, labels, args.regression)
    train_x, train_y = pack(train)
    steps_per_epoch = finetuning.batches_per_epoch(train_x, args.batch_size, bucketing, args.bucket_width)
    total_steps = steps_per_epoch * args.epochs
    finetuning.compile_for_finetuning(model, args.learning_rate, total_steps, args.warmup_fraction,
                                      args.weight_decay, jit_compile=not args.no_jit)
    print(f"{len(train)} training examples, {steps_per_epoch} steps per epoch, {total_steps} updates; "
          f"labels: {labels.labels if labels else 'regression'}")

    dev_x = dev_y = None
    if args.dev_file:
        dev_x, dev_y = pack(read_examples(args, args.dev_file))

    def evaluate(m):
        logits = finetuning.predict_logits(m, dev_x, args.eval_batch_size, bucketing, args.bucket_width)
        return finetuning.classification_scores(dev_y, logits, args.task, args.regression)

    monitor = (args.monitor or finetuning.classification_monitor(args.task, args.regression)) if args.dev_file else None
    checkpoint = finetuning.FinetuningCheckpoint(
        args.output_dir, tokenizer, evaluate=evaluate if args.dev_file else None, monitor=monitor)
    finetuning.fit_finetuning(model, train_x, train_y, checkpoint, args.epochs, args.batch_size, bucketing,
                              args.bucket_width, seed=args.seed, verbose=args.verbose)

    if args.dev_file:
        logits = finetuning.predict_logits(model, dev_x, args.eval_batch_size, bucketing, args.bucket_width)
        results = finetuning.classification_scores(dev_y, logits, args.task, args.regression)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "dev_predictions.tsv"), logits,
                                                    labels, args.regression)
        from keras_bert_impl.utils.atomic_io import atomic_write_json

        atomic_write_json(os.path.join(args.output_dir, "eval_results.json"),
                          {key: float(value) for key, value in results.items()})
        print("dev:", json.dumps(results), f"(best epoch {checkpoint.best_epoch + 1}: {monitor} "
              f"{checkpoint.best_score:.4f}, saved in {args.output_dir}/best)")
    if args.test_file:
        test_x, _ = pack_classification_examples(read_examples(args, args.test_file, labeled=False), tokenizer,
                                                 args.sequence_length)
        logits = finetuning.predict_logits(model, test_x, args.eval_batch_size, bucketing, args.bucket_width)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "test_predictions.tsv"), logits,
                                                     labels, args.regression)

