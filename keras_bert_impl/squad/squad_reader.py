"""Reading SQuAD v1.1 and v2.0 JSON files into question/context examples.

Answers stay character spans of the context; `preprocessing.convert_examples_to_features` maps them onto
WordPiece tokens. Bad input raises `SquadFormatError` naming the file and the JSON line/column or the question
(`data[0].paragraphs[3].qas[1]`) and field.
"""

import dataclasses
import logging

from keras_bert_impl.utils.file_patterns import read_json

logger = logging.getLogger(__name__)

_MAX_INDIVIDUAL_SKIP_WARNINGS = 20


class SquadFormatError(ValueError):
    """A SQuAD file that cannot be read: malformed JSON, or a missing or mistyped field."""


@dataclasses.dataclass(frozen=True)
class SquadAnswer:
    """One gold answer.

    Args:
        text: str. The answer text.
        answer_start: int or None. Character offset of the answer in the context; None when the file gives
            none (allowed for evaluation-only data).
    """

    text: str
    answer_start: int | None

    @property
    def answer_end(self):
        """Character offset one past the answer's last character, or None without `answer_start`."""
        return None if self.answer_start is None else self.answer_start + len(self.text)


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One SQuAD question about one context.

    Args:
        qas_id: str. The question id (the key of predictions.json).
        question_text: str. The question.
        context_text: str. The paragraph the answer is taken from (may be empty).
        answers: tuple of `SquadAnswer`. Gold answers (the first is the training label); empty if impossible.
        is_impossible: bool. A SQuAD v2.0 question without an answer in the context.
        title: str. The article title. Defaults to "".
    """

    qas_id: str
    question_text: str
    context_text: str
    answers: tuple
    is_impossible: bool = False
    title: str = ""


@dataclasses.dataclass(frozen=True)
class SkippedQuestion:
    """A training question left out because its answer is not in the context at `answer_start`.

    Args:
        qas_id: str. The question id.
        location: str. E.g. `data[0].paragraphs[3].qas[1]`.
        reason: str. Why it was skipped.
    """

    qas_id: str
    location: str
    reason: str


class SquadExamples(list):
    """The `SquadExample`s of one file (a list), with `skipped` (`SkippedQuestion`s) and the file's `version`."""

    def __init__(self, examples, skipped=(), version=""):
        super().__init__(examples)
        self.skipped = list(skipped)
        self.version = version

    @property
    def has_impossible_questions(self):
        """True if any example is an impossible (SQuAD v2.0) question."""
        return any(example.is_impossible for example in self)


def _field(container, key, expected_type, source, location, default=dataclasses.MISSING):
    if not isinstance(container, dict):
        raise SquadFormatError(f"{source}: {location} must be a JSON object, got {type(container).__name__}.")
    if key not in container:
        if default is not dataclasses.MISSING:
            return default
        raise SquadFormatError(f"{source}: {location} is missing the field {key!r}.")
    value = container[key]
    if not isinstance(value, expected_type) or (isinstance(value, bool) and expected_type is not bool):
        raise SquadFormatError(
            f"{source}: {location}.{key} must be {expected_type.__name__}, got {type(value).__name__} "
            f"({value!r:.60})."
        )
    return value


def squad_questions(squad_json, source="<squad json>"):
    """`(location, article, paragraph, question)` of every question of a SQuAD JSON object (or of its `data`
    list), in file order; `location` is e.g. `data[0].paragraphs[3].qas[1]`. Raises `SquadFormatError` for a
    missing or mistyped `data`, `paragraphs` or `qas`."""
    articles = squad_json if isinstance(squad_json, list) else _field(squad_json, "data", list, source, "the top level")
    for article_index, article in enumerate(articles):
        paragraphs = _field(article, "paragraphs", list, source, f"data[{article_index}]")
        for paragraph_index, paragraph in enumerate(paragraphs):
            location = f"data[{article_index}].paragraphs[{paragraph_index}]"
            for question_index, question in enumerate(_field(paragraph, "qas", list, source, location)):
                yield f"{location}.qas[{question_index}]", article, paragraph, question


def require_questions(squad_json, source="<squad json>"):
    """Raise `SquadFormatError` naming `source` unless the SQuAD JSON object holds at least one question: a
    file with none would be found only when it is scored, after training."""
    if next(squad_questions(squad_json, source), None) is None:
        raise SquadFormatError(f"{source} has no questions (every data[].paragraphs[].qas[] is empty or was "
                               f"skipped); give a SQuAD file with at least one question.")


def _answer_mismatch(context, answer):
    """Why `answer` cannot be located in `context`, or None if its text is there at answer_start."""
    if answer.answer_start is None:
        return "the answer has no answer_start"
    if not answer.text.strip():
        return "the answer text is empty"
    if answer.answer_start < 0 or answer.answer_end > len(context):
        return (f"answer_start {answer.answer_start} + length {len(answer.text)} is outside the context "
                f"({len(context)} characters)")
    found = context[answer.answer_start : answer.answer_end]
    if found != answer.text:
        return f"the context at answer_start {answer.answer_start} reads {found!r:.80}, not {answer.text!r:.80}"
    return None


def parse_squad_examples(squad_json, is_training=False, source="<squad json>"):
    """Turns an already loaded SQuAD JSON object into examples.

    Args:
        squad_json: dict. The parsed file (`{"version": ..., "data": [...]}`).
        is_training: bool. Each answerable question needs an answer with `answer_start`; one whose first
            answer does not match the context is skipped (logged, listed in `skipped`). Otherwise answers are
            kept as they are and may be missing. Defaults to False.
        source: str. Name used in error messages. Defaults to "<squad json>".

    Returns:
        `SquadExamples`.

    Example:
    >>> data = {"data": [{"title": "t", "paragraphs": [{"context": "Paris is in France.",
    ...     "qas": [{"id": "q1", "question": "Where is Paris?",
    ...              "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
    >>> examples = parse_squad_examples(data, is_training=True)
    >>> examples[0].answers[0].text
    'France'
    """
    articles = _field(squad_json, "data", list, source, "the top level")
    version = squad_json.get("version", "")
    version = version if isinstance(version, str) else str(version)
    examples, skipped = [], []
    first_location = {}
    for location, article, paragraph, question in squad_questions(articles, source):
        title = _field(article, "title", str, source, location.split(".")[0], default="")
        context = _field(paragraph, "context", str, source, location.rsplit(".", 1)[0])
        example = _parse_question(question, context, title, is_training, source, location)
        if not is_training:
            if example.qas_id in first_location:
                raise SquadFormatError(_unscorable_message(
                    source, location, example.qas_id, _duplicate_id_problem(first_location[example.qas_id])))
            first_location[example.qas_id] = location
        reason = None
        if is_training and not example.is_impossible:
            reason = _answer_mismatch(context, example.answers[0])
        if reason is None:
            examples.append(example)
            continue
        skipped.append(SkippedQuestion(example.qas_id, location, reason))
        if len(skipped) <= _MAX_INDIVIDUAL_SKIP_WARNINGS:
            logger.warning("%s: skipping %s (id %r): %s.", source, location, example.qas_id, reason)
    if skipped:
        logger.warning("%s: skipped %d of %d training questions whose answer does not match the context.", source,
                       len(skipped), len(skipped) + len(examples))
    return SquadExamples(examples, skipped, version)


def _parse_question(question, context, title, is_training, source, location):
    qas_id = _field(question, "id", str, source, location)
    question_text = _field(question, "question", str, source, location)
    is_impossible = _field(question, "is_impossible", bool, source, location, default=False)
    raw_answers = _field(question, "answers", list, source, location, default=None)
    if raw_answers is None:
        if is_training and not is_impossible:
            raise SquadFormatError(f"{source}: {location} (id {qas_id!r}) is missing the field 'answers'.")
        raw_answers = []
    answers = []
    for answer_index, raw_answer in enumerate(raw_answers):
        answer_location = f"{location}.answers[{answer_index}]"
        text = _field(raw_answer, "text", str, source, answer_location)
        answer_start = _field(raw_answer, "answer_start", int, source, answer_location,
                              default=dataclasses.MISSING if is_training else None)
        answers.append(SquadAnswer(text, answer_start))
    if is_training and not is_impossible and not answers:
        raise SquadFormatError(
            f"{source}: {location} (id {qas_id!r}) has no answers and is not marked is_impossible; a "
            f"training question needs an answer."
        )
    if is_impossible and is_training:
        # v2.0 training files keep `plausible_answers` aside; an impossible question's label is [CLS].
        answers = []
    return SquadExample(qas_id, question_text, context, tuple(answers), is_impossible, title)


SKIP_UNSCORABLE_FLAG = "--skip-unscorable-questions"


def _duplicate_id_problem(first_location):
    return (f"repeats the field 'id' of {first_location}, so their predictions would be merged; give every question "
            f"its own id")


_MISSING_ANSWERS_PROBLEM = ("is missing the field 'answers' and is not marked is_impossible, so it would be scored as "
                            "unanswerable; add its gold answers (or \"is_impossible\": true)")


def _unscorable_message(source, location, qas_id, problem, count=1):
    others = f" ({count} such questions in the file)" if count > 1 else ""
    return (f"{source}: {location} (id {qas_id!r}) {problem}, or pass {SKIP_UNSCORABLE_FLAG} to leave such questions "
            f"out of an evaluation{others}.")


def scorable_squad_json(squad_json, source="<squad json>", skip_unscorable=False):
    """Checks that no question repeats an earlier id or lacks `answers` without `is_impossible` (unscorable).

    Args:
        squad_json: dict or list. The parsed file, or its `data` list of articles.
        source: str. Name used in error messages. Defaults to "<squad json>".
        skip_unscorable: bool. Drop such questions (keeping the first of repeated ids) instead of raising.
            Defaults to False.

    Returns:
        (squad_json, dropped): the data (a filtered copy when questions were dropped) and the number dropped.

    Raises:
        SquadFormatError: naming the first unscorable question, its id and field, unless `skip_unscorable`.

    Example:
    >>> data = {"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "a", "question": "q", "answers": []},
    ...                                                          {"id": "a", "question": "q", "answers": []}]}]}]}
    >>> scorable_squad_json(data, skip_unscorable=True)[1]
    1
    """
    first_location, problems, dropped = {}, [], set()
    for location, _, _, question in squad_questions(squad_json, source):
        qas_id = _field(question, "id", str, source, location)
        if qas_id in first_location:
            problems.append((location, qas_id, _duplicate_id_problem(first_location[qas_id])))
            dropped.add(id(question))
        elif "answers" not in question and not question.get("is_impossible", False):
            problems.append((location, qas_id, _MISSING_ANSWERS_PROBLEM))
            dropped.add(id(question))
        else:
            first_location[qas_id] = location
    if not problems:
        return squad_json, 0
    if not skip_unscorable:
        raise SquadFormatError(_unscorable_message(source, *problems[0], count=len(problems)))
    kept_articles = [
        {**article, "paragraphs": [{**paragraph, "qas": [question for question in paragraph["qas"]
                                                         if id(question) not in dropped]}
                                   for paragraph in article["paragraphs"]]}
        for article in (squad_json if isinstance(squad_json, list) else squad_json["data"])
    ]
    return (kept_articles if isinstance(squad_json, list) else {**squad_json, "data": kept_articles}), len(problems)


def load_squad_json(path):
    """The parsed JSON file at `path`; `SquadFormatError` naming the line of malformed JSON or UTF-8."""
    return read_json(path, SquadFormatError)


def read_squad_examples(path, is_training=False):
    """Reads a SQuAD v1.1 or v2.0 JSON file into examples.

    Args:
        path: str. Path of the SQuAD JSON file.
        is_training: bool. Training mode (see `parse_squad_examples`). Defaults to False.

    Returns:
        `SquadExamples`.

    Example:
    >>> import json, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "dev.json")
    >>> with open(path, "w") as f:
    ...     json.dump({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "A cat.",
    ...         "qas": [{"id": "q", "question": "Who?", "answers": [], "is_impossible": True}]}]}]}, f)
    >>> read_squad_examples(path)[0].is_impossible
    True
    """
    return parse_squad_examples(load_squad_json(path), is_training=is_training, source=path)


def answerable_articles(squad_json, articles):
    """A SQuAD v1.1 dict of the `articles` (indices into `data`, in that order) with their answerable questions
    only (`is_impossible` or answerless ones left out, and paragraphs left with none): real questions for a model
    trained without unanswerable ones, split by article so that no question is about a paragraph trained on.

    Example:
    >>> squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "A cat.", "qas": [
    ...     {"id": "a", "question": "What?", "answers": [{"text": "cat", "answer_start": 2}]},
    ...     {"id": "b", "question": "Who?", "answers": [], "is_impossible": True}]}]}]}
    >>> [question["id"] for question in answerable_articles(squad, [0])["data"][0]["paragraphs"][0]["qas"]]
    ['a']
    """
    kept = []
    for index in articles:
        article = squad_json["data"][index]
        paragraphs = [{**paragraph, "qas": [question for question in paragraph["qas"]
                                            if question.get("answers") and not question.get("is_impossible")]}
                      for paragraph in article["paragraphs"]]
        kept.append({"title": article.get("title", ""), "paragraphs": [p for p in paragraphs if p["qas"]]})
    return {"version": "1.1", "data": kept}
