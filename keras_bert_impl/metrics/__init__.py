"""Evaluation metrics (NumPy): GLUE classification and regression metrics."""

from keras_bert_impl.metrics.glue_metrics import (
    GLUE_TASK_METRICS,
    accuracy,
    average_ranks,
    f1,
    glue_metrics,
    matthews_correlation,
    pearson_correlation,
    spearman_correlation,
)
