"""The example notebooks (`examples/notebooks/*.ipynb`) are committed without outputs and run top to bottom.

Every notebook reads `KERAS_BERT_NOTEBOOK_SMOKE=1` in its settings cell and then runs its whole story on small
settings. The execution test runs each one with nbclient in a temporary working directory, where the notebook
writes `runs/<notebook name>/summary.json` and its plots; a notebook added to the folder is picked up
automatically. `CHECKS` adds cheap assertions about what a notebook computed, for the notebooks it names.
"""

import glob
import json
import math
import os
import re

import nbformat
import pytest

pytestmark = pytest.mark.backend_independent

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(REPO_ROOT, "examples", "notebooks", "*.ipynb")))
CELL_TIMEOUT_S = 300
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _name(path):
    return os.path.splitext(os.path.basename(path))[0]


def _finite(values):
    return all(math.isfinite(value) for value in values)


def _check_pretraining(summary):
    history = summary["history"]
    assert all(_finite(values) for values in history.values())
    # From random weights the masked-LM loss falls within the first few dozen steps.
    assert history["mlm_loss"][-1] < history["mlm_loss"][0]
    assert 0.0 <= summary["heldout_mlm_accuracy"] <= 1.0 and 0.0 < summary["mlm_baseline_most_frequent_token"] < 1.0
    assert summary["masked_predictions"] and all(len(p["top5"]) == 5 for p in summary["masked_predictions"])


def _check_classification(summary):
    assert 0.0 <= summary["dev_accuracy"] <= 1.0
    confusion = summary["confusion_matrix"]
    assert sum(map(sum, confusion)) == summary["dev_examples"]
    assert math.isclose(summary["dev_accuracy"], sum(confusion[i][i] for i in range(len(confusion)))
                        / summary["dev_examples"])
    assert {item["label"] for item in summary["classified"]} <= set(summary["labels"])


def _check_squad(summary):
    assert 0.0 <= summary["dev_exact_match"] <= summary["dev_f1"] <= 100.0
    assert summary["predictions"] == summary["dev_questions"]
    assert sum(kind["questions"] for kind in summary["by_question_kind"].values()) == summary["dev_questions"]


def _check_pretrained_exploration(summary):
    assert summary["reload_max_difference"] == 0.0
    assert any(name.startswith("masked_lm_head/") for name in summary["missing_pretraining_heads"])
    # The real checkpoint, no randomness: each sentence's nearest neighbour is its paraphrase.
    assert summary["pairs_recovered"] == summary["sentences"]
    assert summary["attention_row_sum_error"] < 1e-5 and summary["layer_walk_difference"] < 1e-4


def _check_export(summary):
    assert {"serve_text", "serve_text_pair", "serve_token_ids"} <= set(summary["signatures"])
    assert max(summary["max_probability_difference"].values()) < 1e-5
    assert summary["label_agreement"] == 1.0


CHECKS = {
    "pretraining_from_scratch": _check_pretraining,
    "classification_finetuning": _check_classification,
    "squad_finetuning": _check_squad,
    "pretrained_checkpoint_exploration": _check_pretrained_exploration,
    "export_and_serve": _check_export,
}


def test_the_notebooks_are_found():
    assert {_name(path) for path in NOTEBOOKS} >= set(CHECKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert notebook.nbformat == 4
    nbformat.validate(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{os.path.basename(path)}, cell {index}: clear all outputs before committing (e.g. `jupyter "
                f"nbconvert --clear-output --inplace {os.path.relpath(path, REPO_ROOT)}`)."
            )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_runs_with_small_settings(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # The kernel is a child process: it inherits these.
    monkeypatch.setenv("KERAS_BERT_NOTEBOOK_SMOKE", "1")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    name = _name(path)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except CellExecutionError as error:
        pytest.fail(f"{name}.ipynb: a cell raised\n{_ANSI_ESCAPE.sub('', str(error))}", pytrace=False)

    with open(tmp_path / "runs" / name / "summary.json", encoding="utf-8") as handle:
        summary = json.load(handle)
    for figure in summary["figures"]:
        assert os.path.getsize(tmp_path / figure) > 0, figure
    CHECKS.get(name, lambda summary: None)(summary)
