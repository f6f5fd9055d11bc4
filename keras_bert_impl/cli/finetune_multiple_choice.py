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

Training examples are bucketed by the length of their longest choice (`--bucket-width`; an example's `C` choices
stay in one batch); `--no-length-bucketing` pads every batch to `--sequence-length`. The optimizer is `finetune-classifier`'s: `AdamWeightDecay`, linear warmup over `--warmup-fraction`, then linear
decay to 0. The paper's SWAG run: 3 epochs, learning rate 2e-5, batch 16.
"""

from keras_bert_impl.cli.arguments import (
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    finetuning_run_settings,
    model_source,
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
    from keras_bert_impl.training.multiple_choice_finetuning import SwagFiles, finetune_multiple_choice

    files = SwagFiles(train_file=args.train_file, dev_file=args.dev_file, test_file=args.test_file,
                      tune_fraction=args.tune_fraction)
    finetune_multiple_choice(files, model_source(args), finetuning_run_settings(args),
                             sequence_length=args.sequence_length, dropout=args.classifier_dropout)
    return 0
