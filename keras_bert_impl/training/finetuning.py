"""The fine-tuning recipe of every `keras-bert finetune-*` command (`FinetuningSettings` -> `finetune`: resumable
`model.fit` on `preprocessor.make_dataset` batches), its tokenizer loading and input checks, and `finetune_and_score`,
what the classification, multiple-choice and NER recipes share. `finetuning_results`' names are importable here too.
"""

import dataclasses
import functools
import glob
import inspect
import json
import logging
import os

import numpy as np

# Re-exported: callers use them as `finetuning.<name>` (the recipes, CLI, examples and tests).
from keras_bert_impl.training.finetuning_results import (
    EVAL_RESULTS_FILENAME, classification_monitor, classification_scores, evaluate_squad_predictions, json_ready,
    save_finetuned, write_classification_predictions)
from keras_bert_impl.utils.output_lock import output_lock

logger = logging.getLogger(__name__)

__all__ = [
    "EVAL_RESULTS_FILENAME", "FinetuningFiles", "FinetuningSettings", "ModelSource",
    "check_model_inputs", "claims_output_dir", "classification_monitor", "classification_scores",
    "evaluate_squad_predictions", "finetune", "finetune_and_score", "load_tokenizer", "save_finetuned",
    "write_classification_predictions", "xla_jit_compile",
]


def load_tokenizer(vocab=None, checkpoint=None, lowercase=None):
    """The `BertTokenizer` of a fine-tuning (or data-writing) run.

    Args:
        vocab: str or None. A `vocab.txt` or its directory; None: the checkpoint's directory. Defaults to None.
        checkpoint: str or None. The initial checkpoint (directory or original-TF prefix). Defaults to None.
        lowercase: bool or None. Override the tokenizer config's casing. Defaults to None.
    """
    from keras_bert_impl.tokenization import BertTokenizer

    overrides = {} if lowercase is None else {"lowercase": lowercase}
    source = vocab
    if source is None and checkpoint is not None:
        if not os.path.exists(checkpoint) and not glob.glob(glob.escape(checkpoint) + ".*"):
            raise FileNotFoundError(f"{checkpoint} does not exist (no such folder, file or TF checkpoint prefix); "
                                    f"check the --init-checkpoint path.")
        source = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(os.path.abspath(checkpoint))
    if source is None:
        raise ValueError("No vocabulary: pass a vocab.txt (or its directory), or a checkpoint directory holding one.")
    if os.path.isfile(source):
        return BertTokenizer(source, **({"lowercase": True} | overrides))
    return BertTokenizer.from_pretrained(source, **overrides)  # "No vocab.txt in ..." if it has none


def check_model_inputs(model, inputs, what="inputs"):
    """Raise a ValueError naming the problem when packed NumPy `inputs` cannot go through `model` (no rows, `T` or
    ids out of range): compiled steps cannot check values (an out-of-range id gathers garbage on GPUs and JAX).

    Args:
        model: a task model (with `backbone`) or a `BertBackbone`.
        inputs: dict of NumPy arrays `token_ids`, `segment_ids`, `padding_mask` `(N, T)` (or `(N, C, T)`).
        what: str. Names the data in the message (e.g. "training data"). Defaults to "inputs".
    """
    from keras_bert_impl.layers.embeddings import check_token_ids_in_range

    backbone = getattr(model, "backbone", model)
    missing = [key for key in ("token_ids", "segment_ids", "padding_mask") if key not in inputs]
    if missing:
        raise ValueError(f"The {what} lack {missing}; got keys {sorted(inputs)}.")
    token_ids = np.asarray(inputs["token_ids"])
    if token_ids.ndim not in (2, 3) or token_ids.shape[0] == 0:
        raise ValueError(f"The {what} are empty or not (N, T) (or (N, C, T)) arrays: token_ids has shape "
                         f"{token_ids.shape}; give at least one example.")
    if token_ids.shape[-1] > backbone.max_sequence_length:
        raise ValueError(f"The {what} are {token_ids.shape[-1]} tokens long but the model's position table has "
                         f"{backbone.max_sequence_length} rows; pack to at most that length (--sequence-length).")
    for key in ("segment_ids", "padding_mask"):
        if np.shape(inputs[key]) != token_ids.shape:
            raise ValueError(f"The {what}: {key} has shape {np.shape(inputs[key])} but token_ids {token_ids.shape}.")
    check_token_ids_in_range(token_ids, backbone.vocabulary_size, f"{what} token_ids")
    check_token_ids_in_range(np.asarray(inputs["segment_ids"]), backbone.num_segments, f"{what} segment_ids")


def xla_jit_compile(requested=True):
    """The `jit_compile` of `Model.compile` for "XLA where the backend has it": False on torch, whose
    `torch.compile` cannot trace this package's tf.data-fed steps.

    Args:
        requested: bool. Whether XLA is wanted at all. Defaults to True.

    Example:
    >>> import keras
    >>> xla_jit_compile() == (keras.backend.backend() in ("tensorflow", "jax"))
    True
    """
    import keras

    return bool(requested) and keras.backend.backend() in ("tensorflow", "jax")


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """Where a fine-tuning run's model and vocabulary come from.

    Args:
        init_checkpoint: str or None. Any checkpoint `from_pretrained` reads. Defaults to None.
        preset: str or None. Without `init_checkpoint`: a `BertBackbone` size ("tiny" ... "large") from scratch,
            or a keras-hub preset directory or handle (its backbone and tokenizer), under a new head. Defaults to None.
        vocab: str or None. `vocab.txt` or its directory; None: the checkpoint's, or the preset's. Defaults to None.
        cased: bool. Keep case; False: the tokenizer config's casing. Defaults to False.
    """

    init_checkpoint: str = None
    preset: str = None
    vocab: str = None
    cased: bool = False

    @property
    def keras_hub_preset(self):
        """The keras-hub preset the run starts from (a `preset` that is no published size), or None."""
        from keras_bert_impl.checkpoints.keras_hub_presets import keras_hub_preset_names
        from keras_bert_impl.models.presets import PRESETS

        if not self.preset or self.preset in PRESETS or self.init_checkpoint:
            return None
        if not (os.path.isdir(self.preset) or "://" in self.preset or self.preset in keras_hub_preset_names()):
            raise ValueError(f"The preset {self.preset!r} is neither a model size ({', '.join(PRESETS)}) nor a "
                             f"keras-hub preset (a preset directory, a kaggle:// or hf:// handle, or a name such as "
                             f"bert_base_en_uncased).")
        return self.preset

    def tokenizer(self):
        """The run's `BertTokenizer` (`load_tokenizer`; without `vocab`, a keras-hub preset's own)."""
        preset = self.keras_hub_preset  # checked first: a mistyped size is named before anything is read
        if self.vocab is None and preset:
            from keras_bert_impl.checkpoints.keras_hub_presets import read_keras_hub_tokenizer

            tokenizer = read_keras_hub_tokenizer(preset)
            if tokenizer is None:
                raise ValueError(f"The keras-hub preset {preset} has no tokenizer; give its vocabulary (--vocab).")
            return tokenizer
        return load_tokenizer(self.vocab, self.init_checkpoint, lowercase=False if self.cased else None)

    def build(self, task_class, tokenizer, preprocessor=None, max_sequence_length=512, backbone_dropout=None,
              **head):
        """The run's task model: `task_class.from_pretrained(init_checkpoint)`, or a new head on a backbone of size
        `preset` (a keras-hub preset: its pretrained backbone), checked against `tokenizer`.

        Args:
            task_class: a `BertTask` subclass, e.g. `BertClassifier`.
            tokenizer: `BertTokenizer`. Larger than the embedding table: refused; smaller: a WARNING (padded tables).
            preprocessor: a preprocessor or None. Saved with the model; None: a checkpoint's own. Defaults to None.
            max_sequence_length: int. Position table of a model from scratch. Defaults to 512.
            backbone_dropout: float or None. Encoder hidden and attention dropout; None: the config's. Defaults to None.
            **head: the head's constructor arguments (e.g. `num_classes`, `labels`, `dropout`); a checkpoint's
                head fills those that are None.

        Example:
            model = ModelSource(preset="tiny").build(BertClassifier, tokenizer, num_classes=2)
        """
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.models.task import AUTO

        overrides = {} if backbone_dropout is None else {"dropout": backbone_dropout,
                                                          "attention_dropout": backbone_dropout}
        if self.init_checkpoint:
            names = inspect.signature(task_class.pretrained_head_arguments).parameters
            if "dropout" in head and "dropout" not in names:  # the classifiers call it classifier_dropout there
                head["classifier_dropout"] = head.pop("dropout")
            attached = AUTO if preprocessor is None else preprocessor
            model = task_class.from_pretrained(self.init_checkpoint, preprocessor=attached, **head, **overrides)
        elif self.preset:
            if self.keras_hub_preset:  # its sizes are the weights' own: only the dropout may change
                backbone = BertBackbone.from_preset(self.keras_hub_preset, **overrides)
            else:
                backbone = BertBackbone.from_scratch(self.preset, vocabulary_size=tokenizer.vocabulary_size(),
                                                     max_sequence_length=max_sequence_length, **overrides)
            model = task_class(backbone, preprocessor=preprocessor,
                               **{name: value for name, value in head.items() if value is not None})
        else:
            raise ValueError("Give an initial checkpoint (init_checkpoint) or a preset to train from scratch.")
        table = model.backbone.vocabulary_size
        if tokenizer.vocabulary_size() > table:
            raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the model's embedding table "
                             f"has {table} rows; use the vocabulary the checkpoint was trained with.")
        if model.preprocessor is not None and model.preprocessor.sequence_length > model.backbone.max_sequence_length:
            raise ValueError(f"The preprocessor packs {model.preprocessor.sequence_length} tokens but the model's "
                             f"position table has {model.backbone.max_sequence_length} rows; pack to at most that "
                             f"length (--sequence-length).")
        if tokenizer.vocabulary_size() < table:
            logger.warning("The tokenizer has %d tokens but the model's embedding table has %d rows; unless the "
                           "table is padded, this is not the checkpoint's vocabulary.", tokenizer.vocabulary_size(),
                           table)
        return model


@dataclasses.dataclass(frozen=True)
class FinetuningSettings:
    """How a fine-tuning run trains and where it writes: the settings every `finetune-*` command shares.

    Args:
        output_dir: str. Where `last/`, `best/`, `training_state/` and the results go (held by `output_lock`).
        epochs: int. Passes over the training data (0: train nothing). Defaults to 3.
        batch_size: int. Training rows per update. Defaults to 32.
        eval_batch_size: int. Rows per prediction batch. Defaults to 64.
        learning_rate: float. Peak learning rate. Defaults to 2e-5.
        warmup_fraction: float. Share of the updates with linear warmup. Defaults to 0.1.
        weight_decay: float. Defaults to 0.01.
        length_bucketing: bool. Train on batches of rows of similar length, each padded to its bucket
            (`make_dataset(bucket_width=...)`); False pads to the packed length, as predictions are. Defaults to True.
        bucket_width: int. Bucket granularity in tokens. Defaults to 32.
        jit_compile: bool. XLA on TensorFlow and JAX. Defaults to True.
        seed: int. Seed of the data order, dropout and the head. Defaults to 12345.
        verbose: int. `fit`'s verbosity; 2 adds progress lines within an epoch (`callbacks.ProgressLog`).
            Defaults to 1.
        keep_training_state: bool. Keep `training_state/` after the run finishes. Defaults to False.

    Example:
    >>> FinetuningSettings("runs/mrpc", epochs=2).batch_size
    32
    """

    output_dir: str
    epochs: int = 3
    batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    length_bucketing: bool = True
    bucket_width: int = 32
    jit_compile: bool = True
    seed: int = 12345
    verbose: int = 1
    keep_training_state: bool = False


def claims_output_dir(recipe):
    """Decorate a fine-tuning recipe `recipe(..., settings, ...)` (and `source`, if it takes one): first, claim
    `settings.output_dir` (`utils.atomic_io.claimed_output_directory`: refused if it overlaps
    `source.init_checkpoint`, is someone else's or is not writable; a previous run's folder resumes) and hold its
    `utils.output_lock` for the call."""
    from keras_bert_impl.utils.atomic_io import claimed_output_directory

    signature = inspect.signature(recipe)

    @functools.wraps(recipe)
    def claimed(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        output_dir, source = arguments["settings"].output_dir, arguments.get("source")
        inputs = [source.init_checkpoint] if source is not None else []
        with claimed_output_directory(output_dir, inputs, "fine-tuning output directory"), output_lock(output_dir):
            return recipe(*args, **kwargs)

    return claimed


@claims_output_dir
def finetune(model, train_x, train_y, settings, tokenizer=None, *, counts, details="", evaluate=None, monitor=None,
             selection_name="dev"):
    """The fine-tuning recipe: compile `model` as `run_classifier.py` / `run_squad.py` do (`BertTask.compile`) and
    fit it for `settings.epochs` on `model.preprocessor.make_dataset` batches, resumably
    (`callbacks.FinetuningCheckpoint`): rerun on the same `output_dir` after a kill, it reaches the uninterrupted
    run's weights (bit for bit on TensorFlow and JAX on one device); other settings are refused. Prints what it
    trains and the best epoch.

    Args:
        model: the task model to fine-tune, with a preprocessor.
        train_x: dict of NumPy arrays `(N, T)` (`(N, C, T)` for multiple choice): the preprocessor's output.
        train_y: the targets: array or dict of arrays `(N,)` (or `(N, T)` token labels).
        settings: `FinetuningSettings`.
        tokenizer: `BertTokenizer` or None. Saved beside each model directory. Defaults to None.
        counts: str. What the training data holds, e.g. `"3668 training examples"`.
        details: str. Appended to that line, e.g. `"; labels: [...]"`. Defaults to "".
        evaluate: `evaluate(model) -> dict` run at each epoch end, or None. Defaults to None.
        monitor: str or None. The key of `evaluate`'s results that picks `best/` (None: `last/` only). Defaults to None.
        selection_name: str. What `evaluate` scores ("dev", "held-out"), for the best-epoch line. Defaults to "dev".

    Returns:
        `FinetuningCheckpoint`: its `trained_from` is the epoch the run started from (0, where it resumed, or
        `settings.epochs` for a finished run); `history`, `best_epoch`, `best_score` say what it picked.
    """
    from keras_bert_impl.training.callbacks import FinetuningCheckpoint, ProgressLog

    if settings.epochs < 1:
        raise ValueError(f"finetune trains at least one epoch, got epochs={settings.epochs}.")
    check_model_inputs(model, train_x, "training data")
    if model.preprocessor is None:
        raise ValueError(f"finetune batches the data with the model's preprocessor; this {type(model).__name__} "
                         "has none (build it with a preprocessor).")
    bucket_width = settings.bucket_width if settings.length_bucketing else None
    dataset = model.preprocessor.make_dataset(train_x, train_y, batch_size=settings.batch_size, shuffle=True,
                                              seed=settings.seed, bucket_width=bucket_width, epochs=settings.epochs)
    steps_per_epoch = int(dataset.cardinality()) // settings.epochs
    total_steps = steps_per_epoch * settings.epochs
    model.compile(learning_rate=settings.learning_rate, total_steps=total_steps,
                  warmup_fraction=settings.warmup_fraction, weight_decay=settings.weight_decay,
                  jit_compile=xla_jit_compile(settings.jit_compile))
    print(f"{counts}, {steps_per_epoch} steps per epoch, {total_steps} updates{details}")
    if monitor is None:
        print("no dev or held-out data: nothing tells the epochs apart, so only last/ is written")
    # What a resumed run must share with the saved one; the ones given first, so the message names those.
    run_settings = dict(batch_size=settings.batch_size, seed=settings.seed, epochs=settings.epochs,
                        length_bucketing=settings.length_bucketing, bucket_width=settings.bucket_width,
                        num_examples=len(train_x["token_ids"]), steps_per_epoch=steps_per_epoch)
    checkpoint = FinetuningCheckpoint(settings.output_dir, tokenizer, evaluate=evaluate, monitor=monitor,
                                      steps_per_epoch=steps_per_epoch, settings=run_settings,
                                      delete_checkpoint=not settings.keep_training_state)
    state = checkpoint.restore(model)
    checkpoint.trained_from = initial_epoch = state["epoch"] if state else 0
    if state:
        logger.info("Resuming fine-tuning after epoch %d of %d (step %d) from %s", initial_epoch, settings.epochs,
                    state["step"], state["restored_from"])
    if initial_epoch < settings.epochs:
        model.fit(dataset.skip(initial_epoch * steps_per_epoch), epochs=settings.epochs, initial_epoch=initial_epoch,
                  steps_per_epoch=steps_per_epoch, verbose=settings.verbose, shuffle=False,
                  callbacks=[checkpoint, *([ProgressLog(settings.batch_size)] if settings.verbose == 2 else [])])
    checkpoint.finish()
    if monitor is not None and checkpoint.best_epoch is not None:
        print(f"best epoch {checkpoint.best_epoch + 1}: {selection_name} {monitor} {checkpoint.best_score:.4f}, "
              f"saved in {settings.output_dir}/best")
    return checkpoint


# Tuning data held out of the training data (`--tune-fraction`): rows, or whole SQuAD articles (questions of one
# article share its paragraphs, so a split by question would tune on text the model trained on).
def held_out_count(total, fraction, what):
    """How many of `total` items a `fraction` holds out: rounded, at least 1, leaving at least 1.

    Args:
        total: int. Items to split.
        fraction: float. Share held out, in (0, 1).
        what: str. The items, for the error message ("training rows", "articles").

    Example:
    >>> held_out_count(12, 0.2, "articles")
    2
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"The held-out fraction must be between 0 and 1 (exclusive), got {fraction}.")
    if total < 2:
        raise ValueError(f"Cannot hold out a fraction of {total} {what}: it takes at least 2 (one to train on, one "
                         f"to tune on); give more training data or leave out --tune-fraction.")
    return min(total - 1, max(1, round(total * fraction)))


def split_rows(rows, fraction, seed, what="training rows"):
    """`(kept, held_out)` lists: a seeded random `fraction` of `rows` held out, both in their original order.

    Args:
        rows: sequence. Training examples.
        fraction: float. Share held out, in (0, 1).
        seed: int. The same seed holds out the same rows.
        what: str. The rows, for the error message. Defaults to "training rows".

    Example:
    >>> kept, held = split_rows(list(range(10)), 0.3, seed=0)
    >>> len(kept), len(held), sorted(kept + held) == list(range(10))
    (7, 3, True)
    """
    count = held_out_count(len(rows), fraction, what)
    held = set(np.random.default_rng(seed).permutation(len(rows))[:count].tolist())
    return ([row for index, row in enumerate(rows) if index not in held],
            [row for index, row in enumerate(rows) if index in held])


def split_articles(squad_json, fraction, seed):
    """`(kept, held_out)` SQuAD JSON objects: `split_rows` of the articles.

    Args:
        squad_json: dict. A SQuAD file's object (`{"version", "data": [article, ...]}`).
        fraction: float. Share of the articles held out, in (0, 1).
        seed: int. The same seed holds out the same articles.

    Example:
    >>> data = {"version": "v2.0", "data": [{"title": t, "paragraphs": []} for t in "abcde"]}
    >>> kept, held = split_articles(data, 0.2, seed=0)
    >>> len(kept["data"]), len(held["data"])
    (4, 1)
    """
    kept, held = split_rows(squad_json["data"], fraction, seed, "articles")
    return {**squad_json, "data": kept}, {**squad_json, "data": held}


@dataclasses.dataclass(frozen=True)
class FinetuningFiles:
    """The files of a classification, multiple-choice or NER run: `train_file` trains; `dev_file` (else a seeded
    `tune_fraction` of the training rows) is scored after every epoch and picks `best/`; `test_file` is predicted
    (and scored when labelled). Each defaults to None."""

    train_file: str = None
    dev_file: str = None
    test_file: str = None
    tune_fraction: float = None


def finetune_and_score(model, tokenizer, files, settings, train, *, read, pack, score, write_predictions, monitor,
                       counts, predict=None, training_arrays=None, details=""):
    """Fine-tune `model` on `train` (`finetune`; `best/` picked by `monitor` on the dev file, else on the held-out
    `files.tune_fraction`), then score the final model: `dev_predictions.*` with `eval_results.json`,
    `test_predictions.*` and, for a labelled test file, `test_results.json` in `settings.output_dir`.

    Args:
        model: the task model, with its preprocessor.
        tokenizer: `BertTokenizer`. Saved with each model directory.
        files: `FinetuningFiles` (or a subclass).
        settings: `FinetuningSettings`. `epochs == 0` trains nothing and only scores.
        train: list. The training examples (empty when nothing is trained).
        read: `read(path, labeled)` -> a file's examples; `labeled=False` (the test file): labels where it has them.
        pack: `pack(examples)` -> `(inputs, gold)`: what `predict` takes and the gold labels (None without).
        score: `score(gold, predictions)` -> dict of metrics.
        write_predictions: `write_predictions(name, inputs, predictions)` writes `<name>_predictions.*`.
        monitor: str. The metric of `score` that picks `best/`.
        counts: `counts(train, train_x, train_y)` -> str: what `finetune` prints the training data holds.
        predict: `predict(inputs)` -> the model's predictions, or None: `model.predict`. Defaults to None.
        training_arrays: `training_arrays(examples)` -> `(train_x, train_y)`, or None: `pack`. Defaults to None.
        details: str. Appended to the counts line. Defaults to "".

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    predict = predict or (lambda inputs: model.predict(inputs, batch_size=settings.eval_batch_size, verbose=0))
    tune = []
    if files.tune_fraction:
        held_from = len(train)
        train, tune = split_rows(train, files.tune_fraction, settings.seed)
        print(f"tune fraction {files.tune_fraction}: {len(tune)} of {held_from} training rows held out to pick best/")
    # Dev and test files are read now, so that an unreadable, empty or malformed one stops the run before training.
    dev = pack(read(files.dev_file, True)) if files.dev_file else None
    test = pack(read(files.test_file, False)) if files.test_file else None
    selection = dev if dev is not None else (pack(tune) if tune else None)
    if settings.epochs:
        train_x, train_y = (training_arrays or pack)(train)
        finetune(model, train_x, train_y, settings, tokenizer, counts=counts(train, train_x, train_y), details=details,
                 evaluate=(lambda m: score(selection[1], predict(selection[0]))) if selection else None,
                 monitor=monitor if selection else None, selection_name="dev" if dev else "held-out")
    dev_results = {}
    for name, path, results_file in (("dev", files.dev_file, EVAL_RESULTS_FILENAME),
                                     ("test", files.test_file, "test_results.json")):
        if not path:
            continue
        inputs, gold = dev if name == "dev" else test
        predictions = predict(inputs)
        write_predictions(name, inputs, predictions)
        if gold is not None:
            results = json_ready(score(gold, predictions))
            atomic_write_json(os.path.join(settings.output_dir, results_file), results)
            print(f"{name}:", json.dumps({key: round(value, 4) for key, value in results.items()}))
            dev_results = results if name == "dev" else dev_results
    return dev_results
