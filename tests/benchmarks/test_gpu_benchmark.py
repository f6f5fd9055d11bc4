"""benchmarks/gpu_benchmark.py (run by benchmarks/gpu.sh on a GPU machine) runs end to end with `--smoke`.

The smoke is the same code path at tiny sizes on CPU: each job in its own subprocess with its own backend (ours
on JAX and torch, keras-hub on JAX, transformers on torch, the JAX attention-kernel check, the torch matmul
reference), then the summary table and results.json. It runs once, in the torch pass (as training_throughput's
smoke), since its jobs set their own backends.
"""

import json
import re

import pytest

from tests.benchmarks.test_benchmark_scripts import only_in_pass, run_script

JOBS = ["matmul-torch", "ours-jax-pretrain128", "keras-hub-jax-pretrain128", "hf-torch-pretrain128",
        "attention-jax", "ours-torch-pretrain128"]


@pytest.mark.slow
@only_in_pass("torch")
def test_gpu_benchmark_smoke(tmp_path):
    output = run_script(["gpu_benchmark.py", "--smoke", "--out", str(tmp_path), "--only", ",".join(JOBS)])
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results) == sorted(JOBS), output[-4000:]
    assert results["matmul-torch"]["tflops"] > 0
    for name in JOBS[1:4] + JOBS[5:]:
        result = results[name]
        assert "error" not in result, (name, result)
        assert result["model_tflops"] > 0 and result["sequences_per_second"] > 0, (name, result)
        assert len(result["chunks"]) == 2  # --smoke: 2 timed chunks, the median reported
        assert re.search(rf"^\| {name} \| [\d,]+ \| [\d.]+ \| [\d.e+-]+ \| [\d.]+% \| [\d.]+% \|", output, re.M), name
    attention = results["attention-jax"]["attention"]
    assert set(attention) == {"none", "key mask (B,1,1,T)", "broadcast mask (B,N,T,T)", "backbone inference",
                              "backbone training"}
    assert [name for name, value in attention.items() if value.get("ms_forward_backward", 0) > 0] == list(attention)[:3]
    assert re.search(r"^ours-jax-pretrain128 / keras-hub-jax-pretrain128: [\d.]+x model FLOP/s$", output, re.M)
    assert (tmp_path / "results.md").read_text().startswith("bf16 matmul measured:")


@pytest.mark.slow
@only_in_pass("torch")
def test_gpu_sh_smoke(tmp_path):
    """benchmarks/gpu.sh itself (the device run's one command): machine report, then the driver, into $OUT."""
    import os
    import subprocess
    import sys

    from tests.benchmarks.test_benchmark_scripts import REPO_ROOT

    (tmp_path / "no_wheels").mkdir()  # this environment has Keras: nothing to install
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path), WHEELS=str(tmp_path / "no_wheels"),
               TF_CPP_MIN_LOG_LEVEL="3", HF_HUB_OFFLINE="1")
    result = subprocess.run(["bash", "benchmarks/gpu.sh", "--smoke", "--only", "matmul-torch,ours-jax-inference128"],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    machine = (tmp_path / "machine.txt").read_text()
    assert "jax" in machine and "torch" in machine and "tensorflow installed:" in machine, machine
    assert json.loads((tmp_path / "results.json").read_text())["ours-jax-inference128"]["model_tflops"] > 0
    assert re.search(r"^\| ours-jax-inference128 \| [\d,]+ \|", result.stdout, re.M), result.stdout[-3000:]
