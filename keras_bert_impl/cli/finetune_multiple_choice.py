"""Fine-tune BERT for multiple choice (SWAG: pick the ending of a sentence among four), with `model.fit`.

    keras-bert finetune-multiple-choice --train-file swag/train.csv --dev-file swag/val.csv \\
        --init-checkpoint path/to/bert --output-dir runs/swag

Data: SWAG CSV files (`data.multiple_choice_data.read_swag_examples`): columns `sent1`, `sent2`, `ending0`,
`ending1`, ... and `label`, read by name (the full SWAG header's other columns are ignored). Choice N is packed
as `[CLS] sent1 [SEP] sent2 endingN [SEP]`, as Hugging Face's `run_swag.py` does (`sent2` is the start of
every ending), each choice to `--sequence-length` tokens (`BertMultipleChoicePreprocessor`).

Outputs in `--output-dir`, as `finetune-classifier`'s: `last/` after every epoch, `best/` (by dev accuracy, or
accuracy on `--tune-fraction` of the training rows held out) too when there is something to pick it by, each a
`BertMultipleChoice.save_pretrained` directory with the tokenizer and `eval_results.json`; `training_state/`
(rerun the same command after an interruption and it resumes after the last finished epoch; other settings
are refused); at the end `dev_predictions.tsv` (`index<TAB>choice`) and `eval_results.json` (dev accuracy),
and with `--test-file` `test_predictions.tsv` (plus `test_results.json` when the file has labels; the test file
never picks a model). `--epochs 0` trains nothing and scores `--init-checkpoint`.

Batches are padded to `--sequence-length` (length bucketing groups `(N, T)` rows; a multiple-choice example is
`C` rows that must stay in one batch, so `--no-length-bucketing` and `--bucket-width` change nothing here). The
optimizer is `finetune-classifier`'s: `AdamWeightDecay`, linear warmup over `--warmup-fraction`, then linear
decay to 0. The paper's SWAG run: 3 epochs, learning rate 2e-5, batch 16.
"""

import dataclasses
import json
import os

from keras_bert_impl.cli.arguments import (
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    finetuning_run_settings,
    positive_int,
    tune_fraction,
)

# -- defaults (the paper's SWAG run, section 4.4) ----------------------------------------------------------
SEQUENCE_LENGTH = 128
BATCH_SIZE = 16
EVAL_BATCH_SIZE = 32
LEARNING_RATE = 2e-5
EPOCHS = 3
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01
BUCKET_WIDTH = 32
SEED = 12345
MONITOR = "accuracy"


def add_arguments(parser):
    """Define the `keras-bert finetune-multiple-choice` flags on `parser`."""
    data = parser.add_argument_group("data")
    data.add_argument("--train-file", help="labelled SWAG CSV (sent1, sent2, ending0.., label; omit with --epochs 0)")
    data.add_argument("--dev-file", help="labelled SWAG CSV: scored after every epoch, picks best/")
    data.add_argument("--test-file", help="SWAG CSV to predict; scored when it has labels, never used to pick a "
                      "model")
    data.add_argument("--tune-fraction", type=tune_fraction,
                      help="without --dev-file: hold out this share of the training rows (seeded) to pick best/")
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=SEQUENCE_LENGTH,
                      help="tokens per packed choice, longer ones are truncated (default: %(default)s)")
    model = add_finetuning_model_arguments(parser)
    model.add_argument("--classifier-dropout", type=float, help="dropout before the scoring layer (default: the "
                       "checkpoint's, else 0.1)")
    add_finetuning_training_arguments(
        parser, epochs=EPOCHS, batch_size=BATCH_SIZE, eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE,
        warmup_fraction=WARMUP_FRACTION, weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    from keras_bert_impl.cli.arguments import UsageError

    check_finetuning_arguments(args)
    if args.tune_fraction and args.dev_file:
        raise UsageError("--dev-file picks best/, so --tune-fraction would only take rows from training: give one")


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score) and evaluate as `args` say; return 0."""
    import keras
    import numpy as np

    from keras_bert_impl import metrics
    from keras_bert_impl.data.multiple_choice_data import multiple_choice_inputs, read_swag_examples
    from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.training.held_out_data import split_rows
    from keras_bert_impl.training.task_model_builders import build_multiple_choice
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    keras.utils.set_random_seed(args.seed)
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)
    preprocessor = BertMultipleChoicePreprocessor(tokenizer, sequence_length=args.sequence_length)
    model = build_multiple_choice(tokenizer, init_checkpoint=args.init_checkpoint, preset=args.preset,
                                  max_sequence_length=max(512, args.sequence_length), dropout=args.classifier_dropout,
                                  preprocessor=preprocessor)

    def pack(examples):
        """`(x, labels)`: inputs `(N, C, T)` and int32 `(N,)` labels (None without)."""
        texts, labels = multiple_choice_inputs(examples)
        return preprocessor(texts), labels

    def scores(data):
        inputs, gold = data
        logits = finetuning.predict_logits(model, inputs, args.eval_batch_size, length_bucketing=False)
        return logits, {MONITOR: metrics.accuracy(gold, np.argmax(logits, axis=-1))}

    train = read_swag_examples(args.train_file) if args.epochs else []
    tune = []
    if args.tune_fraction:
        train, tune = split_rows(train, args.tune_fraction, args.seed)
        print(f"--tune-fraction {args.tune_fraction}: {len(tune)} of {len(train) + len(tune)} training rows held "
              f"out to pick best/")
    dev = pack(read_swag_examples(args.dev_file)) if args.dev_file else None
    selection = dev if dev is not None else (pack(tune) if tune else None)
    if args.epochs:
        train_x, train_y = pack(train)
        # (N, C, T) rows are not length-bucketed: every batch is padded to --sequence-length.
        settings = dataclasses.replace(finetuning_run_settings(args), length_bucketing=False)
        finetuning.finetune(model, train_x, train_y, settings, tokenizer,
                            counts=f"{len(train)} training examples of {train_x['token_ids'].shape[1]} choices",
                            evaluate=(lambda m: scores(selection)[1]) if selection else None,
                            monitor=MONITOR if selection else None, selection_name="dev" if dev else "held-out")

    if dev is not None:
        logits, results = scores(dev)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "dev_predictions.tsv"), logits)
        atomic_write_json(os.path.join(args.output_dir, "eval_results.json"), results)
        print("dev:", json.dumps(results))
    if args.test_file:
        test_x, test_y = pack(read_swag_examples(args.test_file, require_labels=False))
        logits = finetuning.predict_logits(model, test_x, args.eval_batch_size, length_bucketing=False)
        finetuning.write_classification_predictions(os.path.join(args.output_dir, "test_predictions.tsv"), logits)
        if test_y is not None:
            results = {MONITOR: metrics.accuracy(test_y, np.argmax(logits, axis=-1))}
            atomic_write_json(os.path.join(args.output_dir, "test_results.json"), results)
            print("test:", json.dumps(results))
    return 0
