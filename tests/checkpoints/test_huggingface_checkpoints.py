"""Parity with Hugging Face `transformers` (torch CPU) on a real pretrained checkpoint and on random ones."""

import json
import os
import shutil

import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError, save_huggingface
from keras_bert_impl.models.backbone import BertBackbone
from tests.helpers import random_batch, real_checkpoint_dir, tiny_backbone, to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", "It was not amused."),
    ("BERT uses WordPiece tokenization, doesn't it?", "Yes: \"unaffable\" -> un ##aff ##able."),
    ("A short one.", None),
    ("Transformers process whole sequences in parallel, attending to every position at once; "
     "padding masks keep the shorter sequences in this batch honest.", None),
]


def encode_real_batch(directory):
    tokenizer = transformers.BertTokenizerFast.from_pretrained(directory)
    first = [a for a, _ in SENTENCES]
    second = [b or "" for _, b in SENTENCES]
    encoded = tokenizer(first, second, padding=True, return_tensors="np")
    for row, (_, b) in enumerate(SENTENCES):
        if b is None:  # single-sentence rows: re-encode without the empty second segment
            single = tokenizer(first[row], return_tensors="np")["input_ids"][0]
            encoded["input_ids"][row] = 0
            encoded["input_ids"][row, : len(single)] = single
            encoded["token_type_ids"][row] = 0
            encoded["attention_mask"][row] = 0
            encoded["attention_mask"][row, : len(single)] = 1
    return encoded


def huggingface_outputs(model, encoded):
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(encoded["input_ids"]),
            token_type_ids=torch.tensor(encoded["token_type_ids"]),
            attention_mask=torch.tensor(encoded["attention_mask"]),
        )
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def our_outputs(backbone, encoded):
    outputs = backbone(
        {
            "token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype(bool),
        }
    )
    return to_numpy(outputs["sequence_output"]), to_numpy(outputs["pooled_output"])


def max_abs_difference(ours, reference, encoded):
    """Max |difference| over real (unpadded) token positions of sequence_output, and pooled_output.

    Outputs at padded positions are not meaningful (every consumer masks them); there both stacks agree
    to ~3e-5 only, because rounding differences are amplified in rows made of [PAD] embeddings.
    """
    real = encoded["attention_mask"].astype(bool)
    sequence = np.abs(ours[0] - reference[0])[real].max()
    return max(float(sequence), float(np.abs(ours[1] - reference[1]).max()))


@pytest.mark.slow
def test_real_checkpoint_matches_transformers_within_1e_5():
    directory = real_checkpoint_dir()
    encoded = encode_real_batch(directory)
    assert encoded["attention_mask"].min() == 0 and encoded["token_type_ids"].max() == 1
    reference = huggingface_outputs(transformers.BertModel.from_pretrained(directory).eval(), encoded)
    backbone = BertBackbone.from_pretrained(directory)
    assert backbone.hidden_activation == "gelu" and backbone.num_layers == 6
    assert backbone.load_report.missing == [] and backbone.load_report.unused == []
    assert max_abs_difference(our_outputs(backbone, encoded), reference, encoded) <= 1e-5


@pytest.mark.slow
def test_round_trip_through_huggingface_format(tmp_path):
    directory = real_checkpoint_dir()
    encoded = encode_real_batch(directory)
    backbone = BertBackbone.from_pretrained(directory)
    exported = os.path.join(tmp_path, "exported")
    save_huggingface(backbone, exported)
    reloaded_hf = transformers.BertModel.from_pretrained(exported).eval()
    assert max_abs_difference(huggingface_outputs(reloaded_hf, encoded), our_outputs(backbone, encoded), encoded) <= 1e-5
    reloaded_ours = BertBackbone.from_pretrained(exported)
    np.testing.assert_array_equal(our_outputs(reloaded_ours, encoded)[0], our_outputs(backbone, encoded)[0])


def random_huggingface_model(hidden_act="gelu", **overrides):
    config = transformers.BertConfig(
        vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=24, max_position_embeddings=20, hidden_act=hidden_act, **overrides,
    )
    torch.manual_seed(0)
    return transformers.BertModel(config).eval()


def hf_batch():
    batch = random_batch(batch_size=3, sequence_length=9, vocabulary_size=60)
    return {
        "input_ids": batch["token_ids"],
        "token_type_ids": batch["segment_ids"],
        "attention_mask": batch["padding_mask"].astype("int64"),
    }


# Each weights file and each activation once: the file is read before, and apart from, the activation.
@pytest.mark.parametrize("hidden_act, ours, weights_file", [("gelu", "gelu", "safetensors"),
                                                            ("gelu_new", "gelu_approximate", "pytorch_bin")])
def test_random_huggingface_checkpoints_load_exactly(tmp_path, hidden_act, ours, weights_file):
    model = random_huggingface_model(hidden_act)
    model.save_pretrained(tmp_path)
    if weights_file == "pytorch_bin":  # transformers 5 writes only safetensors; older releases wrote this
        os.remove(os.path.join(tmp_path, "model.safetensors"))
        torch.save(model.state_dict(), os.path.join(tmp_path, "pytorch_model.bin"))
    backbone = BertBackbone.from_pretrained(str(tmp_path))
    assert backbone.hidden_activation == ours
    encoded = hf_batch()
    assert max_abs_difference(our_outputs(backbone, encoded), huggingface_outputs(model, encoded), encoded) <= 1e-5


def test_writer_output_loads_in_transformers(tmp_path):
    backbone = tiny_backbone(vocabulary_size=60, max_sequence_length=20, hidden_activation="gelu_approximate")
    save_huggingface(backbone, tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["hidden_act"] == "gelu_new" and config["architectures"] == ["BertModel"]
    model = transformers.BertModel.from_pretrained(str(tmp_path / "hf")).eval()
    encoded = hf_batch()
    assert max_abs_difference(our_outputs(backbone, encoded), huggingface_outputs(model, encoded), encoded) <= 1e-5


@pytest.mark.backend_independent
def test_missing_and_corrupt_files_give_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        BertBackbone.from_pretrained(str(tmp_path / "nowhere"))
    random_huggingface_model().save_pretrained(tmp_path / "hf")
    weights = tmp_path / "hf" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="model.safetensors: the file is truncated or corrupt"):
        BertBackbone.from_pretrained(str(tmp_path / "hf"))
    weights.unlink()
    with pytest.raises(CheckpointError, match="config.json but no weights"):
        BertBackbone.from_pretrained(str(tmp_path / "hf"))
    random_huggingface_model().save_pretrained(tmp_path / "hf2")
    (tmp_path / "hf2" / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json: malformed JSON at line 1, column "):
        BertBackbone.from_pretrained(str(tmp_path / "hf2"))


@pytest.mark.backend_independent
def test_config_weights_mismatch_names_field_and_tensor_shape(tmp_path):
    random_huggingface_model().save_pretrained(tmp_path)
    config_path = tmp_path / "config.json"
    config = json.loads(config_path.read_text())
    config["vocab_size"] = 61
    config_path.write_text(json.dumps(config))
    with pytest.raises(
        CheckpointError,
        match=r"config.json does not match the weights .*vocab_size is 61 but the weights have 60 "
        r"\(embeddings.word_embeddings.weight has shape \[60, 16\]\)",
    ):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "field,value,message",
    [
        ("position_embedding_type", "relative_key", "position_embedding_type 'relative_key' is not supported"),
        ("hidden_act", "quick_gelu", "hidden_act 'quick_gelu' is not supported"),
        ("model_type", "roberta", "model_type 'roberta' is not supported"),
    ],
)
def test_unsupported_config_values_are_rejected(tmp_path, field, value, message):
    random_huggingface_model().save_pretrained(tmp_path)
    config_path = tmp_path / "config.json"
    config = json.loads(config_path.read_text())
    config[field] = value
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=message):
        BertBackbone.from_pretrained(str(tmp_path))


@pytest.mark.backend_independent
def test_encoder_weights_missing_from_checkpoint_is_an_error(tmp_path):
    from safetensors.numpy import load_file, save_file

    random_huggingface_model().save_pretrained(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    del tensors["pooler.dense.weight"], tensors["pooler.dense.bias"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="encoder weights missing.*pooler_dense/kernel"):
        BertBackbone.from_pretrained(str(tmp_path))


def test_task_checkpoint_prefix_and_legacy_layer_norm_names(tmp_path):
    """BertForPreTraining-style `bert.` prefixes and old `gamma`/`beta` LayerNorm names load."""
    from safetensors.numpy import load_file, save_file

    model = random_huggingface_model()
    model.save_pretrained(tmp_path / "plain")
    shutil.copytree(tmp_path / "plain", tmp_path / "prefixed")
    tensors = load_file(str(tmp_path / "plain" / "model.safetensors"))
    renamed = {}
    for name, value in tensors.items():
        if "LayerNorm" in name:
            name = name.replace(".weight", ".gamma").replace(".bias", ".beta")
        renamed["bert." + name] = value
    save_file(renamed, str(tmp_path / "prefixed" / "model.safetensors"), metadata={"format": "pt"})
    backbone = BertBackbone.from_pretrained(str(tmp_path / "prefixed"))
    encoded = hf_batch()
    assert max_abs_difference(our_outputs(backbone, encoded), huggingface_outputs(model, encoded), encoded) <= 1e-5
