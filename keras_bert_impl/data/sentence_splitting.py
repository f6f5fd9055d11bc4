"""A small rule-based sentence splitter, for text given one document per line."""

import re

_SENTENCE_BOUNDARY = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*")
_CJK_SENTENCE_MARKS = "\u3002\uff01\uff1f"
_OPENERS = "\"'\u201c\u2018(["
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig no vol ed approx dept est inc ltd co corp gen gov "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


def split_sentences(text):
    """Split a document into sentences with a small rule-based splitter.

    A sentence ends at `.`, `!` or `?` (with any closing quotes or brackets) followed by whitespace and a
    digit or a letter that is not lowercase (perhaps behind an opening quote), unless the `.` ends a common
    abbreviation ("Mr.", "e.g.", month names, ...) or an initial ("J. Smith"); `。！？` always end one. Good
    enough for BERT's sentence pairs; use a trained splitter and `"sentence_per_line"` for precision.

    Args:
        text: str. One document.

    Returns:
        list of str, the stripped non-empty sentences.

    Example:
    >>> split_sentences("Dr. Smith arrived. He sat down! Was it 5 p.m.? 2 more came.")
    ['Dr. Smith arrived.', 'He sat down!', 'Was it 5 p.m.?', '2 more came.']
    """
    sentences = []
    start = 0
    for match in _SENTENCE_BOUNDARY.finditer(text):
        if not any(mark in match.group() for mark in _CJK_SENTENCE_MARKS):
            following = text[match.end() :]
            if not following[:1].isspace():
                continue
            following = following.lstrip()
            head = following[1:2] if following[:1] in _OPENERS else following[:1]
            if not (head.isdigit() or (head.isalpha() and not head.islower())):
                continue
            if match.group()[0] == "." and _ends_with_abbreviation(text[start : match.start()]):
                continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _ends_with_abbreviation(text):
    words = text.split()
    if not words:
        return False
    word = words[-1].lstrip(_OPENERS)
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())
