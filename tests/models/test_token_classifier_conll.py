"""A short real-data fine-tune: the MiniLM checkpoint on a few hundred CoNLL-2003 sentences, scored by entity F1
on held-out test sentences. TensorFlow pass only: about a minute of CPU, and the model-level learning test
on all backends is `test_token_classifier.py`'s tiny marker task."""

import os

import pytest

from tests.helpers import real_checkpoint_dir

CONLL_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "conll2003"))
TRAIN_SENTENCES = 400
TEST_SENTENCES = 300
# The all-O baseline finds no entity: entity F1 0. Measured (TensorFlow, seed 1234): F1 0.40 after these 75
# updates (length-bucketed batches of 16, 3 epochs, lr 2e-4), about 60 s of CPU; the margin of 0.25 leaves
# room for thread and seed noise while ruling out a model that learned little.
MIN_ENTITY_F1 = 0.25


@pytest.mark.slow
@pytest.mark.backend_independent
@pytest.mark.skipif(not os.path.isdir(CONLL_DIR), reason=f"{CONLL_DIR} is absent (CoNLL-2003, see "
                    "../shared/data/README.md)")
def test_minilm_fine_tuned_on_400_conll_sentences_beats_the_all_o_baseline():
    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
    from keras_bert_impl.metrics import entity_scores
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.optimization import create_optimizer

    train = read_conll_sentences(os.path.join(CONLL_DIR, "train.txt"))[:TRAIN_SENTENCES]
    test = read_conll_sentences(os.path.join(CONLL_DIR, "test.txt"))[:TEST_SENTENCES]
    tags = tag_vocabulary(train)
    model = BertTokenClassifier.from_pretrained(real_checkpoint_dir(), num_classes=len(tags), labels=tags.labels,
                                                sequence_length=64)
    # Length-bucketed batches of windows (inputs cut to the bucket, the (N, 64) targets not: the model cuts them).
    epochs = 3
    dataset = model.preprocessor.make_dataset([s.words for s in train], encode_tags(train, tags), batch_size=16,
                                              shuffle=True, seed=0, bucket_width=16, epochs=epochs)
    steps = int(dataset.cardinality()) // epochs
    model.compile(optimizer=create_optimizer(learning_rate=2e-4, total_steps=epochs * steps, warmup_fraction=0.1))
    model.fit(dataset, steps_per_epoch=steps, epochs=epochs, verbose=0)

    tagged = model.predict([s.words for s in test], verbose=0)
    predicted = [[word["tag"] for word in sentence["words"]] for sentence in tagged]
    gold = [list(s.tags) for s in test]
    scores = entity_scores(gold, predicted)
    baseline = entity_scores(gold, [["O"] * len(tags_) for tags_ in gold])
    assert baseline["f1"] == 0.0
    assert scores["f1"] >= baseline["f1"] + MIN_ENTITY_F1, scores
    assert all(len(p) == len(g) for p, g in zip(predicted, gold))
