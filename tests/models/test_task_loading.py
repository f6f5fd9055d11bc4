"""`models.load_task`: the task a checkpoint holds (ours, Hugging Face, original TF), loaded with its
preprocessor; and the tasks' own decoding of `predict`'s logits (`decode_predictions`)."""

import json

import numpy as np
import pytest

from keras_bert_impl.checkpoints import CheckpointError
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier, top_classes
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from keras_bert_impl.models.task_loading import detect_task, load_task
from tests.helpers import tiny_backbone

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "where", "is", "it", "?"]


def _save_with_vocabulary(model, directory):
    model.save_pretrained(directory)
    (directory / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    return str(directory)


# -- detection ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_class, expected", [
    (lambda backbone: BertClassifier(backbone, 3), "BertClassifier"),
    (lambda backbone: BertQuestionAnswerer(backbone), "BertQuestionAnswerer"),
    (lambda backbone: BertMultipleChoice(backbone), "BertMultipleChoice"),
    (lambda backbone: backbone, "BertBackbone"),
])
def test_our_directories_are_loaded_as_the_class_they_store(tmp_path, model_class, expected):
    model_class(tiny_backbone()).save_pretrained(tmp_path)
    assert detect_task(str(tmp_path)) == expected
    loaded = load_task(tmp_path)
    assert type(loaded).__name__ == expected and loaded.load_report.missing == []


def test_task_picks_another_class_of_the_same_checkpoint(tmp_path):
    BertClassifier(tiny_backbone(), 2).save_pretrained(tmp_path)
    assert isinstance(load_task(tmp_path, task="backbone"), BertBackbone)
    assert isinstance(load_task(tmp_path, task="question-answerer"), BertQuestionAnswerer)
    assert isinstance(load_task(tmp_path, task=BertClassifier), BertClassifier)
    with pytest.raises(ValueError, match="Unknown task 'regressor'; expected None .* or one of BertBackbone"):
        load_task(tmp_path, task="regressor")


@pytest.mark.backend_independent
def test_an_unknown_stored_class_is_refused_naming_the_file_and_task(tmp_path):
    BertClassifier(tiny_backbone(), 2).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "class_name": "BertRegressor"}))
    with pytest.raises(CheckpointError, match=r"config.json: class_name 'BertRegressor' is not one of .*pass task="):
        load_task(tmp_path)
    assert isinstance(load_task(tmp_path, task="backbone"), BertBackbone)


@pytest.mark.backend_independent
@pytest.mark.parametrize("architecture, expected", [
    ("BertForSequenceClassification", "BertClassifier"),
    ("BertForQuestionAnswering", "BertQuestionAnswerer"),
    ("BertForTokenClassification", "BertTokenClassifier"),
    ("BertForMultipleChoice", "BertMultipleChoice"),
    ("BertForPreTraining", "BertPretrainer"),
    ("BertModel", "BertBackbone"),
    ("BertForMaskedLM", "BertBackbone"),
])
def test_huggingface_architectures_name_the_task(tmp_path, architecture, expected):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": [architecture]}))
    assert detect_task(str(tmp_path)) == expected


@pytest.mark.backend_independent
def test_a_huggingface_model_that_is_no_bert_task_is_refused_in_one_line(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(ValueError) as error:
        detect_task(str(tmp_path))
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "config.json") in message and "pass task=" in message


@pytest.mark.parametrize("architecture, expected_class", [
    ("BertForTokenClassification", "BertTokenClassifier"),
    ("BertForMultipleChoice", "BertMultipleChoice"),
])
def test_huggingface_task_directories_load_with_their_heads(tmp_path, architecture, expected_class):
    transformers = pytest.importorskip("transformers")
    from tests.models.task_test_utils import tiny_huggingface_config

    getattr(transformers, architecture)(tiny_huggingface_config(num_labels=3)).save_pretrained(tmp_path / "hf")
    model = load_task(str(tmp_path / "hf"))
    assert type(model).__name__ == expected_class
    assert not [name for name in model.load_report.missing if not name.startswith("pooler")]


@pytest.mark.backend_independent  # writing an original TF checkpoint
def test_original_checkpoints_are_read_by_their_head_variables(tmp_path):
    from keras_bert_impl.checkpoints import backbone_weight_specs
    from tests.models.task_test_utils import write_original_checkpoint

    backbone = tiny_backbone()
    specs = backbone_weight_specs(backbone.num_layers)
    qa_specs = specs + BertQuestionAnswerer.head_specs()
    write_original_checkpoint(tmp_path / "qa", BertQuestionAnswerer(backbone), qa_specs, backbone)
    write_original_checkpoint(tmp_path / "encoder", backbone, specs, backbone)
    assert detect_task(str(tmp_path / "qa" / "bert_model.ckpt")) == "BertQuestionAnswerer"
    assert isinstance(load_task(str(tmp_path / "qa" / "bert_model.ckpt")), BertQuestionAnswerer)
    assert detect_task(str(tmp_path / "encoder" / "bert_model.ckpt")) == "BertBackbone"


@pytest.mark.backend_independent  # writing an original TF checkpoint
def test_multiple_choice_starts_from_an_original_encoder_checkpoint(tmp_path):
    # The original format names no multiple-choice head: the encoder loads and the head keeps its initial values.
    from keras_bert_impl.checkpoints import backbone_weight_specs
    from tests.models.task_test_utils import write_original_checkpoint

    backbone = tiny_backbone()
    write_original_checkpoint(tmp_path, backbone, backbone_weight_specs(backbone.num_layers), backbone)
    model = BertMultipleChoice.from_pretrained(str(tmp_path / "bert_model.ckpt"), preprocessor=None)
    np.testing.assert_array_equal(model.backbone.weights[0].numpy(), backbone.weights[0].numpy())
    assert model.load_report.missing == ["multiple_choice_dense/kernel", "multiple_choice_dense/bias"]


@pytest.mark.backend_independent
def test_a_path_that_is_no_checkpoint_is_named(tmp_path):
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'nope'} does not exist"):
        load_task(tmp_path / "nope")


# -- the preprocessor --------------------------------------------------------------------------------------

@pytest.mark.backend_independent
def test_without_a_vocabulary_no_preprocessor_and_raw_text_says_why(tmp_path):
    BertClassifier(tiny_backbone(), 2).save_pretrained(tmp_path)
    assert load_task(tmp_path).preprocessor is None
    with pytest.raises(ValueError, match=r"raw text needs a preprocessor, and none is attached: no vocab.txt beside"):
        load_task(tmp_path, require_preprocessor=True)
    with pytest.raises(ValueError, match=r"preprocessor settings \['sequence_length'\] needs a preprocessor"):
        load_task(tmp_path, sequence_length=8)


@pytest.mark.backend_independent
def test_a_backbone_takes_no_raw_text(tmp_path):
    _save_with_vocabulary(tiny_backbone(vocabulary_size=len(VOCABULARY)), tmp_path)
    with pytest.raises(ValueError, match="a BertBackbone takes no raw text"):
        load_task(tmp_path, require_preprocessor=True)


def test_the_saved_preprocessor_is_attached_with_the_settings_asked_for(tmp_path):
    path = _save_with_vocabulary(BertClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), 2), tmp_path)
    model = load_task(path, require_preprocessor=True)
    assert model.preprocessor.sequence_length == 24  # min(128, the position table)
    assert load_task(path, sequence_length=8).preprocessor.sequence_length == 8
    assert load_task(path, sequence_length=1000).preprocessor.sequence_length == 24  # at most the position table
    with pytest.raises(ValueError, match="BertPreprocessor has no setting doc_stride; its settings are "
                                         "sequence_length, truncation."):
        load_task(path, doc_stride=4)


@pytest.mark.backend_independent
@pytest.mark.parametrize("content", ["{not json", '{"config": {}}', "[1, 2]"])
def test_a_malformed_preprocessor_json_is_one_line_naming_it(tmp_path, content):
    path = _save_with_vocabulary(BertClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), 2), tmp_path)
    (tmp_path / "preprocessor.json").write_text(content)
    with pytest.raises(ValueError, match="preprocessor.json: (malformed JSON|required key|the document must be)"):
        load_task(path)


def test_question_answering_settings_replace_the_saved_ones(tmp_path):
    from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    saved = BertQuestionAnsweringPreprocessor(BertTokenizer(VOCABULARY), sequence_length=24, doc_stride=8,
                                              max_query_length=16, null_score_diff_threshold=2.5)
    BertQuestionAnswerer(tiny_backbone(vocabulary_size=len(VOCABULARY)), preprocessor=saved).save_pretrained(tmp_path)
    model = load_task(tmp_path, sequence_length=12, version_2_with_negative=True)
    preprocessor = model.preprocessor
    assert (preprocessor.sequence_length, preprocessor.doc_stride, preprocessor.null_score_diff_threshold) == (12, 8, 2.5)
    assert preprocessor.max_query_length == 8 and preprocessor.version_2_with_negative  # 12 - 4: a window keeps context
    assert load_task(tmp_path, max_query_length=100).preprocessor.max_query_length == 20  # 24 - 4
    answer = model.predict("where is it ?", "it is good film .", verbose=0)
    assert answer["text"] == "it is good film ."[answer["start"]:answer["end"]]


@pytest.mark.backend_independent
def test_a_vocabulary_larger_than_the_embedding_table_is_refused(tmp_path):
    path = _save_with_vocabulary(BertClassifier(tiny_backbone(vocabulary_size=8), 2), tmp_path)
    with pytest.raises(ValueError, match="vocab.txt has 12 tokens, more than the model embeds \\(8\\)"):
        load_task(path)


# -- decoding ----------------------------------------------------------------------------------------------

@pytest.mark.backend_independent
def test_top_classes_is_the_softmax_argmax():
    logits = np.array([[0.0, 2.0, -1.0], [3.0, 3.0, 0.0]], "float32")
    class_ids, probabilities = top_classes(logits)
    expected = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    assert class_ids.tolist() == [1, 0]
    np.testing.assert_allclose(probabilities, expected[[0, 1], [1, 0]], rtol=1e-6)


@pytest.mark.backend_independent
def test_classifier_decodes_labels_class_ids_and_scores():
    named = BertClassifier(tiny_backbone(), 2, labels=["negative", "positive"])
    decoded = named.decode_predictions(np.array([[0.0, 1.0], [2.0, 0.0]]))
    assert [row["label"] for row in decoded] == ["positive", "negative"]
    assert [row["class_id"] for row in decoded] == [1, 0]
    assert decoded[0]["probability"] == pytest.approx(1 / (1 + np.exp(-1.0)), rel=1e-6)
    assert BertClassifier(tiny_backbone(), 3).decode_predictions([[0.0, 0.0, 5.0]])[0]["label"] == "2"
    assert BertClassifier(tiny_backbone(), 1).decode_predictions([[1.25], [-0.5]]) == [{"score": 1.25},
                                                                                        {"score": -0.5}]


@pytest.mark.backend_independent
def test_multiple_choice_decodes_the_chosen_ending():
    decoded = BertMultipleChoice(tiny_backbone()).decode_predictions(np.array([[0.0, 0.0, 3.0, 0.0]]))
    assert decoded[0]["choice"] == 2
    assert decoded[0]["probability"] == pytest.approx(np.exp(3.0) / (np.exp(3.0) + 3), rel=1e-6)


def test_predict_then_decode_on_raw_text(tmp_path):
    path = _save_with_vocabulary(BertClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), 2,
                                                labels=["bad", "good"]), tmp_path)
    model = load_task(path)
    logits = model.predict(["good film", "bad film"], verbose=0)
    decoded = model.decode_predictions(logits)
    assert [row["class_id"] for row in decoded] == np.argmax(logits, axis=-1).tolist()
    assert {row["label"] for row in decoded} <= {"bad", "good"}


# -- without TensorFlow ------------------------------------------------------------------------------------

WITHOUT_TENSORFLOW = """
import tempfile

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.task_loading import load_task

directory = tempfile.mkdtemp()
backbone = BertBackbone(vocabulary_size=12, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                        max_sequence_length=16)
BertClassifier(backbone, 2, labels=["bad", "good"]).save_pretrained(directory)
with open(directory + "/vocab.txt", "w") as handle:
    handle.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [str(i) for i in range(7)]))
model = load_task(directory)
assert model.preprocessor is None  # a vocabulary, but no TensorFlow: token ids only
assert model.decode_predictions([[0.0, 1.0]])[0]["label"] == "good"
try:
    load_task(directory, require_preprocessor=True)
except ValueError as error:
    assert "TensorFlow is not installed" in str(error), error
else:
    raise AssertionError("raw text without TensorFlow was not refused")
assert not [name for name in sys.modules if name.split(".")[0] in BLOCKED]
print("LOAD_TASK_WITHOUT_TENSORFLOW_OK")
"""


def test_load_task_and_decoding_work_without_tensorflow():
    import os
    import subprocess
    import sys

    import keras

    from tests.test_layering import BLOCK_TENSORFLOW, REPO_ROOT

    if keras.backend.backend() == "tensorflow":
        pytest.skip("runs in the JAX and torch passes")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO_ROOT] + [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]))
    result = subprocess.run([sys.executable, "-c", BLOCK_TENSORFLOW + WITHOUT_TENSORFLOW], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "LOAD_TASK_WITHOUT_TENSORFLOW_OK" in result.stdout, result.stderr[-4000:]
