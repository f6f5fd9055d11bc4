"""`keras-bert convert`: ours -> Hugging Face -> ours keeps every weight; task heads and the tokenizer travel."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.cli.cli_test_utils import SPECIAL_TOKENS, WORDS, run_cli
from tests.helpers import tiny_backbone

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def tiny_classifier_dir(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer

    vocabulary = SPECIAL_TOKENS + [".", *WORDS]
    model = BertClassifier(tiny_backbone(vocabulary_size=len(vocabulary)), num_classes=2, labels=["sad", "happy"])
    path = tmp_path / "classifier"
    model.save_pretrained(path)
    BertTokenizer(vocabulary).save_pretrained(path)
    return path


def test_round_trip_through_huggingface_keeps_every_weight(capsys, tmp_path, tiny_classifier_dir):
    hf_dir, back_dir = tmp_path / "hf", tmp_path / "back"
    status, out, _ = run_cli(capsys, "convert", "--input", tiny_classifier_dir, "--output", hf_dir,
                             "--format", "huggingface")
    assert status == 0 and out.startswith("Converted BertClassifier")
    hf_config = json.loads((hf_dir / "config.json").read_text())
    assert hf_config["architectures"] == ["BertForSequenceClassification"]
    assert hf_config["id2label"] == {"0": "sad", "1": "happy"}
    assert (hf_dir / "vocab.txt").read_text() == (tiny_classifier_dir / "vocab.txt").read_text()

    status, out, _ = run_cli(capsys, "convert", "--input", hf_dir, "--output", back_dir)
    assert status == 0 and "BertClassifier" in out
    original, returned = load_file(tiny_classifier_dir / "model.safetensors"), load_file(back_dir / "model.safetensors")
    assert sorted(original) == sorted(returned)
    for name in original:
        np.testing.assert_allclose(returned[name], original[name], atol=1e-7, err_msg=name)
    assert json.loads((back_dir / "config.json").read_text())["config"]["labels"] == ["sad", "happy"]


def test_model_class_backbone_keeps_only_the_encoder(capsys, tmp_path, tiny_classifier_dir):
    status, out, _ = run_cli(capsys, "convert", "--input", tiny_classifier_dir, "--output", tmp_path / "encoder",
                             "--model-class", "backbone")
    assert status == 0 and out.startswith("Converted BertBackbone")
    assert json.loads((tmp_path / "encoder" / "config.json").read_text())["class_name"] == "BertBackbone"
    assert not any(name.startswith("classifier") for name in load_file(tmp_path / "encoder" / "model.safetensors"))


def test_failure_while_writing_the_tokenizer_leaves_the_previous_output(capsys, tmp_path, tiny_classifier_dir,
                                                                       monkeypatch):
    from keras_bert_impl.tokenization import BertTokenizer

    output = tmp_path / "out"
    assert run_cli(capsys, "convert", "--input", tiny_classifier_dir, "--output", output)[0] == 0
    (output / "previous.txt").write_text("kept")  # a previous output, which convert --overwrite may replace
    before = sorted(p.name for p in output.iterdir())

    def full_disk(self, directory):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BertTokenizer, "save_pretrained", full_disk)
    status, _, err = run_cli(capsys, "convert", "--input", tiny_classifier_dir, "--output", output, "--overwrite")
    assert status != 0 and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classifier", "out"]  # no staging leftovers
    assert sorted(p.name for p in output.iterdir()) == before
