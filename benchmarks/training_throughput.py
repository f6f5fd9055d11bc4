"""BERT training and inference throughput: ours on TensorFlow (XLA), JAX (XLA) and torch vs keras-hub and
Hugging Face transformers, with utilisation against the fp32 matmul rate measured in the same run.

Workloads, all on the same random token ids (fixed seed), full-length rows, dropout 0.1 (hidden and attention,
as every default config), Adam at 1e-4, fp32, batch fed as NumPy / torch tensors already in memory:

- `pretraining`: one MLM + NSP training step (seq 128, 20 masked slots per row, vocabulary 30522). Ours:
  `BertPretrainer` (custom step, loss `pretraining_losses`). Hugging Face: `BertForPreTraining`, eager and
  `torch.compile`; it scores the vocabulary at all T positions (more work than gather-before-vocab).
  keras-hub: `BertMaskedLM` (MLM only: keras-hub has no NSP head), compared with `ours-mlm`, our backbone +
  `MaskedLMHead` in a plain `keras.Model` with keras-hub's loss path (sparse CE with `mask_weights` as
  sample weights).
- `classifier`: one training step of a 2-class classifier on the pooled output (`BertClassifier`,
  keras-hub `BertTextClassifier`, HF `BertForSequenceClassification`).
- `inference`: classifier logits (`predict_on_batch`; HF under `torch.inference_mode`).

How it is timed: a process has one Keras backend, so each (implementation, backend) runs in its own worker
subprocess (one set of workers per workload). A worker builds and compiles its model and runs `--warmup`
steps (the XLA / torch.compile compilation), then waits; the parent runs `--repeats` rounds, and in each round
asks every worker in turn (rotating the order) to time whole steps for `--chunk-seconds` (at least one step).
Not all workers fit in memory at once (1-3 GiB each at mini): `WORKERS` lists groups that run one after the
other, interleaved within a group only, each with its own matmul workers. Interleaving spreads the drift of a
shared, noisy machine over all workers; medians over rounds are reported.

The reference for utilisation: in the same rounds, `matmul` workers time the fp32 matmuls of one step at the
model's own shapes (`matmul_shapes`: forward and, for training, both backward products; attention as batched
matmuls), each matmul compiled by the worker's own compiler: `tf.function(jit_compile=True)` (XLA) for
TensorFlow workers, `jax.jit` (XLA) for JAX workers, `torch.matmul` for torch workers (eager, as ours/torch
and HF eager run; HF `torch.compile` is measured against it too). `util` = model FLOPs/s
(`benchmarks/flops.py`: ~6 x matmul parameters x tokens + attention terms, gather-before-vocab MLM
head) / that backend's rate, i.e. against what that backend's matmul kernels do on these shapes, one matmul
at a time. The previous reference, the faster of torch and NumPy (`util t/np`), is still printed: it is not a
ceiling for XLA, whose kernels are faster on these shapes. With `--peak-tflops` (GPUs) `util` is MFU
against the given peak and no matmul worker runs.
Peak memory is each worker's RSS high-water mark (`resource.getrusage`, includes import and compilation).
`seq/CPU-s` divides by the worker's process CPU time (all threads) instead of wall time, and `util/CPU` is
model FLOPs per CPU-second over the matmul mix's FLOPs per CPU-second: both far steadier than wall time on a
shared, loaded machine (a worker waiting for a core is not charged), but they also count threads that spin
while waiting (OpenMP in torch) and say nothing about how well a step keeps both cores busy.

Run:
    python benchmarks/training_throughput.py                                     # mini, 3 workloads
    python benchmarks/training_throughput.py --size base --batch-size 8 --workloads pretraining
    python benchmarks/training_throughput.py --smoke                             # tiny, checks it runs
GPU (bf16, XLA, flash attention, MFU vs the spec peak): `benchmarks/gpu.sh`.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Defaults (visible here, overridable on the command line).
SIZE = "mini"
SEQ_LENGTH = 128
BATCH_SIZES = {"tiny": 32, "mini": 32, "small": 16, "medium": 16, "base": 8, "large": 4}
PREDICTIONS = 20
VOCABULARY_SIZE = 30522
NUM_CLASSES = 2
LEARNING_RATE = 1e-4
REPEATS = 5
CHUNK_SECONDS = 3.0  # each timed chunk runs whole steps until this much time has passed (at least one step)
WARMUP = 2
THREADS = 2
SEED = 0
WORKLOADS = ("pretraining", "classifier", "inference")
# Groups of (implementation, backend) per workload. A group's workers are alive at once and interleaved
# (memory: 1-3 GiB each at mini, so not all of them); groups run one after another, each with the matmul worker
# and, after the first, one peer again as an anchor.
KERAS_PEERS = [("keras-hub", "tensorflow"), ("keras-hub", "jax")]
HF = [("hf", "torch"), ("hf-compile", "torch")]
WORKERS = {
    "pretraining": [
        [("ours", "tensorflow"), ("ours", "jax")] + KERAS_PEERS + HF,
        [("ours-mlm", "tensorflow"), ("ours-mlm", "jax"), ("ours", "torch"), ("keras-hub", "tensorflow")],
    ],
    "classifier": [[("ours", "tensorflow"), ("ours", "jax"), ("ours", "torch")] + KERAS_PEERS + HF],
    "inference": [[("ours", "tensorflow"), ("ours", "jax"), ("ours", "torch")] + KERAS_PEERS + HF],
}
OURS = ("ours", "ours-mlm")
SMOKE = dict(size="tiny", num_layers=2, hidden_dim=64, num_heads=2, intermediate_dim=256, vocabulary_size=1000,
             seq_length=32, batch_size=4, predictions=4, repeats=2, chunk_seconds=0.05, warmup=1)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default=SIZE, help="preset: tiny, mini, small, medium, base, large")
    parser.add_argument("--batch-size", type=int, default=None, help="defaults to 32 for mini, 8 for base")
    parser.add_argument("--seq-length", type=int, default=SEQ_LENGTH)
    parser.add_argument("--predictions", type=int, default=PREDICTIONS, help="masked slots per sequence")
    parser.add_argument("--vocabulary-size", type=int, default=VOCABULARY_SIZE)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--chunk-seconds", type=float, default=CHUNK_SECONDS, help="time per timed chunk")
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--impls", default=None, help="comma list, e.g. ours,keras-hub (default: all)")
    parser.add_argument("--backends", default=None, help="comma list, e.g. jax,tensorflow (default: all)")
    parser.add_argument("--precision", default="float32", choices=("float32", "mixed_bfloat16"))
    parser.add_argument("--attention-dropout", type=float, default=None,
                        help="override (0 sends training attention through keras.ops.dot_product_attention)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="utilisation against this peak instead of the measured matmul rate (GPUs)")
    parser.add_argument("--smoke", action="store_true", help="tiny config, 2 rounds: checks that it runs")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.model = None
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
        args.model = {k: SMOKE[k] for k in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim")}
    if args.model is None:
        from keras_bert_impl.models.presets import PRESETS

        args.model = dict(PRESETS[args.size])
    if args.batch_size is None:
        args.batch_size = BATCH_SIZES.get(args.size, 8)
    return args


def flops_per_sequence(workload, implementation, args, executed=False):
    """Nominal model FLOPs (the same count for every implementation), or with `executed` those ours runs."""
    from flops import bert_flops_per_sequence

    name = {"classifier": "classifier_training", "inference": "inference"}.get(workload, "pretraining")
    if workload == "pretraining" and implementation in ("ours-mlm", "keras-hub"):
        name = "pretraining_mlm"
    m = args.model
    last_block_rows = None
    if executed and implementation == "ours":  # ours-mlm keeps keras-hub's structure: a full last block
        last_block_rows = 1 + args.predictions if workload == "pretraining" else 1
    # "auto": the attention path the layer itself takes for these rows (self_attention.few_queries_are_cheaper).
    return bert_flops_per_sequence(name, m["num_layers"], m["hidden_dim"], m["intermediate_dim"], args.seq_length,
                                   args.vocabulary_size, args.predictions, NUM_CLASSES, last_block_rows,
                                   absorbed_keys_values="auto", num_heads=m["num_heads"])


# -- the batch -------------------------------------------------------------------------------------------------


def random_batch(args):
    """Token ids, segments (half and half), full padding mask, sorted distinct masked positions, labels."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    B, T, P = args.batch_size, args.seq_length, args.predictions
    token_ids = rng.integers(1000 if args.vocabulary_size > 2000 else 5, args.vocabulary_size, (B, T), "int32")
    segment_ids = (np.arange(T)[None, :] >= T // 2).astype("int32").repeat(B, axis=0)
    positions = np.sort(np.stack([rng.choice(np.arange(1, T - 1), P, replace=False) for _ in range(B)]), axis=1)
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": np.ones((B, T), bool),
        "mask_positions": positions.astype("int32"),
        "mask_ids": rng.integers(1000 if args.vocabulary_size > 2000 else 5, args.vocabulary_size, (B, P), "int32"),
        "mask_weights": np.ones((B, P), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (B,), "int32"),
        "class_labels": rng.integers(0, NUM_CLASSES, (B,), "int32"),
    }


# -- workers: each returns a `step()` that runs one step and blocks until its results exist -------------------


def _keras_setup(args):
    import keras

    keras.utils.set_random_seed(SEED)
    if args.precision != "float32":
        keras.mixed_precision.set_global_policy(args.precision)
    jit = keras.backend.backend() in ("tensorflow", "jax")
    return keras, jit


def _attention_dropout(args):
    return 0.1 if args.attention_dropout is None else args.attention_dropout


def keras_step(implementation, workload, args, batch):
    keras, jit = _keras_setup(args)
    m = args.model
    x = {key: batch[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    if implementation == "keras-hub":
        import keras_hub

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=args.vocabulary_size, num_layers=m["num_layers"], num_heads=m["num_heads"],
            hidden_dim=m["hidden_dim"], intermediate_dim=m["intermediate_dim"], dropout=0.1,
            max_sequence_length=512,
        )
        if workload == "pretraining":
            model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        else:
            model = keras_hub.models.BertTextClassifier(backbone, NUM_CLASSES, preprocessor=None)
    else:
        from keras_bert_impl.layers.pretraining_heads import MaskedLMHead
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.models.classifier import BertClassifier
        from keras_bert_impl.models.pretrainer import BertPretrainer

        backbone = BertBackbone(vocabulary_size=args.vocabulary_size, attention_dropout=_attention_dropout(args),
                                **m)
        if workload != "pretraining":
            model = BertClassifier(backbone, NUM_CLASSES)
        elif implementation == "ours":
            model = BertPretrainer(backbone)
        else:  # ours-mlm: keras-hub's structure and loss path, our layers
            mask_positions = keras.Input((None,), dtype="int32", name="mask_positions")
            head = MaskedLMHead(backbone.token_embedding, hidden_activation=backbone.hidden_activation,
                                dtype=backbone.dtype_policy, name="masked_lm_head")
            logits = head(backbone(dict(backbone.input))["sequence_output"], mask_positions)
            model = keras.Model({**backbone.input, "mask_positions": mask_positions}, logits)
            model.compile(optimizer=keras.optimizers.Adam(LEARNING_RATE),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()], jit_compile=jit)
    if implementation == "keras-hub":
        # keras-hub tasks compile themselves in the constructor (Adam 5e-5, and no XLA on TensorFlow): compile
        # again with our settings, keeping their default loss and metrics.
        model.compile(optimizer=keras.optimizers.Adam(LEARNING_RATE), jit_compile=jit)
    elif not model.compiled:
        model.compile(optimizer=keras.optimizers.Adam(LEARNING_RATE), jit_compile=jit)

    if workload == "inference":
        return lambda: model.predict_on_batch(x)
    if workload == "classifier":
        return lambda: model.train_on_batch(x, batch["class_labels"])
    x["mask_positions"] = batch["mask_positions"]
    if implementation == "ours":
        y = {key: batch[key] for key in ("mask_ids", "mask_weights", "next_sentence_labels")}
        return lambda: model.train_on_batch(x, y)
    return lambda: model.train_on_batch(x, batch["mask_ids"], sample_weight=batch["mask_weights"])


def huggingface_step(implementation, workload, args, batch):
    import torch
    import transformers

    torch.manual_seed(SEED)
    m = args.model
    config = transformers.BertConfig(
        vocab_size=args.vocabulary_size, hidden_size=m["hidden_dim"], num_hidden_layers=m["num_layers"],
        num_attention_heads=m["num_heads"], intermediate_size=m["intermediate_dim"], hidden_act="gelu_new",
        attention_probs_dropout_prob=_attention_dropout(args), num_labels=NUM_CLASSES,
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    inputs = {
        "input_ids": torch.as_tensor(batch["token_ids"], dtype=torch.long),
        "token_type_ids": torch.as_tensor(batch["segment_ids"], dtype=torch.long),
        "attention_mask": torch.as_tensor(batch["padding_mask"], dtype=torch.long),
    }
    if workload == "pretraining":
        model = transformers.BertForPreTraining(config)
        labels = torch.full(batch["token_ids"].shape, -100, dtype=torch.long)
        labels.scatter_(1, torch.as_tensor(batch["mask_positions"], dtype=torch.long),
                        torch.as_tensor(batch["mask_ids"], dtype=torch.long))
        inputs["labels"] = labels
        inputs["next_sentence_label"] = torch.as_tensor(batch["next_sentence_labels"], dtype=torch.long)
    else:
        model = transformers.BertForSequenceClassification(config)
        if workload == "classifier":
            inputs["labels"] = torch.as_tensor(batch["class_labels"], dtype=torch.long)
    model.to(device)
    inputs = {key: value.to(device) for key, value in inputs.items()}
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=args.precision != "float32")
    forward = torch.compile(model) if implementation == "hf-compile" else model

    if workload == "inference":
        model.eval()

        def step():
            with torch.inference_mode(), autocast:
                return forward(**inputs).logits.float().cpu()

        return step
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)

    def step():
        with autocast:
            loss = forward(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def matmul_shapes(workload, args):
    """`(batch, m, k, n, times)` of the fp32 matmuls in one step at the model's shapes, forward and backward."""
    m = args.model
    B, T, P = args.batch_size, args.seq_length, args.predictions
    H, I, N, L = m["hidden_dim"], m["intermediate_dim"], m["num_heads"], m["num_layers"]
    D, BT = H // N, B * T
    training = workload != "inference"

    def dense(rows, k, n, times):  # Y = X W, then dX = dY W^T and dW = X^T dY
        shapes = [(1, rows, k, n, times)]
        return shapes + ([(1, rows, n, k, times), (1, k, rows, n, times)] if training else [])

    shapes = dense(BT, H, 3 * H, L) + dense(BT, H, H, L) + dense(BT, H, I, L) + dense(BT, I, H, L)
    shapes += [(B * N, T, D, T, L), (B * N, T, T, D, L)]  # scores Q K^T, context P V
    if training:  # dQ, dK from the scores; dP, dV from the context
        shapes += [(B * N, T, T, D, 2 * L), (B * N, T, D, T, L), (B * N, T, T, D, L)]
    if workload == "pretraining":
        shapes += dense(B * P, H, H, 1) + dense(B * P, H, args.vocabulary_size, 1)
    return shapes


def _matmul_operands(workload, args):
    import numpy as np

    shapes = matmul_shapes(workload, args)
    rng = np.random.default_rng(SEED)
    arrays = [(rng.standard_normal((b, m, k) if b > 1 else (m, k), "float32"),
               rng.standard_normal((b, k, n) if b > 1 else (k, n), "float32")) for b, m, k, n, _ in shapes]
    flops = sum(2 * b * m * k * n * times for b, m, k, n, times in shapes)
    return shapes, arrays, flops


def compiled_matmul_mix(backend, workload, args):
    """`(run_mix, flops)`: `run_mix()` runs one step's matmul mix, each matmul compiled by `backend`'s XLA.

    One compiled function per shape (`tf.function(jit_compile=True)` / `jax.jit`), called `times` times in
    turn and waited for each time, so each matmul runs alone as in a step's kernel, not fused or overlapped
    with the others (and a repeated product cannot be deduplicated by the compiler).
    """
    shapes, arrays, flops = _matmul_operands(workload, args)
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        matmul = jax.jit(jnp.matmul)
        operands = [(jnp.asarray(a), jnp.asarray(b)) for a, b in arrays]
        calls = [(lambda a=a, b=b: matmul(a, b).block_until_ready(), times)
                 for (a, b), (*_, times) in zip(operands, shapes)]
    elif backend == "tensorflow":
        import tensorflow as tf

        calls = []
        for (a, b), (*_, times) in zip(arrays, shapes):
            a, b = tf.constant(a), tf.constant(b)
            matmul = tf.function(tf.linalg.matmul, jit_compile=True)  # one per shape: no retracing
            calls.append((lambda matmul=matmul, a=a, b=b: matmul(a, b), times))  # synchronous in eager TF
    else:
        raise ValueError(f"no compiled matmul mix for {backend!r}")

    def run_mix():
        for call, times in calls:
            for _ in range(times):
                call()

    return run_mix, flops


def compiled_matmul_rates(run_mix, flops, seconds):
    """GFLOP/s (and GFLOP per CPU-second) of whole matmul mixes run for `seconds` (at least one)."""
    begin, cpu_begin, mixes = time.perf_counter(), time.process_time(), 0
    while mixes == 0 or time.perf_counter() - begin < seconds:
        run_mix()
        mixes += 1
    return {"gflops": flops * mixes / (time.perf_counter() - begin) / 1e9,
            "gflops_per_cpu_second": flops * mixes / (time.process_time() - cpu_begin) / 1e9}


def matmul_rates(workload, args, seconds):
    """GFLOP/s of one step's matmul mix with torch and NumPy, each run whole mixes for `seconds` / 2."""
    import numpy as np
    import torch

    shapes, arrays, flops = _matmul_operands(workload, args)
    rates = {}
    for name, matmul, operands in (
        ("torch", torch.matmul, [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in arrays]),
        ("numpy", np.matmul, arrays),
    ):
        begin, cpu_begin, mixes = time.perf_counter(), time.process_time(), 0
        while mixes == 0 or time.perf_counter() - begin < seconds / 2:
            for (a, b), (_, _, _, _, times) in zip(operands, shapes):
                for _ in range(times):
                    matmul(a, b)
            mixes += 1
        rates[f"{name}_gflops"] = flops * mixes / (time.perf_counter() - begin) / 1e9
        rates[f"{name}_gflops_per_cpu_second"] = flops * mixes / (time.process_time() - cpu_begin) / 1e9
    return rates


def worker_main(args):
    """Build, warm up, then answer `time N` / `quit` on stdin with one JSON line each on stdout."""
    implementation, backend, workload = args.worker.split(":")
    # Thread pools are fixed before the libraries start them.
    if backend in ("torch", "torch+numpy") or implementation.startswith("hf"):
        import torch

        torch.set_num_threads(args.threads)
    if backend == "tensorflow" or implementation in ("keras-hub",):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    protocol = sys.stdout
    sys.stdout = sys.stderr  # library prints stay off the protocol channel
    start = time.perf_counter()
    if implementation == "matmul" and backend in ("tensorflow", "jax"):
        run_mix, mix_flops = compiled_matmul_mix(backend, workload, args)
        for _ in range(args.warmup):
            run_mix()  # compiles every shape

        def timed(seconds):
            return compiled_matmul_rates(run_mix, mix_flops, seconds)
    elif implementation == "matmul":
        matmul_rates(workload, args, 0)

        def timed(seconds):
            return matmul_rates(workload, args, seconds)
    else:
        batch = random_batch(args)
        builder = huggingface_step if implementation.startswith("hf") else keras_step
        step = builder(implementation, workload, args, batch)
        for _ in range(args.warmup):
            step()

        def timed(seconds):
            begin, cpu_begin, steps = time.perf_counter(), time.process_time(), 0
            while steps == 0 or time.perf_counter() - begin < seconds:
                step()
                steps += 1
            return {"seconds": time.perf_counter() - begin, "cpu_seconds": time.process_time() - cpu_begin,
                    "steps": steps}

    def answer(payload):
        payload["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        protocol.write("@@" + json.dumps(payload) + "\n")
        protocol.flush()

    answer({"ready": True, "setup_seconds": time.perf_counter() - start})
    for line in sys.stdin:
        command = line.split()
        if command[0] == "quit":
            answer({"bye": True})
            return
        answer(timed(float(command[1])))


# -- the parent ------------------------------------------------------------------------------------------------


class Worker:
    def __init__(self, implementation, backend, workload, argv, log_dir):
        self.implementation, self.backend, self.workload = implementation, backend, workload
        self.name = f"{implementation}/{backend}"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1",
                   KERAS_BACKEND=backend if backend in ("tensorflow", "jax", "torch") else "torch")
        self.log_path = os.path.join(log_dir, f"{workload}-{implementation}-{backend}.log".replace("+", "_"))
        self.log = open(self.log_path, "w")
        command = [sys.executable, os.path.abspath(__file__), *argv,
                   "--worker", f"{implementation}:{backend}:{workload}"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        text=True, env=env)
        self.results, self.peak_rss_mib, self.error = [], None, None
        self.setup_seconds = self._read().get("setup_seconds")

    def _read(self):
        if self.error:
            return {}
        for line in self.process.stdout:
            if line.startswith("@@"):
                payload = json.loads(line[2:])
                self.peak_rss_mib = payload.pop("peak_rss_mib")
                return payload
        self.log.flush()
        with open(self.log_path) as handle:
            tail = handle.read()[-1500:]
        self.error = f"worker exited ({self.process.wait()}); log tail:\n{tail}"
        print(f"  {self.name}: FAILED, {self.error}", flush=True)
        return {}

    def time(self, seconds):
        if self.error:
            return
        self.process.stdin.write(f"time {seconds}\n")
        self.process.stdin.flush()
        result = self._read()
        if result:
            self.results.append(result)

    def close(self):
        if not self.error:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            self._read()
        self.process.wait()
        self.log.close()


def selected_workers(workload, args):
    impls = set(args.impls.split(",")) if args.impls else None
    backends = set(args.backends.split(",")) if args.backends else None
    groups = [[(i, b) for i, b in group if (impls is None or i in impls) and (backends is None or b in backends)]
              for group in WORKERS[workload]]
    return [group for group in groups if group]


def forwarded_argv(args):
    argv = ["--size", args.size, "--batch-size", str(args.batch_size), "--seq-length", str(args.seq_length),
            "--predictions", str(args.predictions), "--vocabulary-size", str(args.vocabulary_size),
            "--warmup", str(args.warmup), "--threads", str(args.threads), "--precision", args.precision]
    if args.attention_dropout is not None:
        argv += ["--attention-dropout", str(args.attention_dropout)]
    return argv + (["--smoke"] if args.smoke else [])


def run_group(group, workload, args, log_dir, group_index):
    """Start the group's workers one at a time, then interleave `--repeats` rounds over them."""
    specs = list(group)
    if args.peak_tflops is None:  # the references: one XLA matmul worker per XLA backend, and torch / NumPy
        specs += [("matmul", backend) for backend in ("tensorflow", "jax") if any(b == backend for _, b in group)]
        specs += [("matmul", "torch+numpy")]
    workers = []
    for implementation, backend in specs:
        worker = Worker(implementation, backend, workload, forwarded_argv(args), log_dir)
        worker.group = group_index
        if not worker.error:
            print(f"  ready: {worker.name} (setup + {args.warmup} warmup steps {worker.setup_seconds:.0f} s, "
                  f"RSS {worker.peak_rss_mib:.0f} MiB)", flush=True)
        workers.append(worker)
    for repeat in range(args.repeats):
        order = workers[repeat % len(workers):] + workers[: repeat % len(workers)]
        for worker in order:
            worker.time(args.chunk_seconds)
        done = [w for w in workers if w.results and w.implementation != "matmul"]
        print(f"  round {repeat + 1}: " + ", ".join(
            f"{w.name} {sequences_per_second(w.results[-1], args):.1f}" for w in done) + " seq/s", flush=True)
    for worker in workers:
        worker.close()
    return workers


def run_workload(workload, args, log_dir):
    print(f"\n== {workload}: {args.size} {args.model}, vocab {args.vocabulary_size}, seq {args.seq_length}, "
          f"batch {args.batch_size}" + (f", {args.predictions} predictions" if workload == "pretraining" else "")
          + f", {args.precision}", flush=True)
    groups = selected_workers(workload, args)
    workers = []
    for index, group in enumerate(groups):
        if len(groups) > 1:
            print(f" group {index + 1} of {len(groups)} (groups are not interleaved with each other)", flush=True)
        workers += run_group(group, workload, args, log_dir, index)
    return workers


def sequences_per_second(result, args):
    return result["steps"] * args.batch_size / result["seconds"]


def reference_backend(worker):
    """Whose compiled matmuls are `worker`'s reference: its own backend's (torch for HF and ours/torch)."""
    return worker.backend if worker.backend in ("tensorflow", "jax") else "torch"


def report(workload, workers, args):
    # (group, reference backend) -> reference FLOP/s and FLOP per CPU-second; "t/np": the faster of torch, NumPy.
    rates, cpu_rates = {}, {}
    for worker in workers:
        if worker.implementation != "matmul" or not worker.results:
            continue
        medians = {key: statistics.median(r[key] for r in worker.results) for key in worker.results[0]}
        if worker.backend in ("tensorflow", "jax"):
            rates[(worker.group, worker.backend)] = medians["gflops"] * 1e9
            cpu_rates[(worker.group, worker.backend)] = medians["gflops_per_cpu_second"] * 1e9
            print(f"  fp32 matmul at this step's shapes, {worker.backend} XLA (median, group {worker.group + 1}): "
                  f"{medians['gflops']:.1f} GFLOP/s ({medians['gflops_per_cpu_second']:.1f} per CPU-s)")
            continue
        rates[(worker.group, "torch")] = medians["torch_gflops"] * 1e9
        cpu_rates[(worker.group, "torch")] = medians["torch_gflops_per_cpu_second"] * 1e9
        rates[(worker.group, "t/np")] = max(medians["torch_gflops"], medians["numpy_gflops"]) * 1e9
        cpu_rates[(worker.group, "t/np")] = max(medians["torch_gflops_per_cpu_second"],
                                                medians["numpy_gflops_per_cpu_second"]) * 1e9
        print(f"  fp32 matmul at this step's shapes (median, group {worker.group + 1}): torch "
              f"{medians['torch_gflops']:.1f} GFLOP/s ({medians['torch_gflops_per_cpu_second']:.1f} per "
              f"CPU-s), NumPy {medians['numpy_gflops']:.1f} GFLOP/s "
              f"({medians['numpy_gflops_per_cpu_second']:.1f} per CPU-s)")
    if args.peak_tflops is not None:
        print(f"  utilisation against the given peak {args.peak_tflops:g} TFLOP/s (MFU)")
    rows = []
    for worker in workers:
        if worker.implementation == "matmul" or not worker.results:
            continue
        per_round = [sequences_per_second(r, args) for r in worker.results]
        per_cpu = statistics.median(r["steps"] * args.batch_size / r["cpu_seconds"] for r in worker.results)
        rows.append((worker, per_round, statistics.median(per_round), per_cpu))
    peers = [row for row in rows if row[0].implementation not in OURS]
    best_peer = max(peers, key=lambda row: row[2]) if peers else None
    print("  util: against the worker's own backend's compiled matmuls (XLA for TF / JAX, torch for torch); "
          "util t/np: against the faster of torch / NumPy (the old reference)" if not args.peak_tflops else "")
    print(f"  {'implementation':<22}{'grp':>4}{'seq/s':>8}{'range':>12}{'vs best peer':>13}{'GFLOP/s':>9}"
          f"{'util':>6}{'seq/CPU-s':>10}{'util/CPU':>9}{'util t/np':>10}{'peak RSS':>10}{'setup':>7}")

    def percent(numerator, denominator):
        return f"{100 * numerator / denominator:.{0 if numerator > denominator / 10 else 1}f}%" if denominator else "-"

    for worker, per_round, median, per_cpu in rows:
        flops_per_seq = flops_per_sequence(workload, worker.implementation, args)
        flops = flops_per_seq * median
        ratio = f"{median / best_peer[2]:.2f}x" if best_peer else "-"
        key = (worker.group, reference_backend(worker))
        rate = args.peak_tflops * 1e12 if args.peak_tflops else rates.get(key)
        cpu_rate = None if args.peak_tflops else cpu_rates.get(key)
        legacy_rate = None if args.peak_tflops else rates.get((worker.group, "t/np"))
        print(f"  {worker.name:<22}{worker.group + 1:>4}{median:>8.2f}"
              f"{f'{min(per_round):.1f}-{max(per_round):.1f}':>12}{ratio:>13}{flops / 1e9:>9.1f}"
              f"{percent(flops, rate):>6}{per_cpu:>10.2f}{percent(flops_per_seq * per_cpu, cpu_rate):>9}"
              f"{percent(flops, legacy_rate):>10}{worker.peak_rss_mib:>8.0f}Mi{worker.setup_seconds:>6.0f}s")
    if any(row[0].implementation == "ours" for row in rows):
        nominal, executed = (flops_per_sequence(workload, "ours", args, executed=e) for e in (False, True))
        print(f"  GFLOP/s and util count nominal FLOPs ({nominal / 1e9:.3f} GFLOP per sequence); ours executes "
              f"{100 * executed / nominal:.0f}% of them: its last block computes only the rows the heads "
              "read (flops.py, last_block_rows)")
    for worker, per_round, median, per_cpu in rows:
        # Against the fastest peer timed in the same rounds (same group): the load moves between groups.
        same_group = [row for row in peers if row[0].group == worker.group]
        peer = max(same_group, key=lambda row: row[2]) if same_group else best_peer
        if worker.implementation in OURS and peer:
            line = (f"  {worker.name} / {peer[0].name} (group {peer[0].group + 1}): ratio of medians "
                    f"{median / peer[2]:.2f}x")
            if worker.group == peer[0].group:
                paired = [a / b for a, b in zip(per_round, peer[1])]
                line += f", median per-round ratio {statistics.median(paired):.2f}x"
            print(line + f"; per CPU-second {per_cpu / peer[3]:.2f}x")
    for worker in workers:
        if worker.error:
            print(f"  {worker.name}: failed (see {worker.log_path})")


def main():
    args = parse_args()
    if args.worker:
        return worker_main(args)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; threads {args.threads}; repeats {args.repeats} x "
          f"{args.chunk_seconds:g} s chunks after {args.warmup} warmup steps")
    log_dir = tempfile.mkdtemp(prefix="training_throughput_")
    failed = []
    for workload in args.workloads.split(","):
        workers = run_workload(workload, args, log_dir)
        report(workload, workers, args)
        failed += [f"{workload} {worker.name}" for worker in workers if worker.error]
    print(f"\nworker logs: {log_dir}; load average at the end "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if failed:  # the report above is complete for the others; the exit status says that some are missing
        sys.exit(f"{len(failed)} worker(s) failed: {', '.join(failed)} (logs in {log_dir})")


if __name__ == "__main__":
    main()
