"""Pretrain BERT (masked LM + next sentence prediction) with `model.fit`, from text files or TFRecord shards.

    # from scratch, a tiny model on a text corpus (one sentence per line, blank line between documents)
    keras-bert pretrain --input-files 'corpus/train/*.txt' --vocab-file corpus/vocab.txt \\
        --preset tiny --steps 2000 --output-dir runs/tiny
    # continued pretraining of a converted checkpoint (Hugging Face, original TF or ours)
    keras-bert pretrain --input-files 'corpus/*.txt' --init-checkpoint path/to/bert --steps 1000
    # the paper's two phases: 90% of the steps at length 128, then 10% at 512, keeping the weights
    keras-bert pretrain ... --steps 900000 --phase2-steps 100000

Interrupt it and run the same command again: it resumes from the newest checkpoint in `--output-dir` at the
same step, learning rate and data position. Outputs in `--output-dir`: `checkpoints/phase<i>/step_*`
(weights + optimizer + RNG state, every `--checkpoint-every` steps), `tensorboard/`, `metrics.jsonl`,
`training_curves.png`, and `final/` (a `BertPretrainer.save_pretrained` directory with the vocabulary, which
`--init-checkpoint`, `BertBackbone.from_pretrained` and the fine-tuning models read).

Packing and masking: with `--input-tfrecords` the settings come from `<prefix>.settings.json`, which
`keras-bert create-data` writes beside its shards; a flag that disagrees with them is an error naming both
values, not an override.

The recipe is `keras_bert_impl.training.pretraining.pretrain` (its docstring says how the pieces fit); each
flag is the `PretrainingSettings` field of the same name. `--distribution`: `mirrored` (all local GPUs),
`multi_worker` (`TF_CONFIG` set per worker, the same command on each; the chief writes), `tpu` (`--tpu` names
it) need `KERAS_BACKEND=tensorflow`; `jax_data_parallel` (every JAX device) needs `KERAS_BACKEND=jax`, and on
several hosts `KERAS_DISTRIBUTION_JOB_ADDRESSES` (the coordinator's host:port), `KERAS_DISTRIBUTION_NUM_PROCESSES`
and `KERAS_DISTRIBUTION_PROCESS_ID` set for the same command on each. `--batch-size` is always the global batch.
"""

import dataclasses
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
)
from keras_bert_impl.training.pretraining import SEQUENCE_LENGTH, PretrainingSettings

DEFAULTS = PretrainingSettings  # the flags' defaults are the settings' defaults (class attributes)
# Comma-separated flags, lists in the settings.
FILE_LISTS = ("input_files", "input_tfrecords", "eval_files")


def add_arguments(parser):
    """Define the `keras-bert pretrain` flags on `parser`."""
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
    train.add_argument("--batch-size", type=positive_int, default=DEFAULTS.batch_size, help="global batch size "
                       "(default: %(default)s)")
    train.add_argument("--steps", type=positive_int, default=DEFAULTS.steps, help="phase-1 optimizer steps "
                       "(default: %(default)s)")
    train.add_argument("--learning-rate", type=positive_float, default=DEFAULTS.learning_rate,
                       help="peak learning rate (default: %(default)s)")
    train.add_argument("--warmup-fraction", type=fraction, default=DEFAULTS.warmup_fraction,
                       help="share of the steps with linear warmup (default: %(default)s)")
    train.add_argument("--optimizer", default=DEFAULTS.optimizer, help="adamw_original (the paper's), lamb (large "
                       "batches) or keras_adamw (default: %(default)s)")
    train.add_argument("--weight-decay", type=non_negative_float, default=DEFAULTS.weight_decay,
                       help="decoupled weight decay (default: %(default)s)")
    train.add_argument("--gradient-accumulation-steps", type=positive_int,
                       default=DEFAULTS.gradient_accumulation_steps,
                       help="batches summed per optimizer update (default: %(default)s)")
    train.add_argument("--phase2-steps", type=non_negative_int, default=DEFAULTS.phase2_steps,
                       help="steps at --phase2-sequence-length after phase 1 (default: 0, no phase 2)")
    train.add_argument("--phase2-sequence-length", "--phase2-seq-length", type=positive_int,
                       default=DEFAULTS.phase2_sequence_length,
                       help="instance length of phase 2 (default: %(default)s)")
    train.add_argument("--phase2-max-predictions-per-seq", type=positive_int,
                       default=DEFAULTS.phase2_max_predictions_per_seq,
                       help="masked-LM slots in phase 2 (default: %(default)s)")
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
    values = {field.name: getattr(args, field.name) for field in dataclasses.fields(PretrainingSettings)}
    for name in FILE_LISTS:
        values[name] = values[name].split(",") if values[name] is not None else None
    values["jit_compile"] = {"auto": "auto", "true": True, "false": False}[args.jit_compile]
    return PretrainingSettings(**values)


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
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
