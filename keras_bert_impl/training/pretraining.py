"""BERT pretraining (masked LM + next sentence prediction) in one or two phases, resumable: `pretrain(settings)`,
the recipe of the original `run_pretraining.py` on `model.fit` (`keras-bert pretrain` and the quickstart call it).

    from keras_bert_impl.training.pretraining import PretrainingSettings, pretrain

    result = pretrain(PretrainingSettings(input_files=["corpus/train.txt"], vocab_file="vocab.txt",
                                          steps=2000, output_dir="runs/tiny"))
    result.evaluation, result.final_directory

Outputs in `output_dir`: `checkpoints/phase<i>/` (`callbacks.TrainingCheckpoint`), `tensorboard/`, `metrics.jsonl`,
`training_curves.png`, `summary.json` and `final/` (`save_pretrained` with the vocabulary). One Keras "epoch" is one
checkpoint interval; the input is an endless stream fixed by the seed, which a resumed run skips into. Phase 2 starts a
fresh optimizer and schedule on the phase-1 weights, as the original re-run with `--init_checkpoint`.
"""

import contextlib
import dataclasses
import json
import logging
import os
import warnings
from typing import Optional, Sequence, Union

logger = logging.getLogger(__name__)

# Settings field -> `BertPretrainingPreprocessor` argument, for the packing and masking settings (None in
# `PretrainingSettings`: not given, so taken from the TFRecords' recorded settings or the defaults).
PREPROCESSOR_SETTINGS = {name: name for name in (
    "sequence_length", "max_predictions_per_seq", "mask_rate", "masking_rule", "whole_word_masking", "replacement_unit",
    "mask_token_rate", "random_token_rate")} | {"masking_rule": "counting"}
SEQUENCE_LENGTH = 128  # phase 1 without recorded settings
MAX_PREDICTIONS_PER_SEQ = 20  # 20 at length 128, 80 at 512 (~15% of the tokens)
MASKING = "dynamic"
# Longest position table a new model is built with (attention memory grows with the square of the length).
MAX_NEW_MODEL_SEQUENCE_LENGTH = 4096
# What a resume may change with `allow_changed_settings`; every other setting of `phase_run_settings` must stay.
CHANGEABLE_SETTINGS = ("steps",)
# The create-data flag that sets each recorded setting (for the way out of a conflict).
_CREATE_DATA_FLAGS = {"sequence_length": "--sequence-length", "masking": "--masking"}


def _flag(name):
    """The `keras-bert pretrain` flag of settings field `name`, as messages name it."""
    return "--" + name.replace("_", "-")


@dataclasses.dataclass
class PretrainingSettings:
    """Everything that defines a pretraining run; each field is the `keras-bert pretrain` flag of its name
    (`input_files`: `--input-files`). Defaults: the original recipe's, sized down (batch 32, 1,000 steps).

    Args:
        input_files: list of str. Text files (globs ok): one sentence per line, a blank line between
            documents (or see `input_format`). Give this or `input_tfrecords`.
        input_format: str. `"sentence_per_line"` (the original's) or `"document_per_line"`.
        input_tfrecords: list of str. `keras-bert create-data` shards (globs ok), instead of `input_files`.
        eval_files: list of str or None. Held-out text scored (`eval_steps` batches) at the end.
        eval_steps: int. Defaults to 20.
        vocab_file: str or None. vocab.txt; None takes the `init_checkpoint` directory's.
        cased: bool. Do not lowercase.
        dupe_factor: int. Passes over the corpus per epoch of instances.
        seed: int. Data order, masks and initialisation.
        masking: `"dynamic"`, `"static"` or None (the recorded one for TFRecords, else dynamic).
        sequence_length, max_predictions_per_seq, mask_rate, masking_rule: phase 1's packing and masking,
            as are whole_word_masking, replacement_unit, mask_token_rate and random_token_rate
            (`BertPretrainingPreprocessor`; `masking_rule` is its `counting`). None: the recorded settings
            of `input_tfrecords`, else the defaults (length 128, 20 predictions, the preprocessor's rest).
        preset: str. Model size from scratch (tiny .. large), unless `init_checkpoint`.
        init_checkpoint: str or None. Continue pretraining this checkpoint (any path `from_pretrained` reads).
        dropout: float or None. Hidden and attention dropout, instead of the model's.
        dtype: str or None. A Keras dtype policy; `"mixed_float16"` adds loss scaling.
        batch_size: int. Global batch size of phase 1.
        steps: int. Phase-1 optimizer updates.
        learning_rate: float. Peak learning rate of phase 1.
        warmup_fraction: float. Share of each phase's updates with linear warmup.
        optimizer: str. `"adamw_original"` (the paper's), `"lamb"` (large batches) or `"keras_adamw"`.
        weight_decay: float. Decoupled weight decay.
        gradient_accumulation_steps: int. Batches summed per optimizer update.
        phase2_steps: int. Updates at `phase2_sequence_length` after phase 1; 0: no phase 2.
        phase2_sequence_length, phase2_max_predictions_per_seq: int. Phase 2's packing.
        phase2_batch_size, phase2_learning_rate: None takes phase 1's.
        jit_compile: `"auto"`, True or False. XLA for the step.
        distribution: str. `"none"`, `"mirrored"`, `"multi_worker"`, `"tpu"` or `"jax_data_parallel"`.
        tpu: str. TPU name or address for `distribution="tpu"`.
        output_dir: str. Checkpoints, logs and `final/`; the run holds its `utils.output_lock`.
        checkpoint_every: int. Updates between checkpoints; `steps`, `phase2_steps` and
            `max_steps_this_run` are multiples of it.
        keep_checkpoints: int. Newest checkpoints kept per phase.
        max_steps_this_run: int or None. Stop after this many updates; the same settings continue later.
        allow_changed_settings: bool. Resume although the step counts differ from the run's.
        keep_training_state: bool. Keep the checkpoints after the run finishes, so that it can be extended.
        verbose: int. `fit`'s verbosity; 2 adds progress lines within an epoch (`callbacks.ProgressLog`).
        export_huggingface: bool. Also write `final_huggingface/`.

    Raises:
        ValueError: settings that do not fit together (inputs, vocabulary, steps that are not whole intervals).
    """

    input_files: Optional[Sequence[str]] = None
    input_format: str = "sentence_per_line"
    input_tfrecords: Optional[Sequence[str]] = None
    eval_files: Optional[Sequence[str]] = None
    eval_steps: int = 20
    vocab_file: Optional[str] = None
    cased: bool = False
    dupe_factor: int = 1
    seed: int = 12345
    masking: Optional[str] = None
    sequence_length: Optional[int] = None
    max_predictions_per_seq: Optional[int] = None
    mask_rate: Optional[float] = None
    masking_rule: Optional[str] = None
    whole_word_masking: Optional[bool] = None
    replacement_unit: Optional[str] = None
    mask_token_rate: Optional[float] = None
    random_token_rate: Optional[float] = None
    preset: str = "tiny"
    init_checkpoint: Optional[str] = None
    dropout: Optional[float] = None
    dtype: Optional[str] = None
    batch_size: int = 32
    steps: int = 1000
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.01  # the paper: 10,000 of 1,000,000 steps
    optimizer: str = "adamw_original"
    weight_decay: float = 0.01
    gradient_accumulation_steps: int = 1
    phase2_steps: int = 0
    phase2_sequence_length: int = 512
    phase2_max_predictions_per_seq: int = 80
    phase2_batch_size: Optional[int] = None
    phase2_learning_rate: Optional[float] = None
    jit_compile: Union[str, bool] = "auto"
    distribution: str = "none"
    tpu: str = ""
    output_dir: str = "runs/pretrain"
    checkpoint_every: int = 100
    keep_checkpoints: int = 2
    max_steps_this_run: Optional[int] = None
    allow_changed_settings: bool = False
    keep_training_state: bool = False
    verbose: int = 1
    export_huggingface: bool = False

    def __post_init__(self):
        if (self.input_files is None) == (self.input_tfrecords is None):
            raise ValueError("give exactly one of --input-files and --input-tfrecords")
        if self.vocab_file is None and self.init_checkpoint is None:
            raise ValueError("give --vocab-file (or --init-checkpoint, whose vocab.txt is used)")
        for name in ("steps", "phase2_steps", "max_steps_this_run"):
            value = getattr(self, name)
            if value is not None and value % self.checkpoint_every:
                raise ValueError(f"{_flag(name)} ({value}) must be a multiple of --checkpoint-every "
                                 f"({self.checkpoint_every})")


@dataclasses.dataclass
class PretrainingPhase:
    """One phase of a run: its `BertPretrainingPreprocessor` (length, masking settings), `masking` and schedule."""

    index: int
    preprocessor: object
    masking: str
    batch_size: int
    steps: int
    learning_rate: float


@dataclasses.dataclass
class PretrainingResult:
    """What `pretrain` returns.

    Args:
        model: the `BertPretrainer`.
        final_step: int. Batches trained over all phases; where the run stopped with `max_steps_this_run`.
        finished: bool. Every phase ran to its end (False: stopped by `max_steps_this_run`).
        evaluation: dict. The held-out `evaluate` results (`eval_files`), or `{}`.
        final_directory: str or None. `final/`, where this process wrote it.
    """

    model: object
    final_step: int
    finished: bool
    evaluation: dict
    final_directory: Optional[str]


def data_settings(settings):
    """The phase-1 packing and masking settings: `(masking, preprocessor settings, source)`: those `create-data`
    recorded beside `input_tfrecords` (`source`: that file; a setting given that disagrees is a `ValueError`), else
    the settings given and the defaults (`source` None)."""
    given = {argument: getattr(settings, name) for name, argument in PREPROCESSOR_SETTINGS.items()
             if getattr(settings, name) is not None}
    flags = {argument: _flag(name) for name, argument in PREPROCESSOR_SETTINGS.items()}
    recorded = None
    if settings.input_tfrecords:
        from keras_bert_impl.data.pretraining_tfrecords import read_pretraining_settings

        recorded = read_pretraining_settings(list(settings.input_tfrecords))
    if recorded is None:
        chosen = {"sequence_length": SEQUENCE_LENGTH, "max_predictions_per_seq": MAX_PREDICTIONS_PER_SEQ, **given}
        return settings.masking or MASKING, chosen, None
    source = recorded["path"]
    chosen = {name: value for name, value in recorded["preprocessor"].items() if name != "seed"}
    conflicts = [(name, flags[name], value, chosen[name]) for name, value in given.items()
                 if name in chosen and value != chosen[name]]
    if settings.masking is not None and settings.masking != recorded["masking"]:
        conflicts.insert(0, ("masking", "--masking", settings.masking, recorded["masking"]))
    if conflicts:
        name, flag, value, wanted = conflicts[0]
        again = _CREATE_DATA_FLAGS.get(name, flag)
        if isinstance(value, bool):  # a switch is named without its value
            shown, again = "", ("with " if value else "without ") + again
        else:
            shown, again = f" {value}", f"with {again} {value}"
        raise ValueError(
            f"{flag}{shown} conflicts with {name}={wanted!r} in {source}, the settings create-data wrote the "
            f"TFRecords with: drop {flag} to train with {wanted!r}, or re-run create-data {again}.")
    return recorded["masking"], chosen, source


def training_phases(settings, tokenizer):
    """The phases to train, a list of `PretrainingPhase`: phase 1, and phase 2 when `phase2_steps`."""
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor

    masking, packing, source = data_settings(settings)
    shown = ", ".join(f"{name}={value}" for name, value in packing.items())
    logger.info("Pretraining data: masking=%s, %s%s", masking, shown, f" (from {source})" if source else "")
    phases = [(1, packing, settings.batch_size, settings.steps, settings.learning_rate)]
    if settings.phase2_steps:
        phase2_packing = {**packing, "sequence_length": settings.phase2_sequence_length,
                          "max_predictions_per_seq": settings.phase2_max_predictions_per_seq}
        phases.append((2, phase2_packing, settings.phase2_batch_size or settings.batch_size, settings.phase2_steps,
                       settings.phase2_learning_rate or settings.learning_rate))
    return [PretrainingPhase(index, BertPretrainingPreprocessor(tokenizer, seed=settings.seed + index, **packing),
                             masking, batch_size, steps, learning_rate)
            for index, packing, batch_size, steps, learning_rate in phases]


def phase_run_settings(settings, phase):
    """The settings that define `phase`, stored with its checkpoints: a resume that changes one is refused."""
    shared = ("seed", "optimizer", "warmup_fraction", "weight_decay", "dropout", "dtype",
              "gradient_accumulation_steps", "checkpoint_every", "input_format", "dupe_factor", "cased")
    return {"model": settings.init_checkpoint or f"preset {settings.preset}",
            **{name: getattr(settings, name) for name in shared},
            **{name: getattr(phase, name) for name in ("masking", "batch_size", "steps", "learning_rate")},
            **{name: value for name, value in phase.preprocessor.settings().items() if name != "seed"}}


def phase_dataset(settings, phase, vocabulary_size=None, files=None, seed=None):
    """The endless, deterministic stream of `(x, y)` batches `phase` trains on (tf.data, outside the step).

    Args:
        settings: `PretrainingSettings`. Its `input_tfrecords` or `input_files`.
        phase: `PretrainingPhase`. Its preprocessor gives the length and every masking setting.
        vocabulary_size: int or None. Range-checks the token ids of TFRecord shards. Defaults to None.
        files: list of str or None. Other text files (e.g. `eval_files`). Defaults to None.
        seed: int or None. Defaults to None: `settings.seed` + the phase index.
    """
    from keras_bert_impl.data import pretraining_dataset, read_pretraining_tfrecords

    seed = settings.seed + phase.index if seed is None else seed
    preprocessor = phase.preprocessor
    if files is None and settings.input_tfrecords:
        return read_pretraining_tfrecords(
            list(settings.input_tfrecords), phase.batch_size, preprocessor.sequence_length,
            preprocessor.max_predictions_per_seq, masker=preprocessor if phase.masking == "dynamic" else None,
            seed=seed, vocabulary_size=vocabulary_size, epochs=None)
    return pretraining_dataset(preprocessor, files=list(files or settings.input_files), batch_size=phase.batch_size,
                               masking=phase.masking, seed=seed, dupe_factor=settings.dupe_factor, epochs=None,
                               input_format=settings.input_format, drop_remainder=True)


def _build_model(settings, tokenizer, longest):
    """The `BertPretrainer` to train (call in the strategy's scope), checked against the lengths and vocabulary."""
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.pretrainer import BertPretrainer

    overrides = {} if settings.dropout is None else {"dropout": settings.dropout, "attention_dropout": settings.dropout}
    if settings.dtype:
        overrides["dtype"] = settings.dtype
    if settings.init_checkpoint:
        model = BertPretrainer.from_pretrained(settings.init_checkpoint, **overrides)
    else:
        backbone = BertBackbone.from_scratch(settings.preset, vocabulary_size=tokenizer.vocabulary_size(),
                                             max_sequence_length=max(512, longest), **overrides)
        model = BertPretrainer(backbone)
    if longest > model.backbone.max_sequence_length:
        raise ValueError(f"Sequence length {longest} exceeds the position table of {settings.init_checkpoint} "
                         f"(max_sequence_length={model.backbone.max_sequence_length}); use a shorter --sequence-length "
                         f"/ --phase2-sequence-length.")
    if tokenizer.vocabulary_size() != model.backbone.vocabulary_size:
        raise ValueError(f"The vocabulary has {tokenizer.vocabulary_size()} tokens but the model "
                         f"{model.backbone.vocabulary_size}: use the checkpoint's vocab.txt.")
    logger.info("BertPretrainer: %d parameters", model.count_params())
    return model


class _Run:
    """One call of `pretrain`: the distribution, the output directory (the chief's `output_lock` on the `held`
    `ExitStack`) and the phases' checkpoints."""

    def __init__(self, settings, held):
        import keras

        from keras_bert_impl.training.distribution import make_distribution, process_directory
        from keras_bert_impl.training.finetuning import load_tokenizer
        from keras_bert_impl.utils.atomic_io import claim_output_directory, ensure_directory
        from keras_bert_impl.utils.output_lock import output_lock

        self.settings = settings
        # The strategy first: MultiWorkerMirroredStrategy configures collective ops, and logical devices must be
        # set, before anything (the tokenizer's tf.data / tf.lookup, the seed) initialises TensorFlow's runtime.
        self.scope, self.strategy, self.is_chief = make_distribution(settings.distribution, tpu=settings.tpu)
        keras.utils.set_random_seed(settings.seed)
        # Checked and claimed before anything is read or built; every process claims the run's folder first.
        claim_output_directory(settings.output_dir, [settings.init_checkpoint], "pretraining output directory")
        self.out = ensure_directory(process_directory(settings.output_dir, settings.distribution))
        if self.is_chief:  # before anything reads the folder; `held` (an ExitStack) releases it
            held.enter_context(output_lock(self.out))
        self.tokenizer = load_tokenizer(settings.vocab_file, settings.init_checkpoint, lowercase=not settings.cased)
        self.phases = training_phases(settings, self.tokenizer)
        self.longest = max(phase.preprocessor.sequence_length for phase in self.phases)
        if not settings.init_checkpoint and self.longest > MAX_NEW_MODEL_SEQUENCE_LENGTH:
            raise ValueError(f"Sequence length {self.longest} is above {MAX_NEW_MODEL_SEQUENCE_LENGTH}, the longest "
                             f"position table a new model is built with; use a shorter --sequence-length / "
                             f"--phase2-sequence-length.")
        self.checkpoints = {phase.index: self.checkpoint(phase) for phase in self.phases}
        saved = {index: checkpoint.saved_state() for index, checkpoint in self.checkpoints.items()}
        self.resume_phase = max([index for index, found in saved.items() if found], default=1)
        if saved[self.resume_phase]:  # refused before the model is built
            self.checkpoints[self.resume_phase].check_settings(*saved[self.resume_phase])

    def checkpoint(self, phase):
        """The `TrainingCheckpoint` of `phase` in `checkpoints/phase<i>/`; a finished run's weights are in `final/`."""
        from keras_bert_impl.training.callbacks import TrainingCheckpoint

        settings = self.settings
        return TrainingCheckpoint(
            os.path.join(self.out, "checkpoints", f"phase{phase.index}"),
            settings.checkpoint_every * settings.gradient_accumulation_steps, phase_run_settings(settings, phase),
            changeable=CHANGEABLE_SETTINGS, allow_changed=settings.allow_changed_settings,
            model_dir=os.path.join(self.out, "final"), keep=settings.keep_checkpoints,
            delete_checkpoint=not settings.keep_training_state, extra_state={"phase": phase.index},
            write=self.is_chief)

    def finish(self):
        """After `final/` is written: keep the last phase's record, remove the checkpoints (unless kept)."""
        import shutil

        if self.is_chief and not self.settings.keep_training_state:
            for phase in self.phases[:-1]:  # the last phase's record and final/ hold what they led to
                shutil.rmtree(self.checkpoints[phase.index].backup_dir, ignore_errors=True)
        self.checkpoints[self.phases[-1].index].finish()

    def distributed(self, dataset):
        from keras_bert_impl.training.distribution import for_tf_distribute

        return dataset if self.strategy is None else for_tf_distribute(dataset)

    def compile_phase(self, model, phase):
        """Compile `model` with a fresh optimizer and schedule for `phase`; restore its checkpoint if there is
        one. Returns the batch the phase starts from."""
        from keras_bert_impl.optimization import create_optimizer

        settings = self.settings
        with self.scope:
            optimizer = create_optimizer(
                name=settings.optimizer, learning_rate=phase.learning_rate, total_steps=phase.steps,
                warmup_fraction=settings.warmup_fraction, weight_decay=settings.weight_decay,
                gradient_accumulation_steps=settings.gradient_accumulation_steps,
                loss_scale=settings.dtype == "mixed_float16")
            model.compile(optimizer=optimizer, jit_compile=settings.jit_compile)
        with self.scope:  # restoring builds the optimizer's slots, which belong in the strategy's scope
            state = self.checkpoints[phase.index].restore(model)
        if state is None:
            return 0
        logger.info("Resuming phase %d at step %d from %s", phase.index, state["step"], state["restored_from"])
        return state["step"]

    def callbacks(self, phase, every, steps_before):
        import keras

        from keras_bert_impl.training.callbacks import MetricsLog, ProgressLog

        callbacks = [
            # The log line first: a kill between the two repeats the line, which `read_metrics_log` deduplicates.
            MetricsLog(os.path.join(self.out, "metrics.jsonl"), every, extra={"phase": phase.index},
                       step_offset=steps_before, write=self.is_chief),
            self.checkpoints[phase.index],
            *([ProgressLog(phase.batch_size)] if self.settings.verbose == 2 else []),
        ]
        if self.is_chief:  # the workers of a multi-worker run share the output directory
            callbacks.append(keras.callbacks.TensorBoard(os.path.join(self.out, "tensorboard", f"phase{phase.index}"),
                                                         update_freq=every))
        return callbacks

    def train_phase(self, model, phase, steps_before, budget):
        """Train `phase` from its checkpoint up to its end or `budget` batches: `(first batch, last batch)`."""
        from keras_bert_impl.training.distribution import replica_count

        start_step = self.compile_phase(model, phase)
        # Checkpoints, logs and the data position count batches; an accumulated update takes several.
        batches = phase.steps * self.settings.gradient_accumulation_steps
        every = self.settings.checkpoint_every * self.settings.gradient_accumulation_steps
        end_batch = batches if budget is None else min(batches, start_step + budget)
        if start_step >= end_batch:
            return start_step, end_batch
        dataset = phase_dataset(self.settings, phase, vocabulary_size=model.backbone.vocabulary_size)
        replicas = replica_count(self.strategy)
        logger.info("Phase %d: length %d, batch %d (%g per replica, %d replicas), %d steps (from %d)", phase.index,
                    phase.preprocessor.sequence_length, phase.batch_size, phase.batch_size / replicas, replicas,
                    phase.steps, start_step)
        model.fit(self.distributed(dataset.skip(start_step)), initial_epoch=start_step // every,
                  epochs=end_batch // every, steps_per_epoch=every,
                  callbacks=self.callbacks(phase, every, steps_before), verbose=self.settings.verbose, shuffle=False)
        return start_step, end_batch

    def evaluate(self, model):
        settings = self.settings
        if not settings.eval_files:
            return {}
        data = phase_dataset(settings, self.phases[-1], files=settings.eval_files, seed=settings.seed + 100)
        # Keras warns at the end of any input of unknown length, wrongly (keras-team/keras#23360).
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            results = model.evaluate(self.distributed(data.take(settings.eval_steps)), verbose=0, return_dict=True)
        logger.info("Held-out evaluation (%d batches): %s", settings.eval_steps, results)
        return results

    def write_final(self, model, results, final_step):
        """`final/` (weights + vocabulary, replaced in one atomic step), the curves and `summary.json`."""
        from keras_bert_impl.training.callbacks import plot_training_curves, read_metrics_log
        from keras_bert_impl.training.finetuning_results import save_finetuned
        from keras_bert_impl.utils.atomic_io import atomic_write_json

        final = os.path.join(self.out, "final")
        save_finetuned(model, final, self.tokenizer)
        if self.settings.export_huggingface:
            model.save_huggingface(os.path.join(self.out, "final_huggingface"))
            self.tokenizer.save_pretrained(os.path.join(self.out, "final_huggingface"))
        entries = read_metrics_log(os.path.join(self.out, "metrics.jsonl"))
        if results:
            entries[-1].update({f"val_{name}": value for name, value in results.items()})
        model_name = "continued" if self.settings.init_checkpoint else self.settings.preset
        plot_training_curves(entries, os.path.join(self.out, "training_curves.png"),
                             title=f"BERT pretraining ({model_name})")
        summary = {"final_step": final_step, "train": entries[-1], "eval": results}
        atomic_write_json(os.path.join(self.out, "summary.json"), summary)
        logger.info("Done: %s", json.dumps(summary))
        return final


def pretrain(settings):
    """Pretrain a `BertPretrainer` as `settings` say, resuming from the newest checkpoint in `output_dir` (other
    settings are refused), then evaluate on `eval_files` and write `final/`, `training_curves.png`, `summary.json`.

    Args:
        settings: `PretrainingSettings`.

    Returns:
        `PretrainingResult`.

    Raises:
        ValueError: a resume with other settings, a length or vocabulary the model cannot take, a TFRecords conflict.

    Example:
    >>> settings = PretrainingSettings(input_files=["corpus.txt"], vocab_file="vocab.txt", steps=4,
    ...                                checkpoint_every=2, sequence_length=24, max_predictions_per_seq=4,
    ...                                batch_size=4, output_dir="runs/tiny", verbose=0)
    >>> pretrain(settings).final_step  # doctest: +SKIP
    4
    """
    with contextlib.ExitStack() as held:
        run = _Run(settings, held)
        with run.scope:
            model = _build_model(settings, run.tokenizer, run.longest)
        steps_before = 0  # batches of earlier phases, for one x axis across phases
        budget = None if settings.max_steps_this_run is None else (
            settings.max_steps_this_run * settings.gradient_accumulation_steps)
        for phase in run.phases:
            batches = phase.steps * settings.gradient_accumulation_steps
            if phase.index >= run.resume_phase:  # an earlier phase is done: the later checkpoint holds its weights
                start, end = run.train_phase(model, phase, steps_before, budget)
                if budget is not None:
                    budget -= end - start
                if end < batches:
                    logger.info("Stopped at step %d of phase %d (--max-steps-this-run); run again to resume.",
                                end, phase.index)
                    return PretrainingResult(model, steps_before + end, False, {}, None)
            steps_before += batches
        results = run.evaluate(model)
        final = run.write_final(model, results, steps_before) if run.is_chief else None
        run.finish()
        return PretrainingResult(model, steps_before, True, results, final)
