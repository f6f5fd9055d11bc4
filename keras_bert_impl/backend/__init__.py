"""Backend-specific helpers below the layers, behind backend-agnostic functions: each module branches on
`keras.backend.backend()` and imports TensorFlow or JAX (public APIs) only when that backend is active. This
package imports nothing else from `keras_bert_impl`."""
