import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.presets import PRESETS, preset_config
from tests.helpers import TINY_BACKBONE, assert_config_round_trip, random_batch, tiny_backbone, to_numpy


def test_output_shapes_for_any_length_up_to_max():
    backbone = tiny_backbone()
    for length in (4, 11, TINY_BACKBONE["max_sequence_length"]):
        outputs = backbone(random_batch(batch_size=2, sequence_length=length))
        assert tuple(outputs["sequence_output"].shape) == (2, length, 16)
        assert tuple(outputs["pooled_output"].shape) == (2, 16)


def test_padding_does_not_change_real_positions():
    backbone = tiny_backbone(dropout=0.0, attention_dropout=0.0)
    short = random_batch(batch_size=1, sequence_length=6, lengths=[6])
    padded = {key: np.pad(value, ((0, 0), (0, 4))) for key, value in short.items()}
    padded["token_ids"][:, 6:] = 7  # garbage in padded slots must not leak into real positions
    a, b = backbone(short), backbone(padded)
    np.testing.assert_allclose(to_numpy(a["sequence_output"]), to_numpy(b["sequence_output"])[:, :6], atol=1e-5)
    np.testing.assert_allclose(to_numpy(a["pooled_output"]), to_numpy(b["pooled_output"]), atol=1e-5)


def test_pooled_output_is_tanh_dense_of_cls():
    backbone = tiny_backbone()
    outputs = backbone(random_batch())
    kernel, bias = (to_numpy(w) for w in backbone.pooler.weights)
    cls = to_numpy(outputs["sequence_output"])[:, 0]
    np.testing.assert_allclose(to_numpy(outputs["pooled_output"]), np.tanh(cls @ kernel + bias), atol=1e-5)


def test_dropout_only_in_training():
    backbone = tiny_backbone(dropout=0.5)
    batch = random_batch()
    first, second = (to_numpy(backbone(batch)["sequence_output"]) for _ in range(2))
    np.testing.assert_array_equal(first, second)
    trained = to_numpy(backbone(batch, training=True)["sequence_output"])
    assert np.abs(trained - first).max() > 1e-3


def test_config_round_trip_and_from_scratch():
    backbone = tiny_backbone(hidden_activation="gelu", layer_norm_epsilon=1e-6)
    restored = assert_config_round_trip(backbone)
    assert restored.hidden_activation == "gelu" and restored.layer_norm_epsilon == 1e-6
    mini = BertBackbone.from_scratch("mini", vocabulary_size=64, max_sequence_length=32)
    assert (mini.num_layers, mini.hidden_dim, mini.num_heads, mini.intermediate_dim) == (4, 256, 4, 1024)


def test_presets_have_published_sizes():
    sizes = {name: (c["num_layers"], c["hidden_dim"]) for name, c in PRESETS.items()}
    assert sizes == {
        "tiny": (2, 128), "mini": (4, 256), "small": (4, 512),
        "medium": (8, 512), "base": (12, 768), "large": (24, 1024),
    }
    with pytest.raises(ValueError, match="Unknown size 'huge'. Published sizes: tiny, mini"):
        preset_config("huge")


@pytest.mark.parametrize("model_class", ["BertBackbone", "BertClassifier", "BertPretrainer"])
def test_from_preset_refuses_a_size_without_weights_in_one_line(model_class):
    from keras_bert_impl.models.registry import task_class

    with pytest.raises(ValueError) as raised:
        task_class(model_class).from_preset("tiny")
    message = str(raised.value)
    assert "\n" not in message and f"{model_class}.from_scratch('tiny', ...)" in message


@pytest.mark.slow
@pytest.mark.backend_independent  # shapes come from the same build code on every backend
def test_base_preset_parameter_count_matches_bert_base():
    # Hugging Face BertModel (bert-base-uncased, with pooler) has exactly 109,482,240 parameters.
    assert BertBackbone.from_scratch("base").count_params() == 109_482_240


def test_keras_file_save_load_gives_identical_outputs(tmp_path):
    backbone = tiny_backbone()
    batch = random_batch()
    path = os.path.join(tmp_path, "backbone.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertBackbone)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(to_numpy(backbone(batch)[key]), to_numpy(restored(batch)[key]))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_float32_weights_and_close_outputs(policy):
    reference = tiny_backbone()
    mixed = tiny_backbone(dtype=policy)
    mixed.set_weights(reference.get_weights())
    assert all(w.dtype == "float32" for w in mixed.weights)
    batch = random_batch()
    out = mixed(batch)["sequence_output"]
    assert keras.backend.standardize_dtype(out.dtype) == policy.split("_")[1]
    # LayerNorm computes in float32, so outputs stay within half-precision rounding of float32.
    expected = to_numpy(reference(batch)["sequence_output"])
    np.testing.assert_allclose(to_numpy(keras.ops.cast(out, "float32")), expected, atol=0.1)


def test_invalid_configs_are_rejected():
    with pytest.raises(ValueError, match="`hidden_dim` \\(10\\) must be divisible by `num_heads` \\(4\\)"):
        tiny_backbone(hidden_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="`num_layers` must be a positive integer, got 0"):
        tiny_backbone(num_layers=0)
    with pytest.raises(ValueError, match="Unsupported activation"):
        tiny_backbone(hidden_activation="gelu_fast_and_loose")


def test_eager_calls_reject_bad_ids_and_lengths():
    backbone = tiny_backbone()
    batch = random_batch()
    batch["token_ids"][1, 3] = 50
    with pytest.raises(ValueError, match="id 50 at index \\(1, 3\\), outside the vocabulary \\[0, 50\\)"):
        backbone(batch)
    with pytest.raises(ValueError, match="exceeds the position table"):
        backbone(random_batch(sequence_length=TINY_BACKBONE["max_sequence_length"] + 1))


@pytest.mark.slow
def test_one_step_fit_updates_weights():
    backbone = tiny_backbone()
    inputs = backbone.input
    logits = keras.layers.Dense(2, name="probe")(backbone(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = to_numpy(backbone.embeddings.token_embedding.embeddings).copy()
    model.fit(random_batch(batch_size=4), np.array([0, 1, 0, 1]), epochs=1, verbose=0)
    assert np.abs(to_numpy(backbone.embeddings.token_embedding.embeddings) - before).max() > 0


def test_output_positions_give_the_gathered_sequence_output_and_the_same_pooled_output():
    backbone = tiny_backbone(dropout=0.0, attention_dropout=0.0, num_layers=2)
    batch = random_batch(batch_size=3, sequence_length=9)  # varied lengths: padded rows too
    full = backbone(batch)
    positions = np.array([[1, 4, 0], [8, 2, 2], [3, 0, 0]], "int32")
    part = backbone(batch, output_positions=positions)
    expected = np.take_along_axis(to_numpy(full["sequence_output"]), positions[:, :, None], axis=1)
    np.testing.assert_allclose(to_numpy(part["sequence_output"]), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(part["pooled_output"]), to_numpy(full["pooled_output"]), atol=1e-5)
    pooled_only = backbone(batch, output_positions=np.zeros((3, 0), "int32"))
    assert tuple(pooled_only["sequence_output"].shape) == (3, 0, 16)
    np.testing.assert_allclose(to_numpy(pooled_only["pooled_output"]), to_numpy(full["pooled_output"]), atol=1e-5)


def test_output_positions_in_a_functional_model_and_under_jit():
    backbone = tiny_backbone(dropout=0.0, attention_dropout=0.0)
    positions = keras.Input((None,), dtype="int32", name="positions")
    outputs = backbone(dict(backbone.input), output_positions=positions)
    assert tuple(outputs["sequence_output"].shape) == (None, None, 16)
    model = keras.Model({**backbone.input, "positions": positions}, outputs["sequence_output"])
    model.compile(jit_compile=keras.backend.backend() != "torch")
    batch = random_batch(batch_size=2, sequence_length=7)
    chosen = np.array([[2, 5], [1, 1]], "int32")
    got = model.predict_on_batch({**batch, "positions": chosen})
    expected = np.take_along_axis(to_numpy(backbone(batch)["sequence_output"]), chosen[:, :, None], axis=1)
    np.testing.assert_allclose(to_numpy(got), expected, atol=1e-5)


@pytest.mark.parametrize("sequence_length, chosen", [(8, [[1, 6], [0, 3], [2, 2]]), (16, [[], [], []])])
@pytest.mark.slow
def test_output_positions_train_like_gathering_the_full_output(sequence_length, chosen):
    """One SGD step through `output_positions` moves every weight as gathering from the full output does.

    The cases take the last block's two attention paths: projected keys and values (masked slots), and
    `BertSelfAttention._attend_few_queries` ([CLS] alone at T=16; the loss is on the pooled output)."""
    batch = random_batch(batch_size=3, sequence_length=sequence_length)
    chosen = np.array(chosen, "int32").reshape(3, -1)
    output = "sequence_output" if chosen.shape[1] else "pooled_output"
    reference = tiny_backbone(dropout=0.0, attention_dropout=0.0)
    targets = np.random.default_rng(0).normal(size=(3, chosen.shape[1], 16) if chosen.shape[1] else (3, 16))
    models = []
    for use_output_positions in (True, False):
        backbone = BertBackbone.from_config(reference.get_config())
        backbone.set_weights(reference.get_weights())
        positions = keras.Input((None,), dtype="int32", name="positions")
        if use_output_positions:
            outputs = backbone(dict(backbone.input), output_positions=positions)
        else:
            outputs = dict(backbone(dict(backbone.input)))
            outputs["sequence_output"] = keras.ops.take_along_axis(
                outputs["sequence_output"], positions[:, :, None], axis=1
            )
        model = keras.Model({**backbone.input, "positions": positions}, outputs[output])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
        model.fit({**batch, "positions": chosen}, targets.astype("float32"), batch_size=3, epochs=1, verbose=0,
                  shuffle=False)
        models.append(model)
    moved = 0
    for a, b, before in zip(models[0].weights, models[1].weights, reference.weights):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5, err_msg=a.path)
        moved += not np.allclose(to_numpy(a), to_numpy(before))
    assert moved > len(reference.weights) // 2  # a real step


@pytest.mark.parametrize("sequence_length, num_positions", [(6, 3), (24, 0)])  # projected / few-query attention
def test_output_positions_on_an_empty_batch_give_empty_outputs(sequence_length, num_positions):
    backbone = tiny_backbone()
    empty = {key: value[:0] for key, value in random_batch(2, sequence_length).items()}
    outputs = backbone(empty, output_positions=np.zeros((0, num_positions), "int32"))
    assert tuple(outputs["sequence_output"].shape) == (0, num_positions, 16)
    assert tuple(outputs["pooled_output"].shape) == (0, 16)


@pytest.mark.parametrize("sequence_length, num_positions", [(6, 3), (24, 0)])
@pytest.mark.slow
def test_output_positions_of_an_int8_quantized_backbone_match_its_full_output(sequence_length, num_positions):
    # A quantized Dense kernel holds integers, not weights: the last block must let the layer dequantize.
    backbone = tiny_backbone(dropout=0.0, attention_dropout=0.0)
    backbone.quantize("int8")
    batch = random_batch(batch_size=3, sequence_length=sequence_length)
    positions = np.tile(np.arange(1, num_positions + 1, dtype="int32"), (3, 1))
    full, part = backbone(batch), backbone(batch, output_positions=positions)
    expected = np.take_along_axis(to_numpy(full["sequence_output"]), positions[:, :, None], axis=1)
    np.testing.assert_allclose(to_numpy(part["sequence_output"]), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(part["pooled_output"]), to_numpy(full["pooled_output"]), atol=1e-5)
