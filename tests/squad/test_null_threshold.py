import math

import numpy as np
import pytest

from keras_bert_impl.squad import SquadPredictions, evaluate_v2, tune_null_threshold

pytestmark = pytest.mark.backend_independent


def dataset(golds):
    qas = [{"id": f"q{i}", "question": "?", "answers": [{"text": g} for g in gold]} for i, gold in enumerate(golds)]
    return {"data": [{"paragraphs": [{"context": "c", "qas": qas}]}]}


def decoded(best_non_null, null_odds):
    return SquadPredictions({}, {}, dict(null_odds), dict(best_non_null), 0.0, True)


def random_case(rng, n=40):
    golds, best = [], {}
    for i in range(n):
        answerable = rng.random() < 0.6
        golds.append(["red fox", "the fox"] if answerable else [])
        best[f"q{i}"] = str(rng.choice(["red fox", "fox", "blue whale", "the red fox jumps"]))
    # Rounded odds: ties between questions.
    odds = {f"q{i}": float(np.round(rng.normal(), 1)) for i in range(n)}
    return dataset(golds), best, odds


@pytest.mark.parametrize("metric", ["f1", "exact"])
def test_tuned_threshold_is_the_best_and_reproduces_its_score(rng, metric):
    data, best, odds = random_case(rng)
    tuned = tune_null_threshold(data, best, odds, metric=metric)
    reference = decoded(best, odds)
    candidates = sorted(set(odds.values()))
    candidates = [math.nextafter(candidates[0], -math.inf)] + candidates
    scores = [evaluate_v2(data, reference.with_null_threshold(t).predictions)[metric] for t in candidates]
    best_index = int(np.argmax(scores))  # first maximum: the lowest threshold wins ties
    assert tuned.threshold == candidates[best_index]
    got = evaluate_v2(data, reference.with_null_threshold(tuned.threshold).predictions)
    assert getattr(tuned, metric) == pytest.approx(max(scores), abs=1e-9)
    assert (tuned.exact, tuned.f1) == (pytest.approx(got["exact"], abs=1e-9), pytest.approx(got["f1"], abs=1e-9))
    assert tuned.total == 40 and tuned.metric == metric
    assert getattr(tuned, metric) >= evaluate_v2(data, reference.with_null_threshold(0.0).predictions)[metric]


def test_matches_official_best_f1_when_odds_are_distinct(rng):
    data, best, _ = random_case(rng)
    odds = {qas_id: float(value) for qas_id, value in zip(best, rng.permutation(len(best)) * 0.25 - 3.0)}
    official = evaluate_v2(data, best, na_probs=odds)
    tuned = tune_null_threshold(data, best, odds)
    assert tuned.f1 == pytest.approx(official["best_f1"], abs=1e-9)
    if official["best_f1"] > official["NoAns_total"] * 100 / official["total"]:
        assert tuned.threshold == official["best_f1_thresh"]


def test_hand_worked_sweep():
    data = dataset([["Paris"], [], ["Rome"], []])
    best = {"q0": "Paris", "q1": "Lyon", "q2": "Milan", "q3": "Nice"}
    # Answering q0 (+1) at -3, q1 (-1) at -1, q2 (0) at 0, q3 (-1) at 4; all unanswered scores 2 of 4.
    tuned = tune_null_threshold(data, best, {"q0": -3.0, "q1": -1.0, "q2": 0.0, "q3": 4.0})
    assert (tuned.threshold, tuned.exact, tuned.f1) == (-3.0, 75.0, 75.0)
    # Everything unanswered is best: the threshold is just below the smallest odds.
    tuned = tune_null_threshold(dataset([[], []]), {"q0": "x", "q1": "y"}, {"q0": 1.0, "q1": 2.0})
    assert tuned.threshold < 1.0 and tuned.threshold == math.nextafter(1.0, -math.inf) and tuned.f1 == 100.0


def test_infinite_odds_stay_unanswered():
    data = dataset([["Paris"], []])
    tuned = tune_null_threshold(data, {"q0": "Paris", "q1": ""}, {"q0": -1.0, "q1": math.inf})
    assert (tuned.threshold, tuned.f1) == (-1.0, 100.0)


def test_bad_arguments():
    data = dataset([["Paris"]])
    with pytest.raises(ValueError, match="metric must be one of"):
        tune_null_threshold(data, {"q0": "Paris"}, {"q0": 0.0}, metric="accuracy")
    with pytest.raises(ValueError, match="no null odds, e.g. 'q0'"):
        tune_null_threshold(data, {"q0": "Paris"}, {})
    with pytest.raises(ValueError, match="NaN"):
        tune_null_threshold(data, {"q0": "Paris"}, {"q0": math.nan})
    with pytest.raises(ValueError, match="nothing to tune on"):
        tune_null_threshold(data, {}, {})
