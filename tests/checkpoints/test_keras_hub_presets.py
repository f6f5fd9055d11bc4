"""keras-hub BERT presets both ways: keras-hub's `save_to_preset` output loads here with keras-hub's outputs,
and ours written as a preset loads in keras-hub with ours (<= 1e-5), tokenizer included, on every backend."""

import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from tests.helpers import random_batch, tiny_backbone, to_numpy

keras_hub = pytest.importorskip("keras_hub")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "a", "dog",
              "café", "runs", ".", "was", "here"] + [f"word{index}" for index in range(32)]
TEXTS = ["The cat sat on the mats.", "A dog runs here", "Café was here."]
SIZE = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


def randomize(model, seed=0):
    """Every weight random (not keras' zero biases and unit LayerNorm scales), so a misplaced one shows."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, 0.2, size=variable.shape).astype("float32"))


def outputs(model, batch):
    inputs = dict(batch, padding_mask=batch["padding_mask"].astype("int32"))
    result = model(inputs) if "keras_hub" in type(model).__module__ else model(batch)
    mask = batch["padding_mask"]
    return to_numpy(result["sequence_output"])[mask], to_numpy(result["pooled_output"])


def assert_same_outputs(ours, theirs):
    batch = random_batch(vocabulary_size=len(VOCABULARY))
    for mine, reference in zip(outputs(ours, batch), outputs(theirs, batch)):
        assert np.max(np.abs(mine - reference)) <= 1e-5


@pytest.fixture
def keras_hub_preset(tmp_path):
    source = keras_hub.models.BertBackbone(vocabulary_size=len(VOCABULARY), **SIZE)
    randomize(source)
    preset = str(tmp_path / "keras_hub_preset")
    source.save_to_preset(preset)
    keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(preset)
    return preset, source


def test_keras_hub_preset_loads_with_keras_hubs_outputs(keras_hub_preset):
    preset, source = keras_hub_preset
    backbone = BertBackbone.from_preset(preset)
    assert backbone.hidden_activation == "gelu_approximate" and backbone.num_layers == 2
    assert backbone.load_report.missing == [] and backbone.load_report.unused == []
    assert_same_outputs(backbone, source)


def test_task_from_keras_hub_preset_takes_its_tokenizer(keras_hub_preset):
    preset, _ = keras_hub_preset
    model = BertClassifier.from_preset(preset, num_classes=3)
    tokenizer = model.preprocessor.tokenizer
    assert tokenizer.get_vocabulary() == VOCABULARY
    theirs = keras_hub.models.BertTokenizer.from_preset(preset)
    assert [list(ids) for ids in tokenizer.tokenize(TEXTS)] == [list(to_numpy(ids)) for ids in theirs(TEXTS)]
    assert model.predict(TEXTS, verbose=0).shape == (3, 3)


@pytest.mark.slow
def test_ours_written_as_a_keras_hub_preset_loads_in_keras_hub(tmp_path):
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    randomize(backbone, seed=1)
    tokenizer = BertTokenizer(VOCABULARY, lowercase=True)
    model = BertClassifier(backbone, 2, preprocessor=BertPreprocessor(tokenizer, sequence_length=16))
    preset = str(tmp_path / "ours_as_keras_hub")
    model.save_to_preset(preset)
    assert_same_outputs(backbone, keras_hub.models.BertBackbone.from_preset(preset))
    theirs = keras_hub.models.BertTokenizer.from_preset(preset)
    assert [list(to_numpy(ids)) for ids in theirs(TEXTS)] == [list(ids) for ids in tokenizer.tokenize(TEXTS)]
    # The classifier's preset carries its head and packing length: keras-hub's task gives our logits on raw text.
    classifier = keras_hub.models.BertTextClassifier.from_preset(preset)
    logits = to_numpy(classifier.predict(TEXTS, verbose=0))
    assert logits.shape == (3, 2)
    assert np.max(np.abs(logits - to_numpy(model.predict(TEXTS, verbose=0)))) <= 1e-5
    # Our from_preset reads it back too: the backbone's weights and the tokenizer.
    again = BertClassifier.from_preset(preset, num_classes=2)
    assert_same_outputs(again.backbone, backbone)
    assert again.preprocessor.tokenizer.get_vocabulary() == VOCABULARY


@pytest.mark.backend_independent
def test_a_backbone_keras_hub_cannot_compute_is_refused(tmp_path):
    backbone = tiny_backbone(hidden_activation="gelu")
    with pytest.raises(CheckpointError, match="keras-hub's BertBackbone computes hidden_activation='gelu_approximate'"):
        backbone.save_to_preset(tmp_path / "preset")
    assert not os.path.exists(tmp_path / "preset")


@pytest.mark.backend_independent
def test_unknown_preset_names_both_kinds():
    with pytest.raises(ValueError, match=r"Unknown preset 'bert_huge': keras-hub cannot load"):
        BertBackbone.from_preset("bert_huge")
