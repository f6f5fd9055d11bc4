"""`keras.layers.Dropout` with cheaper random bits on XLA (see `keras_bert_impl.backend.random_bits`)."""

import keras

from keras_bert_impl.backend import random_bits


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose training-mode mask comes from `keras_bert_impl.backend.random_bits.dropout`.

    Same arguments, config, seeding and distribution as Keras' layer (the bits and their off switch: see there).

    Example:
    >>> import numpy as np
    >>> layer = BertDropout(0.5, seed=1)
    >>> x = np.ones((2, 4), "float32")
    >>> bool((np.asarray(layer(x, training=False)) == x).all())
    True
    >>> sorted(set(np.asarray(layer(x, training=True)).ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
    True
    """

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return random_bits.dropout(inputs, self.rate, self.seed_generator, noise_shape=self.noise_shape)
        return inputs
