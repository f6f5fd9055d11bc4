"""Automatic tuning of the SQuAD v2.0 null-score threshold on a dev set.

Unlike the official `best_f1_thresh` (computed from predictions already cut at some threshold), the sweep runs
over every question's best non-null answer, so the threshold it returns, given to
`SquadPredictions.with_null_threshold`, reproduces exactly the dev score it reports. A question is answered iff
its null odds are <= the threshold; on ties the lowest threshold wins.
"""

import dataclasses
import logging
import math

from keras_bert_impl.squad.squad_evaluation import raw_scores_v2

logger = logging.getLogger(__name__)

METRICS = ("f1", "exact")


@dataclasses.dataclass(frozen=True)
class TunedNullThreshold:
    """The threshold chosen by `tune_null_threshold` and the dev scores it gives.

    Args:
        threshold: float. Pass as `null_score_diff_threshold`.
        exact: float. Dev exact match (percent) at this threshold.
        f1: float. Dev F1 (percent) at this threshold.
        metric: str. The metric that was maximized ("f1" or "exact").
        total: int. Questions scored.
    """

    threshold: float
    exact: float
    f1: float
    metric: str
    total: int


def tune_null_threshold(dataset, best_non_null, null_odds, metric="f1"):
    """Finds the null-score threshold that maximizes dev F1 (or exact match), SQuAD v2.0.

    Args:
        dataset: dict or list. The dev SQuAD JSON object (or its `data` list) with gold answers.
        best_non_null: dict qas_id -> str. `SquadPredictions.best_non_null`.
        null_odds: dict qas_id -> float. `SquadPredictions.null_odds`.
        metric: str. "f1" or "exact". Defaults to "f1".

    Returns:
        `TunedNullThreshold`.

    Example:
    >>> data = [{"paragraphs": [{"qas": [{"id": "a", "answers": [{"text": "Paris"}]},
    ...                                  {"id": "b", "answers": []}]}]}]
    >>> tuned = tune_null_threshold(data, {"a": "Paris", "b": "Lyon"}, {"a": -2.0, "b": 3.0})
    >>> tuned.threshold, tuned.f1
    (-2.0, 100.0)
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}.")
    exact_answered, f1_answered = raw_scores_v2(dataset, best_non_null)
    if not exact_answered:
        raise ValueError("No question of the SQuAD dataset has a prediction; nothing to tune on.")
    exact_null, f1_null = raw_scores_v2(dataset, {qas_id: "" for qas_id in exact_answered})
    missing = [qas_id for qas_id in exact_answered if qas_id not in null_odds]
    if missing:
        raise ValueError(f"{len(missing)} predicted questions have no null odds, e.g. {missing[0]!r}.")
    if any(math.isnan(null_odds[qas_id]) for qas_id in exact_answered):
        raise ValueError("The null odds contain NaN; check the model's logits.")

    # Questions with infinite odds (no non-null candidate at all) stay unanswered at every threshold.
    by_odds = sorted((qas_id for qas_id in exact_answered if math.isfinite(null_odds[qas_id])), key=null_odds.get)
    exact, f1 = sum(exact_null.values()), sum(f1_null.values())
    lowest = null_odds[by_odds[0]] if by_odds else 0.0
    best = (math.nextafter(lowest, -math.inf), exact, f1)
    index = 0
    while index < len(by_odds):
        odds = null_odds[by_odds[index]]
        while index < len(by_odds) and null_odds[by_odds[index]] == odds:
            qas_id = by_odds[index]
            exact += exact_answered[qas_id] - exact_null[qas_id]
            f1 += f1_answered[qas_id] - f1_null[qas_id]
            index += 1
        if (f1 > best[2]) if metric == "f1" else (exact > best[1]):
            best = (odds, exact, f1)
    total = len(exact_answered)
    threshold, exact, f1 = best
    logger.info("Tuned null threshold %.4f: exact %.2f, F1 %.2f on %d questions.", threshold,
                100.0 * exact / total, 100.0 * f1 / total, total)
    return TunedNullThreshold(float(threshold), 100.0 * exact / total, 100.0 * f1 / total, metric, total)
