"""The evaluator against hand-worked cases of the official SQuAD scripts' semantics."""

import json
import logging

import pytest

from keras_bert_impl.squad import (
    SquadFormatError,
    evaluate_squad_files,
    evaluate_v1,
    evaluate_v2,
    exact_match_score,
    f1_score,
    normalize_answer,
)
from keras_bert_impl.squad.squad_evaluation import find_best_threshold

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Cat!", "cat"),
        ("  a  b  ", "b"),
        ("An apple and the pear", "apple and pear"),
        ("theater another", "theater another"),  # articles only as whole words
        ("the.cat", "thecat"),  # punctuation goes before articles are looked for
        ("the-end", "theend"),
        ("A.B.C.", "abc"),
        ("1,000 km/h", "1000 kmh"),
        ("an_apple", "anapple"),
        ("Über Café", "über café"),  # lowercased, accents kept
        ("\u2019quoted\u2019 \u2014 dash", "\u2019quoted\u2019 \u2014 dash"),  # only ASCII punctuation is removed
        ("a\tb\nc", "b c"),
        ("The", ""),
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match():
    assert exact_match_score("The Eiffel  Tower.", "eiffel tower") == 1
    assert exact_match_score("Eiffel Towers", "eiffel tower") == 0
    assert exact_match_score("", "the") == 1


def test_f1_hand_worked():
    # pred tokens [cat, sat, on, mat], gold [cat, on, mat]: P = 3/4, R = 1.
    assert f1_score("the cat sat on the mat", "a cat on a mat") == pytest.approx(2 * 0.75 / 1.75)
    # Repeated tokens count once per match: common = min(2, 1).
    assert f1_score("cat cat", "cat") == pytest.approx(2 / 3)
    assert f1_score("dog", "cat") == 0.0


def test_f1_empty_answers_v2_versus_v1():
    assert f1_score("", "") == 1.0
    assert f1_score("a", "the") == 1.0  # both normalize to no tokens
    assert f1_score("", "cat") == 0.0 and f1_score("cat", "") == 0.0
    assert f1_score("", "", empty_answers_match=False) == 0.0
    assert f1_score("the cat", "cat", empty_answers_match=False) == 1.0


def dataset(*questions):
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": list(questions)}]}]}


def qa(qas_id, *golds):
    return {"id": qas_id, "question": "?", "answers": [{"text": g, "answer_start": 0} for g in golds]}


def test_evaluate_v1_max_over_gold_and_missing_predictions(caplog):
    data = dataset(qa("a", "Denver Broncos", "the Broncos"), qa("b", "blue whale"), qa("c", "x"))
    with caplog.at_level(logging.WARNING):
        result = evaluate_v1(data, {"a": "Broncos", "b": "whale"})
    # a: exact 1 (vs "the Broncos"); b: F1 2/3; c: unanswered, counted as 0.
    assert result == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(100 * (1 + 2 / 3) / 3)}
    assert "Unanswered question c" in caplog.text


def test_evaluate_v1_needs_gold_answers():
    with pytest.raises(ValueError, match="Question 'a' has no gold answers"):
        evaluate_v1(dataset(qa("a")), {"a": ""})


FIVE_QUESTIONS = dataset(
    qa("q1", "Paris", "the city of Paris"),
    qa("q2", "blue whale"),
    qa("q3"),
    qa("q4"),
    qa("q5", "the"),  # has an answer, but it normalizes to "": gold becomes [""]
)
FIVE_PREDICTIONS = {"q1": "Paris", "q2": "whale", "q3": "", "q4": "something", "q5": ""}
FIVE_NA_PROBS = {"q1": 0.1, "q2": 0.9, "q3": 0.8, "q4": 0.95, "q5": 0.2}


def test_evaluate_v2_hand_worked_without_na_probs():
    result = evaluate_v2(FIVE_QUESTIONS, FIVE_PREDICTIONS)
    assert list(result) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                            "NoAns_exact", "NoAns_f1", "NoAns_total"]
    assert result["exact"] == pytest.approx(60.0)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 + 0 + 1) / 5)
    assert (result["total"], result["HasAns_total"], result["NoAns_total"]) == (5, 3, 2)
    assert result["HasAns_exact"] == pytest.approx(200 / 3)
    assert result["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 3)
    assert result["NoAns_exact"] == result["NoAns_f1"] == pytest.approx(50.0)


def test_evaluate_v2_hand_worked_with_na_probs_and_best_thresholds():
    result = evaluate_v2(FIVE_QUESTIONS, FIVE_PREDICTIONS, FIVE_NA_PROBS, na_prob_thresh=0.5)
    # q2, q3, q4 have odds > 0.5: q2 (answerable) scores 0, q3 and q4 (unanswerable) score 1.
    assert result["exact"] == pytest.approx(80.0) and result["f1"] == pytest.approx(80.0)
    # Sweep by odds q1, q5, q3, q2, q4 from 2 (the no-answer questions): exact 3, 4, 4, 4, 3.
    assert result["best_exact"] == pytest.approx(80.0) and result["best_exact_thresh"] == 0.2
    # F1: 3, 4, 4, 4 + 2/3, 3 + 2/3.
    assert result["best_f1"] == pytest.approx(100 * (4 + 2 / 3) / 5) and result["best_f1_thresh"] == 0.9


def test_find_best_threshold_starts_from_all_unanswered():
    # Answering anything only hurts: the official start value 0.0 is returned.
    has_answer = {"a": False, "b": False}
    assert find_best_threshold({"a": "x", "b": ""}, {"a": 0, "b": 1}, {"a": 0.3, "b": 0.7}, has_answer) == (100.0, 0.0)


def test_evaluate_v2_missing_predictions_are_left_out(caplog):
    with caplog.at_level(logging.WARNING):
        result = evaluate_v2(FIVE_QUESTIONS, {"q1": "Paris", "q3": "x"})
    assert "Missing prediction for q2" in caplog.text
    assert (result["total"], result["HasAns_total"], result["NoAns_total"]) == (2, 1, 1)
    assert result["exact"] == pytest.approx(50.0)


def test_evaluate_v2_needs_na_probs_for_every_prediction():
    with pytest.raises(ValueError, match="no no-answer probability, e.g. 'q2'"):
        evaluate_v2(FIVE_QUESTIONS, FIVE_PREDICTIONS, {"q1": 0.0})


def test_evaluate_files_detects_version(tmp_path):
    data_path = tmp_path / "dev.json"
    data_path.write_text(json.dumps(FIVE_QUESTIONS), encoding="utf-8")
    predictions_path = tmp_path / "predictions.json"
    predictions_path.write_text(json.dumps(FIVE_PREDICTIONS), encoding="utf-8")
    odds_path = tmp_path / "null_odds.json"
    odds_path.write_text(json.dumps(FIVE_NA_PROBS), encoding="utf-8")
    result = evaluate_squad_files(str(data_path), str(predictions_path), str(odds_path), na_prob_thresh=0.5)
    assert result == evaluate_v2(FIVE_QUESTIONS, FIVE_PREDICTIONS, FIVE_NA_PROBS, na_prob_thresh=0.5)

    v1 = {"version": "1.1", "data": FIVE_QUESTIONS["data"][:]}
    v1["data"][0] = {"paragraphs": [{"context": "c", "qas": [qa("q1", "Paris"), qa("q2", "blue whale")]}]}
    data_path.write_text(json.dumps(v1), encoding="utf-8")
    assert evaluate_squad_files(str(data_path), str(predictions_path)) == {
        "exact_match": 50.0, "f1": pytest.approx(100 * (1 + 2 / 3) / 2)
    }
    with pytest.raises(ValueError, match="only apply to SQuAD v2.0"):
        evaluate_squad_files(str(data_path), str(predictions_path), str(odds_path))


def test_malformed_predictions_file(tmp_path):
    data_path = tmp_path / "dev.json"
    data_path.write_text(json.dumps(FIVE_QUESTIONS), encoding="utf-8")
    bad = tmp_path / "predictions.json"
    bad.write_text('{"q1": "Paris",\n "q2" "whale"}', encoding="utf-8")
    with pytest.raises(SquadFormatError, match=r"predictions.json: malformed JSON at line 2, column 7"):
        evaluate_squad_files(str(data_path), str(bad))
    bad.write_text('["Paris"]', encoding="utf-8")
    with pytest.raises(SquadFormatError, match="expected a JSON object"):
        evaluate_squad_files(str(data_path), str(bad))
