"""Fine-tune BERT for named entity recognition (token classification) on CoNLL files, with `model.fit`.

    keras-bert finetune-ner --train-file conll2003/train.txt --dev-file conll2003/dev.txt \\
        --test-file conll2003/test.txt --init-checkpoint path/to/bert --output-dir runs/ner

The recipe is `training.classifier_finetuning.finetune_token_classifier`. Files are CoNLL columns
(`word TAG` or `word POS CHUNK TAG`, IOB1 or IOB2); a sentence longer than `--sequence-length` is cut into
windows `--stride` tokens apart, every word predicted in exactly one. Scores are conlleval's entity-level
precision / recall / F1. Files and outputs as `finetune-classifier`'s, the predictions in
`dev_predictions.txt` / `test_predictions.txt` (`word gold predicted` lines, conlleval's input).
"""

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_arguments,
    check_finetuning_arguments,
    finetuning_inputs,
    positive_int,
)


def add_arguments(parser):
    """Define the `keras-bert finetune-ner` flags on `parser`; the rate is from the paper's fine-tuning ranges
    (section 5.3 / appendix A.3)."""
    data, _, train = add_finetuning_arguments(parser, "CoNLL file with tags",
                                              "tokens per window, [CLS] and [SEP] included", classifier_dropout=True,
                                              learning_rate=5e-5)
    data.add_argument("--stride", type=positive_int,
                      help="tokens between the starts of a long sentence's windows (default: half a window)")
    train.add_argument("--monitor", default="f1", help="dev (or held-out) metric that picks best/: f1, precision, "
                       "recall, accuracy or <TYPE>_f1 (default: %(default)s)")


def check_arguments(args):
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
    from keras_bert_impl.training.finetuning import FinetuningFiles
    from keras_bert_impl.training.classifier_finetuning import finetune_token_classifier

    finetune_token_classifier(*finetuning_inputs(FinetuningFiles, args), sequence_length=args.sequence_length,
                              stride=args.stride, classifier_dropout=args.classifier_dropout, monitor=args.monitor)
    return 0
