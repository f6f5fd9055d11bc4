"""Fine-tune BERT for SQuAD v1.1 / v2.0 question answering, as `run_squad.py`, with `model.fit`.

    # SQuAD v1.1 from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-squad --train-file train-v1.1.json --dev-file dev-v1.1.json \\
        --init-checkpoint path/to/bert --output-dir runs/squad1
    # SQuAD v2.0: the null-score threshold is tuned on the dev set automatically
    keras-bert finetune-squad --version-2 --train-file train-v2.0.json --dev-file dev-v2.0.json \\
        --init-checkpoint path/to/bert --output-dir runs/squad2
    # predict only (a model fine-tuned before), with a fixed threshold
    keras-bert finetune-squad --dev-file dev-v2.0.json --version-2 --epochs 0 \\
        --init-checkpoint runs/squad2/best --null-score-diff-threshold -1.5 --output-dir runs/squad2_test

Outputs in `--output-dir`: `last/` and `best/` (by dev F1) after every epoch (with a dev file), each a
`BertQuestionAnswerer.save_pretrained` directory with the tokenizer and `eval_results.json`, and
`training_state/` (run the same command again after an interruption and it resumes there); at the end
`predictions.json`, `nbest_predictions.json`, `null_odds.json` (v2.0) and `eval_results.json` (the official
exact match / F1; v2.0 also HasAns / NoAns and `null_score_diff_threshold`).

Features follow the original: questions cut to `--max-query-length` tokens, document windows of
`--sequence-length` moving by `--doc-stride` tokens, answers decoded from the `--n-best-size` best starts and
ends up to `--max-answer-length` tokens. Windows are bucketed by length (`--bucket-width`) for training and
prediction; `--no-length-bucketing` pads all to `--sequence-length`. The step runs under `jit_compile=True`.
"""

import json
import os

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    non_negative_int,
    positive_int,
)

# -- defaults (run_squad.py's) -------------------------------------------------------------------------------
SEQUENCE_LENGTH = 384
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
BATCH_SIZE = 32
EVAL_BATCH_SIZE = 64
LEARNING_RATE = 3e-5  # the paper: 5e-5 for v1.1 (batch 32, 3 epochs); 5e-5 and 2 epochs for v2.0
EPOCHS = 2
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30
BUCKET_WIDTH = 32
SEED = 12345


def add_arguments(parser):
    """Define the `keras-bert finetune-squad` flags on `parser`."""
    data = parser.add_argument_group("data")
    data.add_argument("--train-file", help="SQuAD JSON with answers (omit with --epochs 0)")
    data.add_argument("--dev-file", help="SQuAD JSON to predict and evaluate (after every epoch and at the end)")
    data.add_argument("--skip-unscorable-questions", action="store_true",
                      help="leave out --dev-file questions that repeat an id or lack 'answers' without is_impossible "
                      "(the number left out is printed) instead of refusing the file")
    data.add_argument("--version-2", action="store_true", help="SQuAD v2.0: questions may have no answer")
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=SEQUENCE_LENGTH,
                      help="tokens per window: [CLS] question [SEP] document part [SEP] (default: %(default)s)")
    data.add_argument("--doc-stride", type=positive_int, default=DOC_STRIDE,
                      help="distance between window starts (default: %(default)s)")
    data.add_argument("--max-query-length", type=positive_int, default=MAX_QUERY_LENGTH,
                      help="questions are cut to this many tokens (default: %(default)s)")
    add_finetuning_model_arguments(parser)
    add_finetuning_training_arguments(
        parser, epochs=(non_negative_int, EPOCHS, "passes over the training windows; 0 predicts only"),
        batch_size=BATCH_SIZE, eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE,
        warmup_fraction=WARMUP_FRACTION, weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)
    decode = parser.add_argument_group("decoding")
    decode.add_argument("--n-best-size", type=positive_int, default=N_BEST_SIZE,
                        help="start and end candidates per window (default: %(default)s)")
    decode.add_argument("--max-answer-length", type=positive_int, default=MAX_ANSWER_LENGTH,
                        help="longest answer in tokens (default: %(default)s)")
    decode.add_argument("--null-score-diff-threshold", type=float,
                        help="v2.0: fixed threshold (default: tuned on --dev-file)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    if not args.init_checkpoint and not args.preset:
        raise UsageError("give --init-checkpoint (fine-tune) or --preset (from scratch)")
    if args.epochs > 0 and not args.train_file:
        raise UsageError("training needs --train-file (or pass --epochs 0 to predict only)")
    if args.epochs == 0 and not args.dev_file:
        raise UsageError("--epochs 0 predicts: give --dev-file")
    # A stride longer than the shortest document window ([CLS] question [SEP] ... [SEP]) would skip context.
    window = args.sequence_length - args.max_query_length - 3
    if args.doc_stride > window:
        raise UsageError(f"--doc-stride {args.doc_stride} is longer than the document part of a window ({window} = "
                         f"--sequence-length {args.sequence_length} - --max-query-length {args.max_query_length} - 3), "
                         f"which would leave parts of the context in no window; use --doc-stride {window} or less")


def run(args):
    """Fine-tune, predict and evaluate as `args` say; return 0."""
    import keras

    from keras_bert_impl.squad import (
        convert_examples_to_features,
        parse_squad_examples,
        read_squad_examples,
        scorable_squad_json,
    )
    from keras_bert_impl.squad.squad_reader import load_squad_json
    from keras_bert_impl.training import finetuning

    keras.utils.set_random_seed(args.seed)
    bucketing = not args.no_length_bucketing
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)
    model = finetuning.build_question_answerer(tokenizer, init_checkpoint=args.init_checkpoint, preset=args.preset,
                                               max_sequence_length=max(512, args.sequence_length))
    windows = dict(sequence_length=args.sequence_length, doc_stride=args.doc_stride,
                   max_query_length=args.max_query_length)

    dev = None
    if args.dev_file:
        dev_json, skipped = scorable_squad_json(load_squad_json(args.dev_file), args.dev_file,
                                                skip_unscorable=args.skip_unscorable_questions)
        if skipped:
            print(f"skipped {skipped} questions of {args.dev_file} that cannot be scored (a repeated id, or no "
                  f"'answers' without is_impossible)")
        dev_examples = parse_squad_examples(dev_json, source=args.dev_file)
        dev_features = convert_examples_to_features(dev_examples, tokenizer, **windows)
        dev = (dev_json, dev_examples, dev_features)

    def evaluate(m, output_dir=None, threshold=None):
        dev_json, examples, features = dev
        logits = finetuning.predict_logits(m, features.inputs(), args.eval_batch_size, bucketing, args.bucket_width)
        return finetuning.evaluate_squad_predictions(
            examples, features, logits["start_logits"], logits["end_logits"], dev_json, output_dir=output_dir,
            version_2_with_negative=args.version_2, n_best_size=args.n_best_size,
            max_answer_length=args.max_answer_length, null_score_diff_threshold=threshold,
        )

    if args.epochs > 0:
        train_examples = read_squad_examples(args.train_file, is_training=True)
        if train_examples.skipped:
            print(f"skipped {len(train_examples.skipped)} training questions whose answer does not match the context")
        if not len(train_examples):
            raise ValueError(f"{args.train_file} has no training questions ({len(train_examples.skipped)} skipped); "
                             f"give a SQuAD file whose data[].paragraphs[].qas[] hold answered questions, or "
                             f"--epochs 0 to predict only.")
        train_features = convert_examples_to_features(train_examples, tokenizer, is_training=True, **windows)
        steps_per_epoch = finetuning.batches_per_epoch(train_features.inputs(), args.batch_size, bucketing,
                                                       args.bucket_width)
        total_steps = steps_per_epoch * args.epochs
        finetuning.compile_for_finetuning(model, args.learning_rate, total_steps, args.warmup_fraction,
                                          args.weight_decay, jit_compile=not args.no_jit)
        print(f"{len(train_examples)} training questions, {len(train_features)} windows, {steps_per_epoch} steps "
              f"per epoch, {total_steps} updates")
        checkpoint = finetuning.FinetuningCheckpoint(
            args.output_dir, tokenizer, evaluate=evaluate if dev else None, monitor="f1" if dev else None)
        finetuning.fit_finetuning(model, train_features.inputs(), train_features.labels(), checkpoint, args.epochs,
                                  args.batch_size, bucketing, args.bucket_width, seed=args.seed, verbose=args.verbose)

    if dev:
        results = evaluate(model, args.output_dir, args.null_score_diff_threshold)
        print("dev:", json.dumps(results))
        print(f"predictions written to {os.path.join(args.output_dir, 'predictions.json')}")

