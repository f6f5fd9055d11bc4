"""Checkpoints are validated before anything is allocated and verified as they load (issue #29, items 2 and 3).

- The config's sizes are compared with the weights' header shapes before any model is built: more or fewer layers,
  other widths or tables are one line naming the config file, its field and both values, in every format.
- A config whose weights cannot fit in memory is refused up front, with weights or without (`from_scratch`).
- Every tensor read must be finite; our `save_pretrained` records the weights' SHA-256 and loading verifies it.
- Shard names in `model.safetensors.index.json` stay inside the checkpoint folder.
"""

import json
import os
import time

import numpy as np
import pytest

from tests.cli.cli_test_utils import run_cli
from tests.helpers import (
    TINY_BACKBONE,
    original_bert_config,
    tiny_backbone,
    write_original_tf_checkpoint,
)

pytestmark = pytest.mark.backend_independent

LAYER_0_KERNEL = "encoder.layer.0.output.dense.weight"


def _huggingface_directory(tmp_path, num_layers=2, **config_updates):
    """A tiny Hugging Face directory of a `num_layers` encoder whose config.json gets `config_updates`."""
    from keras_bert_impl.checkpoints import save_huggingface

    directory = tmp_path / "hf"
    save_huggingface(tiny_backbone(num_layers=num_layers), str(directory))
    _update_json(directory / "config.json", config_updates)
    return directory


def _update_json(path, updates):
    document = json.loads(path.read_text())
    document.update(updates)
    path.write_text(json.dumps(document))


def _one_line_error(capsys, *argv):
    status, _, err = run_cli(capsys, *argv)
    assert status == 1 and err.count("\n") == 1 and "Traceback" not in err, (status, err)
    return err


# -- 2. validate before allocating ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_hidden_layers", [1, 3])
def test_fewer_or_more_layers_than_the_weights_are_refused_naming_both(tmp_path, num_hidden_layers):
    from keras_bert_impl.checkpoints import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = _huggingface_directory(tmp_path, num_hidden_layers=num_hidden_layers)
    with pytest.raises(CheckpointError, match=rf"{directory / 'config.json'} does not match the weights in "
                                              rf".*num_hidden_layers is {num_hidden_layers} but the weights have 2 "
                                              r"\(encoder layers 0 to 1\)"):
        BertBackbone.from_pretrained(str(directory))


def test_fewer_layers_are_refused_by_convert_and_predict(tmp_path, capsys):
    from keras_bert_impl.models.classifier import BertClassifier

    directory = tmp_path / "classifier"
    BertClassifier(tiny_backbone(num_layers=2), num_classes=2).save_pretrained(str(directory))
    document = json.loads((directory / "config.json").read_text())
    document["extra"]["backbone_config"]["num_layers"] = 1  # a task model's encoder config lives here
    (directory / "config.json").write_text(json.dumps(document))
    expected = "extra.backbone_config.num_layers is 1 but the weights have 2"
    assert expected in _one_line_error(capsys, "convert", "--input", directory, "--output", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert expected in _one_line_error(capsys, "predict", "--model", directory, "--text", "a b")


def test_other_widths_and_tables_are_each_named(tmp_path):
    from keras_bert_impl.checkpoints import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = _huggingface_directory(tmp_path, vocab_size=51, intermediate_size=64, max_position_embeddings=48,
                                       type_vocab_size=3)
    with pytest.raises(CheckpointError) as error:
        BertBackbone.from_pretrained(str(directory))
    message = str(error.value)
    for field, ours, theirs in (("vocab_size", 51, 50), ("intermediate_size", 64, 32),
                                ("max_position_embeddings", 48, 24), ("type_vocab_size", 3, 2)):
        assert f"{field} is {ours} but the weights have {theirs}" in message


def test_original_checkpoint_config_is_checked_against_its_index(tmp_path):
    pytest.importorskip("tensorflow")
    from keras_bert_impl.checkpoints import CheckpointError, read_checkpoint
    from keras_bert_impl.checkpoints.conversion import ORIGINAL, export_tensors
    from keras_bert_impl.checkpoints.name_map import backbone_weight_specs

    backbone = tiny_backbone(num_layers=2)
    tensors = export_tensors(backbone, backbone_weight_specs(2), ORIGINAL)
    write_original_tf_checkpoint(tmp_path / "original", tensors, dict(original_bert_config(backbone),
                                                                      num_hidden_layers=5))
    with pytest.raises(CheckpointError, match="bert_config.json does not match .*num_hidden_layers is 5 but the "
                                              "weights have 2"):
        read_checkpoint(str(tmp_path / "original"))


@pytest.mark.parametrize("updates", [{"num_hidden_layers": 10_000}, {"hidden_size": 1_200_000}])
def test_absurd_config_over_real_weights_is_refused_quickly(tmp_path, capsys, updates):
    directory = _huggingface_directory(tmp_path, **updates)
    start = time.perf_counter()
    error = _one_line_error(capsys, "convert", "--input", directory, "--output", tmp_path / "out")
    assert time.perf_counter() - start < 30
    field, value = next(iter(updates.items()))
    assert f"{field} is {value} but the weights have" in error


@pytest.mark.parametrize("overrides", [{"num_layers": 10_000, "hidden_dim": 4096, "num_heads": 64},
                                       {"hidden_dim": 1_200_000, "num_heads": 2}])
def test_a_config_beyond_memory_is_refused_before_building(overrides):
    from keras_bert_impl.models.backbone import BertBackbone

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"BertBackbone: a model of .* needs [\d.]+ GiB for its weights alone, "
                                         r"more than the [\d.]+ GiB of memory available"):
        BertBackbone(**{**TINY_BACKBONE, "vocabulary_size": 30522, **overrides})
    assert time.perf_counter() - start < 30


def test_memory_estimate_counts_every_weight():
    from keras_bert_impl.checkpoints.conversion import parameter_count

    backbone = tiny_backbone(num_segments=3)
    config = {name: getattr(backbone, name) for name in ("vocabulary_size", "num_layers", "hidden_dim",
                                                         "intermediate_dim", "max_sequence_length", "num_segments")}
    assert parameter_count(config) == sum(int(np.prod(weight.shape)) for weight in backbone.weights)


# -- 3. integrity ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_weight_is_refused_naming_tensor_and_file(tmp_path, capsys, bad):
    from safetensors.numpy import load_file, save_file

    directory = _huggingface_directory(tmp_path)
    weights = str(directory / "model.safetensors")
    tensors = load_file(weights)
    tensors[LAYER_0_KERNEL][1, 2] = bad
    save_file(tensors, weights)
    error = _one_line_error(capsys, "convert", "--input", directory, "--output", tmp_path / "out")
    assert f"{weights}: tensor {LAYER_0_KERNEL} holds 1 NaN or infinite values" in error


def test_our_format_records_a_digest_and_a_flipped_bit_is_refused(tmp_path, capsys):
    from keras_bert_impl.checkpoints.native import file_sha256
    from keras_bert_impl.models.backbone import BertBackbone

    directory = tmp_path / "ours"
    tiny_backbone().save_pretrained(str(directory))
    weights = directory / "model.safetensors"
    recorded = json.loads((directory / "config.json").read_text())["sha256"]
    assert recorded == {"model.safetensors": file_sha256(weights)}
    BertBackbone.from_pretrained(str(directory))  # verifies
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x04  # one bit of the last tensor's data: a finite value, only the digest can tell
    weights.write_bytes(bytes(data))
    error = _one_line_error(capsys, "convert", "--input", directory, "--output", tmp_path / "out")
    assert f"{weights}: its SHA-256 differs from the one {directory / 'config.json'} recorded" in error


def test_a_directory_without_a_digest_still_loads(tmp_path):
    from keras_bert_impl.models.backbone import BertBackbone

    directory = tmp_path / "ours"
    tiny_backbone().save_pretrained(str(directory))
    document = json.loads((directory / "config.json").read_text())
    del document["sha256"]
    (directory / "config.json").write_text(json.dumps(document))
    assert BertBackbone.from_pretrained(str(directory)).num_layers == TINY_BACKBONE["num_layers"]


def _sharded(tmp_path, shard):
    """A Hugging Face directory whose index maps every weight to `shard`."""
    from safetensors.numpy import load_file

    directory = _huggingface_directory(tmp_path)
    names = load_file(str(directory / "model.safetensors"))
    os.replace(directory / "model.safetensors", tmp_path / "outside.safetensors")
    index = {"metadata": {}, "weight_map": {name: shard for name in names}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    return directory


@pytest.mark.parametrize("shard", ["../outside.safetensors", "{outside}", "/nonexistent/x.safetensors",
                                   "link.safetensors"])
def test_shard_names_outside_the_folder_are_refused_alike(tmp_path, capsys, shard):
    directory = _sharded(tmp_path, shard.format(outside=tmp_path / "outside.safetensors"))
    if shard == "link.safetensors":
        os.symlink(tmp_path / "outside.safetensors", directory / shard)
    error = _one_line_error(capsys, "convert", "--input", directory, "--output", tmp_path / "out")
    # The same words whether or not the outside file exists: nothing tells what lies outside.
    assert "which is not a file name inside" in error and "does not exist" not in error


def test_shards_inside_the_folder_load(tmp_path):
    from keras_bert_impl.models.backbone import BertBackbone

    directory = _sharded(tmp_path, "model-00001-of-00001.safetensors")
    os.replace(tmp_path / "outside.safetensors", directory / "model-00001-of-00001.safetensors")
    assert BertBackbone.from_pretrained(str(directory)).load_report.missing == []


def test_a_single_tensor_of_another_shape_is_still_named(tmp_path):
    from safetensors.numpy import load_file, save_file

    from keras_bert_impl.checkpoints import CheckpointError
    from keras_bert_impl.models.backbone import BertBackbone

    directory = _huggingface_directory(tmp_path)  # sizes agree with the config: only the pooler is off
    tensors = load_file(str(directory / "model.safetensors"))
    tensors["pooler.dense.weight"] = tensors["pooler.dense.weight"][:8].copy()
    save_file(tensors, str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"shape mismatch for pooler.dense.weight \(8, 16\)"):
        BertBackbone.from_pretrained(str(directory))


def test_a_keras_hub_preset_with_fewer_layers_than_its_weights_is_refused(tmp_path):
    pytest.importorskip("keras_hub")
    from keras_bert_impl.models.backbone import BertBackbone

    tiny_backbone(num_layers=2).save_to_preset(str(tmp_path / "preset"))
    config_path = tmp_path / "preset" / "config.json"
    document = json.loads(config_path.read_text())
    document["config"]["num_layers"] = 1
    config_path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=rf"{config_path} does not match the weights in .*model.weights.h5: "
                                         r"config.num_layers is 1 but the weights have 2 encoder layers"):
        BertBackbone.from_preset(str(tmp_path / "preset"))
