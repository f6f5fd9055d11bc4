"""Oracle test: gold spans turned into logits must decode back to the gold answers (exact match 100).

A SQuAD-format file is written with long contexts (several windows at a small sequence_length), accents,
punctuation, answers on window boundaries, an over-long question, an empty context and impossible
questions; it goes through the whole pipeline with the real BertTokenizer: read -> features -> logits
built from the training labels -> decode -> official-semantics evaluation.
"""

import re

import numpy as np
import pytest
from tests.squad.squad_test_utils import original_windows, question, real_tokenizer, squad_json, write_json

from keras_bert_impl.preprocessing import convert_examples_to_features
from keras_bert_impl.squad import (
    decode_squad_predictions,
    evaluate_squad_files,
    evaluate_v1,
    evaluate_v2,
    read_squad_examples,
    tune_null_threshold,
    write_squad_predictions,
)

pytestmark = pytest.mark.backend_independent

MAX_SEQ_LENGTH = 40
MAX_QUERY_LENGTH = 12
DOC_STRIDE = 10

CONTEXTS = [
    "The Ångström café, opened in Zürich (1990–1995), served naïve crème brûlée; its owner—Jean-Luc "
    "Picard—said: \"Make it so!\" Later, in 2001, the café moved to São Paulo, where résumés were read aloud "
    "every Tuesday. Critics called it \"the best-kept secret of Europe\", although it was in Brazil by then. "
    "The menu listed 12.5% service, €3.50 espressos and a dish named Smørrebrød à la française.",
    "Ödön von Horváth wrote plays in German; his best-known work, Tales from the Vienna Woods (1931), won "
    "the Kleist Prize. He died in Paris on 1 June 1938, when a falling branch struck him on the "
    "Champs-Élysées during a storm. Scholars in Zagreb, Budapest and Vienna still argue over his "
    "nationality, yet all agree he wrote in German.",
]

# (question, answer text) pairs; answers are whole words or phrases of the contexts.
QUESTIONS = [
    [
        ("What was the café called?", "Ångström café"),
        ("Where did it open?", "Zürich"),
        ("When was it open in Zürich?", "(1990–1995),"),
        ("Who owned it?", "Jean-Luc Picard"),
        ("What did the owner say?", "\"Make it so!\""),
        ("Where did it move?", "São Paulo"),
        ("What was read aloud?", "résumés"),
        ("What was the service charge?", "12.5%"),
        ("Which dish was named?", "Smørrebrød à la française."),
    ],
    [
        ("Who wrote plays in German?", "Ödön von Horváth"),
        ("Which prize did the work win?", "Kleist Prize."),
        ("Where did he die?", "Champs-Élysées"),
        ("Where do scholars still argue about his nationality, in which cities exactly, in Europe?", "Zagreb,"),
    ],
]
IMPOSSIBLE = ["What colour was the café's roof?", "Which film did von Horváth direct?"]


def boundary_answers(context, tokenizer, question_text):
    """Whitespace words around the first window boundaries for this question's window layout."""
    query_length = min(len(tokenizer.tokenize(question_text)), MAX_QUERY_LENGTH)
    _, starts, ends = tokenizer.tokenize_with_offsets(context)
    windows = [(start, start + length) for start, length in
               original_windows(len(starts), MAX_SEQ_LENGTH - query_length - 3, DOC_STRIDE)]
    assert len(windows) >= 3, "the context must span several windows"
    positions = [windows[0][1] - 1, windows[1][0], windows[1][1] - 1, windows[2][0], windows[-1][1] - 1]
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", context)]
    answers = []
    for position in positions:
        start, end = next((s, e) for s, e in words if s <= starts[position] < e)
        if all(existing[1] != start for existing in answers):
            answers.append((context[start:end], start))
    return answers


def build_file(tmp_path, version_2):
    tokenizer = real_tokenizer()
    paragraphs = []
    for paragraph_index, (context, questions) in enumerate(zip(CONTEXTS, QUESTIONS)):
        qas = []
        for question_index, (text, answer_text) in enumerate(questions):
            answers = [(answer_text, context.index(answer_text))]
            if question_index == 0:
                # A second gold answer, as dev files have.
                answers.append((answer_text.split()[0], context.index(answer_text)))
            qas.append(question(f"p{paragraph_index}q{question_index}", text, answers, False if version_2 else None))
        boundary_question = "Which word sits at a window boundary?"
        for boundary_index, answer in enumerate(boundary_answers(context, tokenizer, boundary_question)):
            qas.append(question(f"p{paragraph_index}b{boundary_index}", boundary_question, [answer],
                                False if version_2 else None))
        if version_2:
            qas.append(question(f"p{paragraph_index}x", IMPOSSIBLE[paragraph_index], [], True))
        paragraphs.append((context, qas))
    if version_2:
        paragraphs.append(("", [question("empty", "Is there anything here?", [], True)]))
    data = squad_json(paragraphs, version="v2.0" if version_2 else "1.1")
    return data, write_json(tmp_path / "squad.json", data)


def oracle_logits(features, rng):
    """A perfect model: +10 at the gold start and end where the window holds the answer, else at [CLS]."""
    shape = features.token_ids.shape
    start_logits = rng.normal(scale=0.5, size=shape).astype(np.float32)
    end_logits = rng.normal(scale=0.5, size=shape).astype(np.float32)
    rows = np.arange(len(features))
    start_logits[rows, features.start_positions] += 10.0
    end_logits[rows, features.end_positions] += 10.0
    return start_logits, end_logits


@pytest.mark.parametrize("stride_semantics", ["step", "overlap"])
@pytest.mark.parametrize("version_2", [False, True])
def test_gold_logits_decode_to_gold_answers(tmp_path, rng, version_2, stride_semantics):
    tokenizer = real_tokenizer()
    data, path = build_file(tmp_path, version_2)
    settings = dict(sequence_length=MAX_SEQ_LENGTH, doc_stride=DOC_STRIDE if stride_semantics == "step" else 14,
                    max_query_length=MAX_QUERY_LENGTH, stride_semantics=stride_semantics)
    examples = read_squad_examples(path)
    training_examples = read_squad_examples(path, is_training=True)
    assert not training_examples.skipped and len(training_examples) == len(examples)
    features = convert_examples_to_features(examples, tokenizer, **settings)
    labeled = convert_examples_to_features(training_examples, tokenizer, is_training=True, **settings)
    np.testing.assert_array_equal(labeled.token_ids, features.token_ids)
    assert np.bincount(features.example_index).max() >= 4, "contexts must span several windows"

    for index, example in enumerate(examples):
        rows = features.example_index == index
        if example.is_impossible:
            assert not labeled.start_positions[rows].any()
            continue
        starts = labeled.start_positions[rows]
        at_max_context = features.token_is_max_context[rows][np.arange(rows.sum()), starts]
        assert (at_max_context & (starts > 0)).any(), f"{example.qas_id}: no window holds the answer at max context"

    start_logits, end_logits = oracle_logits(labeled, rng)
    decoded = decode_squad_predictions(examples, features, start_logits, end_logits,
                                       version_2_with_negative=version_2)
    expected = {e.qas_id: (e.answers[0].text if not e.is_impossible else "") for e in examples}
    assert decoded.predictions == expected
    # The long question was truncated, not rejected.
    assert "p1q3" in decoded.predictions

    if version_2:
        result = evaluate_v2(data, decoded.predictions, decoded.null_odds, na_prob_thresh=0.0)
        assert (result["exact"], result["f1"]) == (100.0, 100.0)
        assert result["HasAns_exact"] == 100.0 and result["NoAns_exact"] == 100.0 and result["NoAns_total"] == 3
        assert all(decoded.null_odds[e.qas_id] > 0 for e in examples if e.is_impossible)
        tuned = tune_null_threshold(data, decoded.best_non_null, decoded.null_odds)
        assert tuned.f1 == 100.0
        assert decoded.with_null_threshold(tuned.threshold).predictions == expected
    else:
        assert evaluate_v1(data, decoded.predictions) == {"exact_match": 100.0, "f1": 100.0}

    paths = write_squad_predictions(decoded, str(tmp_path / "out"))
    from_files = evaluate_squad_files(path, paths["predictions"], paths.get("null_odds"))
    assert from_files["exact" if version_2 else "exact_match"] == 100.0
