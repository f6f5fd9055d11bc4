"""Fine-tune BERT for named entity recognition (token classification) on CoNLL files, with `model.fit`.

    # CoNLL-2003 from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-ner --train-file conll2003/train.txt --dev-file conll2003/dev.txt \\
        --test-file conll2003/test.txt --init-checkpoint path/to/bert --output-dir runs/ner
    # score a fine-tuned model only
    keras-bert finetune-ner --epochs 0 --test-file conll2003/test.txt --init-checkpoint runs/ner/best \\
        --output-dir runs/ner_test

Files are CoNLL columns (`word TAG` or `word POS CHUNK TAG`, a blank line between sentences, IOB1 or IOB2
tags; `data.token_classification_data`). Labels sit on the first sub-token of each word; a sentence longer
than `--sequence-length` tokens is cut into windows `--stride` tokens apart, and every word is predicted in
exactly one of them (`preprocessing.BertTokenClassificationPreprocessor`), so no word is lost. Scores are
entity-level precision / recall / F1 with the conlleval convention (`metrics.entity_scores`).

Outputs in `--output-dir`: `last/` after every epoch and, with `--dev-file`, `best/` (by dev entity F1,
`--monitor`), each a `BertTokenClassifier.save_pretrained` directory with its tags, the tokenizer, the
window settings (`preprocessor.json`) and `eval_results.json`; `training_state/` (run the same command again
after an interruption and it resumes there); at the end `dev_predictions.txt` / `test_predictions.txt`
(`word gold predicted` lines, conlleval's input) and `eval_results.json` / `test_results.json`. The test file
never picks a model.
"""


from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    finetuning_run_settings,
    model_source,
    positive_int,
)

# -- defaults (the paper's fine-tuning ranges, section 5.3 / appendix A.3) ------------------------------------
SEQUENCE_LENGTH = 128
BATCH_SIZE = 32
EVAL_BATCH_SIZE = 64
LEARNING_RATE = 5e-5
EPOCHS = 3
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01
BUCKET_WIDTH = 32
SEED = 12345
MONITOR = "f1"


def add_arguments(parser):
    """Define the `keras-bert finetune-ner` flags on `parser`."""
    data = parser.add_argument_group("data")
    data.add_argument("--train-file", help="CoNLL file with tags (omit with --epochs 0)")
    data.add_argument("--dev-file", help="CoNLL file with tags: scored after every epoch, picks best/")
    data.add_argument("--test-file", help="CoNLL file with tags: predicted and scored at the end, never picks a "
                      "model")
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=SEQUENCE_LENGTH,
                      help="tokens per window, [CLS] and [SEP] included (default: %(default)s)")
    data.add_argument("--stride", type=positive_int,
                      help="tokens between the starts of a long sentence's windows (default: half a window)")
    model = add_finetuning_model_arguments(parser)
    model.add_argument("--classifier-dropout", type=float, help="dropout before the head (default: the "
                       "checkpoint's, else 0.1)")
    train = add_finetuning_training_arguments(
        parser, epochs=EPOCHS, batch_size=BATCH_SIZE, eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE,
        warmup_fraction=WARMUP_FRACTION, weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)
    train.add_argument("--monitor", default=MONITOR, help="dev metric that picks best/: f1, precision, recall, "
                       "accuracy or <TYPE>_f1 (default: %(default)s)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    check_finetuning_arguments(args)
    room = args.sequence_length - 2
    if args.sequence_length < 3:
        raise UsageError(f"--sequence-length {args.sequence_length} leaves no room for a token between [CLS] and "
                         "[SEP]; give 3 or more (128 is usual)")
    if args.stride is not None and args.stride > room:
        raise UsageError(f"--stride {args.stride} is longer than a window's {room} tokens (--sequence-length "
                         f"{args.sequence_length} - 2), which would leave words in no window; use --stride {room} "
                         "or less")


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score) and evaluate as `args` say; return 0."""
    from keras_bert_impl.training.token_classification_finetuning import ConllFiles, finetune_token_classifier

    files = ConllFiles(train_file=args.train_file, dev_file=args.dev_file, test_file=args.test_file)
    finetune_token_classifier(files, model_source(args), finetuning_run_settings(args),
                              sequence_length=args.sequence_length, stride=args.stride,
                              classifier_dropout=args.classifier_dropout, monitor=args.monitor)
    return 0
