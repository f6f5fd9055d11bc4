import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent  # SavedModel export and serving are TensorFlow

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "lives", "in", "par", "##is", "koln", ".",
              "u", "s", "and", "the", "eu", ",", "##er", "black", "##burn", "spoke"]
TAGS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
TEXTS = ["Peter Blackburn spoke in Paris and Köln.", "", "the EU", "Péter lives in U.S. " * 6 + "Paris."]


@pytest.fixture(scope="module")
def tagger_and_served(tmp_path_factory):
    import keras
    import tensorflow as tf

    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.helpers import tiny_backbone

    tokenizer = BertTokenizer(VOCABULARY)
    model = BertTokenClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), num_classes=len(TAGS), labels=TAGS,
                                preprocessor=BertTokenClassificationPreprocessor(tokenizer, sequence_length=12))
    # Large head weights: decisive tags (no near-ties that graph and eager rounding could split differently).
    dense = model.get_layer("token_classifier_dense")
    dense.kernel.assign(np.random.default_rng(0).normal(0.0, 3.0, tuple(dense.kernel.shape)).astype("float32"))
    path = export_saved_model(model, str(tmp_path_factory.mktemp("export") / "tagger"), tokenizer)
    served = tf.saved_model.load(path)
    assert keras.backend.backend() == "tensorflow"
    return model, served


def test_served_entities_equal_predict_on_raw_text(tagger_and_served):
    import tensorflow as tf

    model, served = tagger_and_served
    assert model.preprocessor.stride == 5  # the long text takes several windows of 10 tokens
    outputs = {name: value.numpy() for name, value in served.signatures["serve_text"](text=tf.constant(TEXTS)).items()}
    expected = model.predict(TEXTS, verbose=0)
    assert sum(len(result["entities"]) for result in expected) >= 5  # the comparison covers real entities
    for row, (text, result) in enumerate(zip(TEXTS, expected)):
        count = int(outputs["num_entities"][row])
        served_entities = [
            (outputs["entity_text"][row, i].decode("utf-8"), outputs["entity_type"][row, i].decode("utf-8"),
             int(outputs["entity_start"][row, i]), int(outputs["entity_end"][row, i])) for i in range(count)]
        assert served_entities == [(e["text"], e["type"], e["start"], e["end"]) for e in result["entities"]]
        np.testing.assert_allclose(outputs["entity_score"][row, :count], [e["score"] for e in result["entities"]],
                                   atol=1e-5)
        for entity_text, _, start, end in served_entities:
            assert text[start:end] == entity_text
        assert (outputs["entity_start"][row, count:] == -1).all()


def test_numeric_signature_returns_the_logits(tagger_and_served):
    import tensorflow as tf

    model, served = tagger_and_served
    x = model.preprocessor(["Peter lives in Paris"])
    outputs = served.signatures["serve_token_ids"](
        token_ids=tf.constant(x["token_ids"]), segment_ids=tf.constant(x["segment_ids"]),
        padding_mask=tf.constant(x["padding_mask"].astype("int32")))
    np.testing.assert_allclose(outputs["logits"].numpy(), model.predict(x, verbose=0), atol=1e-4)
