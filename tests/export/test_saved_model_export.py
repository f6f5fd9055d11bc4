"""SavedModel export: signatures checked in a fresh TensorFlow-only process against the Keras models."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.helpers import random_batch, to_numpy
from tests.training.finetuning_test_utils import VOCABULARY

# A wide initializer makes outputs differ clearly between inputs, so a packing or decoding slip shows.
TINY = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=32,
            initializer_range=0.5)
TEST_VOCABULARY = VOCABULARY + ["cafe", "##s"]
CLASSIFIER_LENGTH = 16
QA_SETTINGS = dict(sequence_length=24, doc_stride=5, max_query_length=6, max_answer_length=6, n_best_size=6)
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
CLIENT = os.path.join(os.path.dirname(__file__), "saved_model_client.py")

LONG_TEXT = " ".join(["the very good dog walked home today ."] * 8)
TEXTS = ["the cat sat on the mat .", "", LONG_TEXT, "Café dogs were GOOD!"]
PAIRS = ["a dog", LONG_TEXT, "", "the tree is green"]
# Invalid UTF-8 is replaced by U+FFFD, which the tokenizer deletes: these read as the Python strings beside.
INVALID_UTF8_TEXT = (b"good \xff film", "good  film")
QA_CONTEXT = (
    "the old house is red and the tree is green . the dog ran far away from berlin today . "
    "the cat sat in paris today . a blue river walked home . the new city was good ."
)
QUESTIONS = ["where is the cat ?", "who ?", "", "where did the dog ran far away from the old red house ?",
             "where is the cat ?", "what is good ?"]
CONTEXTS = [QA_CONTEXT, "", "the dog ran far away .", QA_CONTEXT, "the cat sat in \ufffdparis today .",
            "Café is good"]
INVALID_UTF8_CONTEXT = (4, b"the cat sat in \xffparis today .")  # row 4 of CONTEXTS as raw bytes


def _backbone():
    from keras_bert_impl.models.backbone import BertBackbone

    return BertBackbone(vocabulary_size=len(TEST_VOCABULARY), **TINY)


def _tokenizer(directory):
    from keras_bert_impl.tokenization import BertTokenizer

    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("".join(token + "\n" for token in TEST_VOCABULARY))
    return BertTokenizer(path)


def _packed(tokenizer, texts, pairs=None, length=CLASSIFIER_LENGTH):
    from keras_bert_impl.data.packing import SegmentPacker

    packer = SegmentPacker(length, tokenizer.cls_token_id, tokenizer.sep_token_id, padding="dynamic")
    second = None if pairs is None else tokenizer.tokenize(pairs)
    return packer.pack(tokenizer.tokenize(texts), second)


def _numeric_batch():
    batch = random_batch(batch_size=3, sequence_length=10, vocabulary_size=len(TEST_VOCABULARY))
    return {**batch, "padding_mask": batch["padding_mask"].astype("int32")}


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _bytes(strings):
    return np.array([s if isinstance(s, bytes) else s.encode("utf-8") for s in strings], dtype="S").reshape(-1)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Tiny models of every kind, exported once (TensorFlow backend, in-process path)."""
    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    keras.utils.set_random_seed(7)
    root = tmp_path_factory.mktemp("exports")
    tokenizer = _tokenizer(root)
    models = {
        "backbone": _backbone(),
        "classifier": BertClassifier(_backbone(), 3, labels=["negative", "neutral", "positive"]),
        "regression": BertClassifier(_backbone(), 1),
        "question_answerer": BertQuestionAnswerer(_backbone()),
        "pretrainer": BertPretrainer(_backbone()),
    }
    paths = {}
    for name, model in models.items():
        if name == "question_answerer":
            paths[name] = export_saved_model(model, root / name, tokenizer, **QA_SETTINGS)
        elif name == "pretrainer":
            paths[name] = export_saved_model(model, root / name)
        else:
            paths[name] = export_saved_model(model, root / name, tokenizer, sequence_length=CLASSIFIER_LENGTH)
    return {"root": root, "tokenizer": tokenizer, "models": models, "paths": paths}


def _requests(exports):
    """(request name, model, signature, inputs) of everything the fresh process serves."""
    numeric = _numeric_batch()
    texts = _bytes(TEXTS + [INVALID_UTF8_TEXT[0]])
    contexts = [c.encode("utf-8") for c in CONTEXTS]
    contexts[INVALID_UTF8_CONTEXT[0]] = INVALID_UTF8_CONTEXT[1]
    mask_positions = np.array([[1, 2], [3, 0], [1, 1]], "int32")
    return [
        ("backbone_ids", "backbone", "serve_token_ids", numeric),
        ("backbone_text", "backbone", "serve_text", {"text": texts}),
        ("backbone_pair", "backbone", "serve_text_pair", {"text": _bytes(TEXTS), "text_pair": _bytes(PAIRS)}),
        ("classifier_ids", "classifier", "serve_token_ids", numeric),
        ("classifier_text", "classifier", "serve_text", {"text": texts}),
        ("classifier_default", "classifier", "serving_default", {"text": texts}),
        ("classifier_pair", "classifier", "serve_text_pair", {"text": _bytes(TEXTS), "text_pair": _bytes(PAIRS)}),
        ("regression_text", "regression", "serve_text", {"text": _bytes(TEXTS)}),
        ("qa_ids", "question_answerer", "serve_token_ids", numeric),
        ("qa_text", "question_answerer", "serving_default",
         {"question": _bytes(QUESTIONS), "context": _bytes(contexts)}),
        ("pretrainer_ids", "pretrainer", "serving_default", {**numeric, "mask_positions": mask_positions}),
        ("classifier_empty_batch", "classifier", "serve_text_pair", {"text": _bytes([]), "text_pair": _bytes([])}),
        ("qa_empty_batch", "question_answerer", "serve_text", {"question": _bytes([]), "context": _bytes([])}),
    ]


@pytest.fixture(scope="module")
def served(exports):
    """Run every request in ONE new Python process that imports only tensorflow and tensorflow_text."""
    work = exports["root"] / "client"
    work.mkdir()
    requests, names = [], []
    for name, model_name, signature, inputs in _requests(exports):
        np.savez(work / f"{name}_in.npz", **inputs)
        requests.append({"model_dir": exports["paths"][model_name], "signature": signature,
                         "inputs": str(work / f"{name}_in.npz"), "outputs": str(work / f"{name}_out.npz")})
        names.append(name)
    with open(work / "requests.json", "w", encoding="utf-8") as handle:
        json.dump(requests, handle)
    environment = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    # `saved_model_cli` runs meanwhile: both processes spend most of their time importing TensorFlow.
    cli = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), "show", "--dir",
                            exports["paths"]["classifier"], "--all"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = subprocess.run([sys.executable, CLIENT, str(work / "requests.json"), str(work / "report.json")],
                            env=environment, capture_output=True, text=True, check=False)
    cli_stdout, cli_stderr = cli.communicate()
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = {}
    for name, request in zip(names, requests):
        with np.load(request["outputs"]) as data:
            outputs[name] = {key: data[key] for key in data.files}
    with open(work / "report.json", encoding="utf-8") as handle:
        report = json.load(handle)
    report["saved_model_cli"] = {"returncode": cli.returncode, "stdout": cli_stdout, "stderr": cli_stderr}
    return outputs, report


@pytest.mark.slow
@pytest.mark.backend_independent
def test_fresh_process_imports_neither_keras_nor_package_and_finds_assets(exports, served):
    _, report = served
    assert report["imported"] == []
    for name, path in exports["paths"].items():
        expected = {"export_config.json"} if name == "pretrainer" else {
            "export_config.json", "tokenizer_config.json", "vocab.txt"}
        assert set(report["assets"][path]) == expected
        with open(os.path.join(path, "assets", "export_config.json"), encoding="utf-8") as handle:
            assert json.load(handle) == report["export_config"][path]
    with open(os.path.join(exports["paths"]["classifier"], "assets", "vocab.txt"), encoding="utf-8") as handle:
        assert handle.read().splitlines() == TEST_VOCABULARY
    config = report["export_config"][exports["paths"]["question_answerer"]]
    assert config["model_class"] == "BertQuestionAnswerer"
    assert {key: config["settings"][key] for key in QA_SETTINGS} == QA_SETTINGS
    assert config["signatures"] == ["serve_text", "serve_token_ids", "serving_default"]
    assert report["export_config"][exports["paths"]["classifier"]]["labels"] == ["negative", "neutral", "positive"]


@pytest.mark.slow
@pytest.mark.backend_independent
def test_numeric_signatures_match_keras(exports, served):
    outputs, _ = served
    models = exports["models"]
    numeric = _numeric_batch()
    keras_inputs = {**numeric, "padding_mask": numeric["padding_mask"].astype(bool)}
    backbone = models["backbone"](keras_inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(outputs["backbone_ids"][key], to_numpy(backbone[key]), **TOLERANCE)
    logits = to_numpy(models["classifier"](keras_inputs))
    np.testing.assert_allclose(outputs["classifier_ids"]["logits"], logits, **TOLERANCE)
    np.testing.assert_allclose(outputs["classifier_ids"]["probabilities"], _softmax(logits), **TOLERANCE)
    spans = models["question_answerer"](keras_inputs)
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(outputs["qa_ids"][key], to_numpy(spans[key]), **TOLERANCE)
    mask_positions = np.array([[1, 2], [3, 0], [1, 1]], "int32")
    pretraining = models["pretrainer"]({**keras_inputs, "mask_positions": mask_positions})
    for key in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(outputs["pretrainer_ids"][key], to_numpy(pretraining[key]), **TOLERANCE)


@pytest.mark.slow
@pytest.mark.backend_independent
def test_classifier_text_signatures_match_keras(exports, served):
    outputs, _ = served
    model, tokenizer = exports["models"]["classifier"], exports["tokenizer"]
    # Empty, over-long (truncated to 16 tokens) and invalid-UTF-8 texts are all served.
    logits = to_numpy(model(_packed(tokenizer, TEXTS + [INVALID_UTF8_TEXT[1]])))
    labels = np.array([b"negative", b"neutral", b"positive"])
    for name in ("classifier_text", "classifier_default"):
        served_outputs = outputs[name]
        np.testing.assert_allclose(served_outputs["probabilities"], _softmax(logits), **TOLERANCE)
        assert served_outputs["probabilities"].dtype == np.float32
        np.testing.assert_array_equal(served_outputs["label_id"], logits.argmax(-1))
        np.testing.assert_array_equal(served_outputs["label"], labels[logits.argmax(-1)])
    pair_logits = to_numpy(model(_packed(tokenizer, TEXTS, PAIRS)))
    np.testing.assert_allclose(outputs["classifier_pair"]["probabilities"], _softmax(pair_logits), **TOLERANCE)
    # The pair changes the prediction: the second text really is packed as segment B.
    assert not np.allclose(outputs["classifier_pair"]["probabilities"], outputs["classifier_text"]["probabilities"][:4])

    regression = exports["models"]["regression"]
    scores = to_numpy(regression(_packed(tokenizer, TEXTS)))[:, 0]
    assert set(outputs["regression_text"]) == {"score"}
    np.testing.assert_allclose(outputs["regression_text"]["score"], scores, **TOLERANCE)


@pytest.mark.slow
@pytest.mark.backend_independent
def test_empty_batches_are_served(served):
    outputs, _ = served
    assert outputs["classifier_empty_batch"]["probabilities"].shape == (0, 3)
    assert outputs["classifier_empty_batch"]["label"].shape == (0,)
    assert {key: value.shape for key, value in outputs["qa_empty_batch"].items()} == {
        "answer": (0,), "start_char": (0,), "end_char": (0,), "score": (0,)}


@pytest.mark.slow
@pytest.mark.backend_independent
def test_backbone_text_signatures_match_keras(exports, served):
    outputs, _ = served
    model, tokenizer = exports["models"]["backbone"], exports["tokenizer"]
    for name, packed in (
        ("backbone_text", _packed(tokenizer, TEXTS + [INVALID_UTF8_TEXT[1]])),
        ("backbone_pair", _packed(tokenizer, TEXTS, PAIRS)),
    ):
        expected = model(packed)
        assert outputs[name]["sequence_output"].shape == (len(packed["token_ids"]), CLASSIFIER_LENGTH, 16)
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(outputs[name][key], to_numpy(expected[key]), **TOLERANCE)
        np.testing.assert_array_equal(outputs[name]["padding_mask"], packed["padding_mask"].astype("int32"))


def _python_answers(model, tokenizer, questions, contexts, **settings):
    """Our Python pipeline: windowed features, Keras logits, `decode_squad_predictions`; plus the character
    span of each best answer, read from the features."""
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import SquadExample, decode_squad_predictions

    examples = [SquadExample(str(i), q, c, ()) for i, (q, c) in enumerate(zip(questions, contexts))]
    features = convert_examples_to_features(
        examples, tokenizer, sequence_length=settings["sequence_length"], doc_stride=settings["doc_stride"],
        max_query_length=settings["max_query_length"])
    logits = model(features.inputs())
    start, end = to_numpy(logits["start_logits"]), to_numpy(logits["end_logits"])
    decoded = decode_squad_predictions(
        examples, features, start, end, n_best_size=settings["n_best_size"],
        max_answer_length=settings["max_answer_length"],
        version_2_with_negative=settings.get("version_2_with_negative", False),
        null_score_diff_threshold=settings.get("null_score_diff_threshold", 0.0))
    spans = []
    for index, example in enumerate(examples):
        best = decoded.nbest[example.qas_id][0]
        span = (-1, -1)
        for f in np.flatnonzero(features.example_index == index):
            pairs = (start[f][:, None] == best["start_logit"]) & (end[f][None] == best["end_logit"])
            for s, e in zip(*np.nonzero(pairs)):
                if features.token_char_starts[f, s] >= 0 and features.token_char_ends[f, e] >= 0 and e >= s:
                    span = (int(features.token_char_starts[f, s]), int(features.token_char_ends[f, e]))
        spans.append(span)
    return examples, features, decoded, spans


@pytest.mark.slow
@pytest.mark.backend_independent
def test_question_answering_text_signature_matches_python_decoding(exports, served):
    outputs, _ = served
    served_outputs = outputs["qa_text"]
    examples, features, decoded, spans = _python_answers(
        exports["models"]["question_answerer"], exports["tokenizer"], QUESTIONS, CONTEXTS, **QA_SETTINGS)
    assert np.bincount(features.example_index)[0] >= 5  # the long context really is windowed
    answers = [decoded.predictions[example.qas_id] for example in examples]
    assert [a.decode("utf-8") for a in served_outputs["answer"].tolist()] == answers
    assert any(answers) and "" in answers  # both a found span and "no valid span" (the empty context)
    for index, (answer, (start, end)) in enumerate(zip(answers, spans)):
        assert (served_outputs["start_char"][index], served_outputs["end_char"][index]) == (start, end)
        if answer:
            assert CONTEXTS[index][start:end] == answer
            best = decoded.nbest[examples[index].qas_id][0]
            np.testing.assert_allclose(served_outputs["score"][index], best["start_logit"] + best["end_logit"],
                                       **TOLERANCE)
        else:
            assert served_outputs["score"][index] == -np.inf
    assert served_outputs["start_char"].dtype == np.int64


@pytest.mark.slow
@pytest.mark.backend_independent
def test_question_answering_null_answers_follow_the_threshold(exports):
    """SQuAD v2.0 decoding in the graph (traced in-process; the fresh-process test covers save and load)."""
    import tensorflow as tf

    from keras_bert_impl.export.serving_signatures import build_serving_module

    model, tokenizer = exports["models"]["question_answerer"], exports["tokenizer"]
    questions, contexts = QUESTIONS[:4], CONTEXTS[:4]
    settings = {**QA_SETTINGS, "version_2_with_negative": True}
    examples, _, decoded, _ = _python_answers(model, tokenizer, questions, contexts, **settings)
    odds = np.array([decoded.null_odds[example.qas_id] for example in examples])
    finite = np.isfinite(odds)
    # A threshold between the odds gives both outcomes: "" for some questions, the best span for others.
    threshold = float(np.median(odds[finite]))
    decoded = decoded.with_null_threshold(threshold)
    expected = [decoded.predictions[example.qas_id] for example in examples]
    assert "" in expected and any(expected)
    _, signatures = build_serving_module(model, "question_answerer", tokenizer,
                                         {**settings, "null_score_diff_threshold": threshold})
    served_outputs = signatures["serve_text"](question=tf.constant(questions), context=tf.constant(contexts))
    assert [a.decode("utf-8") for a in served_outputs["answer"].numpy().tolist()] == expected
    np.testing.assert_allclose(served_outputs["null_odds"].numpy()[finite], odds[finite], **TOLERANCE)
    is_null = np.array([answer == "" for answer in expected])
    np.testing.assert_array_equal(served_outputs["start_char"].numpy()[is_null], -1)


@pytest.mark.slow
@pytest.mark.backend_independent
@pytest.mark.parametrize("model_name, inputs, message", [
    ("classifier", {"text": TEXTS[:2], "text_pair": PAIRS[:1]}, "text and text_pair must have the same batch size"),
    ("question_answerer", {"question": QUESTIONS[:1], "context": CONTEXTS[:2]},
     "question and context must have the same batch size"),
])
def test_text_pairs_of_unequal_batch_sizes_fail_with_a_clear_error(exports, model_name, inputs, message):
    import tensorflow as tf

    from keras_bert_impl.export.serving_signatures import build_serving_module

    settings = ({**QA_SETTINGS, "version_2_with_negative": False} if model_name == "question_answerer"
                else {"sequence_length": CLASSIFIER_LENGTH})
    kind = "question_answerer" if model_name == "question_answerer" else "classifier"
    _, signatures = build_serving_module(exports["models"][model_name], kind, exports["tokenizer"], settings)
    signature = signatures["serve_text_pair" if kind == "classifier" else "serve_text"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        signature(**{name: tf.constant(value) for name, value in inputs.items()})


@pytest.mark.slow
@pytest.mark.backend_independent
def test_saved_model_cli_lists_the_signatures(served):
    cli = served[1]["saved_model_cli"]  # `saved_model_cli show --dir <classifier export> --all`
    assert cli["returncode"] == 0, cli["stderr"][-3000:]
    for signature in ("serve_token_ids", "serve_text", "serve_text_pair", "serving_default"):
        assert f"signature_def['{signature}']" in cli["stdout"]
    for name in ("token_ids", "segment_ids", "padding_mask", "text_pair", "probabilities", "label_id"):
        assert f"['{name}']" in cli["stdout"]


def _snapshot(directory):
    files = {}
    for folder, _, names in os.walk(directory):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                files[os.path.relpath(os.path.join(folder, name), directory)] = handle.read()
    return files


@pytest.mark.slow
@pytest.mark.backend_independent
def test_failed_export_leaves_previous_export_and_no_leftovers(exports, tmp_path, monkeypatch):
    import tensorflow as tf

    from keras_bert_impl.export import export_saved_model

    target = tmp_path / "target"
    shutil.copytree(exports["paths"]["pretrainer"], target)
    before = _snapshot(target)

    def save_then_fail(module, path, signatures=None, options=None):
        with open(os.path.join(path, "saved_model.pb"), "wb") as handle:
            handle.write(b"partial")
        raise OSError("simulated: disk full while writing the SavedModel")

    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    model = exports["models"]["pretrainer"]
    with pytest.raises(OSError, match="disk full"):
        export_saved_model(model, target, overwrite=True)
    with pytest.raises(OSError, match="disk full"):
        export_saved_model(model, tmp_path / "fresh")
    assert _snapshot(target) == before
    assert sorted(os.listdir(tmp_path)) == ["target"]  # no temporary directories, no half-written "fresh"


@pytest.mark.slow
@pytest.mark.backend_independent
def test_default_path_and_reexport_replaces_the_directory(exports, tmp_path, monkeypatch):
    from keras_bert_impl.export import export_saved_model

    monkeypatch.chdir(tmp_path)
    model = exports["models"]["pretrainer"]
    path = export_saved_model(model)
    assert path == str(tmp_path / "saved_models" / model.name)
    with open(os.path.join(path, "stale_file.txt"), "w", encoding="utf-8") as handle:
        handle.write("from an older export")
    with pytest.raises(FileExistsError, match="holds a previous SavedModel; refusing to replace it"):
        export_saved_model(model)
    assert export_saved_model(model, overwrite=True) == path
    assert "stale_file.txt" not in os.listdir(path)
    assert {"saved_model.pb", "variables", "assets"} <= set(os.listdir(path))
    assert sorted(os.listdir(tmp_path / "saved_models")) == [model.name]


@pytest.mark.backend_independent
def test_unexportable_inputs_raise_clear_errors(tmp_path):
    from keras_bert_impl.export import ExportError, export_saved_model
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    with pytest.raises(ExportError, match="supports BertBackbone"):
        export_saved_model(keras.Sequential([keras.layers.Dense(1)]), tmp_path / "x")
    small = BertBackbone(vocabulary_size=10, **TINY)
    with pytest.raises(ExportError, match="tokenizer has 45 tokens"):
        export_saved_model(small, tmp_path / "x", _tokenizer(tmp_path))
    with pytest.raises(ExportError, match="position table"):
        export_saved_model(small, tmp_path / "x", sequence_length=64)
    with pytest.raises(ExportError, match="apply only to BertQuestionAnswerer"):
        export_saved_model(small, tmp_path / "x", doc_stride=8)
    with pytest.raises(TypeError, match="unknown options"):
        export_saved_model(small, tmp_path / "x", strides=8)
    with pytest.raises(ExportError, match="apply only to BertTokenClassifier"):
        export_saved_model(small, tmp_path / "x", stride=8)
    with pytest.raises(ExportError, match="must exceed max_query_length"):
        export_saved_model(BertQuestionAnswerer(_backbone()), tmp_path / "x", max_query_length=30)
    assert os.listdir(tmp_path) == ["vocab.txt"]


@pytest.mark.backend_independent
def test_failing_tensorflow_worker_raises_with_its_output(tmp_path, monkeypatch):
    """The JAX / torch path: a worker that fails (here: cannot even start) becomes an ExportError quoting it."""
    from keras_bert_impl.export import ExportError, tensorflow_subprocess

    model = _backbone()
    monkeypatch.setattr(tensorflow_subprocess, "WORKER_MODULE", "no_such_bert_export_worker")
    with pytest.raises(ExportError, match=r"worker failed \(exit code 1\)(.|\n)*no_such_bert_export_worker"):
        tensorflow_subprocess.export_in_tensorflow_subprocess(
            model, "BertBackbone", "saved_model", str(tmp_path / "out"), {"sequence_length": 8})

    def broken_save(path):
        raise OSError("read-only file system")

    monkeypatch.setattr(model, "save_pretrained", broken_save)
    with pytest.raises(ExportError, match="saving it for the TensorFlow export worker failed"):
        tensorflow_subprocess.export_in_tensorflow_subprocess(
            model, "BertBackbone", "saved_model", str(tmp_path / "out"), {"sequence_length": 8})
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() == "tensorflow",
                    reason="the TensorFlow pass exports in-process; the backend_independent tests cover that path")
def test_export_from_jax_or_torch_through_the_tensorflow_worker(tmp_path):
    """Under JAX and torch, export goes through `save_pretrained` and the TensorFlow export worker subprocess."""
    import tensorflow as tf

    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.models.classifier import BertClassifier

    tokenizer = _tokenizer(tmp_path)
    model = BertClassifier(_backbone(), 2, labels=["no", "yes"])
    path = export_saved_model(model, tmp_path / "exported", tokenizer, sequence_length=CLASSIFIER_LENGTH)
    served = tf.saved_model.load(path)
    outputs = served.signatures["serve_text_pair"](text=tf.constant(TEXTS), text_pair=tf.constant(PAIRS))
    expected = _softmax(to_numpy(model(_packed(tokenizer, TEXTS, PAIRS))))
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, **TOLERANCE)
    assert outputs["label"].numpy().tolist() == [[b"no", b"yes"][i] for i in expected.argmax(-1)]
    with open(os.path.join(path, "assets", "export_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["settings"] == {"sequence_length": CLASSIFIER_LENGTH}
    assert sorted(os.listdir(tmp_path)) == ["exported", "vocab.txt"]
