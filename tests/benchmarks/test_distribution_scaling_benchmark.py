"""benchmarks/distribution_scaling.py runs to its last line with --smoke, once per pass: mirrored in the
TensorFlow pass, DataParallel in the JAX pass (torch has no data-parallel path here), and its 2-device
weights equal one device's."""

import re

import pytest

from tests.benchmarks.test_benchmark_scripts import BACKEND, assert_lines, run_script

DISTRIBUTIONS = {"tensorflow": "mirrored", "jax": "jax_data_parallel"}


@pytest.mark.slow
@pytest.mark.skipif(BACKEND not in DISTRIBUTIONS, reason=f"no data-parallel path on {BACKEND}")
def test_distribution_scaling_smoke():
    output = run_script(["distribution_scaling.py", "--smoke", "--backends", BACKEND])
    figure = r"[\d.]+"
    two_devices = rf"^{BACKEND}\s+{DISTRIBUTIONS[BACKEND]}\s+2\s+{figure}\s+{figure}\s+([\d.e+-]+)$"
    assert_lines(output, r"^load average \(1, 5, 15 min\) at the start: [\d. ]+$",
                 rf"^{BACKEND}\s+none\s+1\s+{figure}\s+{figure}\s+\(reference\)$", two_devices,
                 rf"^{BACKEND}: 2 devices / 1 device steps/s: {figure}$",
                 r"^load average \(1, 5, 15 min\) at the end: [\d. ]+$")
    difference = float(re.search(two_devices, output, re.MULTILINE).group(1))
    assert difference <= 1e-5, output
