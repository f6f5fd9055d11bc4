"""A fine-tuning run's results: official metrics (GLUE, accuracy / F1 / correlations; SQuAD v1.1 / v2.0 with
null-threshold tuning) and the files that carry them, each written atomically."""

import os

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_directory, atomic_write_json, atomic_write_text

EVAL_RESULTS_FILENAME = "eval_results.json"


def json_ready(results):
    """The dict `results` with NumPy and Python numbers as floats (what `json` writes); other values unchanged."""
    return {key: (float(value) if isinstance(value, (int, float, np.floating, np.integer)) else value)
            for key, value in results.items()}


def save_finetuned(model, directory, tokenizer=None, results=None):
    """Write a model directory atomically: `save_pretrained` files, the tokenizer, and `eval_results.json`.

    Args:
        model: a task model with `save_pretrained`.
        directory: str. Replaced only when complete.
        tokenizer: `BertTokenizer` or None. Saved beside the weights. Defaults to None.
        results: dict or None. Evaluation results to store. Defaults to None.
    """
    with atomic_directory(directory, what="model directory") as tmp:
        model.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        if results is not None:
            atomic_write_json(os.path.join(tmp, EVAL_RESULTS_FILENAME), json_ready(results))


def write_classification_predictions(path, logits, label_vocabulary=None, regression=False):
    """Write `index<TAB>prediction` lines (GLUE's submission layout) atomically.

    Args:
        path: str. Output file.
        logits: array `(N, C)`.
        label_vocabulary: `LabelVocabulary` or None. Class names; None writes class ids. Defaults to None.
        regression: bool. Write the score. Defaults to False.
    """
    lines = ["index\tprediction"]
    for index, row in enumerate(np.asarray(logits)):
        class_id = int(np.argmax(row))
        prediction = (f"{float(row[0]):.6f}" if regression else
                      label_vocabulary.id_to_label(class_id) if label_vocabulary is not None else str(class_id))
        lines.append(f"{index}\t{prediction}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def classification_scores(labels, logits, task=None, regression=False):
    """The metrics (dict metric name -> float) of a classification or regression run.

    Args:
        labels: array `(N,)`. Gold class ids (float scores for regression).
        logits: array `(N, C)`. Model outputs (`(N, 1)` scores for regression).
        task: str or None. A GLUE task name: its official metrics (`metrics.glue_metrics`). Otherwise
            accuracy (plus F1 for two classes) or, for regression, Pearson and Spearman. Defaults to None.
        regression: bool. Defaults to False.
    """
    logits = np.asarray(logits)
    predictions = logits[:, 0] if regression else np.argmax(logits, axis=-1)
    return prediction_scores(labels, predictions, logits.shape[-1], task, regression)


def prediction_scores(labels, predictions, num_classes, task=None, regression=False):
    """The metrics of predicted class ids (or scores) against the gold ones, as `classification_scores` with
    `predictions` `(N,)` instead of logits; `num_classes` 2 adds F1 (of class 1) without a task.

    Example:
    >>> prediction_scores([1, 0, 1, 0], [1, 0, 0, 0], num_classes=2)
    {'accuracy': 0.75, 'f1': 0.6666666666666666}
    """
    from keras_bert_impl import metrics

    if task is not None:
        return metrics.glue_metrics(task, labels, predictions)
    if regression:
        return {"pearson": metrics.pearson_correlation(labels, predictions),
                "spearman": metrics.spearman_correlation(labels, predictions)}
    scores = {"accuracy": metrics.accuracy(labels, predictions)}
    if num_classes == 2:
        scores["f1"] = metrics.f1(labels, predictions, positive_label=1)
    return scores


def classification_monitor(task=None, regression=False):
    """The metric (str) of `classification_scores` that selects the best checkpoint.

    Args:
        task: str or None. A GLUE task name: its first official metric. Defaults to None.
        regression: bool. Without a task: "pearson" for regression, "accuracy" otherwise. Defaults to False.
    """
    from keras_bert_impl.metrics.glue_metrics import glue_task_metrics

    return glue_task_metrics(task)[0] if task is not None else ("pearson" if regression else "accuracy")


def evaluate_squad_predictions(examples, features, start_logits, end_logits, dataset_json, output_dir=None,
                               version_2_with_negative=False, n_best_size=20, max_answer_length=30,
                               null_score_diff_threshold=None, tune_metric="f1"):
    """Decode SQuAD logits, score them with the official metrics, and write the prediction files. For v2.0,
    `null_score_diff_threshold=None` tunes the threshold on this data (`squad.tune_null_threshold`).

    Args:
        examples: `SquadExamples` the features were built from.
        features: `SquadFeatures`.
        start_logits, end_logits: arrays `(F, T)`.
        dataset_json: dict. The SQuAD JSON with gold answers (`squad_reader.load_squad_json`).
        output_dir: str or None. Where predictions.json, nbest_predictions.json, null_odds.json (v2.0) and
            eval_results.json go. Defaults to None (nothing written).
        version_2_with_negative: bool. SQuAD v2.0. Defaults to False.
        n_best_size, max_answer_length: int. As `decode_squad_predictions`'. Default to 20 and 30.
        null_score_diff_threshold: float or None. None: tune it on this data (v2.0). Defaults to None.
        tune_metric: str. "f1" or "exact" for tuning. Defaults to "f1".

    Returns:
        dict: v1.1 `exact_match`, `f1`; v2.0 the official `evaluate_v2` keys plus `null_score_diff_threshold`.
    """
    from keras_bert_impl.squad import (decode_squad_predictions, evaluate_v1, evaluate_v2, tune_null_threshold,
                                       write_squad_predictions)

    threshold = 0.0 if null_score_diff_threshold is None else null_score_diff_threshold
    decoded = decode_squad_predictions(examples, features, start_logits, end_logits, n_best_size=n_best_size,
                                       max_answer_length=max_answer_length, null_score_diff_threshold=threshold,
                                       version_2_with_negative=version_2_with_negative)
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


def read_prediction_tsv(path):
    """The predictions (list of str, in index order) of an `index<TAB>prediction` TSV such as `keras-bert predict`
    and the fine-tuning runs write (a header row is skipped).

    Raises:
        ValueError: a row is not `index<TAB>prediction`, or the indices are not 0..N-1.
    """
    import csv

    predictions = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for line_number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or (line_number == 1 and row[0].strip().lower() == "index"):
                continue
            if len(row) < 2 or not row[0].strip().isdigit():
                raise ValueError(f"{path}, line {line_number}: expected 'index<TAB>prediction', got {row!r}.")
            predictions[int(row[0])] = row[1].strip()
    if sorted(predictions) != list(range(len(predictions))):
        raise ValueError(f"{path}: the indices are not 0..{len(predictions) - 1} (missing or repeated rows).")
    return [predictions[index] for index in range(len(predictions))]


def evaluate_classification_files(gold_path, predictions_path, task=None, label_column=None, file_format=None,
                                  has_header=True, regression=False):
    """Score a predictions TSV against the labelled file it predicts (row i is index i) with
    `prediction_scores`: the classification counterpart of `squad.evaluate_squad_files`.

    Args:
        gold_path: str. The labelled TSV, CSV or JSONL file.
        predictions_path: str. `index<TAB>prediction` rows (`read_prediction_tsv`): label names, or scores.
        task: str or None. A GLUE task name: its file layout, labels and metrics. Defaults to None.
        label_column: str, int or None. Without `task`: the gold label column (name or 0-based index). Defaults to None.
        file_format: "tsv", "csv", "jsonl" or None (the extension). Defaults to None.
        has_header: bool. A TSV / CSV gold file has a header row. Defaults to True.
        regression: bool. Float labels (a regression task such as STS-B sets it). Defaults to False.

    Returns:
        dict metric name -> float.

    Raises:
        ValueError: the files do not fit together (row counts, an unknown label, a score that is no number).
    """
    from keras_bert_impl.data.classification_data import (LabelVocabulary, glue_layout, read_classification_examples,
                                                          read_glue_examples)

    if task is None and label_column is None:
        raise ValueError(f"{gold_path}: give the GLUE task or the label column the gold labels are in.")
    layout = glue_layout(task) if task else None
    regression = regression or bool(layout and layout.regression)
    if layout is not None:
        gold = read_glue_examples(task, gold_path)
    else:
        if isinstance(label_column, str) and label_column.isdigit():
            label_column = int(label_column)
        # Only the labels are scored; the label column stands in for the text column the reader requires.
        gold = read_classification_examples(gold_path, label_column, label_column, file_format=file_format,
                                            has_header=has_header, regression=regression)
    predicted = read_prediction_tsv(predictions_path)
    if len(predicted) != len(gold):
        raise ValueError(f"{predictions_path} has {len(predicted)} predictions but {gold_path} has {len(gold)} "
                         "labeled rows.")
    if regression:
        try:
            scores = [float(value) for value in predicted]
        except ValueError as error:
            raise ValueError(f"{predictions_path}: a regression prediction is not a number ({error}).") from None
        return prediction_scores([float(example.label) for example in gold], scores, 1, task, regression=True)
    vocabulary = LabelVocabulary(layout.labels) if layout is not None else LabelVocabulary.from_examples(gold)
    predicted_ids = [vocabulary.label_to_id(value, f"{predictions_path}, row {index}")
                     for index, value in enumerate(predicted)]
    return prediction_scores(vocabulary.encode(gold), predicted_ids, len(vocabulary), task)

