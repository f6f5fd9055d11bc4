"""The Keras config of a layer or model whose constructor arguments are stored as attributes of their names."""

import inspect


def constructor_config(instance, skip=()):
    """`{argument: getattr(instance, argument)}` for the constructor arguments of `instance` but `skip`.

    Example:
    >>> from keras_bert_impl.layers.embeddings import BertEmbeddings
    >>> constructor_config(BertEmbeddings(10, 4))["hidden_dim"]
    4
    """
    parameters = inspect.signature(type(instance).__init__).parameters
    return {name: getattr(instance, name) for name in parameters if name not in ("self", "kwargs", *skip)}
