"""`keras-bert evaluate`: the official SQuAD scores of a predictions file, GLUE-style scores of a predictions TSV."""

import json

import pytest

from tests.cli.cli_test_utils import run_cli

pytestmark = pytest.mark.backend_independent

CONTEXT = "math.sqrt returns the square root of x. math.floor returns the floor of x as an Integral."


def squad_file(tmp_path, version="1.1", impossible=False):
    questions = [
        {"id": "q1", "question": "What does math.sqrt return?",
         "answers": [{"text": "the square root of x", "answer_start": 18}]},
        {"id": "q2", "question": "What does math.floor return?",
         "answers": [{"text": "the floor of x as an Integral", "answer_start": 59}]},
    ]
    if impossible:
        questions.append({"id": "q3", "question": "What does math.ceil return?", "answers": [],
                          "is_impossible": True})
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": version, "data": [{"title": "math", "paragraphs": [
        {"context": CONTEXT, "qas": questions}]}]}))
    return path


def write_json(path, content):
    path.write_text(json.dumps(content))
    return path


def test_squad_v1_exact_match_and_f1(capsys, tmp_path):
    # q1 exact after normalisation ("The" is an article, "." punctuation); q2 shares 2 of its 4 normalised tokens.
    predictions = write_json(tmp_path / "predictions.json", {"q1": "The square root of x.", "q2": "floor of y"})
    status, out, _ = run_cli(capsys, "evaluate", "--squad-file", squad_file(tmp_path), "--predictions", predictions,
                             "--output-file", tmp_path / "scores.json")
    assert status == 0
    scores = json.loads(out)
    f1_q2 = 2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5)  # prediction "floor y", gold "floor x as integral"
    assert scores["exact_match"] == pytest.approx(50.0)
    assert scores["f1"] == pytest.approx(100 * (1 + f1_q2) / 2)
    assert json.loads((tmp_path / "scores.json").read_text()) == scores


def test_squad_v2_with_null_odds(capsys, tmp_path):
    predictions = write_json(tmp_path / "predictions.json", {"q1": "the square root of x", "q2": "", "q3": ""})
    null_odds = write_json(tmp_path / "null_odds.json", {"q1": -3.0, "q2": 1.0, "q3": 2.0})
    status, out, _ = run_cli(capsys, "evaluate", "--squad-file", squad_file(tmp_path, "v2.0", impossible=True),
                             "--predictions", predictions, "--null-odds", null_odds)
    assert status == 0
    scores = json.loads(out)
    assert scores["exact"] == pytest.approx(200 / 3) and scores["HasAns_exact"] == pytest.approx(50.0)
    assert scores["NoAns_exact"] == pytest.approx(100.0) and "best_f1_thresh" in scores


def test_squad_predictions_for_unknown_file_fail_with_one_line(capsys, tmp_path):
    status, _, err = run_cli(capsys, "evaluate", "--squad-file", squad_file(tmp_path), "--predictions",
                             tmp_path / "none.json")
    assert status == 1 and err.count("\n") == 1 and "none.json" in err


def test_classification_predictions_tsv_against_a_glue_file(capsys, tmp_path):
    gold = tmp_path / "dev.tsv"
    gold.write_text("sentence\tlabel\ngood film\t1\nbad film\t0\nfine film\t1\ndull film\t0\n")
    predictions = tmp_path / "dev_predictions.tsv"
    predictions.write_text("index\tprediction\n0\t1\n1\t0\n2\t0\n3\t0\n")
    status, out, _ = run_cli(capsys, "evaluate", "--gold-file", gold, "--task", "sst2", "--predictions", predictions)
    assert status == 0 and json.loads(out) == {"accuracy": 0.75}

    status, out, _ = run_cli(capsys, "evaluate", "--gold-file", gold, "--label-column", "label",
                             "--predictions", predictions)
    assert status == 0 and json.loads(out) == pytest.approx({"accuracy": 0.75, "f1": 2 / 3})


def test_classification_row_count_mismatch(capsys, tmp_path):
    gold = tmp_path / "dev.tsv"
    gold.write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n")
    predictions = tmp_path / "p.tsv"
    predictions.write_text("index\tprediction\n0\t1\n")
    status, _, err = run_cli(capsys, "evaluate", "--gold-file", gold, "--task", "sst2", "--predictions", predictions)
    assert status == 1 and "has 1 predictions but" in err
