"""benchmarks/gpu.sh (the device run's one command) and the driver it runs, benchmarks/gpu_benchmark.py, run end to
end with `--smoke`.

The smoke is the same code path at tiny sizes on CPU: gpu.sh's machine report, then the driver's jobs, each in its
own subprocess with its own backend (ours on JAX and torch, keras-hub on JAX, transformers on torch, the JAX
attention-kernel check, the torch matmul reference), then the summary table and results.json in $OUT. It runs
once, in the torch pass (as training_throughput's smoke), since its jobs set their own backends.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.benchmarks.test_benchmark_scripts import REPO_ROOT, only_in_pass

JOBS = ["matmul-torch", "ours-jax-inference128", "keras-hub-jax-inference128", "hf-torch-pretrain128",
        "attention-jax", "ours-torch-pretrain128"]
TIMED = [job for job in JOBS if job not in ("matmul-torch", "attention-jax")]


@pytest.mark.slow
@only_in_pass("torch")
def test_gpu_sh_smoke(tmp_path):
    (tmp_path / "no_wheels").mkdir()  # this environment has Keras: nothing to install
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path / "out"), WHEELS=str(tmp_path / "no_wheels"),
               TF_CPP_MIN_LOG_LEVEL="3", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    result = subprocess.run(["bash", "benchmarks/gpu.sh", "--smoke", "--only", ",".join(JOBS)], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout
    assert result.returncode == 0, output[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    machine = (out / "machine.txt").read_text()
    assert "jax" in machine and "torch" in machine and "tensorflow installed:" in machine, machine

    results = json.loads((out / "results.json").read_text())
    assert sorted(results) == sorted(JOBS), output[-4000:]
    assert results["matmul-torch"]["tflops"] > 0
    for name in TIMED:
        job = results[name]
        assert "error" not in job, (name, job)
        assert job["model_tflops"] > 0 and job["sequences_per_second"] > 0, (name, job)
        assert len(job["chunks"]) == 2  # --smoke: 2 timed chunks, the median reported
        assert re.search(rf"^\| {name} \| [\d,]+ \| [\d.]+ \| [\d.e+-]+ \| [\d.]+% \| [\d.]+% \|", output, re.M), name
    attention = results["attention-jax"]["attention"]
    assert set(attention) == {"none", "key mask (B,1,1,T)", "broadcast mask (B,N,T,T)", "backbone inference",
                              "backbone training"}
    assert [name for name, value in attention.items() if value.get("ms_forward_backward", 0) > 0] == list(attention)[:3]
    assert re.search(r"^ours-jax-inference128 / keras-hub-jax-inference128: [\d.]+x model FLOP/s$", output, re.M)
    assert (out / "results.md").read_text().startswith("bf16 matmul measured:")
