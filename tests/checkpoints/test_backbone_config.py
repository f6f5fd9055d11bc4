"""`checkpoints.backbone_config`: the one place that says which `BertBackbone` config a checkpoint gives."""

import numpy as np
import pytest

from keras_bert_impl.checkpoints import backbone_config, read_checkpoint
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from tests.helpers import TINY_BACKBONE, random_batch, tiny_backbone, to_numpy

pytestmark = pytest.mark.backend_independent


def test_native_backbone_gives_its_config_without_name_and_trainable(tmp_path):
    tiny_backbone(dropout=0.2, name="encoder").save_pretrained(tmp_path / "backbone")
    config = backbone_config(*_without_tensors(read_checkpoint(str(tmp_path / "backbone"))))
    assert "name" not in config and "trainable" not in config
    assert {key: config[key] for key in TINY_BACKBONE} == TINY_BACKBONE and config["dropout"] == 0.2
    assert BertBackbone(**config).get_config()["dropout"] == 0.2


def test_native_task_model_gives_its_encoder_config(tmp_path):
    classifier = BertClassifier(tiny_backbone(attention_dropout=0.3), num_classes=3)
    classifier.save_pretrained(tmp_path / "classifier")
    fmt, config, extra = _without_tensors(read_checkpoint(str(tmp_path / "classifier")))
    assert extra["class_name"] == "BertClassifier" and "num_classes" in config  # the task config
    encoder = backbone_config(fmt, config, extra)
    assert "num_classes" not in encoder and encoder["attention_dropout"] == 0.3
    assert {key: encoder[key] for key in TINY_BACKBONE} == TINY_BACKBONE


def test_foreign_checkpoint_config_is_the_encoder_config():
    config = dict(TINY_BACKBONE, name="bert", trainable=True)
    assert backbone_config("huggingface", config, {"source_config": {}}) == TINY_BACKBONE
    assert backbone_config("original", config, {}) == TINY_BACKBONE


def test_backbone_from_a_task_model_directory_loads_the_encoder(tmp_path):
    classifier = BertClassifier(tiny_backbone(), num_classes=2)
    classifier.save_pretrained(tmp_path / "classifier")
    backbone = BertBackbone.from_pretrained(str(tmp_path / "classifier"), dropout=0.0)
    assert backbone.dropout == 0.0 and backbone.load_report.missing == []
    batch = random_batch()
    np.testing.assert_allclose(to_numpy(backbone(batch)["pooled_output"]),
                               to_numpy(classifier.backbone(batch)["pooled_output"]), rtol=1e-6, atol=1e-6)


def _without_tensors(read):
    fmt, config, _, extra = read
    return fmt, config, extra
