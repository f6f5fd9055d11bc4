import json
import logging

import pytest
from tests.squad.squad_test_utils import question, squad_json, write_json

from keras_bert_impl.squad import SquadFormatError, parse_squad_examples, read_squad_examples

pytestmark = pytest.mark.backend_independent

CONTEXT = "Marie Curie won the Nobel Prize in 1903 and again in 1911."


def test_reads_v1_questions_with_all_answers(tmp_path):
    data = squad_json(
        [
            (
                CONTEXT,
                [
                    question("q1", "When?", [("1903", 35), ("in 1903", 32)]),
                    question("q2", "Who?", [("Marie Curie", 0)]),
                ],
            )
        ],
        version="1.1",
        title="Curie",
    )
    examples = read_squad_examples(write_json(tmp_path / "dev.json", data))
    assert len(examples) == 2 and examples.version == "1.1" and not examples.skipped
    first = examples[0]
    assert (first.qas_id, first.question_text, first.context_text, first.title) == ("q1", "When?", CONTEXT, "Curie")
    assert [(a.text, a.answer_start, a.answer_end) for a in first.answers] == [("1903", 35, 39), ("in 1903", 32, 39)]
    assert not first.is_impossible and not examples.has_impossible_questions


def test_reads_v2_impossible_questions(tmp_path):
    impossible = question("q2", "When did she win a third?", [], is_impossible=True)
    impossible["plausible_answers"] = [{"text": "1911", "answer_start": 53}]
    data = squad_json([(CONTEXT, [question("q1", "When?", [("1911", 53)], is_impossible=False), impossible])])
    examples = read_squad_examples(write_json(tmp_path / "train.json", data), is_training=True)
    assert [e.is_impossible for e in examples] == [False, True]
    assert examples[1].answers == () and examples.has_impossible_questions


def test_malformed_json_names_file_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"version": "v2.0",\n  "data": [\n    {"title": "x",, "paragraphs": []}]}\n', encoding="utf-8")
    with pytest.raises(SquadFormatError) as error:
        read_squad_examples(str(path))
    message = str(error.value)
    assert str(path) in message and "line 3, column 19" in message


def paragraph(d, index):
    return d["data"][0]["paragraphs"][index]


def first_question(d, index):
    return paragraph(d, index)["qas"][0]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d.pop("data"), "the top level is missing the field 'data'"),
        (lambda d: d["data"][0].pop("paragraphs"), "data[0] is missing the field 'paragraphs'"),
        (lambda d: paragraph(d, 1).pop("context"), "data[0].paragraphs[1] is missing the field 'context'"),
        (
            lambda d: first_question(d, 1).pop("question"),
            "data[0].paragraphs[1].qas[0] is missing the field 'question'",
        ),
        (lambda d: first_question(d, 0).pop("id"), "data[0].paragraphs[0].qas[0] is missing the field 'id'"),
        (
            lambda d: first_question(d, 1)["answers"][0].pop("answer_start"),
            "data[0].paragraphs[1].qas[0].answers[0] is missing the field 'answer_start'",
        ),
        (
            lambda d: first_question(d, 1)["answers"][0].update(answer_start="35"),
            "data[0].paragraphs[1].qas[0].answers[0].answer_start must be int, got str",
        ),
        (lambda d: first_question(d, 0).update(is_impossible="no"), "qas[0].is_impossible must be bool"),
        (
            lambda d: first_question(d, 0).pop("answers"),
            "data[0].paragraphs[0].qas[0] (id 'a') is missing the field 'answers'",
        ),
    ],
)
def test_missing_or_mistyped_field_names_file_location_and_field(tmp_path, mutate, expected):
    data = squad_json(
        [("Paris.", [question("a", "Where?", [("Paris", 0)])]), (CONTEXT, [question("b", "When?", [("1903", 35)])])]
    )
    mutate(data)
    path = write_json(tmp_path / "train.json", data)
    with pytest.raises(SquadFormatError) as error:
        read_squad_examples(path, is_training=True)
    assert path in str(error.value) and expected in str(error.value)


def test_training_question_without_answers_must_be_impossible():
    data = squad_json([(CONTEXT, [question("a", "What?", [])])])
    with pytest.raises(SquadFormatError, match=r"qas\[0\] \(id 'a'\) has no answers and is not marked is_impossible"):
        parse_squad_examples(data, is_training=True)
    assert len(parse_squad_examples(data, is_training=False)) == 1


def test_mismatched_answers_are_skipped_with_count_and_warning(caplog):
    data = squad_json(
        [
            (
                CONTEXT,
                [
                    question("good", "When?", [("1903", 35)]),
                    question("shifted", "When?", [("1903", 36)]),
                    question("outside", "When?", [("1911", 500)]),
                    question("empty", "What?", [("", 3)]),
                    question("negative", "When?", [("M", -1)]),
                ],
            )
        ]
    )
    with caplog.at_level(logging.WARNING, logger="keras_bert_impl.squad.squad_reader"):
        examples = parse_squad_examples(data, is_training=True, source="train.json")
    assert [e.qas_id for e in examples] == ["good"]
    assert [s.qas_id for s in examples.skipped] == ["shifted", "outside", "empty", "negative"]
    assert "reads '903 '" in examples.skipped[0].reason
    assert examples.skipped[0].location == "data[0].paragraphs[0].qas[1]"
    assert "skipped 4 of 5 training questions" in caplog.text
    assert "train.json: skipping data[0].paragraphs[0].qas[1] (id 'shifted')" in caplog.text
    # Evaluation keeps every question: only the answer texts are used there.
    assert len(parse_squad_examples(data, is_training=False)) == 5


def test_empty_contexts_are_read():
    data = squad_json([("", [question("a", "Anything?", [], is_impossible=True), question("b", "Else?", [("x", 0)])])])
    training = parse_squad_examples(data, is_training=True)
    assert [e.qas_id for e in training] == ["a"] and training[0].context_text == ""
    assert [s.qas_id for s in training.skipped] == ["b"]
    assert len(parse_squad_examples(data)) == 2


def test_evaluation_answers_without_answer_start_are_kept():
    qas = [{"id": "a", "question": "Q", "answers": [{"text": "1903"}]}]
    data = {"data": [{"paragraphs": [{"context": CONTEXT, "qas": qas}]}]}
    (example,) = parse_squad_examples(data)
    assert example.answers[0].answer_start is None and example.answers[0].answer_end is None


def test_non_utf8_file_is_a_clear_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(squad_json([(CONTEXT, [])])).encode("utf-8").replace(b"Marie", b"M\xe9rie"))
    with pytest.raises(SquadFormatError, match=r"latin1.json, line 1: bytes b'\\xe9' .* are not valid UTF-8"):
        read_squad_examples(str(path))


def test_answerable_articles_keeps_the_chosen_articles_answerable_questions():
    from keras_bert_impl.squad.squad_reader import answerable_articles

    data = {"version": "v2.0", "data": [
        {"title": title, "paragraphs": [
            {"context": CONTEXT, "qas": [question(f"{title}-yes", "When?", [("1903", CONTEXT.index("1903"))]),
                                         question(f"{title}-no", "Why?", [], is_impossible=True)]},
            {"context": CONTEXT, "qas": [question(f"{title}-none", "How?", [], is_impossible=True)]}]}
        for title in ("first", "second", "third")]}
    kept = answerable_articles(data, [2, 0])
    assert kept["version"] == "1.1" and [article["title"] for article in kept["data"]] == ["third", "first"]
    assert [[q["id"] for p in article["paragraphs"] for q in p["qas"]] for article in kept["data"]] == [
        ["third-yes"], ["first-yes"]]
    assert [len(article["paragraphs"]) for article in kept["data"]] == [1, 1]  # no paragraph left without questions
    assert [example.qas_id for example in parse_squad_examples(kept, is_training=True)] == ["third-yes", "first-yes"]
