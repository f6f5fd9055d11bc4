"""`keras-bert predict` on tiny saved tasks: load_task -> model.predict(texts) -> the task's decoding, in the
output formats `keras-bert evaluate` reads."""

import json

import numpy as np
import pytest

from tests.cli.cli_test_utils import SPECIAL_TOKENS, run_cli
from tests.helpers import tiny_backbone

VOCABULARY = SPECIAL_TOKENS + ["good", "bad", "film", "where", "is", "the", "cat", "?", ".", "on", "mat"]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """A labelled classifier, a regression model, a question answerer and a backbone, each with vocab.txt; and a
    classifier without one."""
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.tokenization import BertTokenizer

    root = tmp_path_factory.mktemp("predict_models")
    size = len(VOCABULARY)
    models = {"classifier": BertClassifier(tiny_backbone(vocabulary_size=size), 2, labels=["negative", "positive"]),
              "regression": BertClassifier(tiny_backbone(vocabulary_size=size), 1),
              "answerer": BertQuestionAnswerer(tiny_backbone(vocabulary_size=size)),
              "backbone": tiny_backbone(vocabulary_size=size)}
    for name, model in models.items():
        model.save_pretrained(root / name)
        BertTokenizer(VOCABULARY).save_pretrained(root / name)
    models["classifier"].save_pretrained(root / "no_vocabulary")
    return root


def _rows(out):
    return [line.split("\t") for line in out.strip().split("\n")]


def test_classifier_lines_carry_the_label_and_its_softmax_probability(capsys, model_dirs):
    import keras

    from keras_bert_impl.models.task_loading import load_task

    texts = ["good film", "the cat is bad"]
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "classifier", "--text", texts[0],
                               "--text", texts[1])
    assert status == 0, err
    model = load_task(model_dirs / "classifier")
    logits = keras.ops.convert_to_numpy(model(model.preprocessor(texts)))
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    for index, (row, text) in enumerate(zip(_rows(out), texts)):
        class_id = int(np.argmax(logits[index]))
        assert row == [str(index), ["negative", "positive"][class_id], f"{probabilities[index, class_id]:.4f}", text]


def test_pairs_are_shown_with_a_bar_and_may_not_mix_with_single_texts(capsys, model_dirs):
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "classifier", "--text", "good film\tbad film")
    assert status == 0, err
    assert _rows(out)[0][3] == "good film | bad film"
    status, _, err = run_cli(capsys, "predict", "--model", model_dirs / "classifier", "--text", "good\tfilm",
                             "--text", "bad film")
    assert status == 1 and "Mix of single texts and TAB-separated pairs" in err


def test_output_file_has_a_header_and_evaluate_scores_it(capsys, model_dirs, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("good film\nbad film\nthe cat\n")
    predictions = tmp_path / "predictions.tsv"
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "classifier", "--input-file", texts,
                               "--output-file", predictions)
    assert status == 0 and out == f"Predictions written to {predictions}\n", err
    lines = predictions.read_text().splitlines()
    assert lines[0] == "index\tprediction\tprobability\ttext" and len(lines) == 4
    predicted = [line.split("\t")[1] for line in lines[1:]]
    gold = tmp_path / "gold.tsv"
    gold.write_text("sentence\tlabel\n" + "".join(f"x\t{label}\n" for label in predicted[:2] + ["negative"]))
    status, out, err = run_cli(capsys, "evaluate", "--gold-file", gold, "--label-column", "label",
                               "--predictions", predictions)
    assert status == 0, err
    assert json.loads(out)["accuracy"] == pytest.approx((2 + (predicted[2] == "negative")) / 3)


def test_regression_prints_the_score(capsys, model_dirs):
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "regression", "--text", "good film")
    assert status == 0, err
    index, score, probability, text = _rows(out)[0]
    assert (index, probability, text) == ("0", "", "good film") and len(score.split(".")[1]) == 6


@pytest.mark.slow
def test_question_answerer_answers_from_the_context_and_a_squad_file(capsys, model_dirs, tmp_path):
    context = "the cat is on the mat ."
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "answerer", "--question", "where is the cat ?",
                               "--context", context, "--sequence-length", 16, "--doc-stride", 4)
    assert status == 0, err
    assert out.endswith("\n") and len(out.split("\n")) == 2 and out.strip() in context
    squad = tmp_path / "dev.json"
    questions = [{"id": f"q{index}", "question": "where is the cat ?", "answers": []} for index in range(3)]
    squad.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": questions}]}]}))
    status, out, err = run_cli(capsys, "predict", "--model", model_dirs / "answerer", "--squad-file", squad,
                               "--version-2", "--null-score-diff-threshold=-1e9")
    assert status == 0, err
    assert json.loads(out) == {"q0": "", "q1": "", "q2": ""}  # the null odds always exceed the threshold


@pytest.mark.parametrize("model, flags, status_wanted, message", [
    ("answerer", ("--question", "where?"), 2, "--question needs --context or --context-file"),
    ("classifier", ("--question", "where?", "--context", "here"), 1,
     "holds a BertClassifier, which does not take questions"),
    ("backbone", ("--text", "good"), 1, "holds a BertBackbone, which does not take texts to classify"),
    ("no_vocabulary", ("--text", "good"), 1, "no vocab.txt beside the model"),
])
def test_requests_the_model_cannot_serve_are_refused_in_one_line(capsys, model_dirs, model, flags, status_wanted,
                                                                  message):
    status, _, err = run_cli(capsys, "predict", "--model", model_dirs / model, *flags)
    assert status == status_wanted and message in err
    if status == 1:
        assert err.count("\n") == 1
