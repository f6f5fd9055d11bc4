"""The official metrics of fine-tuned models: GLUE (or accuracy / F1 / correlations) for classification and
regression, SQuAD v1.1 / v2.0 (with automatic null-threshold tuning) for question answering."""

import os

import numpy as np

from keras_bert_impl.training.finetuning_outputs import EVAL_RESULTS_FILENAME, json_ready
from keras_bert_impl.utils.atomic_io import atomic_write_json


def classification_scores(labels, logits, task=None, regression=False):
    """The metrics of a classification or regression run.

    Args:
        labels: array `(N,)`. Gold class ids (float scores for regression).
        logits: array `(N, C)`. Model outputs (`(N, 1)` scores for regression).
        task: str or None. A GLUE task name: its official metrics (`metrics.glue_metrics`). Otherwise
            accuracy (plus F1 for two classes) or, for regression, Pearson and Spearman. Defaults to None.
        regression: bool. Defaults to False.

    Returns:
        dict metric name -> float.
    """
    from keras_bert_impl import metrics

    logits = np.asarray(logits)
    predictions = logits[:, 0] if regression else np.argmax(logits, axis=-1)
    if task is not None:
        return metrics.glue_metrics(task, labels, predictions)
    if regression:
        return {"pearson": metrics.pearson_correlation(labels, predictions),
                "spearman": metrics.spearman_correlation(labels, predictions)}
    scores = {"accuracy": metrics.accuracy(labels, predictions)}
    if logits.shape[-1] == 2:
        scores["f1"] = metrics.f1(labels, predictions)
    return scores


def classification_monitor(task=None, regression=False):
    """The metric of `classification_scores` that selects the best checkpoint.

    Args:
        task: str or None. A GLUE task name: its first official metric. Defaults to None.
        regression: bool. Without a task: "pearson" for regression, "accuracy" otherwise. Defaults to False.

    Returns:
        str.
    """
    from keras_bert_impl.metrics import GLUE_TASK_METRICS

    if task is not None:
        key = task.lower().replace("-", "")
        if key not in GLUE_TASK_METRICS:
            raise ValueError(f"Unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_METRICS)}.")
        return GLUE_TASK_METRICS[key][0]
    return "pearson" if regression else "accuracy"


def evaluate_squad_predictions(examples, features, start_logits, end_logits, dataset_json, output_dir=None,
                               version_2_with_negative=False, n_best_size=20, max_answer_length=30,
                               null_score_diff_threshold=None, tune_metric="f1"):
    """Decode SQuAD logits, score them with the official metrics, and write the prediction files.

    SQuAD v2.0 with `null_score_diff_threshold=None` tunes the threshold on this data
    (`squad.tune_null_threshold`) and reports the scores at the tuned threshold; give a number to use it as is
    (e.g. one tuned on dev, for test data).

    Args:
        examples: `SquadExamples` the features were built from.
        features: `SquadFeatures`.
        start_logits: array `(F, T)`.
        end_logits: array `(F, T)`.
        dataset_json: dict. The SQuAD JSON with gold answers (`squad_reader.load_squad_json`).
        output_dir: str or None. Where predictions.json, nbest_predictions.json, null_odds.json (v2.0) and
            eval_results.json go. Defaults to None (nothing written).
        version_2_with_negative: bool. SQuAD v2.0. Defaults to False.
        n_best_size: int. Defaults to 20.
        max_answer_length: int. Defaults to 30.
        null_score_diff_threshold: float or None. Defaults to None (tune on this data for v2.0).
        tune_metric: str. "f1" or "exact" for tuning. Defaults to "f1".

    Returns:
        dict: v1.1 `exact_match`, `f1`; v2.0 the official `evaluate_v2` keys plus `null_score_diff_threshold`.
    """
    from keras_bert_impl.squad import (
        decode_squad_predictions,
        evaluate_v1,
        evaluate_v2,
        tune_null_threshold,
        write_squad_predictions,
    )

    threshold = 0.0 if null_score_diff_threshold is None else null_score_diff_threshold
    decoded = decode_squad_predictions(
        examples, features, start_logits, end_logits, n_best_size=n_best_size,
        max_answer_length=max_answer_length, version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=threshold,
    )
    if version_2_with_negative:
        if null_score_diff_threshold is None:
            tuned = tune_null_threshold(dataset_json, decoded.best_non_null, decoded.null_odds, metric=tune_metric)
            decoded = decoded.with_null_threshold(tuned.threshold)
        results = dict(evaluate_v2(dataset_json, decoded.predictions, na_probs=decoded.null_odds))
        results["null_score_diff_threshold"] = decoded.null_score_diff_threshold
    else:
        results = dict(evaluate_v1(dataset_json, decoded.predictions))
    if output_dir is not None:
        write_squad_predictions(decoded, output_dir)
        atomic_write_json(os.path.join(output_dir, EVAL_RESULTS_FILENAME), json_ready(results))
    return results
