"""Evaluation metrics (NumPy): GLUE classification and regression metrics, entity-level NER scores."""

from keras_bert_impl.metrics.entity_metrics import entity_chunks, entity_scores, to_iob2
from keras_bert_impl.metrics.glue_metrics import (
    GLUE_TASK_METRICS, accuracy, average_ranks, f1, glue_metrics, matthews_correlation, pearson_correlation,
    spearman_correlation
)
