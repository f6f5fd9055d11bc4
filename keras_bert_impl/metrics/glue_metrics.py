"""GLUE evaluation metrics in NumPy: accuracy, binary F1, Matthews correlation, Pearson and Spearman.

Every metric takes `labels` and `predictions` `(N,)` (class ids, or scores for the correlations) and matches
scikit-learn / SciPy, degenerate cases included.
"""

import numpy as np

# Which task reports what (Wang et al., 2018), the headline metric first.
GLUE_TASK_METRICS = {"cola": ("matthews_correlation",), "sst2": ("accuracy",), "mrpc": ("accuracy", "f1"),
                     "qqp": ("accuracy", "f1"), "stsb": ("pearson", "spearman"), "mnli": ("accuracy",),
                     "qnli": ("accuracy",), "rte": ("accuracy",), "wnli": ("accuracy",)}


def _paired(labels, predictions, dtype=None):
    labels = np.asarray(labels, dtype=dtype).reshape(-1)
    predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(f"labels has {labels.size} values but predictions has {predictions.size}.")
    if labels.size == 0:
        raise ValueError("Metrics need at least one example; got empty labels and predictions.")
    return labels, predictions


def accuracy(labels, predictions):
    """Fraction of predictions equal to the labels, a float in [0, 1].

    Example:
    >>> accuracy([0, 1, 1, 0], [0, 1, 0, 0])
    0.75
    """
    labels, predictions = _paired(labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions, positive_label=1):
    """Binary F1 of the class `positive_label` (default 1): a float in [0, 1], 0.0 without true positives.

    Example:
    >>> round(f1([1, 1, 0, 0], [1, 0, 1, 0]), 4)
    0.5
    """
    labels, predictions = _paired(labels, predictions)
    true_positives = np.sum((predictions == positive_label) & (labels == positive_label))
    predicted_positives = np.sum(predictions == positive_label)
    actual_positives = np.sum(labels == positive_label)
    if true_positives == 0:
        return 0.0
    return float(2 * true_positives / (predicted_positives + actual_positives))


def matthews_correlation(labels, predictions):
    """Matthews correlation coefficient, multi-class (Gorodkin's R_K): a float in [-1, 1], 0.0 when undefined
    (all labels or all predictions one class).

    Example:
    >>> round(matthews_correlation([1, 1, 0, 0], [1, 0, 0, 0]), 4)
    0.5774
    """
    labels, predictions = _paired(labels, predictions)
    classes, encoded = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    encoded_labels, encoded_predictions = encoded[: labels.size], encoded[labels.size :]
    confusion = np.zeros((classes.size, classes.size), dtype=np.float64)
    np.add.at(confusion, (encoded_labels, encoded_predictions), 1.0)
    label_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    correct, samples = np.trace(confusion), confusion.sum()
    covariance_lp = correct * samples - np.dot(predicted_counts, label_counts)
    covariance_pp = samples**2 - np.dot(predicted_counts, predicted_counts)
    covariance_ll = samples**2 - np.dot(label_counts, label_counts)
    if covariance_pp * covariance_ll == 0:
        return 0.0
    return float(covariance_lp / np.sqrt(covariance_ll * covariance_pp))


def pearson_correlation(labels, predictions):
    """Pearson correlation coefficient of scores: a float in [-1, 1], NaN when either input is constant or N < 2.

    Example:
    >>> round(pearson_correlation([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]), 4)
    0.9934
    """
    labels, predictions = _paired(labels, predictions, dtype=np.float64)
    centered_labels = labels - labels.mean()
    centered_predictions = predictions - predictions.mean()
    norm = np.linalg.norm(centered_labels) * np.linalg.norm(centered_predictions)
    if labels.size < 2 or norm == 0:
        return float("nan")
    # Clipped to [-1, 1] like SciPy: rounding can push |r| a hair above 1.
    return float(np.clip(np.dot(centered_labels, centered_predictions) / norm, -1.0, 1.0))


def average_ranks(values):
    """Ranks 1..N of `values`, ties sharing their average rank (SciPy's `rankdata(method="average")`).

    Example:
    >>> average_ranks([10, 20, 10, 30]).tolist()
    [1.5, 3.0, 1.5, 4.0]
    """
    values = np.asarray(values).reshape(-1)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Each run of equal values spans ranks [first, last]; its members get (first + last) / 2.
    new_run = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    run_ids = np.cumsum(new_run) - 1
    run_starts = np.flatnonzero(new_run)
    run_ends = np.concatenate([run_starts[1:], [values.size]])
    run_ranks = (run_starts + 1 + run_ends) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = run_ranks[run_ids]
    return ranks


def spearman_correlation(labels, predictions):
    """Spearman rank correlation, the Pearson correlation of the average ranks: NaN when either input is constant.

    Example:
    >>> round(spearman_correlation([1.0, 2.0, 3.0], [2.0, 4.0, 70.0]), 6)
    1.0
    """
    labels, predictions = _paired(labels, predictions, dtype=np.float64)
    return pearson_correlation(average_ranks(labels), average_ranks(predictions))


_METRIC_FUNCTIONS = {"accuracy": accuracy, "f1": f1, "matthews_correlation": matthews_correlation,
                     "pearson": pearson_correlation, "spearman": spearman_correlation}


def glue_task_metrics(task):
    """The names of the metrics GLUE reports for `task` (case and "-" ignored), the first its headline one."""
    key = task.lower().replace("-", "")
    if key not in GLUE_TASK_METRICS:
        raise ValueError(f"Unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_METRICS)}.")
    return GLUE_TASK_METRICS[key]


def glue_metrics(task, labels, predictions):
    """The metrics GLUE reports for `task` (a key of `GLUE_TASK_METRICS`; "STS-B" works), as a dict name -> float.

    Example:
    >>> glue_metrics("MRPC", [1, 0, 1], [1, 0, 0])["accuracy"]
    0.6666666666666666
    """
    return {name: _METRIC_FUNCTIONS[name](labels, predictions) for name in glue_task_metrics(task)}
