"""Pretrain BERT (masked LM + next sentence prediction) with `model.fit`, from text files or TFRecord shards.

    keras-bert pretrain --input-files 'corpus/train/*.txt' --vocab-file corpus/vocab.txt \\
        --preset tiny --steps 2000 --output-dir runs/tiny
    keras-bert pretrain ... --steps 900000 --phase2-steps 100000    # the paper's two phases: 128, then 512 tokens

The recipe is `training.pretraining.pretrain`; each flag is the `PretrainingSettings` field of the same name.
Run the same command again after an interruption: it resumes from the newest checkpoint in `--output-dir`.
Outputs: `checkpoints/`, `tensorboard/`, `metrics.jsonl`, `training_curves.png` and `final/` (a
`BertPretrainer.save_pretrained` directory with the vocabulary). `--distribution`: `mirrored`, `multi_worker`
(`TF_CONFIG` per worker) and `tpu` need `KERAS_BACKEND=tensorflow`, `jax_data_parallel` needs
`KERAS_BACKEND=jax` (on several hosts also `KERAS_DISTRIBUTION_JOB_ADDRESSES`, `_NUM_PROCESSES`,
`_PROCESS_ID`). `--batch-size` is the global batch.
"""

import json

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_masking_arguments,
    add_verbose_argument,
    fraction,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    settings_from,
)
from keras_bert_impl.training.pretraining import SEQUENCE_LENGTH, PretrainingSettings

DEFAULTS = PretrainingSettings  # the flags' defaults are the settings' defaults (class attributes)
# Comma-separated flags, lists in the settings.
FILE_LISTS = ("input_files", "input_tfrecords", "eval_files")


def add_arguments(parser):
    data = parser.add_argument_group("data")
    data.add_argument("--input-files", help="text files (glob ok, comma-separated): one sentence per line, a blank "
                      "line between documents (or see --input-format)")
    data.add_argument("--input-format", default=DEFAULTS.input_format,
                      choices=("sentence_per_line", "document_per_line"),
                      help="layout of --input-files (default: sentence_per_line, the original's)")
    data.add_argument("--input-tfrecords", help="TFRecord shards from `keras-bert create-data` (glob ok), instead "
                      "of --input-files")
    data.add_argument("--eval-files", help="held-out text files: MLM/NSP accuracy is measured on them at the end")
    data.add_argument("--eval-steps", type=positive_int, default=DEFAULTS.eval_steps,
                      help="batches of --eval-files to evaluate (default: %(default)s)")
    data.add_argument("--vocab-file", help="vocab.txt; defaults to the --init-checkpoint directory's")
    data.add_argument("--cased", action="store_true", help="do not lowercase (for cased vocabularies)")
    data.add_argument("--dupe-factor", type=positive_int, default=DEFAULTS.dupe_factor,
                      help="passes over the corpus per epoch of instances (default: %(default)s)")
    data.add_argument("--seed", type=int, default=DEFAULTS.seed, help="seed of data order, masks and initialisation")
    masking = parser.add_argument_group(
        "packing and masking", "With --input-tfrecords these come from the settings create-data wrote beside the "
        "shards; a flag given here must agree with them.")
    masking.add_argument("--sequence-length", "--seq-length", type=positive_int, default=None,
                         help=f"tokens per instance (default: {SEQUENCE_LENGTH})")
    add_masking_arguments(masking)
    model = parser.add_argument_group("model")
    model.add_argument("--preset", default=DEFAULTS.preset, help="model size from scratch: tiny, mini, small, "
                       "medium, base, large (default: %(default)s)")
    model.add_argument("--init-checkpoint", help="start from this checkpoint (any path from_pretrained reads)")
    model.add_argument("--dropout", type=fraction, default=None, help="override hidden + attention dropout")
    model.add_argument("--dtype", default=None, help="e.g. mixed_bfloat16; mixed_float16 adds loss scaling")
    _add_training_arguments(parser.add_argument_group("training"))
    out = parser.add_argument_group("output")
    out.add_argument("--output-dir", default=DEFAULTS.output_dir,
                     help="checkpoints, logs and final/ (default: %(default)s)")
    out.add_argument("--checkpoint-every", type=positive_int, default=DEFAULTS.checkpoint_every,
                     help="steps between checkpoints (one progress-bar epoch) (default: %(default)s)")
    out.add_argument("--keep-checkpoints", type=positive_int, default=DEFAULTS.keep_checkpoints,
                     help="newest checkpoints kept (default: %(default)s)")
    out.add_argument("--max-steps-this-run", type=positive_int, default=None,
                     help="stop after this many steps (a multiple of --checkpoint-every) and exit; run the same "
                          "command again to continue (for time-limited or preemptible jobs)")
    out.add_argument("--allow-changed-settings", action="store_true",
                     help="resume although the step counts differ from the run's (the schedule then ends at the "
                          "new count); every other setting must stay as the run started")
    out.add_argument("--keep-training-state", action="store_true",
                     help="keep checkpoints/ after the run finishes (removed by default), so that it can be extended")
    add_verbose_argument(out)
    out.add_argument("--export-huggingface", action="store_true", help="also write final_huggingface/")


def _add_training_arguments(train):
    for flag, kind, what in (("batch-size", positive_int, "global batch size"), ("steps", positive_int, "phase-1 "
                             "optimizer steps"), ("learning-rate", positive_float, "peak learning rate"),
                             ("warmup-fraction", fraction, "share of the steps with linear warmup"),
                             ("optimizer", None, "adamw_original (the paper's), lamb (large batches) or keras_adamw"),
                             ("weight-decay", non_negative_float, "decoupled weight decay"),
                             ("gradient-accumulation-steps", positive_int, "batches summed per optimizer update"),
                             ("phase2-steps", non_negative_int, "steps at --phase2-sequence-length after phase 1, "
                              "0: no phase 2"),
                             ("phase2-max-predictions-per-seq", positive_int, "masked-LM slots in phase 2")):
        train.add_argument(f"--{flag}", type=kind, default=getattr(DEFAULTS, flag.replace("-", "_")),
                           help=f"{what} (default: %(default)s)")
    train.add_argument("--phase2-sequence-length", "--phase2-seq-length", type=positive_int,
                       default=DEFAULTS.phase2_sequence_length, help="instance length of phase 2 (default: "
                       "%(default)s)")
    train.add_argument("--phase2-batch-size", type=positive_int, default=None, help="defaults to --batch-size")
    train.add_argument("--phase2-learning-rate", type=positive_float, default=None, help="defaults to --learning-rate")
    train.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"),
                       help="compile the step with XLA (default: auto)")
    train.add_argument("--distribution", default=DEFAULTS.distribution,
                       choices=("none", "mirrored", "multi_worker", "tpu", "jax_data_parallel"),
                       help="data-parallel setup, see keras_bert_impl.training.distribution (default: none)")
    train.add_argument("--tpu", default="", help="TPU name or grpc:// address for --distribution tpu ('local' on a "
                       "Cloud TPU VM; default: $TPU_NAME)")


def settings_from_arguments(args):
    """The `PretrainingSettings` the flags describe (each flag is the field of the same name)."""
    lists = {name: getattr(args, name).split(",") for name in FILE_LISTS if getattr(args, name) is not None}
    jit_compile = {"auto": "auto", "true": True, "false": False}[args.jit_compile]
    return settings_from(PretrainingSettings, args, jit_compile=jit_compile, **lists)


def check_arguments(args):
    try:
        settings_from_arguments(args)
    except ValueError as error:
        raise UsageError(str(error)) from None


def run(args):
    """Pretrain as `args` say; return 0 (also when stopped early by `--max-steps-this-run`)."""
    from keras_bert_impl.training.pretraining import pretrain

    result = pretrain(settings_from_arguments(args))
    if result.final_directory is not None:
        heldout = json.dumps(result.evaluation) if result.evaluation else "none"
        print(f"Pretrained model: {result.final_directory} (step {result.final_step}; held-out: {heldout})")
    return 0
