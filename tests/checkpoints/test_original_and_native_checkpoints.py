"""Original google-research/bert checkpoints (written here with the original variable names) and our own
`save_pretrained` format."""

import json
import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError, backbone_weight_specs, native
from keras_bert_impl.checkpoints.conversion import HUGGINGFACE, ORIGINAL, from_ours, to_ours
from keras_bert_impl.models.backbone import BertBackbone
from tests.helpers import (
    TINY_BACKBONE,
    original_bert_config,
    random_batch,
    tiny_backbone,
    to_numpy,
    write_original_tf_checkpoint,
)

tf = pytest.importorskip("tensorflow")


def original_tensors(backbone):
    variables = {v.path: to_numpy(v) for v in backbone.weights}
    tensors = {}
    for spec in backbone_weight_specs(backbone.num_layers):
        tensors.update(from_ours(spec, variables[spec.ours], ORIGINAL))
    return tensors


def test_original_checkpoint_loads_with_original_names_and_tanh_gelu(tmp_path):
    source = tiny_backbone(hidden_activation="gelu_approximate")
    tensors = original_tensors(source)
    assert "bert/encoder/layer_1/attention/self/query/kernel" in tensors
    assert "bert/embeddings/LayerNorm/gamma" in tensors and "bert/pooler/dense/kernel" in tensors
    tensors["global_step"] = np.array(1000, dtype="int64")
    tensors["bert/embeddings/word_embeddings/adam_m"] = np.zeros_like(tensors["bert/embeddings/word_embeddings"])
    write_original_tf_checkpoint(tmp_path / "ckpt", tensors, original_bert_config(source))
    loaded = BertBackbone.from_pretrained(str(tmp_path / "ckpt"))
    # The original's "gelu" is the tanh approximation.
    assert loaded.hidden_activation == "gelu_approximate"
    assert loaded.load_report.unused == []
    batch = random_batch()
    np.testing.assert_allclose(
        to_numpy(loaded(batch)["sequence_output"]), to_numpy(source(batch)["sequence_output"]), atol=1e-6
    )
    # The checkpoint prefix itself is accepted too.
    assert BertBackbone.from_pretrained(str(tmp_path / "ckpt" / "bert_model.ckpt")).num_layers == 2


@pytest.mark.backend_independent
def test_corrupt_original_checkpoint_is_a_clear_error(tmp_path):
    source = tiny_backbone()
    write_original_tf_checkpoint(tmp_path, original_tensors(source), original_bert_config(source))
    data_file = next(p for p in os.listdir(tmp_path) if ".data-" in p)
    with open(tmp_path / data_file, "r+b") as handle:
        handle.truncate(100)
    with pytest.raises(CheckpointError, match="Cannot read TF checkpoint .*bert_model.ckpt"):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
def test_original_directory_without_checkpoint_files(tmp_path):
    (tmp_path / "bert_config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="bert_config.json but no checkpoint"):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
def test_fused_qkv_conversion_is_invertible():
    rng = np.random.default_rng(0)
    spec = backbone_weight_specs(1)[5]
    assert spec.ours.endswith("query_key_value/kernel") and len(spec.huggingface) == 3
    value = rng.normal(size=(8, 24)).astype("float32")
    for fmt in (HUGGINGFACE, ORIGINAL):
        np.testing.assert_array_equal(to_ours(spec, from_ours(spec, value, fmt), fmt), value)
    hf = from_ours(spec, value, HUGGINGFACE)
    np.testing.assert_array_equal(hf[spec.huggingface[1]], value[:, 8:16].T)  # key, torch [out, in]


def test_save_pretrained_round_trip(tmp_path):
    backbone = tiny_backbone(hidden_activation="gelu", dropout=0.2)
    backbone.save_pretrained(tmp_path / "ours")
    document = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert document["format"] == "keras_bert_impl" and document["class_name"] == "BertBackbone"
    restored = BertBackbone.from_pretrained(str(tmp_path / "ours"))
    without_name = lambda config: {k: v for k, v in config.items() if k != "name"}  # noqa: E731
    assert without_name(restored.get_config()) == without_name(backbone.get_config())
    batch = random_batch()
    np.testing.assert_array_equal(
        to_numpy(restored(batch)["pooled_output"]), to_numpy(backbone(batch)["pooled_output"])
    )
    overridden = BertBackbone.from_pretrained(str(tmp_path / "ours"), dropout=0.0)
    assert overridden.dropout == 0.0


@pytest.mark.backend_independent
def test_failed_save_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    target = tmp_path / "ours"
    first = tiny_backbone()
    first.save_pretrained(target)
    before = (target / "model.safetensors").read_bytes()

    import safetensors.numpy

    def crash(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save_file", crash)
    with pytest.raises(OSError, match="No space left"):
        tiny_backbone(hidden_dim=32).save_pretrained(target)
    assert (target / "model.safetensors").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ours"]  # no half-written temporary directory left behind


@pytest.mark.backend_independent
def test_native_checkpoint_with_wrong_shapes(tmp_path):
    tiny_backbone().save_pretrained(tmp_path)
    document = json.loads((tmp_path / "config.json").read_text())
    document["config"]["intermediate_dim"] = 40
    (tmp_path / "config.json").write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match=r"config.intermediate_dim is 40 but the weights have 32 "
                                              r"\(encoder_layer_0/intermediate_dense/kernel has shape \[16, 32\]\)"):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
def test_native_tensor_of_another_shape_than_its_variable(tmp_path):
    from safetensors.numpy import load_file, save_file

    tiny_backbone().save_pretrained(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    tensors["pooler_dense/kernel"] = tensors["pooler_dense/kernel"][:, :8].copy()
    save_file(tensors, str(tmp_path / "model.safetensors"))
    document = json.loads((tmp_path / "config.json").read_text())
    del document["sha256"]  # a hand-edited file: no digest to check
    (tmp_path / "config.json").write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match=r"tensor pooler_dense/kernel has shape \(16, 8\) but the model "
                                              r"expects \(16, 16\)"):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
def test_native_detection_requires_format_marker(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": TINY_BACKBONE["hidden_dim"]}))
    assert not native.is_native_directory(str(tmp_path))
