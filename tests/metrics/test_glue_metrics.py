import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk_metrics

from keras_bert_impl.metrics import (
    accuracy,
    average_ranks,
    f1,
    glue_metrics,
    matthews_correlation,
    pearson_correlation,
    spearman_correlation,
)

pytestmark = pytest.mark.backend_independent


def test_hand_worked_classification_metrics():
    labels = [1, 1, 1, 0, 0, 0, 0, 1]
    predictions = [1, 1, 0, 0, 0, 1, 0, 1]
    # TP 3, FN 1, FP 1, TN 3.
    assert accuracy(labels, predictions) == 0.75
    assert f1(labels, predictions) == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))
    assert matthews_correlation(labels, predictions) == pytest.approx((3 * 3 - 1 * 1) / np.sqrt(4 * 4 * 4 * 4))


def test_hand_worked_correlations():
    # Pearson of (1, 2, 3) and (2, 4, 7): covariance 5 / sqrt(2 * 12.6667).
    assert pearson_correlation([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / np.sqrt(2 * 38 / 3))
    # Ranks with ties: [1.5, 1.5, 3] and [1, 2, 3].
    assert average_ranks([5, 5, 9]).tolist() == [1.5, 1.5, 3.0]
    assert spearman_correlation([5, 5, 9], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)
    assert spearman_correlation([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=57)
    predictions = np.where(rng.random(57) < 0.7, labels, 1 - labels)
    assert accuracy(labels, predictions) == pytest.approx(sk_metrics.accuracy_score(labels, predictions))
    assert f1(labels, predictions) == pytest.approx(sk_metrics.f1_score(labels, predictions))
    assert matthews_correlation(labels, predictions) == pytest.approx(sk_metrics.matthews_corrcoef(labels, predictions))
    multi_labels = rng.integers(0, 4, size=57)
    multi_predictions = rng.integers(0, 4, size=57)
    assert matthews_correlation(multi_labels, multi_predictions) == pytest.approx(
        sk_metrics.matthews_corrcoef(multi_labels, multi_predictions)
    )


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    labels = np.round(rng.uniform(0, 5, size=64) * 2) / 2  # STS-B-like scores with many ties
    predictions = labels + rng.normal(scale=1.0, size=64)
    predictions[:10] = np.round(predictions[:10])
    assert pearson_correlation(labels, predictions) == pytest.approx(stats.pearsonr(labels, predictions)[0], abs=1e-12)
    expected = stats.spearmanr(labels, predictions)[0]
    assert spearman_correlation(labels, predictions) == pytest.approx(expected, abs=1e-12)
    np.testing.assert_array_equal(average_ranks(labels), stats.rankdata(labels))


def test_degenerate_cases_match_reference_libraries():
    # No positives anywhere: F1 undefined, scikit-learn reports 0.0.
    assert f1([0, 0, 0], [0, 0, 0]) == 0.0
    assert f1([1, 0], [0, 1]) == 0.0
    # A constant column: Matthews correlation 0.0 (scikit-learn).
    assert matthews_correlation([1, 1, 1], [0, 1, 0]) == 0.0
    assert sk_metrics.matthews_corrcoef([1, 1, 1], [0, 1, 0]) == 0.0
    # Constant input: Pearson / Spearman NaN, like SciPy.
    assert np.isnan(pearson_correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert np.isnan(spearman_correlation([2.0, 2.0], [1.0, 3.0]))
    assert pearson_correlation([1.0, 2.0], [2.0, 1.0]) == pytest.approx(-1.0)


def test_shape_errors():
    with pytest.raises(ValueError, match="labels has 3 values but predictions has 2"):
        accuracy([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="at least one example"):
        f1([], [])


def test_glue_metrics_per_task():
    assert glue_metrics("MRPC", [1, 0, 1, 1], [1, 0, 0, 1]) == {"accuracy": 0.75, "f1": pytest.approx(0.8)}
    assert set(glue_metrics("STS-B", [0.0, 2.5, 5.0], [0.5, 2.0, 4.0])) == {"pearson", "spearman"}
    assert set(glue_metrics("cola", [0, 1], [0, 1])) == {"matthews_correlation"}
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        glue_metrics("squad", [0], [0])
