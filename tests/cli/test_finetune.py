"""`keras-bert finetune-classifier` / `finetune-squad` end to end with their defaults: XLA-compiled steps on
TensorFlow, length buckets, a converted (original TF format) initial checkpoint, official metrics and files."""

import json
import os

import pytest

from keras_bert_impl.checkpoints.name_map import backbone_weight_specs
from keras_bert_impl.models.backbone import BertBackbone
from tests.cli.cli_test_utils import run_cli
from tests.helpers import original_bert_config, write_original_tf_checkpoint
from tests.training.finetuning_test_utils import (
    TINY_CHECKPOINT_BACKBONE,
    VOCABULARY,
    tokenizer,
    write_mrpc_tsv,
    write_squad_json,
)


@pytest.fixture(scope="module")
def original_checkpoint(tmp_path_factory):
    """A tiny encoder saved as an original google-research/bert checkpoint, with its vocab.txt."""
    from keras_bert_impl.checkpoints.conversion import ORIGINAL, export_tensors

    directory = tmp_path_factory.mktemp("original")
    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), hidden_activation="gelu_approximate",
                            **TINY_CHECKPOINT_BACKBONE)
    write_original_tf_checkpoint(directory, export_tensors(backbone, backbone_weight_specs(backbone.num_layers), ORIGINAL),
                                 original_bert_config(backbone))
    tokenizer().save_pretrained(directory)
    return str(directory)


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_finetune_classifier_on_a_glue_layout(tmp_path, capsys, original_checkpoint):
    train = write_mrpc_tsv(tmp_path / "train.tsv", 48, seed=0)
    dev = write_mrpc_tsv(tmp_path / "dev.tsv", 16, seed=1)
    status, out, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--train-file", train,
                               "--dev-file", dev, "--init-checkpoint", original_checkpoint, "--max-seq-length", 48,
                               "--epochs", 2, "--batch-size", 8, "--learning-rate", 1e-3, "--verbose", 0,
                               "--output-dir", tmp_path / "run")
    assert status == 0, err
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert {"accuracy", "f1"} <= set(results)
    assert len((tmp_path / "run" / "dev_predictions.tsv").read_text().splitlines()) == 16 + 1  # header + rows
    for kept in ("best", "last"):
        assert os.path.isfile(tmp_path / "run" / kept / "label_vocabulary.json")


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_finetune_squad_v2_tunes_the_null_threshold(tmp_path, capsys, original_checkpoint):
    train = write_squad_json(tmp_path / "train.json", 12, seed=0)
    dev = write_squad_json(tmp_path / "dev.json", 4, seed=1)
    status, out, err = run_cli(capsys, "finetune-squad", "--version-2", "--train-file", train, "--dev-file", dev,
                               "--init-checkpoint", original_checkpoint, "--max-seq-length", 32, "--doc-stride", 8,
                               "--max-query-length", 8, "--epochs", 1, "--batch-size", 8, "--verbose", 0,
                               "--output-dir", tmp_path / "run")
    assert status == 0, err
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert {"exact", "f1", "HasAns_total", "NoAns_total", "null_score_diff_threshold"} <= set(results)
    assert results["HasAns_total"] == 4 and results["NoAns_total"] == 4
    predictions = json.loads((tmp_path / "run" / "predictions.json").read_text())
    assert len(predictions) == 8
    for name in ("nbest_predictions.json", "null_odds.json"):
        assert os.path.isfile(tmp_path / "run" / name)
