"""Fine-tune BERT for SQuAD v1.1 / v2.0 question answering, as `run_squad.py`, with `model.fit`.

    keras-bert finetune-squad --train-file train-v1.1.json --dev-file dev-v1.1.json \\
        --init-checkpoint path/to/bert --output-dir runs/squad1
    keras-bert finetune-squad --version-2 --train-file train-v2.0.json --tune-fraction 0.1 \\
        --test-file test-v2.0.json --init-checkpoint path/to/bert --output-dir runs/squad2

The recipe is `training.squad_finetuning.finetune_squad`; its module docstring says which file does what
(`--dev-file` picks `best/` by F1). Outputs as `finetune-classifier`'s, plus the official `predictions.json`,
`nbest_predictions.json`, `null_odds.json` (v2.0) and `eval_results.json` of the final model (the test file's in
`test/`).
"""

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_finetuning_arguments,
    add_question_answering_arguments,
    check_finetuning_arguments,
    finetuning_inputs,
    settings_from,
)


def add_arguments(parser):
    """Define the `keras-bert finetune-squad` flags on `parser`; the defaults are `run_squad.py`'s (the paper:
    rate 5e-5 for v1.1, batch 32, 3 epochs; 5e-5 and 2 epochs for v2.0)."""
    data, _, _ = add_finetuning_arguments(
        parser, "SQuAD JSON with answers", "tokens per window: [CLS] question [SEP] document part [SEP]",
        dev_help=" (v2.0: tunes the null threshold unless --threshold-file or --tune-fraction does)",
        test_help=" (written into test/)", tune_help="hold out this share of the training articles "
        "(seeded): they tune the v2.0 null threshold and, without --dev-file, pick best/",
        sequence_length=384, learning_rate=3e-5, epochs=2)
    data.add_argument("--threshold-file", help="v2.0: SQuAD JSON with answers used only to tune the null threshold")
    data.add_argument("--skip-unscorable-questions", action="store_true",
                      help="leave out questions of the scored files that repeat an id or lack 'answers' without "
                      "is_impossible (the number left out is printed) instead of refusing the file")
    add_question_answering_arguments(
        parser.add_argument_group("windows and decoding"), fine_tuning=True,
        version_2_help="SQuAD v2.0: questions may have no answer",
        threshold_help="v2.0: fixed threshold (default: tuned on --threshold-file, the --tune-fraction articles or "
                       "--dev-file, else the --init-checkpoint's saved one, else 0.0)")


def check_arguments(args):
    check_finetuning_arguments(args, tune_fraction_picks_best=False)
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
    from keras_bert_impl.training.squad_finetuning import SquadFiles, SquadSettings, finetune_squad

    files, source, settings = finetuning_inputs(SquadFiles, args)
    finetune_squad(files, settings_from(SquadSettings, args), source, settings)
    return 0
