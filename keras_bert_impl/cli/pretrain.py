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

Packing and masking: one `BertPretrainingPreprocessor` per phase holds the length and every masking setting
(`--sequence-length`, `--masking`, `--max-predictions`, `--mask-rate`, `--masking-rule`, `--whole-word-masking`,
`--replacement-unit`, `--mask-token-rate`, `--random-token-rate`) and is what the data code gets. With
`--input-tfrecords` the settings come from `<prefix>.settings.json`, which `keras-bert create-data` writes
beside its shards; a flag that disagrees with them is an error naming both values, not an override.

How the pieces fit:
- One Keras "epoch" here is one checkpoint interval (`steps_per_epoch=--checkpoint-every`), so checkpoints,
  TensorBoard points and the progress bar line up with steps.
- The input is an endless stream that depends only on (seed, epoch of the data): epoch e is shuffled and
  masked under seeds from (--seed, e), so re-reading it (as Keras does under a tf.distribute strategy) gives
  the same batches; a resumed run skips the batches already consumed (`dataset.skip(step)`), so it sees
  exactly the batches it would have seen. Skipping re-reads (and re-masks) those batches, which costs input
  time but no training time.
- Tokenization, instance creation and masking run in tf.data, outside the compiled (`jit_compile`) step.
- Phase 2 starts a fresh optimizer and schedule on the phase-1 weights, as the original does when
  `run_pretraining.py` is re-run with `--init_checkpoint`.
- `--distribution` (see `keras_bert_impl.training.distribution`): `mirrored` (all local GPUs),
  `multi_worker` (`TF_CONFIG` set per worker, the same command on each; the chief writes), `tpu` (`--tpu`
  names it) need `KERAS_BACKEND=tensorflow`; `jax_data_parallel` (every JAX device) needs
  `KERAS_BACKEND=jax`, and on several hosts `KERAS_DISTRIBUTION_JOB_ADDRESSES` (the coordinator's host:port),
  `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID` set for the same command on each
  (every process writes, process i > 0 into `--output-dir/process<i>`). `--batch-size` is always the global
  batch.
"""

import json
import logging
import os

from keras_bert_impl.cli.arguments import (
    MASKING_FLAGS,
    UsageError,
    add_masking_arguments,
    add_verbose_argument,
    fraction,
    masking_settings,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)

logger = logging.getLogger(__name__)

# -- defaults (the original run_pretraining.py recipe where one exists) -------------------------------------
PRESET = "tiny"
SEQUENCE_LENGTH = 128
MAX_PREDICTIONS_PER_SEQ = 20  # 20 at length 128, 80 at 512 (~15% of the tokens)
BATCH_SIZE = 32  # the paper: 256
LEARNING_RATE = 1e-4
STEPS = 1000
WARMUP_FRACTION = 0.01  # the paper: 10,000 of 1,000,000 steps
PHASE2_SEQUENCE_LENGTH = 512
PHASE2_MAX_PREDICTIONS_PER_SEQ = 80
OPTIMIZER = "adamw_original"  # or "lamb" (large batches), "keras_adamw"
WEIGHT_DECAY = 0.01
CHECKPOINT_EVERY = 100
KEEP_CHECKPOINTS = 2
MASKING = "dynamic"
SEED = 12345
# Longest instance a new model may be built for (its position table): longer ones need attention memory that
# grows with the square of the length and no BERT checkpoint has such a table.
MAX_NEW_MODEL_SEQUENCE_LENGTH = 4096


def add_arguments(parser):
    """Define the `keras-bert pretrain` flags on `parser`."""
    data = parser.add_argument_group("data")
    data.add_argument("--input-files", help="text files (glob ok, comma-separated): one sentence per line, a blank "
                      "line between documents (or see --input-format)")
    data.add_argument("--input-format", default="sentence_per_line", choices=("sentence_per_line", "document_per_line"),
                      help="layout of --input-files (default: sentence_per_line, the original's)")
    data.add_argument("--input-tfrecords", help="TFRecord shards from `keras-bert create-data` (glob ok), instead "
                      "of --input-files")
    data.add_argument("--eval-files", help="held-out text files: MLM/NSP accuracy is measured on them at the end")
    data.add_argument("--eval-steps", type=positive_int, default=20, help="batches of --eval-files to evaluate "
                      "(default: 20)")
    data.add_argument("--vocab-file", help="vocab.txt; defaults to the --init-checkpoint directory's")
    data.add_argument("--cased", action="store_true", help="do not lowercase (for cased vocabularies)")
    data.add_argument("--dupe-factor", type=positive_int, default=1,
                      help="passes over the corpus per epoch of instances (default: 1)")
    data.add_argument("--seed", type=int, default=SEED, help="seed of data order, masks and initialisation")
    masking = parser.add_argument_group(
        "packing and masking", "With --input-tfrecords these come from the settings create-data wrote beside the "
        "shards; a flag given here must agree with them.")
    masking.add_argument("--sequence-length", "--seq-length", type=positive_int, default=None,
                         help=f"tokens per instance (default: {SEQUENCE_LENGTH})")
    add_masking_arguments(masking)
    model = parser.add_argument_group("model")
    model.add_argument("--preset", default=PRESET, help="model size from scratch: tiny, mini, small, medium, base, "
                       "large (default: %(default)s)")
    model.add_argument("--init-checkpoint", help="start from this checkpoint (any path from_pretrained reads)")
    model.add_argument("--dropout", type=fraction, default=None, help="override hidden + attention dropout")
    model.add_argument("--dtype", default=None, help="e.g. mixed_bfloat16; mixed_float16 adds loss scaling")
    train = parser.add_argument_group("training")
    train.add_argument("--batch-size", type=positive_int, default=BATCH_SIZE, help="global batch size "
                       "(default: %(default)s)")
    train.add_argument("--steps", type=positive_int, default=STEPS, help="phase-1 optimizer steps "
                       "(default: %(default)s)")
    train.add_argument("--learning-rate", type=positive_float, default=LEARNING_RATE, help="peak learning rate "
                       "(default: %(default)s)")
    train.add_argument("--warmup-fraction", type=fraction, default=WARMUP_FRACTION,
                       help="share of the steps with linear warmup (default: %(default)s)")
    train.add_argument("--optimizer", default=OPTIMIZER, help="adamw_original (the paper's), lamb (large batches) "
                       "or keras_adamw (default: %(default)s)")
    train.add_argument("--weight-decay", type=non_negative_float, default=WEIGHT_DECAY, help="decoupled weight decay "
                       "(default: %(default)s)")
    train.add_argument("--gradient-accumulation-steps", type=positive_int, default=1,
                       help="batches summed per optimizer update (default: 1)")
    train.add_argument("--phase2-steps", type=non_negative_int, default=0,
                       help="steps at --phase2-sequence-length after phase 1 (default: 0, no phase 2)")
    train.add_argument("--phase2-sequence-length", "--phase2-seq-length", type=positive_int,
                       default=PHASE2_SEQUENCE_LENGTH,
                       help="instance length of phase 2 (default: %(default)s)")
    train.add_argument("--phase2-max-predictions-per-seq", type=positive_int, default=PHASE2_MAX_PREDICTIONS_PER_SEQ,
                       help="masked-LM slots in phase 2 (default: %(default)s)")
    train.add_argument("--phase2-batch-size", type=positive_int, default=None, help="defaults to --batch-size")
    train.add_argument("--phase2-learning-rate", type=positive_float, default=None, help="defaults to --learning-rate")
    train.add_argument("--jit-compile", default="auto", choices=("auto", "true", "false"),
                       help="compile the step with XLA (default: auto)")
    train.add_argument("--distribution", default="none",
                       choices=("none", "mirrored", "multi_worker", "tpu", "jax_data_parallel"),
                       help="data-parallel setup, see keras_bert_impl.training.distribution (default: none)")
    train.add_argument("--tpu", default="", help="TPU name or grpc:// address for --distribution tpu ('local' on a "
                       "Cloud TPU VM; default: $TPU_NAME)")
    out = parser.add_argument_group("output")
    out.add_argument("--output-dir", default="runs/pretrain",
                     help="checkpoints, logs and final/ (default: %(default)s)")
    out.add_argument("--checkpoint-every", type=positive_int, default=CHECKPOINT_EVERY,
                     help="steps between checkpoints (one progress-bar epoch) (default: %(default)s)")
    out.add_argument("--keep-checkpoints", type=positive_int, default=KEEP_CHECKPOINTS,
                     help="newest checkpoints kept (default: %(default)s)")
    out.add_argument("--max-steps-this-run", type=positive_int, default=None,
                     help="stop after this many steps (a multiple of --checkpoint-every) and exit; run the same "
                          "command again to continue (for time-limited or preemptible jobs)")
    out.add_argument("--allow-changed-settings", action="store_true",
                     help="resume although the step counts differ from the run's (the schedule then ends at the "
                          "new count); every other setting must stay as the run started")
    add_verbose_argument(out)
    out.add_argument("--export-huggingface", action="store_true", help="also write final_huggingface/")


def check_arguments(args):
    """Raise `UsageError` for flags that do not fit together."""
    if (args.input_files is None) == (args.input_tfrecords is None):
        raise UsageError("give exactly one of --input-files and --input-tfrecords")
    if args.vocab_file is None and args.init_checkpoint is None:
        raise UsageError("give --vocab-file (or --init-checkpoint, whose vocab.txt is used)")
    for name in ("steps", "phase2_steps", "max_steps_this_run"):
        value = getattr(args, name)
        if value is not None and value % args.checkpoint_every:
            raise UsageError(f"--{name.replace('_', '-')} ({value}) must be a multiple of "
                             f"--checkpoint-every ({args.checkpoint_every})")


# Phase-1 packing settings given by flags: flag dest -> BertPretrainingPreprocessor argument.
_PACKING_FLAGS = {"sequence_length": "sequence_length"}
# The create-data flag that sets each recorded setting (for the way out of a conflict).
_CREATE_DATA_FLAGS = {"sequence_length": "--sequence-length", "masking": "--masking"}


def _flag(dest):
    return "--" + dest.replace("_", "-")


def data_settings(args):
    """The phase-1 packing and masking settings: `(masking, preprocessor settings, source)`.

    With `--input-tfrecords` whose shards have the settings `create-data` wrote beside them
    (`data.pretraining_tfrecord_settings.read_pretraining_settings`), those settings; a flag given on the command line (or
    in a config file) that disagrees with them raises a one-line `ValueError` naming the setting, both values
    and the way out. Otherwise the flags given, and the defaults for the rest. `source` is the settings file,
    or None.
    """
    given = {name: getattr(args, dest) for dest, name in _PACKING_FLAGS.items() if getattr(args, dest) is not None}
    given.update(masking_settings(args))
    flags = {name: _flag(dest) for dest, name in {**_PACKING_FLAGS, **MASKING_FLAGS}.items()}
    recorded = None
    if args.input_tfrecords:
        from keras_bert_impl.data.pretraining_tfrecord_settings import read_pretraining_settings

        recorded = read_pretraining_settings(args.input_tfrecords.split(","))
    if recorded is None:
        settings = {"sequence_length": SEQUENCE_LENGTH, "max_predictions_per_seq": MAX_PREDICTIONS_PER_SEQ, **given}
        return args.masking or MASKING, settings, None
    source = recorded["path"]
    settings = {name: value for name, value in recorded["preprocessor"].items() if name != "seed"}
    conflicts = [(name, flags[name], value, settings[name]) for name, value in given.items()
                 if name in settings and value != settings[name]]
    if args.masking is not None and args.masking != recorded["masking"]:
        conflicts.insert(0, ("masking", "--masking", args.masking, recorded["masking"]))
    if conflicts:
        name, flag, value, wanted = conflicts[0]
        shown = "" if isinstance(value, bool) else f" {value}"
        again = _CREATE_DATA_FLAGS.get(name, flag)
        again = ("with " + again if value else "without " + again) if isinstance(value, bool) else f"with {again} {value}"
        raise ValueError(
            f"{flag}{shown} conflicts with {name}={wanted!r} in {source}, the settings create-data wrote the "
            f"TFRecords with: drop {flag} to train with {wanted!r}, or re-run create-data {again}."
        )
    return recorded["masking"], settings, source


def pretraining_tokenizer(args):
    """The tokenizer of `--vocab-file` (or the `--init-checkpoint` directory's vocab.txt)."""
    from keras_bert_impl.tokenization import BertTokenizer

    return BertTokenizer(args.vocab_file or os.path.join(args.init_checkpoint, "vocab.txt"), lowercase=not args.cased)


def training_phases(args, tokenizer):
    """The phases to train: dicts of `index`, `preprocessor` (a `BertPretrainingPreprocessor` holding the
    phase's length and every masking setting), `masking`, `batch_size`, `steps`, `learning_rate`."""
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor

    masking, settings, source = data_settings(args)
    shown = ", ".join(f"{name}={value}" for name, value in settings.items())
    logger.info("Pretraining data: masking=%s, %s%s", masking, shown, f" (from {source})" if source else "")
    phases = [dict(index=1, settings=settings, batch_size=args.batch_size, steps=args.steps,
                   learning_rate=args.learning_rate)]
    if args.phase2_steps:
        phases.append(dict(index=2, settings={**settings, "sequence_length": args.phase2_sequence_length,
                                              "max_predictions_per_seq": args.phase2_max_predictions_per_seq},
                           batch_size=args.phase2_batch_size or args.batch_size, steps=args.phase2_steps,
                           learning_rate=args.phase2_learning_rate or args.learning_rate))
    for phase in phases:
        phase["masking"] = masking
        phase["preprocessor"] = BertPretrainingPreprocessor(tokenizer, seed=args.seed + phase["index"],
                                                            **phase.pop("settings"))
    return phases


# What a resume may change with --allow-changed-settings; every other setting of `run_settings` must stay.
CHANGEABLE_SETTINGS = ("steps",)


def run_settings(args, phase):
    """The settings that define `phase` of this run, stored with each of its checkpoints: a resume that
    changes one would train a different run from the middle, so it is refused (`check_resume_settings`)."""
    settings = dict(model=args.init_checkpoint or f"preset {args.preset}", seed=args.seed, optimizer=args.optimizer,
                    warmup_fraction=args.warmup_fraction, weight_decay=args.weight_decay, dropout=args.dropout,
                    dtype=args.dtype, gradient_accumulation_steps=args.gradient_accumulation_steps,
                    checkpoint_every=args.checkpoint_every, input_format=args.input_format,
                    dupe_factor=args.dupe_factor, cased=args.cased, masking=phase["masking"],
                    batch_size=phase["batch_size"], steps=phase["steps"], learning_rate=phase["learning_rate"])
    settings.update({name: value for name, value in phase["preprocessor"].settings().items() if name != "seed"})
    return settings


def check_resume_settings(path, state, settings, allow_changed):
    """Raise `ValueError` naming the first setting whose value differs from the one checkpoint `path` was
    written with (`state["run_settings"]`), both values, and the way out."""
    from keras_bert_impl.training.callbacks import changed_settings

    changed = changed_settings(state.get("run_settings"), settings)
    refused = {name: values for name, values in changed.items()
               if not (allow_changed and name in CHANGEABLE_SETTINGS)}
    if refused:
        name, (old, new) = next(iter(refused.items()))
        more = f" (and {', '.join(list(refused)[1:])})" if len(refused) > 1 else ""
        allowed = (" or pass --allow-changed-settings to continue with the new step count"
                   if name in CHANGEABLE_SETTINGS else "")
        raise ValueError(
            f"Cannot resume {path}: it was trained with {name}={old!r}, this run asks for {name}={new!r}{more}. "
            f"Run with the same settings to resume, choose a new --output-dir to start over{allowed}."
        )


def build_dataset(preprocessor, files, batch_size, seed, masking=MASKING, tfrecords=False, dupe_factor=1,
                  input_format="sentence_per_line", vocabulary_size=None):
    """An endless, deterministic stream of pretraining batches (tf.data, outside the compiled step).

    `preprocessor` (a `BertPretrainingPreprocessor`) gives the length and every masking setting. `files` are
    comma-separated text files, or TFRecord shards with `tfrecords`. `vocabulary_size` (the model's)
    range-checks the token ids read from TFRecord shards, which may have been written with another
    vocabulary; ids tokenized here come from the preprocessor's tokenizer, whose size `run` checks.
    """
    from keras_bert_impl.data import pretraining_dataset, read_pretraining_tfrecords

    if tfrecords:
        return read_pretraining_tfrecords(
            files.split(","), batch_size, preprocessor.sequence_length, preprocessor.max_predictions_per_seq,
            masker=preprocessor if masking == "dynamic" else None, seed=seed, vocabulary_size=vocabulary_size,
            epochs=None)
    return pretraining_dataset(
        preprocessor, files=files.split(","), batch_size=batch_size, masking=masking, seed=seed,
        dupe_factor=dupe_factor, input_format=input_format, drop_remainder=True, epochs=None,
    )


def phase_dataset(args, phase, vocabulary_size=None, files=None, seed=None):
    """The stream `run` trains `phase` (from `training_phases`) on: `--input-tfrecords` or `--input-files`,
    seeded with `--seed` + the phase index (or `files` and `seed` given, e.g. the held-out text)."""
    tfrecords = files is None and bool(args.input_tfrecords)
    files = files or args.input_tfrecords or args.input_files
    return build_dataset(phase["preprocessor"], files, phase["batch_size"],
                         args.seed + phase["index"] if seed is None else seed, masking=phase["masking"],
                         tfrecords=tfrecords, dupe_factor=args.dupe_factor, input_format=args.input_format,
                         vocabulary_size=vocabulary_size)


def run(args):
    """Pretrain as `args` say; return 0 (also when stopped early by `--max-steps-this-run`)."""
    import keras

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.optimization import create_optimizer
    from keras_bert_impl.utils.atomic_io import atomic_write_json, ensure_directory
    from keras_bert_impl.training.distribution import (
        for_tf_distribute, make_distribution, process_directory, replica_count,
    )
    from keras_bert_impl.training.callbacks import (
        MetricsLog, NonFiniteLossGuard, TrainingCheckpoint, latest_training_checkpoint, plot_training_curves,
        progress_callbacks, read_metrics_log, restore_training_checkpoint,
    )

    # The strategy first: MultiWorkerMirroredStrategy configures collective ops, and logical devices must be
    # set, before anything (the tokenizer's tf.data / tf.lookup, the seed) initialises TensorFlow's runtime.
    scope, strategy, is_chief = make_distribution(args.distribution, tpu=args.tpu)
    keras.utils.set_random_seed(args.seed)
    out = ensure_directory(process_directory(args.output_dir, args.distribution))
    tokenizer = pretraining_tokenizer(args)
    phases = training_phases(args, tokenizer)
    longest = max(phase["preprocessor"].sequence_length for phase in phases)
    if not args.init_checkpoint and longest > MAX_NEW_MODEL_SEQUENCE_LENGTH:
        raise ValueError(f"Sequence length {longest} is above {MAX_NEW_MODEL_SEQUENCE_LENGTH}, the longest position "
                         f"table a new model is built with; use a shorter --sequence-length / --phase2-sequence-length.")
    checkpoints = {phase["index"]: latest_training_checkpoint(os.path.join(out, "checkpoints", f"phase{phase['index']}"))
                   for phase in phases}
    resume_phase = max([index for index, found in checkpoints.items() if found], default=1)
    settings = {phase["index"]: run_settings(args, phase) for phase in phases}
    if checkpoints.get(resume_phase):
        check_resume_settings(*checkpoints[resume_phase], settings[resume_phase], args.allow_changed_settings)

    overrides = {}
    if args.dropout is not None:
        overrides.update(dropout=args.dropout, attention_dropout=args.dropout)
    if args.dtype:
        overrides["dtype"] = args.dtype
    with scope:
        if args.init_checkpoint:
            model = BertPretrainer.from_pretrained(args.init_checkpoint, **overrides)
        else:
            backbone = BertBackbone.from_scratch(
                args.preset, vocabulary_size=tokenizer.vocabulary_size(),
                max_sequence_length=max(512, longest), **overrides)
            model = BertPretrainer(backbone)
    if longest > model.backbone.max_sequence_length:
        raise ValueError(f"Sequence length {longest} exceeds the position table of {args.init_checkpoint} "
                         f"(max_sequence_length={model.backbone.max_sequence_length}); use a shorter --sequence-length "
                         f"/ --phase2-sequence-length.")
    if tokenizer.vocabulary_size() != model.backbone.vocabulary_size:
        raise ValueError(f"The vocabulary has {tokenizer.vocabulary_size()} tokens but the model "
                         f"{model.backbone.vocabulary_size}: use the checkpoint's vocab.txt.")
    logger.info("BertPretrainer: %d parameters", model.count_params())

    steps_before = 0  # steps of earlier phases, for one x axis across phases
    budget = None if args.max_steps_this_run is None else args.max_steps_this_run * args.gradient_accumulation_steps
    for phase in phases:
        index, steps = phase["index"], phase["steps"]
        if index < resume_phase:
            steps_before += steps * args.gradient_accumulation_steps
            continue  # done: the later phase's checkpoint holds its weights
        with scope:
            optimizer = create_optimizer(
                name=args.optimizer, learning_rate=phase["learning_rate"], total_steps=steps,
                warmup_fraction=args.warmup_fraction, weight_decay=args.weight_decay,
                gradient_accumulation_steps=args.gradient_accumulation_steps,
                loss_scale=args.dtype == "mixed_float16",
            )
            model.compile(optimizer=optimizer,
                          jit_compile={"auto": "auto", "true": True, "false": False}[args.jit_compile])
        start_step = 0
        if checkpoints.get(index):
            path, state = checkpoints[index]
            with scope:  # restoring builds the optimizer's slots, which belong in the strategy's scope
                restore_training_checkpoint(model, path)
            start_step = state["step"]
            logger.info("Resuming phase %d at step %d from %s", index, start_step, path)
        # Checkpoints, logs and the data position count batches; an accumulated update takes several.
        batches = steps * args.gradient_accumulation_steps
        every = args.checkpoint_every * args.gradient_accumulation_steps
        start_batch = start_step
        end_batch = batches if budget is None else min(batches, start_batch + budget)
        if start_batch < end_batch:
            dataset = phase_dataset(args, phase, vocabulary_size=model.backbone.vocabulary_size).skip(start_batch)
            if strategy is not None:
                dataset = for_tf_distribute(dataset)
            checkpoint_directory = os.path.join(out, "checkpoints", f"phase{index}")
            callbacks = [
                NonFiniteLossGuard(checkpoint_directory=checkpoint_directory),
                # The log line first: a kill between the two repeats the interval, whose line is then rewritten
                # (`read_metrics_log` keeps the last line per step); the other order would lose the line.
                MetricsLog(os.path.join(out, "metrics.jsonl"), every, extra={"phase": index},
                           step_offset=steps_before, write=is_chief),
                TrainingCheckpoint(checkpoint_directory, every, keep=args.keep_checkpoints,
                                   extra_state={"phase": index, "run_settings": settings[index]}, write=is_chief),
                *progress_callbacks(args.verbose, phase["batch_size"]),
            ]
            if is_chief:  # the workers of a multi-worker run share --output-dir
                callbacks.append(keras.callbacks.TensorBoard(os.path.join(out, "tensorboard", f"phase{index}"),
                                                             update_freq=every))
            replicas = replica_count(strategy)
            logger.info("Phase %d: length %d, batch %d (%g per replica, %d replicas), %d steps (from %d)", index,
                        phase["preprocessor"].sequence_length, phase["batch_size"], phase["batch_size"] / replicas,
                        replicas, steps, start_step)
            model.fit(dataset, initial_epoch=start_batch // every, epochs=end_batch // every,
                      steps_per_epoch=every, callbacks=callbacks, verbose=args.verbose, shuffle=False)
            if budget is not None:
                budget -= end_batch - start_batch
        if end_batch < batches:
            logger.info("Stopped at step %d of phase %d (--max-steps-this-run); run again to resume.",
                         end_batch, index)
            return 0
        steps_before += batches

    results = {}
    if args.eval_files:
        last = phases[-1]
        eval_data = phase_dataset(args, last, files=args.eval_files, seed=args.seed + 100).take(args.eval_steps)
        if strategy is not None:
            eval_data = for_tf_distribute(eval_data)
        results = model.evaluate(eval_data, verbose=0, return_dict=True)
        logger.info("Held-out evaluation (%d batches): %s", args.eval_steps, results)
    if is_chief:
        from keras_bert_impl.training.finetuning import save_finetuned

        final = os.path.join(out, "final")
        save_finetuned(model, final, tokenizer)  # weights + vocabulary replace final/ in one atomic step
        if args.export_huggingface:
            model.save_huggingface(os.path.join(out, "final_huggingface"))
            tokenizer.save_pretrained(os.path.join(out, "final_huggingface"))
        entries = read_metrics_log(os.path.join(out, "metrics.jsonl"))
        if results:
            entries[-1].update({f"val_{name}": value for name, value in results.items()})
        plot_training_curves(entries, os.path.join(out, "training_curves.png"),
                             title=f"BERT pretraining ({args.preset if not args.init_checkpoint else 'continued'})")
        summary = {"final_step": steps_before, "train": entries[-1], "eval": results}
        atomic_write_json(os.path.join(out, "summary.json"), summary)
        logger.info("Done: %s", json.dumps(summary))
        heldout = json.dumps(results) if results else "none"
        print(f"Pretrained model: {final} (step {steps_before}; held-out: {heldout})")
    return 0
