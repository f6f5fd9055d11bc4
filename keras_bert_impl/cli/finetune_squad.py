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
ends up to `--max-answer-length` tokens. Training windows are bucketed by length (`--bucket-width`);
`--no-length-bucketing` pads them all to `--sequence-length`, as prediction does. The step runs under `jit_compile=True`.
"""

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_model_arguments,
    add_finetuning_training_arguments,
    check_finetuning_arguments,
    finetuning_run_settings,
    model_source,
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


def run(args):
    """Fine-tune (or, with `--epochs 0`, only score), predict and evaluate as `args` say; return 0."""
    from keras_bert_impl.training.squad_finetuning import SquadFiles, SquadSettings, finetune_squad

    files = SquadFiles(train_file=args.train_file, dev_file=args.dev_file, threshold_file=args.threshold_file,
                       tune_fraction=args.tune_fraction, test_file=args.test_file,
                       skip_unscorable_questions=args.skip_unscorable_questions)
    squad = SquadSettings(version_2=args.version_2, sequence_length=args.sequence_length, doc_stride=args.doc_stride,
                          max_query_length=args.max_query_length, n_best_size=args.n_best_size,
                          max_answer_length=args.max_answer_length,
                          null_score_diff_threshold=args.null_score_diff_threshold)
    finetune_squad(files, squad, model_source(args), finetuning_run_settings(args))
    return 0
