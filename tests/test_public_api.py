import pytest

import keras_bert_impl

pytestmark = pytest.mark.backend_independent


def test_every_public_name_resolves():
    for name in keras_bert_impl.__all__:
        assert getattr(keras_bert_impl, name) is not None, name
