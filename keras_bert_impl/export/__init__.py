"""Export from every Keras backend: SavedModels served from raw text with only TensorFlow and tensorflow-text,
and ONNX files taking token ids (ONNX Runtime)."""

from keras_bert_impl.export.onnx_export import export_onnx, run_onnx
from keras_bert_impl.export.saved_model_export import export_saved_model
from keras_bert_impl.export.tensorflow_subprocess import ExportError

__all__ = ["ExportError", "export_onnx", "export_saved_model", "run_onnx"]
