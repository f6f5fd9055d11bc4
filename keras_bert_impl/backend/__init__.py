"""Backend-specific helpers below the layers, behind backend-agnostic functions.

Each module here branches on `keras.backend.backend()` and imports TensorFlow or JAX lazily, only when that
backend is the active one, through their public APIs. Layers may import from here; this package imports
nothing else from `keras_bert_impl`.
"""
