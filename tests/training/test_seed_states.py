"""`TrainingCheckpoint` finds the dropout RNG states through Keras' public `SeedGenerator.state`, in the order
of `model.variables` (the order earlier checkpoints saved them in), on every model class and backend."""

import keras
import numpy as np

from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.training.callbacks import _seed_generators, _seed_states
from tests.helpers import tiny_backbone


def _by_variable_name(model):
    """The reference: the state variables by name (each SeedGenerator's state is named
    "seed_generator_state"), in `model.variables` order."""
    return [variable for variable in model.variables if variable.path.endswith("seed_generator_state")]


def test_seed_states_of_every_model_class_in_variables_order():
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer

    models = [tiny_backbone(num_layers=2), BertPretrainer(tiny_backbone(num_layers=2)),
              BertClassifier(tiny_backbone(num_layers=2), 3), BertQuestionAnswerer(tiny_backbone(num_layers=2))]
    for model in models:
        expected = _by_variable_name(model)
        assert len(expected) >= 7  # embeddings + 3 per block
        assert [id(v) for v in _seed_states(model)] == [id(v) for v in expected], type(model).__name__
        assert {id(g.state) for g in _seed_generators(model)} == {id(v) for v in expected}


class _Stack(keras.layers.Layer):
    """Sublayers held in a list and a dict, and a seed generator of its own."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dropouts = [BertDropout(0.1, seed=1), BertDropout(0.1, seed=2)]
        self.named = {"last": keras.layers.Dropout(0.1, seed=3)}
        self.noise_seed = keras.random.SeedGenerator(4)

    def call(self, x, training=False):
        for layer in self.dropouts + [self.named["last"]]:
            x = layer(x, training=training)
        return x + keras.random.normal(keras.ops.shape(x), seed=self.noise_seed) if training else x


def test_seed_states_in_containers_nested_models_and_shared_layers():
    inputs = keras.Input((4,))
    stack = _Stack()
    inner = keras.Sequential([keras.layers.Dense(4), keras.layers.Dropout(0.2, seed=5)])
    outputs = stack(inner(stack(inputs)))  # `stack` used twice: its generators count once
    model = keras.Model(inputs, outputs)
    expected = _by_variable_name(model)
    assert len(expected) == 5
    assert [id(v) for v in _seed_states(model)] == [id(v) for v in expected]


def test_seed_states_restore_the_same_masks():
    model, other = tiny_backbone(num_layers=1), tiny_backbone(num_layers=1)
    other.set_weights(model.get_weights())
    inputs = {"token_ids": np.ones((2, 6), "int32"), "segment_ids": np.zeros((2, 6), "int32"),
              "padding_mask": np.ones((2, 6), bool)}
    model(inputs, training=True)  # advance the generators
    for source, target in zip(_seed_states(model), _seed_states(other)):
        target.assign(source.value)
    if keras.backend.backend() != "torch":  # torch's Keras dropout also draws from torch's global generator
        first, second = (keras.ops.convert_to_numpy(m(inputs, training=True)["sequence_output"])
                         for m in (model, other))
        np.testing.assert_array_equal(first, second)
