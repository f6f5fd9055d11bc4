"""README.md and docs/ say only what runs: Sybil executes every Python and bash block, and MkDocs builds the site.

Each page runs top to bottom in its own empty working directory (Python blocks share one namespace per page, as
a reader pasting them into one session would). A page that names `runs/quickstart` finds there the outputs of a
small main-job run made once per pass (`conftest.small_main_job`, shared with tests/cli/test_quickstart.py). A
block that needs a GPU or the network is skipped with Sybil's `<!-- skip: next "reason" -->` directive, and its
reason must say which; so is a block another test runs, whose reason names that test file ("run by tests/...py, ").
The README's Python quick tour runs on every backend; the rest of this file is backend-independent and runs once,
in the TensorFlow pass.
"""

import gc
import os
import pathlib
import re
import shutil
import subprocess
import sys
import unittest

import keras
import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ["README.md"] + sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md"))


def command_environment():
    """This checkout first on PYTHONPATH, and the test interpreter's `keras-bert` and `python` first on PATH, as in
    the environment a reader installed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


class BashBlockParser(CodeBlockParser):
    """Runs each ```bash block with `bash -euo pipefail` in the page's working directory; a non-zero exit fails it
    with the block's output."""

    language = "bash"

    def __init__(self, workdir):
        super().__init__()
        self.workdir = workdir

    def evaluate(self, example):
        completed = subprocess.run(["bash", "-euo", "pipefail", "-c", example.parsed], cwd=self.workdir,
                                   env=command_environment(),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if completed.returncode != 0:
            return f"exit status {completed.returncode}; output:\n{completed.stdout[-4000:]}"
        return None


def run_examples(document):
    """Evaluates a parsed page's examples in order; returns the (line, reason) of each skipped one."""
    skipped = []
    try:
        for example in document.examples():
            try:
                example.evaluate()
            except unittest.SkipTest as reason:
                skipped.append((example.line, str(reason)))
    finally:  # the page's models go with its namespace
        document.namespace.clear()
        keras.backend.clear_session()
        gc.collect()
    return skipped


def page_workdir(page, tmp_path, request):
    """An empty folder for the page; with `runs/quickstart` hard-linked from the session's main-job run when the
    page uses it (hard links: a page that writes there replaces files, never the shared run's)."""
    if "runs/quickstart" in (ROOT / page).read_text(encoding="utf-8"):
        # `exported/` aside: tests/cli/test_quickstart.py's pasted commands may be writing it meanwhile
        shutil.copytree(request.getfixturevalue("small_main_job")[0], tmp_path / "runs" / "quickstart",
                        copy_function=os.link, ignore=shutil.ignore_patterns("exported"))
    return tmp_path


@pytest.mark.slow
@pytest.mark.backend_independent
@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_runs(page, tmp_path, request, monkeypatch):
    """The README's bash blocks (its Python quick tour has its own test) and every block of the docs pages."""
    workdir = page_workdir(page, tmp_path, request)
    monkeypatch.chdir(workdir)
    parsers = [BashBlockParser(workdir), SkipParser()]
    if page != "README.md":
        parsers.append(PythonCodeBlockParser())
    document = Sybil(parsers).parse(ROOT / page)
    skipped = run_examples(document)
    for line, reason in skipped:
        ran_elsewhere = re.match(r"run by (tests/\S+\.py), ", reason)
        assert "GPU" in reason or "network" in reason or (ran_elsewhere and (ROOT / ran_elsewhere[1]).is_file()), (
            f"{page}:{line} is skipped for another reason: {reason}")


@pytest.mark.slow
def test_readme_quick_tour_runs_and_prints_the_shapes(tmp_path, monkeypatch, capsys):
    """The README's Python quick tour, on every backend: fine-tune on raw text, predict, export."""
    monkeypatch.chdir(tmp_path)
    document = Sybil([PythonCodeBlockParser()]).parse(ROOT / "README.md")  # no skip: every README Python block runs
    assert run_examples(document) == []
    assert capsys.readouterr().out.split() == ["(2,", "2)", "(1,", "2)"]
    assert (tmp_path / "saved_models" / "paraphrase" / "saved_model.pb").is_file()


@pytest.mark.slow
@pytest.mark.backend_independent
def test_the_site_builds_with_strict_checks(tmp_path):
    """`mkdocs build --strict` (what `make docs` runs): every page in the nav, no broken link or anchor, and the
    API reference generated from the docstrings without a warning."""
    completed = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                                str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()
