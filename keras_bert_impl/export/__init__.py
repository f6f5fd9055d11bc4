"""SavedModel export: BERT models served from raw text with only TensorFlow and tensorflow-text.

TensorFlow at the export edge; `export_saved_model` works from every Keras backend (see
`saved_model_export`).
"""

from keras_bert_impl.export.saved_model_export import ExportError, export_saved_model

__all__ = ["ExportError", "export_saved_model"]
