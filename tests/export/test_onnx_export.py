"""ONNX export: every task model exported once, then run in ONNX Runtime against the Keras model.

The TensorFlow pass converts in-process (Keras' ONNX export, tf2onnx); the JAX and torch passes export through
the TensorFlow worker subprocess. Each file is exported once and run at two batch sizes and two lengths, so a
graph with a batch size or length baked in fails.
"""

import collections
import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.registry import TASK_CLASSES
from tests.cli.cli_test_utils import run_cli
from tests.helpers import random_batch, to_numpy

onnxruntime = pytest.importorskip("onnxruntime", reason="ONNX export tests need the `onnx` extra")
onnx = pytest.importorskip("onnx", reason="ONNX export tests need the `onnx` extra")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "the", "was", "##s"]
TINY = dict(vocabulary_size=32, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=32, initializer_range=0.5)  # a wide initializer: outputs differ clearly
# (batch size, length) pairs one exported file must serve.
SHAPES = [(1, 5), (4, 19)]
TOLERANCE = 1e-4
IS_TENSORFLOW = keras.backend.backend() == "tensorflow"


def _backbone(hidden_activation="gelu"):
    """Exact GELU by default, as every Hugging Face BERT (TensorFlow computes it with `Erfc`)."""
    from keras_bert_impl.models.backbone import BertBackbone

    return BertBackbone(**TINY, hidden_activation=hidden_activation)


# Task models built with only a backbone (and a class count): each is exported with no special case.
LATER_TASKS = {"BertTokenClassifier": ("token_classifier", dict(num_classes=5)),
               "BertMultipleChoice": ("multiple_choice", {})}
MODEL_NAMES = ["classifier", "question_answerer", "pretrainer", "backbone"] + [
    name for class_name, (name, _) in LATER_TASKS.items() if class_name in TASK_CLASSES]
NUM_CHOICES = 3


def _models():
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.models.registry import task_class

    models = {
        "classifier": BertClassifier(_backbone(), 3, labels=["negative", "neutral", "positive"]),
        "question_answerer": BertQuestionAnswerer(_backbone()),
        "pretrainer": BertPretrainer(_backbone()),
        "backbone": _backbone("gelu_approximate"),  # the original BERT's tanh GELU
    }
    for class_name, (name, arguments) in LATER_TASKS.items():
        if class_name in TASK_CLASSES:
            models[name] = task_class(class_name)(_backbone(), **arguments)
    return models


def _inputs(model, batch_size, length, seed):
    """Random padded inputs of the model's own rank: `(B, T)`, or `(B, C, T)` for multiple choice."""
    choices = NUM_CHOICES if len(model.input["token_ids"].shape) == 3 else 1
    lengths = [max(2, length - 3 * row) for row in range(batch_size * choices)]  # padded rows of every batch
    batch = random_batch(batch_size * choices, length, TINY["vocabulary_size"], seed=seed, lengths=lengths)
    if choices > 1:
        batch = {name: value.reshape(batch_size, choices, length) for name, value in batch.items()}
    if "mask_positions" in model.input:
        batch["mask_positions"] = np.random.default_rng(seed).integers(0, length, (batch_size, 3)).astype("int32")
    return batch


def _assert_session_matches(model, path):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    for seed, (batch_size, length) in enumerate(SHAPES):
        inputs = _inputs(model, batch_size, length, seed)
        expected = model(inputs)
        expected = {name: to_numpy(value) for name, value in expected.items()} if isinstance(expected, dict) \
            else {"logits": to_numpy(expected)}
        assert sorted(names) == sorted(expected)
        for name, value in zip(names, session.run(names, inputs)):
            assert value.shape == expected[name].shape, (name, batch_size, length)
            np.testing.assert_allclose(value, expected[name], atol=TOLERANCE, rtol=0, err_msg=name)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Every task model exported once in this (TensorFlow) process."""
    from keras_bert_impl.export import export_onnx

    keras.utils.set_random_seed(3)
    root = tmp_path_factory.mktemp("onnx")
    models = _models()
    return {name: (model, export_onnx(model, root / f"{name}.onnx")) for name, model in models.items()}


@pytest.mark.backend_independent
@pytest.mark.slow
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_onnx_runtime_matches_keras_at_two_batch_sizes_and_lengths(exports, name):
    model, path = exports[name]
    _assert_session_matches(model, path)


@pytest.mark.backend_independent
@pytest.mark.slow
def test_inputs_dynamic_axes_and_metadata(exports):
    model, path = exports["classifier"]
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {item.name: item for item in session.get_inputs()}
    assert sorted(inputs) == ["padding_mask", "segment_ids", "token_ids"]
    assert inputs["padding_mask"].type == "tensor(bool)" and inputs["token_ids"].type == "tensor(int32)"
    assert all(isinstance(dim, str) for item in inputs.values() for dim in item.shape)  # (B, T) both dynamic
    metadata = session.get_modelmeta().custom_metadata_map
    assert metadata["keras_bert_impl.model_class"] == "BertClassifier"
    assert json.loads(metadata["keras_bert_impl.labels"]) == ["negative", "neutral", "positive"]
    assert metadata["keras_bert_impl.max_sequence_length"] == str(TINY["max_sequence_length"])
    assert sorted(os.listdir(os.path.dirname(path))) == sorted(f"{name}.onnx" for name in exports)


@pytest.mark.backend_independent
@pytest.mark.slow
def test_preprocessor_output_feeds_the_session_as_it_is(exports):
    """The tokenizer stays outside ONNX: the preprocessor's dict is the session's input."""
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    model, path = exports["classifier"]
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    inputs = preprocessor((["the film was good", "bad"], ["good films", "the film"]))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], inputs)
    np.testing.assert_allclose(logits, to_numpy(model(inputs)), atol=TOLERANCE, rtol=0)


@pytest.mark.slow
@pytest.mark.skipif(IS_TENSORFLOW, reason="the TensorFlow pass exports in-process; the tests above cover that path")
def test_export_from_jax_or_torch_through_the_tensorflow_worker(tmp_path):
    from keras_bert_impl.export import export_onnx
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    model = BertQuestionAnswerer(_backbone())
    path = export_onnx(model, tmp_path / "qa.onnx")
    _assert_session_matches(model, path)
    assert os.listdir(tmp_path) == ["qa.onnx"]


@pytest.mark.backend_independent
def test_bad_inputs_raise_one_clear_line_and_write_nothing(tmp_path, monkeypatch):
    from keras_bert_impl.export import ExportError, export_onnx, onnx_export
    from keras_bert_impl.utils.atomic_io import OutputExistsError

    model = _backbone()
    with pytest.raises(ExportError, match="export_onnx supports BertBackbone.*got keras.*Sequential"):
        export_onnx(keras.Sequential([keras.layers.Dense(1)]), tmp_path / "x.onnx")
    existing = tmp_path / "existing.onnx"
    existing.write_bytes(b"an earlier file")
    with pytest.raises(OutputExistsError, match="existing.onnx already exists.*pass --overwrite"):
        export_onnx(model, existing)
    with pytest.raises(OutputExistsError, match="is a folder; an ONNX export is one file"):
        export_onnx(model, tmp_path)
    monkeypatch.setattr(onnx_export, "EXPORT_PACKAGES", ("onnx", "no_such_onnx_converter"))
    with pytest.raises(ExportError, match=r"no_such_onnx_converter not installed.*keras-bert-impl\[onnx\]"):
        export_onnx(model, tmp_path / "x.onnx")
    assert existing.read_bytes() == b"an earlier file" and sorted(os.listdir(tmp_path)) == ["existing.onnx"]



@pytest.mark.backend_independent
def test_without_the_onnx_extra_the_package_imports_and_export_onnx_says_what_to_install(tmp_path):
    """onnx is the optional `onnx` extra: importing the export package must not need it (only exporting does)."""
    import subprocess
    import sys

    script = ("import sys; sys.modules['onnx'] = None\n"  # `import onnx` raises, as where it is not installed
              "from keras_bert_impl.export import ExportError, export_onnx, export_saved_model\n"
              "from keras_bert_impl.models.backbone import BertBackbone\n"
              "model = BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)\n"
              "try:\n    export_onnx(model, sys.argv[1])\nexcept ExportError as error:\n    print(error)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "model.onnx")], capture_output=True,
                            text=True, timeout=600, cwd=root,
                            env=dict(os.environ, KERAS_BACKEND="tensorflow", PYTHONPATH=root))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "onnx not installed" in result.stdout and 'pip install "keras-bert-impl[onnx]"' in result.stdout
    assert not (tmp_path / "model.onnx").exists()

@pytest.mark.backend_independent
def test_failed_conversion_keeps_the_previous_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    """A conversion that dies half-way (here: after writing part of the file) leaves `path` as it was."""
    from keras_bert_impl.export import onnx_export

    def half_written(self, filepath, **kwargs):
        with open(filepath, "wb") as handle:
            handle.write(b"half a graph")
        raise RuntimeError("conversion failed")

    monkeypatch.setattr(keras.Model, "export", half_written)
    path = tmp_path / "model.onnx"
    path.write_bytes(b"the previous export")
    with pytest.raises(RuntimeError, match="conversion failed"):
        onnx_export._export_with_tensorflow(_backbone(), "BertBackbone", str(path), None)
    assert path.read_bytes() == b"the previous export" and os.listdir(tmp_path) == ["model.onnx"]


@pytest.mark.backend_independent
def test_an_invalid_converted_graph_is_an_error_and_writes_nothing(tmp_path, monkeypatch):
    """A graph ONNX's checker refuses (here: any; in practice a TensorFlow op tf2onnx left unconverted)."""
    import onnx

    from keras_bert_impl.export import ExportError, onnx_export

    def refuse(proto, full_check=False):
        raise onnx.checker.ValidationError("No Op registered for Erfc with domain_version of 17")

    monkeypatch.setattr(keras.Model, "export", lambda self, filepath, **kwargs: onnx.save(
        onnx.helper.make_model(onnx.helper.make_graph([], "empty", [], [])), filepath))
    monkeypatch.setattr(onnx.checker, "check_model", refuse)
    with pytest.raises(ExportError, match="graph tf2onnx made of BertBackbone is invalid .No Op registered for Erfc"):
        onnx_export._export_with_tensorflow(_backbone(), "BertBackbone", str(tmp_path / "model.onnx"), None)
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent
@pytest.mark.slow
def test_cli_exports_a_model_directory_to_onnx(capsys, tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier

    model = BertClassifier(_backbone(), 2)
    model.save_pretrained(tmp_path / "model")
    output = tmp_path / "out" / "classifier.onnx"
    status, out, err = run_cli(capsys, "export", "--model", tmp_path / "model", "--format", "onnx",
                               "--output", output, "--optimize")
    assert status == 0 and f"Exported BertClassifier to {output}" in out, err
    _assert_session_matches(model, str(output))
    assert "SkipLayerNormalization" in {node.op_type for node in onnx.load(output).graph.node}
    status, _, err = run_cli(capsys, "export", "--model", tmp_path / "model", "--format", "onnx",
                             "--output", output)
    assert status == 1 and "already exists" in err and "--overwrite" in err
    status, _, err = run_cli(capsys, "export", "--model", tmp_path / "model", "--format", "onnx",
                             "--output", tmp_path / "other.onnx", "--sequence-length", "16")
    assert status == 1 and "--sequence-length apply to SavedModel exports" in err
    assert not (tmp_path / "other.onnx").exists()
    status, _, err = run_cli(capsys, "export", "--model", tmp_path / "model", "--output", tmp_path / "saved",
                             "--optimize")
    assert status == 1 and "--optimize applies to ONNX exports" in err and not (tmp_path / "saved").exists()


@pytest.mark.backend_independent
@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "question_answerer"])
def test_onnx_runtime_optimizer_fuses_layer_norms_gelus_and_attention_with_the_same_outputs(tmp_path, name):
    """`optimize=True`: ONNX Runtime's transformer optimizer fuses each layer norm with its residual add (2 per
    block, 1 after the embeddings) and each GELU with its bias, and each self-attention block becomes one
    `Attention` node (the classifier's last block attends from [CLS] alone: left unfused); outputs match the
    unfused file and Keras, padded rows included."""
    from keras_bert_impl.export import export_onnx
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    keras.utils.set_random_seed(5)
    backbone = BertBackbone(**{**TINY, "num_layers": 2}, hidden_activation="gelu")
    model = BertClassifier(backbone, 3, labels=["negative", "neutral", "positive"]) if name == "classifier" \
        else BertQuestionAnswerer(backbone)
    rng = np.random.default_rng(5)
    for weight in model.weights:  # non-zero biases and betas, as a trained model (tf2onnx folds zero adds)
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    plain = export_onnx(model, tmp_path / "plain.onnx")
    fused = export_onnx(model, tmp_path / "fused.onnx", optimize=True)
    fused_nodes = collections.Counter(node.op_type for node in onnx.load(fused).graph.node
                                      if node.domain == "com.microsoft")
    attention_blocks = 1 if name == "classifier" else 2
    assert fused_nodes == {"SkipLayerNormalization": 2 * 2 + 1, "BiasGelu": 2, "Attention": attention_blocks}, \
        fused_nodes
    assert not any(node.domain for node in onnx.load(plain).graph.node)  # the default file: standard ops only
    _assert_session_matches(model, fused)
    inputs = _inputs(model, 4, 19, seed=7)
    inputs["padding_mask"][-1] = False  # a row of padding alone: masked as the layer masks it
    output_names = sorted(model.output) if isinstance(model.output, dict) else ["logits"]
    expected = onnxruntime.InferenceSession(plain, providers=["CPUExecutionProvider"]).run(output_names, inputs)
    session = onnxruntime.InferenceSession(fused, providers=["CPUExecutionProvider"])
    for value, expected_value in zip(session.run(output_names, inputs), expected):
        np.testing.assert_allclose(value, expected_value, atol=TOLERANCE, rtol=0)
    if name == "classifier":
        metadata = session.get_modelmeta().custom_metadata_map
        assert json.loads(metadata["keras_bert_impl.labels"]) == ["negative", "neutral", "positive"]
