"""benchmarks/serving.py runs to its last line with `--smoke` (tiny random model, both tasks, 1 round).

Every serving path (ours: Keras predict, SavedModel, ONNX in ONNX Runtime; Hugging Face: tokenizers + ORT,
pipeline / torch) must print a row with figures and a ratio to HF + ORT, and agree with HF + ORT on the
classifier's labels (same weights, same texts). The script exports a SavedModel in-process, so the smoke runs
in the TensorFlow pass.
"""

import re

import pytest

from tests.benchmarks.test_benchmark_scripts import assert_lines, run_script

pytest.importorskip("onnxruntime", reason="the serving benchmark needs the `onnx` extra")

PATHS = ("ours keras predict", "ours savedmodel", "ours onnx \\+ ort", "hf tokenizers \\+ ort")
FIGURES = r"( +[\d.]+){5} +\d+%$"


def _rows(output, task, batch_size):
    """The table rows printed under `task, batch N` (after its header, before the stage breakdowns)."""
    section = output.split(f"\n{task}, batch {batch_size}, ", 1)[1].split("\n\n", 1)[0]
    return [line for line in section.splitlines()[2:] if not line.startswith("  stages of ")]


@pytest.mark.slow
@pytest.mark.backend_independent
def test_serving_benchmark_smoke():
    output = run_script(["serving.py", "--smoke", "--batch-sizes", "1,4"])
    assert_lines(output, r"^serving benchmark: tiny random model \(smoke\), 2 threads",
                 r"^load average before: [\d.]+ [\d.]+ [\d.]+",
                 # the smoke model's zero biases are folded away by tf2onnx, so its attention is not fused (a
                 # trained model's is: tests/export/test_onnx_export.py); its layer norms are
                 r"^classifier: our fusions: \{.*'SkipLayerNormalization'.*; hf fusions: \{.*'Attention': 1",
                 r"^question_answerer, batch 4, 1 rounds", r"^load average after: ",
                 r"^serving benchmark done$")
    for task, torch_path in (("classifier", "hf pipeline \\(torch\\)"), ("question_answerer",
                                                                           "hf tokenizers \\+ torch")):
        for batch_size in (1, 4):
            rows = _rows(output, task, batch_size)
            for path in PATHS + (torch_path,):
                assert any(re.match(rf"^  {path} +{FIGURES}", row) for row in rows), (task, batch_size, path, rows)
            assert re.match(r"^  hf tokenizers \+ ort +( +[\d.]+){4} +1\.00 +100%$",
                            next(row for row in rows if "hf tokenizers + ort" in row))
            section = output.split(f"\n{task}, batch {batch_size}, ", 1)[1]
            for path, first_stage in (("ours onnx \\+ ort", "(tokenize|featurize)"), ("hf tokenizers \\+ ort",
                                                                                    "tokenize")):
                assert re.search(rf"\n  stages of {path}: {first_stage} [\d.]+ ms, model [\d.]+ ms", section)
            if task == "classifier":  # same weights, same pairs: the same labels on every path
                assert all(row.endswith("100%") for row in rows), rows
