"""Backbone, task models and their registry; the names below load on first use (`models.registry` imports none)."""

from keras_bert_impl.models.registry import TASK_CLASSES
from keras_bert_impl.utils.lazy_exports import lazy_exports

EXPORTS = {
    **TASK_CLASSES,
    "PRESETS": "keras_bert_impl.models.presets",
    "load_task": "keras_bert_impl.models.task_loading",
}

__all__ = sorted(EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
