"""SQuAD v1.1 and v2.0 evaluation with the semantics of the official evaluation scripts.

Written independently; it reproduces the official `evaluate-v1.1.py` and `evaluate-v2.0.py` numbers, corner
cases included: v1.1 scores an unanswered question 0, v2.0 leaves it out of the total (and, unlike the official
script, which raises, out of the HasAns/NoAns splits).
"""

import collections
import logging
import re
import string

from keras_bert_impl.squad.squad_reader import SquadFormatError, load_squad_json, scorable_squad_json, squad_questions

logger = logging.getLogger(__name__)

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Normalizes an answer as the official SQuAD scripts do: lowercase, drop ASCII punctuation and a/an/the,
    collapse whitespace.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction, ground_truth):
    """1 if the normalized prediction equals the normalized gold answer, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(ground_truth))


def f1_score(prediction, ground_truth, empty_answers_match=True):
    """Token-overlap F1 in [0, 1] between the normalized `prediction` and `ground_truth` strings.

    Args:
        empty_answers_match: bool. v2.0 (True): two empty answers score 1; v1.1 (False): they score 0.
            Defaults to True.

    Example:
    >>> round(f1_score("the cat sat", "a cat sat down"), 4)
    0.8
    """
    prediction_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    if empty_answers_match and (not prediction_tokens or not gold_tokens):
        return float(prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(prediction_tokens), num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(dataset):
    """(qas_id, gold answer texts) of every question, in file order; `SquadFormatError` if unscorable."""
    scorable_squad_json(dataset, source="the SQuAD dataset")
    for _, _, _, question in squad_questions(dataset, source="the SQuAD dataset"):
        yield question["id"], [answer["text"] for answer in question.get("answers", [])]


def evaluate_v1(dataset, predictions):
    """SQuAD v1.1 exact match and F1, as the official `evaluate-v1.1.py`.

    Args:
        dataset: dict or list. The SQuAD JSON object, or its `data` list of articles.
        predictions: dict qas_id -> predicted text.

    Returns:
        dict `{"exact_match": float, "f1": float}` in percent.

    Example:
    >>> data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "the Cat"}]}]}]}]
    >>> evaluate_v1(data, {"q": "cat"})
    {'exact_match': 100.0, 'f1': 100.0}
    """
    exact_total = f1_total = total = 0
    for qas_id, gold_texts in _questions(dataset):
        total += 1
        if qas_id not in predictions:
            logger.warning("Unanswered question %s will receive score 0.", qas_id)
            continue
        if not gold_texts:
            raise ValueError(f"Question {qas_id!r} has no gold answers; SQuAD v1.1 evaluation needs at least one (use "
                             f"evaluate_v2 for data with unanswerable questions).")
        prediction = predictions[qas_id]
        exact_total += max(exact_match_score(prediction, gold) for gold in gold_texts)
        f1_total += max(f1_score(prediction, gold, empty_answers_match=False) for gold in gold_texts)
    if total == 0:
        raise ValueError("The SQuAD dataset has no questions to evaluate.")
    return {"exact_match": 100.0 * exact_total / total, "f1": 100.0 * f1_total / total}


def raw_scores_v2(dataset, predictions):
    """`(exact, f1)`: dicts qas_id -> v2.0 score before any no-answer threshold, of the questions of `dataset` that
    `predictions` (qas_id -> text, "" = no answer) answers."""
    exact, f1 = {}, {}
    for qas_id, gold_texts in _questions(dataset):
        gold_texts = [gold for gold in gold_texts if normalize_answer(gold)] or [""]
        if qas_id not in predictions:
            logger.warning("Missing prediction for %s.", qas_id)
            continue
        prediction = predictions[qas_id]
        exact[qas_id] = max(exact_match_score(prediction, gold) for gold in gold_texts)
        f1[qas_id] = max(f1_score(prediction, gold) for gold in gold_texts)
    return exact, f1


def _apply_no_answer_threshold(scores, na_probs, has_answer, na_prob_thresh):
    return {qas_id: float(not has_answer[qas_id]) if na_probs[qas_id] > na_prob_thresh else score
            for qas_id, score in scores.items()}


def _summary(exact, f1, qas_ids):
    total = len(qas_ids)
    return {"exact": 100.0 * sum(exact[qas_id] for qas_id in qas_ids) / total,
            "f1": 100.0 * sum(f1[qas_id] for qas_id in qas_ids) / total, "total": total}


def find_best_threshold(predictions, scores, na_probs, has_answer):
    """The official v2.0 sweep (`find_best_thresh`) for the best no-answer threshold, from "all unanswerable" at 0.0.

    Args:
        predictions: dict qas_id -> predicted text.
        scores: dict qas_id -> raw exact or F1 score (from `raw_scores_v2`).
        na_probs: dict qas_id -> null odds / no-answer probability.
        has_answer: dict qas_id -> bool. Whether the question has a gold answer.

    Returns:
        (best score in percent, threshold).
    """
    score = best_score = sum(1 for answerable in has_answer.values() if not answerable)
    best_threshold = 0.0  # the official starting value
    for qas_id in sorted(na_probs, key=lambda key: na_probs[key]):
        if qas_id not in scores:
            continue
        if has_answer[qas_id]:
            score += scores[qas_id]
        elif predictions[qas_id]:
            score -= 1
        if score > best_score:
            best_score, best_threshold = score, na_probs[qas_id]
    return 100.0 * best_score / len(scores), best_threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """SQuAD v2.0 evaluation, as the official `evaluate-v2.0.py`.

    Args:
        dataset: dict or list. The SQuAD JSON object, or its `data` list of articles.
        predictions: dict qas_id -> predicted text ("" = no answer).
        na_probs: dict qas_id -> float or None. No-answer probabilities or null odds (null_odds.json).
            When given, the `best_*` keys are added. Defaults to None (all 0.0).
        na_prob_thresh: float. Predict "no answer" where `na_probs > na_prob_thresh`. Defaults to 1.0.

    Returns:
        dict with `exact`, `f1`, `total`, and when present `HasAns_exact`, `HasAns_f1`, `HasAns_total`,
        `NoAns_exact`, `NoAns_f1`, `NoAns_total`; with `na_probs` also `best_exact`,
        `best_exact_thresh`, `best_f1`, `best_f1_thresh`. Scores in percent.

    Example:
    >>> data = [{"paragraphs": [{"qas": [{"id": "a", "answers": [{"text": "Paris"}]},
    ...                                  {"id": "b", "answers": []}]}]}]
    >>> result = evaluate_v2(data, {"a": "paris", "b": ""})
    >>> result["exact"], result["HasAns_total"], result["NoAns_exact"]
    (100.0, 1, 100.0)
    """
    has_answer = {qas_id: bool(gold_texts) for qas_id, gold_texts in _questions(dataset)}
    exact_raw, f1_raw = raw_scores_v2(dataset, predictions)
    if not exact_raw:
        raise ValueError("No question of the SQuAD dataset has a prediction; nothing to evaluate.")
    given_na_probs = na_probs is not None
    if not given_na_probs:
        na_probs = {qas_id: 0.0 for qas_id in predictions}
    missing = [qas_id for qas_id in exact_raw if qas_id not in na_probs]
    if missing:
        raise ValueError(f"{len(missing)} predicted questions have no no-answer probability, e.g. {missing[0]!r}.")
    exact = _apply_no_answer_threshold(exact_raw, na_probs, has_answer, na_prob_thresh)
    f1 = _apply_no_answer_threshold(f1_raw, na_probs, has_answer, na_prob_thresh)
    result = _summary(exact, f1, list(exact))
    for prefix, answerable in (("HasAns", True), ("NoAns", False)):
        split = [qas_id for qas_id, value in has_answer.items() if value == answerable and qas_id in exact]
        if split:
            result.update({f"{prefix}_{key}": value for key, value in _summary(exact, f1, split).items()})
    if given_na_probs:
        for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
            result[f"best_{name}"], result[f"best_{name}_thresh"] = find_best_threshold(predictions, raw, na_probs,
                                                                                        has_answer)
    return result


def evaluate_squad_files(dataset_path, predictions_path, na_prob_path=None, version_2=None,
                         na_prob_thresh=1.0, skip_unscorable=False):
    """Evaluates predictions.json (and null_odds.json) against a SQuAD file, like the official scripts.

    Args:
        dataset_path: str. The SQuAD v1.1 or v2.0 JSON file.
        predictions_path: str. predictions.json (qas_id -> text).
        na_prob_path: str or None. null_odds.json (v2.0 only). Defaults to None.
        version_2: bool or None. Use v2.0 evaluation; None picks v2.0 if the file's `version` starts
            with "v2" or any question has `is_impossible`. Defaults to None.
        na_prob_thresh: float. v2.0 no-answer threshold. Defaults to 1.0.
        skip_unscorable: bool. Leave out questions that repeat an id or lack `answers` without `is_impossible`
            (`scorable_squad_json`) instead of raising. Defaults to False.

    Returns:
        dict, as `evaluate_v1` or `evaluate_v2`; with `skipped_unscorable_questions` when some were left out.
    """
    dataset, skipped = scorable_squad_json(load_squad_json(dataset_path), dataset_path, skip_unscorable)
    predictions = _load_json_object(predictions_path)
    if version_2 is None:
        version_2 = str(dataset.get("version", "")).startswith("v2") or any(
            question.get("is_impossible", False) for _, _, _, question in squad_questions(dataset, dataset_path)
        )
    if not version_2:
        if na_prob_path is not None:
            raise ValueError("No-answer probabilities (na_prob_path) only apply to SQuAD v2.0 evaluation.")
        result = evaluate_v1(dataset, predictions)
    else:
        na_probs = _load_json_object(na_prob_path) if na_prob_path is not None else None
        result = evaluate_v2(dataset, predictions, na_probs, na_prob_thresh)
    if skipped:
        result["skipped_unscorable_questions"] = skipped
    return result


def _load_json_object(path):
    value = load_squad_json(path)  # SquadFormatError on malformed JSON
    if not isinstance(value, dict):
        raise SquadFormatError(f"{path}: expected a JSON object mapping question ids, got {type(value).__name__}.")
    return value
