import numpy as np
import pytest

from keras_bert_impl.metrics import entity_chunks, entity_scores, to_iob2

pytestmark = pytest.mark.backend_independent

TYPES = ("PER", "LOC", "ORG")


def random_tags(rng, length):
    """Random IOB tags, scheme-breaking ones included (I- after O, I- of another type)."""
    choices = ["O", "O", "O"] + [f"{prefix}-{entity_type}" for entity_type in TYPES for prefix in ("B", "I")]
    return [choices[index] for index in rng.integers(0, len(choices), length)]


def test_chunks_follow_conlleval():
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG"]
    assert [(c.type, c.start, c.end) for c in entity_chunks(tags)] == [
        ("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("ORG", 5, 6), ("ORG", 6, 8)]
    assert to_iob2(tags) == ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "B-ORG", "I-ORG"]


def test_scores_equal_seqeval_on_random_sequences(rng):
    seqeval_metrics = pytest.importorskip("seqeval.metrics")
    gold = [random_tags(rng, int(rng.integers(1, 15))) for _ in range(200)]
    predicted = [[tag if rng.random() < 0.7 else random_tags(rng, 1)[0] for tag in sentence] for sentence in gold]
    scores = entity_scores(gold, predicted)
    assert scores["precision"] == pytest.approx(seqeval_metrics.precision_score(gold, predicted), abs=1e-12)
    assert scores["recall"] == pytest.approx(seqeval_metrics.recall_score(gold, predicted), abs=1e-12)
    assert scores["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, predicted), abs=1e-12)
    assert scores["accuracy"] == pytest.approx(seqeval_metrics.accuracy_score(gold, predicted), abs=1e-12)
    report = seqeval_metrics.classification_report(gold, predicted, output_dict=True)
    for entity_type in TYPES:
        assert scores[f"{entity_type}_f1"] == pytest.approx(report[entity_type]["f1-score"], abs=1e-12)


def test_degenerate_cases_score_zero_not_nan():
    scores = entity_scores([["B-PER", "O"]], [["O", "O"]])
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 0.0, 0.0)
    assert entity_scores([["O"]], [["O"]])["f1"] == 0.0
    assert np.isclose(entity_scores([["B-PER", "I-PER"]], [["B-PER", "I-PER"]])["f1"], 1.0)


@pytest.mark.parametrize("gold,predicted,message", [
    ([["O"]], [], "1 gold sentences but 0"),
    ([["O", "O"]], [["O"]], "Sentence 0: 2 gold tags but 1"),
    ([["X-PER"]], [["O"]], "not an IOB tag"),
])
def test_bad_inputs_are_named(gold, predicted, message):
    with pytest.raises(ValueError, match=message):
        entity_scores(gold, predicted)
