"""benchmarks/truncation_scaling.py runs to its last line with --smoke (TensorFlow pass only, like the other
tf.data-side scripts in test_benchmark_scripts.py)."""

import pytest

from tests.benchmarks.test_benchmark_scripts import assert_lines, run_script


@pytest.mark.slow
@pytest.mark.backend_independent
def test_truncation_scaling_smoke():
    output = run_script(["truncation_scaling.py", "--smoke"])
    assert_lines(output, r"^\s+0\.001MB\s+200\s+\d+\s+[\d.]+\s+[\d.]+$", r"^\s+0\.100MB\s+20000\s+\d+",
                 r"^time per byte, longest / shortest line: [\d.]+ \(at most about 1 when linear\)$")
