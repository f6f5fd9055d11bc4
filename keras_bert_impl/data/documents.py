"""Pretraining text to documents: files (or in-memory texts) -> documents of sentences -> documents of token ids.

Input formats (UTF-8): `"sentence_per_line"` (the original's: a blank line between documents) and
`"document_per_line"` (split into sentences by `split_sentences`, a small rule-based splitter). Empty sentences
and documents are dropped.
"""

import re

from keras_bert_impl.utils.file_patterns import expand_paths, utf8_error_message

INPUT_FORMATS = ("sentence_per_line", "document_per_line")
_SENTENCE_BOUNDARY = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*")
_CJK_SENTENCE_MARKS = "\u3002\uff01\uff1f"
_OPENERS = "\"'\u201c\u2018(["
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig no vol ed approx dept est inc ltd co corp gen gov "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


def text_lines(path, errors="strict", newline=None, error=ValueError):
    """The lines of a UTF-8 text file (a byte order mark ignored); with `errors="strict"` bytes that are not UTF-8
    raise `error` naming the line, `"replace"` makes them U+FFFD. `newline` as `open` takes it."""
    try:
        with open(path, encoding="utf-8-sig", errors=errors, newline=newline) as handle:
            yield from handle
    except UnicodeDecodeError:
        raise error(utf8_error_message(path)) from None


def read_documents(files, input_format="sentence_per_line", errors="strict"):
    """Read text files into documents, each a list of sentence strings.

    Args:
        files: str or list of str. Paths (glob patterns allowed) of UTF-8 text files, read in order.
        input_format: str. `"sentence_per_line"` (blank lines between documents) or `"document_per_line"`.
            Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` or `"replace"` (see `text_lines`). Defaults to `"strict"`.

    Returns:
        list of documents (list of list of str), empty documents removed.

    Example:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> with open(path, "w") as f:
    ...     _ = f.write("First one.\\nSecond one.\\n\\nOther doc.\\n")
    >>> read_documents(path)
    [['First one.', 'Second one.'], ['Other doc.']]
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {input_format!r}.")
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}.")
    documents = [[]]
    for path in expand_paths(files):
        for line in text_lines(path, errors, newline="\n"):
            line = line.strip()
            if input_format == "document_per_line":
                documents.append(split_sentences(line))
            elif not line:
                documents.append([])
            else:
                documents[-1].append(line)
        if input_format == "sentence_per_line":
            documents.append([])  # a file ends its last document
    return [document for document in documents if document]


def as_sentence_documents(documents):
    """Documents given in memory: a str is split with `split_sentences`, a list is taken as its sentences."""
    sentence_documents = []
    for index, document in enumerate(documents):
        if isinstance(document, str):
            sentence_documents.append(split_sentences(document))
        elif isinstance(document, (list, tuple)) and all(isinstance(s, str) for s in document):
            sentence_documents.append([s for s in document if s.strip()])
        else:
            raise TypeError(f"Document {index} is {type(document).__name__}; expected a str or a list of str.")
    return [document for document in sentence_documents if document]


def tokenize_documents(documents, tokenizer):
    """Sentence documents (list of list of str) -> id documents, dropping sentences without tokens and empty
    documents; `tokenizer` is anything with `tokenize(list[str]) -> list[list[int]]`."""
    sentences = [sentence for document in documents for sentence in document]
    ids = tokenizer.tokenize(sentences) if sentences else []
    tokenized, cursor = [], 0
    for document in documents:
        sentence_ids = [list(map(int, s)) for s in ids[cursor : cursor + len(document)]]
        cursor += len(document)
        sentence_ids = [s for s in sentence_ids if s]
        if sentence_ids:
            tokenized.append(sentence_ids)
    return tokenized


def split_sentences(text):
    """Split a document into sentences with a small rule-based splitter.

    A sentence ends at `.!?` (and closing quotes) before whitespace and a digit or a non-lowercase letter, unless
    the `.` ends an abbreviation or an initial; `。！？` always end one. For precision, use a trained splitter and
    `"sentence_per_line"`.

    Example:
    >>> split_sentences("Dr. Smith arrived. He sat down! Was it 5 p.m.? 2 more came.")
    ['Dr. Smith arrived.', 'He sat down!', 'Was it 5 p.m.?', '2 more came.']
    """
    sentences, start = [], 0
    for match in _SENTENCE_BOUNDARY.finditer(text):
        if not any(mark in match.group() for mark in _CJK_SENTENCE_MARKS):
            following = text[match.end() :]
            if not following[:1].isspace():
                continue
            following = following.lstrip()
            head = following[1:2] if following[:1] in _OPENERS else following[:1]
            if not (head.isdigit() or (head.isalpha() and not head.islower())):
                continue
            last_word = (text[start : match.start()].split() or [""])[-1].lstrip(_OPENERS)
            if match.group()[0] == "." and (last_word.lower() in _ABBREVIATIONS  # "Mr.", "e.g.", or an initial
                                            or (len(last_word) == 1 and last_word.isupper())):
                continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
