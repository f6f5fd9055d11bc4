"""The README's Python quick tour runs as written (on every backend)."""

import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks_of_section(title):
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.slow
def test_quick_tour_runs(capsys):
    (code,) = python_blocks_of_section("Quick tour (Python)")
    exec(compile(code, "README.md: Quick tour", "exec"), {})
    assert capsys.readouterr().out.split() == ["(2,", "2)", "(1,", "2)"]
