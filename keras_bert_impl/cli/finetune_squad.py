"""Fine-tune BERT for SQuAD v1.1 / v2.0 question answering, as `run_squad.py`, with `model.fit`.

    # SQuAD v1.1 from a converted checkpoint (Hugging Face, original TF or ours; vocab.txt read from it)
    keras-bert finetune-squad --train-file train-v1.1.json --dev-file dev-v1.1.json \\
        --init-checkpoint path/to/bert --output-dir runs/squad1
    # SQuAD v2.0: the null-score threshold is tuned on held-out training articles, then the test file scored
    keras-bert finetune-squad --version-2 --train-file train-v2.0.json --tune-fraction 0.1 \\
        --test-file test-v2.0.json --init-checkpoint path/to/bert --output-dir runs/squad2
    # score a model fine-tuned before (--epochs 0): its saved threshold, or one tuned on --threshold-file
    keras-bert finetune-squad --version-2 --epochs 0 --init-checkpoint runs/squad2/last \\
        --test-file test-v2.0.json --output-dir runs/squad2_test

Which file does what: `--train-file` trains. `--dev-file` is scored after every epoch and picks `best/`
(v2.0: and tunes the null threshold, unless `--threshold-file` / `--tune-fraction` does). `--threshold-file`
(a labelled SQuAD file) only tunes the v2.0 null threshold. `--tune-fraction F` holds out that share of the
training articles (whole articles, so no held-out question is about a paragraph trained on): they tune the
threshold and, without a dev file, pick `best/`. `--test-file` is predicted with the threshold so chosen and
scored when it has gold answers: it never tunes or picks anything. `--null-score-diff-threshold` fixes the
threshold instead; with none of these the threshold is `--init-checkpoint`'s saved one (else 0.0).

Outputs in `--output-dir`: `last/` after every epoch and, when there is something to select on (a dev file or
held-out articles), `best/` (by F1), each a `BertQuestionAnswerer.save_pretrained` directory with the
tokenizer, the preprocessor (windows, decoding settings and the v2.0 null threshold of that epoch: what
`predict` and `export` use) and `eval_results.json`, and `training_state/` (run the same command again after
an interruption and it resumes there). Without a dev file or `--tune-fraction` no score can tell the epochs
apart, so only `last/` is written. At the end, for the final model (the last epoch, or `--init-checkpoint`
with `--epochs 0`): `predictions.json`, `nbest_predictions.json`, `null_odds.json` (v2.0) and
`eval_results.json` (the official exact match / F1; v2.0 also HasAns / NoAns and `null_score_diff_threshold`)
for the dev file, and the same files in `test/` for the test file (`eval_results.json` only with gold
answers).

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
    check_finetuning_arguments,
    finetuning_run_settings,
    positive_int,
    tune_fraction,
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
    data.add_argument("--dev-file", help="SQuAD JSON with answers: scored after every epoch and at the end, picks "
                      "best/ (v2.0: tunes the null threshold unless --threshold-file or --tune-fraction does)")
    data.add_argument("--threshold-file", help="v2.0: SQuAD JSON with answers used only to tune the null threshold")
    data.add_argument("--tune-fraction", type=tune_fraction,
                      help="hold out this share of the training articles (seeded): they tune the v2.0 null "
                           "threshold and, without --dev-file, pick best/")
    data.add_argument("--test-file", help="SQuAD JSON to predict (into test/) and, when it has answers, score; "
                      "never tunes or picks anything")
    data.add_argument("--skip-unscorable-questions", action="store_true",
                      help="leave out questions of the scored files that repeat an id or lack 'answers' without "
                      "is_impossible (the number left out is printed) instead of refusing the file")
    data.add_argument("--version-2", action="store_true", help="SQuAD v2.0: questions may have no answer")
    data.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=SEQUENCE_LENGTH,
                      help="tokens per window: [CLS] question [SEP] document part [SEP] (default: %(default)s)")
    data.add_argument("--doc-stride", type=positive_int, default=DOC_STRIDE,
                      help="distance between window starts (default: %(default)s)")
    data.add_argument("--max-query-length", type=positive_int, default=MAX_QUERY_LENGTH,
                      help="questions are cut to this many tokens (default: %(default)s)")
    add_finetuning_model_arguments(parser)
    add_finetuning_training_arguments(
        parser, epochs=EPOCHS, batch_size=BATCH_SIZE, eval_batch_size=EVAL_BATCH_SIZE, learning_rate=LEARNING_RATE,
        warmup_fraction=WARMUP_FRACTION, weight_decay=WEIGHT_DECAY, bucket_width=BUCKET_WIDTH, seed=SEED)
    decode = parser.add_argument_group("decoding")
    decode.add_argument("--n-best-size", type=positive_int, default=N_BEST_SIZE,
                        help="start and end candidates per window (default: %(default)s)")
    decode.add_argument("--max-answer-length", type=positive_int, default=MAX_ANSWER_LENGTH,
                        help="longest answer in tokens (default: %(default)s)")
    decode.add_argument("--null-score-diff-threshold", type=float,
                        help="v2.0: fixed threshold (default: tuned on --threshold-file, the --tune-fraction "
                             "articles or --dev-file, else the --init-checkpoint's saved one, else 0.0)")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    check_finetuning_arguments(args)
    tuning = [flag for flag, given in (("--null-score-diff-threshold", args.null_score_diff_threshold is not None),
                                       ("--threshold-file", args.threshold_file),
                                       ("--tune-fraction", args.tune_fraction)) if given]
    if len(tuning) > 1:
        raise UsageError(f"{' and '.join(tuning)} each set the null threshold: give one")
    if (args.threshold_file or args.null_score_diff_threshold is not None) and not args.version_2:
        raise UsageError(f"{tuning[0]} sets the SQuAD v2.0 null threshold: add --version-2, or leave it out")
    # A stride longer than the shortest document window ([CLS] question [SEP] ... [SEP]) would skip context.
    window = args.sequence_length - args.max_query_length - 3
    if args.doc_stride > window:
        raise UsageError(f"--doc-stride {args.doc_stride} is longer than the document part of a window ({window} = "
                         f"--sequence-length {args.sequence_length} - --max-query-length {args.max_query_length} - 3), "
                         f"which would leave parts of the context in no window; use --doc-stride {window} or less")


def has_gold_answers(squad_json):
    """Whether a SQuAD object carries labels: some question has `answers` or `is_impossible`."""
    return any("answers" in question or "is_impossible" in question
               for article in squad_json.get("data", []) for paragraph in article.get("paragraphs", [])
               for question in paragraph.get("qas", []))


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score), predict and evaluate as `args` say; return 0."""
    import keras

    from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor
    from keras_bert_impl.squad import (
        convert_examples_to_features,
        parse_squad_examples,
        scorable_squad_json,
        write_squad_predictions,
    )
    from keras_bert_impl.squad.squad_reader import load_squad_json
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.training.held_out_data import split_articles
    from keras_bert_impl.training.task_model_builders import saved_preprocessor_config

    keras.utils.set_random_seed(args.seed)
    bucketing = not args.no_length_bucketing
    tokenizer = finetuning.load_tokenizer(args.vocab, args.init_checkpoint, lowercase=False if args.cased else None)
    threshold = args.null_score_diff_threshold
    if threshold is None:  # a fine-tuned checkpoint's tuned threshold, until this run tunes one
        threshold = saved_preprocessor_config(args.init_checkpoint).get("null_score_diff_threshold", 0.0)
    # The run's settings travel with the model it saves (preprocessor.json), for predict and export.
    preprocessor = BertQuestionAnsweringPreprocessor(
        tokenizer, sequence_length=args.sequence_length, doc_stride=args.doc_stride,
        max_query_length=args.max_query_length, n_best_size=args.n_best_size,
        max_answer_length=args.max_answer_length, version_2_with_negative=args.version_2,
        null_score_diff_threshold=threshold)
    model = finetuning.build_question_answerer(tokenizer, init_checkpoint=args.init_checkpoint, preset=args.preset,
                                               max_sequence_length=max(512, args.sequence_length),
                                               preprocessor=preprocessor)
    windows = dict(sequence_length=args.sequence_length, doc_stride=args.doc_stride,
                   max_query_length=args.max_query_length)

    def prepare(squad_json, source):
        squad_json, skipped = scorable_squad_json(squad_json, source, skip_unscorable=args.skip_unscorable_questions)
        if skipped:
            print(f"skipped {skipped} questions of {source} that cannot be scored (a repeated id, or no 'answers' "
                  f"without is_impossible)")
        examples = parse_squad_examples(squad_json, source=source)
        return squad_json, examples, convert_examples_to_features(examples, tokenizer, **windows)

    train_json = load_squad_json(args.train_file) if args.epochs else None
    tune = None
    if args.tune_fraction:
        train_json, held_out = split_articles(train_json, args.tune_fraction, args.seed)
        print(f"--tune-fraction {args.tune_fraction}: {len(held_out['data'])} of "
              f"{len(held_out['data']) + len(train_json['data'])} training articles held out")
        tune = prepare(held_out, f"{args.train_file} (held-out articles)")
    dev = prepare(load_squad_json(args.dev_file), args.dev_file) if args.dev_file else None
    selection = dev or tune  # picks best/
    threshold_set = None  # tunes the v2.0 null threshold
    if args.version_2 and args.null_score_diff_threshold is None:
        threshold_set = (prepare(load_squad_json(args.threshold_file), args.threshold_file) if args.threshold_file
                         else tune or dev)

    def score(m, data, output_dir=None):
        """Official scores on `data` at the model's threshold; on the tuning set, tune it first (one pass)."""
        squad_json, examples, features = data
        logits = finetuning.predict_logits(m, features.inputs(), args.eval_batch_size, bucketing, args.bucket_width)
        tunes = data is threshold_set
        results = finetuning.evaluate_squad_predictions(
            examples, features, logits["start_logits"], logits["end_logits"], squad_json, output_dir=output_dir,
            version_2_with_negative=args.version_2, n_best_size=args.n_best_size,
            max_answer_length=args.max_answer_length,
            null_score_diff_threshold=None if tunes else m.preprocessor.null_score_diff_threshold,
        )
        if tunes:
            m.preprocessor.null_score_diff_threshold = results["null_score_diff_threshold"]
        return results

    def tune_threshold(m):
        if threshold_set is not None and threshold_set is not selection:
            score(m, threshold_set)

    def evaluate_epoch(m):
        """Tune the threshold (saved with the epoch's model), then score the selection set."""
        tune_threshold(m)
        results = score(m, selection) if selection is not None else {}
        if args.version_2:
            results["null_score_diff_threshold"] = m.preprocessor.null_score_diff_threshold
        return results

    if args.epochs:
        train_examples = parse_squad_examples(train_json, is_training=True, source=args.train_file)
        if train_examples.skipped:
            print(f"skipped {len(train_examples.skipped)} training questions whose answer does not match the context")
        if not len(train_examples):
            raise ValueError(f"{args.train_file} has no training questions ({len(train_examples.skipped)} skipped); "
                             f"give a SQuAD file whose data[].paragraphs[].qas[] hold answered questions, or "
                             f"--epochs 0 to predict only.")
        train_features = convert_examples_to_features(train_examples, tokenizer, is_training=True, **windows)
        trained_from = finetuning.finetune(
            model, train_features.inputs(), train_features.labels(), finetuning_run_settings(args), tokenizer,
            counts=f"{len(train_examples)} training questions, {len(train_features)} windows",
            evaluate=evaluate_epoch if selection or threshold_set else None, monitor="f1" if selection else None,
            selection_name="dev" if dev else "held-out").trained_from
    if (not args.epochs or trained_from >= args.epochs) and threshold_set is not None and threshold_set is not dev:
        score(model, threshold_set)  # nothing trained in this run (--epochs 0, or a finished run's rerun): tune now
    if args.version_2:
        print(f"null score threshold: {model.preprocessor.null_score_diff_threshold:.4f}")

    if dev:
        print("dev:", json.dumps(score(model, dev, args.output_dir)))
        print(f"predictions written to {os.path.join(args.output_dir, 'predictions.json')}")
    if args.test_file:
        test_json, test_dir = load_squad_json(args.test_file), os.path.join(args.output_dir, "test")
        if has_gold_answers(test_json):
            print("test:", json.dumps(score(model, prepare(test_json, args.test_file), test_dir)))
        else:
            examples = parse_squad_examples(test_json, source=args.test_file)
            features = convert_examples_to_features(examples, tokenizer, **windows)
            logits = finetuning.predict_logits(model, features.inputs(), args.eval_batch_size, bucketing,
                                               args.bucket_width)
            write_squad_predictions(model.preprocessor.decode(examples, features, logits), test_dir)
        print(f"test predictions written to {os.path.join(test_dir, 'predictions.json')}")
    return 0
