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

import json
import os

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    finetuning_run_settings,
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


def tag_sentences(model, preprocessor, sentences, batch_size, bucketing, bucket_width):
    """The predicted tags of each sentence (lists of str), from windowed, length-bucketed batches."""
    from keras_bert_impl.data.length_bucketing import predict_with_length_buckets
    from keras_bert_impl.training.model_input_checks import check_model_inputs

    features = preprocessor.featurize([sentence.words for sentence in sentences])
    check_model_inputs(model, features["inputs"], "prediction inputs")
    if bucketing:
        # `None` names the model's one (non-dict) output: the per-token logits, padded back to T.
        logits = predict_with_length_buckets(model, features["inputs"], batch_size=batch_size,
                                             bucket_width=bucket_width, token_outputs=(None,))
    else:
        logits = model.predict(features["inputs"], batch_size=batch_size, verbose=0)
    tagged = preprocessor.decode(features, logits, model.labels)
    return [[word["tag"] for word in sentence["words"]] for sentence in tagged]


def write_conll_predictions(path, sentences, predicted):
    """`word gold predicted` lines, a blank line after each sentence (conlleval's input), written atomically."""
    from keras_bert_impl.utils.atomic_io import atomic_write_text

    blocks = ["\n".join(f"{word} {gold} {tag}" for word, gold, tag in zip(sentence.words, sentence.tags, tags))
              for sentence, tags in zip(sentences, predicted)]
    atomic_write_text(path, "\n\n".join(blocks) + "\n")


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score) and evaluate as `args` say; return 0."""
    import keras

    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
    from keras_bert_impl.metrics import entity_scores
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    keras.utils.set_random_seed(args.seed)
    bucketing = not args.no_length_bucketing
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)
    train = read_conll_sentences(args.train_file) if args.epochs else []
    tags = tag_vocabulary(train) if train else None  # --epochs 0: the checkpoint's tags
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=args.sequence_length,
                                                       stride=args.stride)
    model = finetuning.build_classifier(
        tokenizer, len(tags) if tags else None, labels=tags.labels if tags else None,
        init_checkpoint=args.init_checkpoint, preset=args.preset, max_sequence_length=max(512, args.sequence_length),
        classifier_dropout=args.classifier_dropout, preprocessor=preprocessor, model_class=BertTokenClassifier,
    )
    if model.labels is None:
        raise ValueError(f"{args.init_checkpoint} has no tag names; give --train-file (its tags name the classes).")

    def scores(sentences):
        predicted = tag_sentences(model, preprocessor, sentences, args.eval_batch_size, bucketing, args.bucket_width)
        return predicted, entity_scores([list(sentence.tags) for sentence in sentences], predicted)

    dev = read_conll_sentences(args.dev_file) if args.dev_file else None
    if args.epochs:
        train_x, train_y = preprocessor([sentence.words for sentence in train], encode_tags(train, tags))
        finetuning.finetune(model, train_x, train_y, finetuning_run_settings(args), tokenizer,
                            counts=f"{len(train)} training sentences, {len(train_y)} windows",
                            details=f"; tags: {tags.labels}", evaluate=(lambda m: scores(dev)[1]) if dev else None,
                            monitor=args.monitor if dev else None)

    for name, sentences, results_file in (("dev", dev, "eval_results.json"),
                                          ("test", read_conll_sentences(args.test_file) if args.test_file else None,
                                           "test_results.json")):
        if sentences is None:
            continue
        predicted, results = scores(sentences)
        write_conll_predictions(os.path.join(args.output_dir, f"{name}_predictions.txt"), sentences, predicted)
        atomic_write_json(os.path.join(args.output_dir, results_file), results)
        print(f"{name}:", json.dumps({key: round(value, 4) for key, value in results.items()}))
    return 0
