"""BERT-base on one GPU, as MFU: ours (JAX + XLA; torch eager and `torch.compile`) vs keras-hub (JAX + XLA) and
Hugging Face transformers (torch eager and `torch.compile`), in one run.

Workloads (random token ids, fixed seed, full-length rows, bf16 mixed precision with float32 master weights,
AdamW 1e-4, hidden dropout 0.1, attention dropout 0 so training attention can take the fused kernel):

- `pretrain128`: one MLM + NSP training step, seq 128, 20 masked slots per row, batch 256. Ours: `BertPretrainer`
  trained by Keras' own `fit`. keras-hub: `BertMaskedLM` (MLM only: keras-hub has no NSP head). Hugging Face:
  `BertForPreTraining` (SDPA attention, bf16 autocast, fused AdamW; it scores the vocabulary at all T positions).
- `pretrain512`: the same at seq 512, 80 masked slots, batch 64.
- `inference128`: classifier logits, seq 128, batch 256 (`BertClassifier.predict`, keras-hub
  `BertTextClassifier.predict`, `BertForSequenceClassification` under `torch.inference_mode`).

How it is timed: each (implementation, backend, workload) runs in its own subprocess (one Keras backend per
process, a clean device-memory high-water mark per job), one after another in priority order under a global time
budget (a job that would not fit is reported as skipped). A job builds and compiles its model, runs `--warmup`
calls (the XLA / torch.compile compilation), then `--repeats` timed chunks of whole steps (each chunk at least
`--chunk-seconds`; Keras `fit` / `predict` over that many batches, which blocks on its results at the end; torch
loops end with `torch.cuda.synchronize()`), and reports the median chunk. Model FLOPs are the nominal count of
`benchmarks/flops.py` (gather-before-vocab MLM head, the same count for every implementation), so MFU
compares work done per second. MFU is given against the bf16 matmul rate measured in the same run (an
8192 x 8192 x 8192 product in torch) and against the spec peak `--peak-tflops` (989, H100/H200 SXM dense bf16).
Peak memory is the device allocator's high-water mark (JAX `memory_stats()["peak_bytes_in_use"]`,
`torch.cuda.max_memory_allocated()`).

The attention check (`attention` job, JAX): the compiled HLO of `keras.ops.dot_product_attention` (with no mask,
our `(B, 1, 1, T)` key mask and that mask broadcast to `(B, N, T, T)`) and of our backbone's forward and
training step is searched for cuDNN's fused-attention custom call, and the three mask forms are timed (forward
+ backward), so the report says which kernel our padding mask gets. The torch jobs record the SDPA kernels the
profiler saw.

Run (writes results.json, results.md and a log to --out, printing as it goes):
    python benchmarks/gpu_benchmark.py --out /tmp/gpu            # via benchmarks/gpu.sh on the device machine
    python benchmarks/gpu_benchmark.py --smoke --out /tmp/gpu     # tiny config on CPU: checks it end to end
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SEED = 0
LEARNING_RATE = 1e-4
NUM_CLASSES = 2
VOCABULARY_SIZE = 30522
BASE = dict(num_layers=12, hidden_dim=768, num_heads=12, intermediate_dim=3072)
PEAK_TFLOPS = 989.0  # H100 / H200 SXM dense bf16 (datasheet)
# workload -> (flops workload, sequence length, masked slots, batch size)
WORKLOADS = {
    "pretrain128": ("pretraining", 128, 20, 256),
    "pretrain512": ("pretraining", 512, 80, 64),
    "inference128": ("inference", 128, 20, 256),
}
# Jobs in priority order: (implementation, backend, workload). The budget drops the tail first.
JOBS = [
    ("matmul", "torch", None),
    ("ours", "jax", "pretrain128"),
    ("keras-hub", "jax", "pretrain128"),
    ("hf", "torch", "pretrain128"),
    ("attention", "jax", None),
    ("ours", "jax", "inference128"),
    ("ours", "jax", "pretrain512"),
    ("hf-compile", "torch", "pretrain128"),
    ("ours", "torch", "pretrain128"),
    ("hf", "torch", "inference128"),
    ("keras-hub", "jax", "inference128"),
    ("hf", "torch", "pretrain512"),
    ("keras-hub", "jax", "pretrain512"),
    ("ours-compile", "torch", "pretrain128"),
    # Where the time goes (A/B of ours-jax-pretrain128): the step without hidden dropout (its random bits).
    ("ours-dropout0", "jax", "pretrain128"),
]
# Seconds a job is expected to need at most (import, compile, timing): one is started only if it fits.
JOB_SECONDS = {"matmul": 25, "attention": 45, "jax": 75, "torch": 50, "compile": 110}
SMOKE = dict(model=dict(num_layers=2, hidden_dim=64, num_heads=2, intermediate_dim=128), vocabulary_size=1000,
             workloads={"pretrain128": ("pretraining", 32, 4, 4), "pretrain512": ("pretraining", 64, 8, 2),
                        "inference128": ("inference", 32, 4, 4)},
             matmul_size=256, repeats=2, warmup=1, chunk_seconds=0.05)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for results.json, results.md and gpu_benchmark.log")
    parser.add_argument("--budget-seconds", type=float, default=420.0, help="start no job after this")
    parser.add_argument("--job-timeout", type=float, default=240.0, help="kill a job after this many seconds")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--chunk-seconds", type=float, default=2.0)
    parser.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS)
    parser.add_argument("--only", default=None, help="comma list of job names (e.g. ours-jax-pretrain128)")
    parser.add_argument("--smoke", action="store_true", help="tiny config on any device: checks it end to end")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.model, args.vocabulary_size, args.workloads, args.matmul_size = BASE, VOCABULARY_SIZE, WORKLOADS, 8192
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    return args


def job_name(implementation, backend, workload):
    return "-".join(part for part in (implementation, backend, workload) if part)


# -- inputs and FLOPs -------------------------------------------------------------------------------------------


def random_batches(args, workload, num_batches):
    """`num_batches` batches of token ids, segments, a full padding mask, sorted distinct masked positions and
    targets, as NumPy arrays of `num_batches * B` rows."""
    import numpy as np

    _, T, P, B = args.workloads[workload]
    rows = B * num_batches
    rng = np.random.default_rng(SEED)
    low = 1000 if args.vocabulary_size > 2000 else 5
    positions = np.sort(rng.random((rows, T - 2)).argsort(axis=1)[:, :P] + 1, axis=1)
    return {
        "token_ids": rng.integers(low, args.vocabulary_size, (rows, T)).astype("int32"),
        "segment_ids": np.repeat((np.arange(T)[None, :] >= T // 2).astype("int32"), rows, axis=0),
        "padding_mask": np.ones((rows, T), bool),
        "mask_positions": positions.astype("int32"),
        "mask_ids": rng.integers(low, args.vocabulary_size, (rows, P)).astype("int32"),
        "mask_weights": np.ones((rows, P), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (rows,)).astype("int32"),
        "class_labels": rng.integers(0, NUM_CLASSES, (rows,)).astype("int32"),
    }


def flops_per_sequence(args, workload, implementation):
    from flops import bert_flops_per_sequence

    kind, T, P, _ = args.workloads[workload]
    if implementation == "keras-hub" and kind == "pretraining":
        kind = "pretraining_mlm"  # keras-hub has no NSP head
    m = args.model
    return bert_flops_per_sequence(kind, m["num_layers"], m["hidden_dim"], m["intermediate_dim"], T,
                                   vocabulary_size=args.vocabulary_size, num_predictions=P, num_classes=NUM_CLASSES)


def timed_chunks(run, steps_per_chunk, args):
    """Median seconds per step over `args.repeats` chunks; `run(n)` runs n steps and blocks on the results."""
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        run(steps_per_chunk)
        seconds.append((time.perf_counter() - start) / steps_per_chunk)
    return statistics.median(seconds), seconds


def steps_for(run, args):
    """Warm up (compile), then the steps per chunk that take about `--chunk-seconds`."""
    for _ in range(args.warmup):
        run(1)
    start = time.perf_counter()
    run(2)
    per_step = (time.perf_counter() - start) / 2
    return max(2, min(200, round(args.chunk_seconds / max(per_step, 1e-6))))


# -- workers ------------------------------------------------------------------------------------------------------


def keras_job(implementation, workload, args):
    import keras

    keras.utils.set_random_seed(SEED)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    backend = keras.backend.backend()
    jit = backend == "jax" or implementation == "ours-compile"  # torch: jit_compile=True is torch.compile
    kind, T, P, B = args.workloads[workload]
    m = args.model
    if implementation == "keras-hub":
        import keras_hub

        backbone = keras_hub.models.BertBackbone(vocabulary_size=args.vocabulary_size, dropout=0.1,
                                                 max_sequence_length=512, **m)
        if kind == "pretraining":
            model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        else:
            model = keras_hub.models.BertTextClassifier(backbone, NUM_CLASSES, preprocessor=None)
        # keras-hub tasks compile themselves (Adam 5e-5): compile again with the shared settings, their loss.
        model.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE), jit_compile=jit)
    else:
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.models.classifier import BertClassifier
        from keras_bert_impl.models.pretrainer import BertPretrainer

        dropout = 0.0 if implementation == "ours-dropout0" else 0.1
        backbone = BertBackbone(vocabulary_size=args.vocabulary_size, dropout=dropout, attention_dropout=0.0, **m)
        model = BertPretrainer(backbone) if kind == "pretraining" else BertClassifier(backbone, NUM_CLASSES)
        model.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE), jit_compile=jit)

    batches = 4 if args.smoke else 8
    data = random_batches(args, workload, batches)
    x = {key: data[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    if kind == "pretraining":
        x["mask_positions"] = data["mask_positions"]
        if implementation == "keras-hub":
            y, sample_weight = data["mask_ids"], data["mask_weights"]
        else:
            y, sample_weight = {k: data[k] for k in ("mask_ids", "mask_weights", "next_sentence_labels")}, None

    # keras-hub tasks wrap `fit` / `predict` in a data pipeline that needs tf.data or grain even without a
    # preprocessor; keras.Model's own loops run the same compiled step.
    fit, predict = keras.Model.fit, keras.Model.predict

    def run(steps):
        # Keras' own loop over `steps` batches (the in-memory rows, repeated): blocks on the final logs.
        reps = -(-steps // batches)
        take = lambda tree: keras.tree.map_structure(lambda a: a.repeat(reps, axis=0)[: steps * B], tree)
        if kind == "pretraining":
            fit(model, take(x), take(y), sample_weight=None if sample_weight is None else take(sample_weight),
                batch_size=B, epochs=1, shuffle=False, verbose=0)
        else:
            predict(model, take(x), batch_size=B, verbose=0)

    steps = steps_for(run, args)
    seconds, chunks = timed_chunks(run, steps, args)
    result = {"seconds_per_step": seconds, "chunks": chunks, "steps_per_chunk": steps,
              "peak_memory_gib": _peak_memory_gib(backend)}
    if backend == "torch":
        result["attention_kernels"] = _torch_attention_kernels(lambda: run(1))
    return result


def huggingface_job(implementation, workload, args):
    import torch
    import transformers

    torch.manual_seed(SEED)
    kind, T, P, B = args.workloads[workload]
    m = args.model
    config = transformers.BertConfig(
        vocab_size=args.vocabulary_size, hidden_size=m["hidden_dim"], num_hidden_layers=m["num_layers"],
        num_attention_heads=m["num_heads"], intermediate_size=m["intermediate_dim"], hidden_act="gelu_new",
        attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.1, num_labels=NUM_CLASSES,
        attn_implementation="sdpa",
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = random_batches(args, workload, 1)
    inputs = {
        "input_ids": torch.as_tensor(data["token_ids"], dtype=torch.long),
        "token_type_ids": torch.as_tensor(data["segment_ids"], dtype=torch.long),
        "attention_mask": torch.as_tensor(data["padding_mask"], dtype=torch.long),
    }
    model_class = (transformers.BertForPreTraining if kind == "pretraining"
                   else transformers.BertForSequenceClassification)
    model = model_class(config)
    if kind == "pretraining":
        labels = torch.full(data["token_ids"].shape, -100, dtype=torch.long)
        labels.scatter_(1, torch.as_tensor(data["mask_positions"], dtype=torch.long),
                        torch.as_tensor(data["mask_ids"], dtype=torch.long))
        inputs["labels"] = labels
        inputs["next_sentence_label"] = torch.as_tensor(data["next_sentence_labels"], dtype=torch.long)
    model.to(device)
    inputs = {key: value.to(device) for key, value in inputs.items()}
    forward = torch.compile(model) if implementation == "hf-compile" else model
    autocast = torch.autocast(device, dtype=torch.bfloat16)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    if kind == "inference":
        model.eval()

        def step():
            with torch.inference_mode(), autocast:
                return forward(**inputs).logits
    else:
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, fused=device == "cuda")

        def step():
            with autocast:
                loss = forward(**inputs).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    def run(steps):
        for _ in range(steps):
            step()
        sync()

    steps = steps_for(run, args)
    seconds, chunks = timed_chunks(run, steps, args)
    return {"seconds_per_step": seconds, "chunks": chunks, "steps_per_chunk": steps,
            "peak_memory_gib": _peak_memory_gib("torch"), "attention_kernels": _torch_attention_kernels(step)}


def matmul_job(args):
    """TFLOP/s of a large bf16 matmul (torch; and JAX when installed): the measured ceiling for MFU."""
    import torch

    n = args.matmul_size
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def run(steps):
        for _ in range(steps):
            torch.matmul(a, b)
        sync()

    steps = steps_for(run, args)
    seconds, chunks = timed_chunks(run, steps, args)
    return {"tflops": 2 * n**3 / seconds / 1e12, "seconds_per_step": seconds, "chunks": chunks,
            "device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}


def attention_job(args):
    """Which kernel `keras.ops.dot_product_attention` takes on JAX with our padding mask, and what it costs."""
    import jax
    import keras
    import numpy as np
    from keras import ops

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    _, T, _, B = args.workloads["pretrain512"]
    N, H = args.model["num_heads"], args.model["hidden_dim"]
    D = H // N
    rng = np.random.default_rng(SEED)
    q, k, v = (jax.numpy.asarray(rng.standard_normal((B, T, N, D)), "bfloat16") for _ in range(3))
    key_mask = jax.numpy.ones((B, 1, 1, T), bool)
    masks = {"none": None, "key mask (B,1,1,T)": key_mask,
             "broadcast mask (B,N,T,T)": jax.numpy.broadcast_to(key_mask, (B, N, T, T))}

    def fused(compiled_text):
        return "fmha" in compiled_text.lower()

    def custom_calls(compiled_text):
        return sorted(set(re.findall(r'custom_call_target="([^"]+)"', compiled_text)))

    result = {}
    for name, mask in masks.items():
        def loss(q, k, v, mask=mask):
            out = ops.dot_product_attention(q, k, v, mask=mask, scale=1.0 / D**0.5)
            return out.astype("float32").sum()

        step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
        text = step.lower(q, k, v).compile().as_text()

        def run(steps):
            for _ in range(steps):
                out = step(q, k, v)
            jax.block_until_ready(out)

        seconds, _ = timed_chunks(run, steps_for(run, args), args)
        result[name] = {"fused_kernel": fused(text), "ms_forward_backward": 1e3 * seconds,
                        "custom_calls": custom_calls(text)}
        print(f"  attention {name}: fused={result[name]['fused_kernel']} {1e3 * seconds:.3f} ms", flush=True)

    from keras_bert_impl.models.backbone import BertBackbone

    backbone = BertBackbone(vocabulary_size=args.vocabulary_size, attention_dropout=0.0, **args.model)
    x = {"token_ids": np.ones((B, T), "int32"), "segment_ids": np.zeros((B, T), "int32"),
         "padding_mask": np.ones((B, T), bool)}
    trainable = [variable.value for variable in backbone.trainable_variables]
    non_trainable = [variable.value for variable in backbone.non_trainable_variables]

    def forward(trainable, non_trainable, x, training):
        outputs, _ = backbone.stateless_call(trainable, non_trainable, x, training=training)
        return outputs["sequence_output"].astype("float32").sum()

    inference = jax.jit(forward, static_argnums=3).lower(trainable, non_trainable, x, False).compile()
    training = jax.jit(jax.grad(forward), static_argnums=3).lower(trainable, non_trainable, x, True).compile()
    for name, compiled in (("backbone inference", inference), ("backbone training", training)):
        result[name] = {"fused_kernel": fused(compiled.as_text()), "custom_calls": custom_calls(compiled.as_text())}
        print(f"  attention {name}: {result[name]}", flush=True)
    return {"attention": result}


def _peak_memory_gib(backend):
    if backend == "jax":
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        peak = stats.get("peak_bytes_in_use")
    else:
        import torch

        peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    return None if peak is None else peak / 2**30


def _torch_attention_kernels(run_once):
    """Names of the attention kernels the torch profiler saw in one call (flash / memory-efficient / math)."""
    import torch

    if not torch.cuda.is_available():
        return []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        run_once()
        torch.cuda.synchronize()
    names = {event.key for event in profile.key_averages()}
    markers = ("flash", "fmha", "efficient_attention", "attention", "softmax")
    return sorted(name[:90] for name in names if any(marker in name.lower() for marker in markers))


def worker_main(args):
    implementation, backend, workload = json.loads(args.worker)
    if implementation == "matmul":
        result = matmul_job(args)
    elif implementation == "attention":
        result = attention_job(args)
    elif implementation in ("hf", "hf-compile"):
        result = huggingface_job(implementation, workload, args)
    else:
        result = keras_job(implementation, workload, args)
    if workload is not None:
        B = args.workloads[workload][3]
        flops = flops_per_sequence(args, workload, implementation)
        result["sequences_per_second"] = B / result["seconds_per_step"]
        result["model_tflops"] = flops * result["sequences_per_second"] / 1e12
    print("RESULT " + json.dumps(result), flush=True)


# -- parent ---------------------------------------------------------------------------------------------------


def run_job(job, args, log):
    implementation, backend, workload = job
    env = dict(os.environ, KERAS_BACKEND="jax" if backend == "jax" else "torch", PYTHONUNBUFFERED="1")
    argv = [sys.executable, os.path.abspath(__file__), "--out", args.out, "--worker", json.dumps(list(job)),
            "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--chunk-seconds", str(args.chunk_seconds)]
    if args.smoke:
        argv.append("--smoke")
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    result, tail = None, []
    try:
        deadline = start + args.job_timeout
        for line in process.stdout:
            log.write(line)
            tail = (tail + [line.rstrip()])[-15:]
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
            elif "Traceback" in line or "Error" in line or line.startswith("  attention"):
                print(f"    [{job_name(*job)}] {line.rstrip()}", flush=True)
            if time.perf_counter() > deadline:
                process.kill()
                break
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
    elapsed = time.perf_counter() - start
    if result is None:
        result = {"error": f"exit {process.returncode} after {elapsed:.0f} s", "log_tail": tail[-6:]}
    result["job_seconds"] = elapsed
    return result


def expected_seconds(job):
    implementation, backend, _ = job
    if implementation in ("matmul", "attention"):
        return JOB_SECONDS[implementation]
    return JOB_SECONDS["compile"] if implementation.endswith("compile") else JOB_SECONDS[backend]


def summarize(results, args):
    matmul = results.get("matmul-torch", {}).get("tflops")
    rows = []
    for job in JOBS:
        name = job_name(*job)
        result = results.get(name)
        if result is None or job[2] is None:
            continue
        if "error" in result or "skipped" in result:
            rows.append(f"| {name} | {result.get('error') or result.get('skipped')} | | | | | |")
            continue
        tflops = result["model_tflops"]
        vs_measured = f"{100 * tflops / matmul:.1f}%" if matmul else "n/a"
        memory = result.get("peak_memory_gib")
        rows.append(f"| {name} | {result['sequences_per_second']:,.0f} | {1e3 * result['seconds_per_step']:.1f} | "
                    f"{tflops:.3g} | {vs_measured} | {100 * tflops / args.peak_tflops:.1f}% | "
                    + ("n/a" if memory is None else f"{memory:.1f}") + " |")
    lines = [f"bf16 matmul measured: {matmul:.0f} TFLOP/s" if matmul else "bf16 matmul: not measured",
             "", "| job | seq/s | ms/step | model TFLOP/s | MFU (measured matmul) | MFU (989 spec) | peak GiB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |", *rows, ""]
    for workload, reference in RATIOS:
        ours = results.get(f"ours-jax-{workload}", {}).get("model_tflops")
        peer = results.get(reference, {}).get("model_tflops")
        if ours and peer:
            lines.append(f"ours-jax-{workload} / {reference}: {ours / peer:.2f}x model FLOP/s")
    attention = results.get("attention-jax", {}).get("attention")
    if attention:
        lines.append("")
        lines.append("attention (JAX): " + "; ".join(
            f"{name}: fused={value['fused_kernel']}" + (f" {value['ms_forward_backward']:.2f} ms fwd+bwd"
                                                       if "ms_forward_backward" in value else "")
            for name, value in attention.items()))
    for name, result in results.items():
        if result.get("attention_kernels"):
            lines.append(f"{name} attention kernels: {', '.join(result['attention_kernels'][:4])}")
    return "\n".join(lines)


# Ratios printed at the end, of model FLOP/s (per-sequence counts differ: keras-hub has no NSP head), so a ratio
# compares work done per second: (our JAX workload, the peer job).
RATIOS = [
    ("pretrain128", "keras-hub-jax-pretrain128"),
    ("pretrain128", "hf-torch-pretrain128"),
    ("pretrain128", "hf-compile-torch-pretrain128"),
    ("pretrain512", "hf-torch-pretrain512"),
    ("pretrain512", "keras-hub-jax-pretrain512"),
    ("inference128", "hf-torch-inference128"),
    ("inference128", "keras-hub-jax-inference128"),
]


def main():
    args = parse_args()
    if args.worker:
        return worker_main(args)
    os.makedirs(args.out, exist_ok=True)
    only = None if args.only is None else set(args.only.split(","))
    results, start = {}, time.perf_counter()
    with open(os.path.join(args.out, "gpu_benchmark.log"), "w") as log:
        for job in JOBS:
            name = job_name(*job)
            if only is not None and name not in only:
                continue
            used = time.perf_counter() - start
            if not args.smoke and used + expected_seconds(job) > args.budget_seconds:
                results[name] = {"skipped": f"budget ({used:.0f} s used of {args.budget_seconds:.0f})"}
                print(f"{name}: skipped, budget", flush=True)
                continue
            print(f"{name}: running ({used:.0f} s into the run)", flush=True)
            results[name] = run_job(job, args, log)
            result = results[name]
            summary = result.get("error") or ", ".join(
                f"{key} {value:.4g}" for key, value in result.items() if isinstance(value, float))
            print(f"{name}: {summary}", flush=True)
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump(results, f, indent=1)
    table = summarize(results, args)
    print(table, flush=True)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table + "\n")
    return 0 if any("model_tflops" in result for result in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
