"""benchmarks/RESULTS.md against the result files it reports, and the benchmarks' README against the scripts.

- The generated tables of RESULTS.md equal what `benchmarks/results_tables.py` renders from benchmarks/results/
  (a figure edited by hand, or a result file changed without `--write`, fails here).
- The renderer reads the files: a figure changed in a copy of the results changes its table.
- RESULTS.md stays within issue 30's 25,000 characters; links into benchmarks/ (from RESULTS.md, its README and the
  top-level README) reach an existing file and heading.
- benchmarks/README.md names every script in benchmarks/.

Plain file reading, no backend involved: it runs once, in the TensorFlow pass.
"""

import json
import os
import re
import shutil

import pytest

from benchmarks import results_tables
from tests.benchmarks.test_benchmark_scripts import REPO_ROOT

pytestmark = pytest.mark.backend_independent

BENCHMARKS = os.path.join(REPO_ROOT, "benchmarks")
RESULTS_MD = os.path.join(BENCHMARKS, "RESULTS.md")
README_MD = os.path.join(BENCHMARKS, "README.md")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_committed_tables_equal_the_rendered_ones():
    committed = read(RESULTS_MD)
    assert results_tables.render_results_md(committed) == committed, (
        "benchmarks/RESULTS.md differs from its result files: run python benchmarks/results_tables.py --write")


def test_every_table_is_in_results_md_once():
    names = re.findall(r"<!-- results_tables\.py: (\w+) -->", read(RESULTS_MD))
    assert sorted(names) == sorted(results_tables.TABLES)
    with pytest.raises(ValueError, match="generated blocks"):
        results_tables.render_results_md(read(RESULTS_MD).replace("<!-- results_tables.py: gpu_h200 -->", ""))


def test_tables_are_read_from_the_result_files(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(results_tables.RESULTS_DIR, results)
    before = {name: render(str(results)) for name, render in results_tables.TABLES.items()}

    run1 = results / results_tables.GPU_RUNS / "run1" / "results.json"
    data = json.loads(run1.read_text())
    data["ours-jax-pretrain128"]["sequences_per_second"] = 1234.0
    run1.write_text(json.dumps(data))
    score = results / results_tables.REAL_TASKS_H200
    score.write_text(score.read_text().replace("79.59", "12.34"))
    log = results / results_tables.ISSUE15_LOG
    log.write_text(log.read_text().replace("median per-round ratio 1.74x", "median per-round ratio 9.99x"))

    after = {name: render(str(results)) for name, render in results_tables.TABLES.items()}
    assert "| 256 x 128 | 1,234 |" in after["gpu_h200"] and "4,556" not in after["gpu_h200"]
    assert "12.34 / 85.33" in after["real_tasks_h200"] and "-64.94 / +1.52" in after["real_tasks_h200"]
    assert "**9.99x**" in after["issue15_before_after"]
    assert after["real_tasks_cpu"] == before["real_tasks_cpu"]  # its files were not touched


def test_parse_score_reads_columns_with_spaces():
    tasks = results_tables.parse_score(os.path.join(results_tables.RESULTS_DIR, results_tables.REAL_TASKS_H200))
    squad = tasks["squad"]
    assert squad["info"]["test_questions"] == "1629"
    assert squad["rows"]["hf"]["forced_HasAns_f1"] == "53.14"
    assert squad["rows"]["ours"]["peak dev MiB"] == "5619" and squad["rows"]["ours"]["device"] == "jax gpu"
    assert squad["ratios"] == {"CPU-s": "0.32x", "wall s": "0.68x"}


def test_results_md_is_short():
    assert len(read(RESULTS_MD)) <= 25_000  # issue 30: the current figures only; history in results/HISTORY.md


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {github_anchor(line.lstrip("#")) for line in read(path).splitlines() if re.match(r"#+ ", line)}


def local_links(path):
    """(target file, anchor or None) of every relative Markdown link in `path`."""
    links = []
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", read(path)):
        if "://" not in target:
            links.append((os.path.normpath(os.path.join(os.path.dirname(path), target or os.path.basename(path))),
                          anchor or None))
    return links


@pytest.mark.parametrize("path", [RESULTS_MD, README_MD, os.path.join(REPO_ROOT, "README.md")], ids=os.path.relpath)
def test_links_into_the_benchmarks_resolve(path):
    links = [(target, anchor) for target, anchor in local_links(path) if target.startswith(BENCHMARKS)]
    if path != os.path.join(REPO_ROOT, "README.md"):
        assert links, f"{path} links to nothing in benchmarks/"
    for target, anchor in links:
        assert os.path.exists(target), f"{path}: {target} does not exist"
        if anchor is not None:
            assert anchor in anchors(target), f"{path}: no heading of {target} has the anchor #{anchor}"


def test_github_anchor():
    assert github_anchor(" 8. Distribution scaling: `benchmarks/distribution_scaling.py`") == (
        "8-distribution-scaling-benchmarksdistribution_scalingpy")
    assert github_anchor("9. Serving (ours vs Hugging Face + ONNX)") == "9-serving-ours-vs-hugging-face--onnx"


def test_readme_names_every_benchmark_script():
    readme = read(README_MD)
    scripts = [name for name in os.listdir(BENCHMARKS) if name.endswith((".py", ".sh"))]
    missing = [name for name in scripts if f"`{name}`" not in readme and f"benchmarks/{name}" not in readme]
    assert not missing, f"benchmarks/README.md does not name {missing}"
