"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on TensorFlow, JAX and torch.

Model code is backend-agnostic (`keras.ops`). Names whose modules need TensorFlow (tokenizer, tf.data
pipelines, SavedModel export) load lazily, so `import keras_bert_impl` stays cheap under JAX and torch.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "BertBackbone": "keras_bert_impl.models.backbone",
    "PRESETS": "keras_bert_impl.models.presets",
    "BertEmbeddings": "keras_bert_impl.layers.embeddings",
    "BertEncoderBlock": "keras_bert_impl.layers.encoder_block",
    "BertSelfAttention": "keras_bert_impl.layers.self_attention",
    "CheckpointError": "keras_bert_impl.checkpoints.conversion",
    "save_huggingface": "keras_bert_impl.checkpoints",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keras_bert_impl' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
