"""Token classification (NER) data: CoNLL column files and the tag vocabulary (pure Python).

A CoNLL file holds one word per line (`word TAG` or `word POS CHUNK TAG`), a blank line after each sentence;
IOB1 and IOB2 tags are both read into IOB2, the scheme the models predict.
"""

import dataclasses
import itertools

from keras_bert_impl.metrics.entity_metrics import OUTSIDE_TAG, split_tag, to_iob2
from keras_bert_impl.data.documents import text_lines
from keras_bert_impl.data.label_vocabulary import ClassificationDataError, LabelVocabulary

DOCUMENT_START = "-DOCSTART-"
# Hugging Face's ignore index: the label of positions the loss skips (later word pieces, [CLS], [SEP], padding).
IGNORED_LABEL = -100


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence of a CoNLL file: `words`, one IOB2 tag per word, its file `source` and first `line` (1-based)."""

    words: tuple
    tags: tuple
    source: str = ""
    line: int = 0


def read_conll_sentences(path):
    """Reads a CoNLL column file into `TaggedSentence`s; bad input raises `ClassificationDataError` naming the line.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("-DOCSTART- -X- O O\\n\\nEU NNP I-NP I-ORG\\nrejects VBZ I-VP O\\n\\nPeter I-PER\\n")
    >>> [(s.words, s.tags) for s in read_conll_sentences(path)]
    [(('EU', 'rejects'), ('B-ORG', 'O')), (('Peter',), ('B-PER',))]
    """
    sentences, rows = [], []
    lines = itertools.chain(text_lines(path, error=ClassificationDataError), [""])  # a blank line ends the last one
    for line_number, line in enumerate(lines, start=1):
        columns = line.split()
        if not columns or columns[0] == DOCUMENT_START:
            if rows:
                words = tuple(word for _, word, _ in rows)
                tags = tuple(to_iob2([tag for _, _, tag in rows]))
                sentences.append(TaggedSentence(words, tags, path, rows[0][0]))
                rows = []
            continue
        if len(columns) < 2:
            raise ClassificationDataError(f"{path}, line {line_number}: expected 'word TAG' (or 'word POS CHUNK "
                                          f"TAG'), found one column {columns[0]!r:.60}; give every word its tag, "
                                          "separated by a space or a tab.")
        try:
            split_tag(columns[-1])
        except ValueError as error:
            raise ClassificationDataError(f"{path}, line {line_number}: {error}") from None
        rows.append((line_number, columns[0], columns[-1]))
    if not sentences:
        raise ClassificationDataError(f"{path} has no sentences (it is empty or holds only -DOCSTART- lines); give "
                                      f"a CoNLL file with one 'word TAG' line per word.")
    return sentences


def tag_vocabulary(sentences):
    """The IOB2 tags of every entity type in `sentences`: "O", then `B-<type>`, `I-<type>` by sorted type (both,
    even if the data never uses the `I-` tag).

    Example:
    >>> tag_vocabulary([TaggedSentence(("Paris", "EU"), ("B-LOC", "B-ORG"))]).labels
    ['O', 'B-LOC', 'I-LOC', 'B-ORG', 'I-ORG']
    """
    types = sorted({split_tag(tag)[1] for sentence in sentences for tag in sentence.tags} - {""})
    return LabelVocabulary([OUTSIDE_TAG] + [f"{prefix}-{entity_type}" for entity_type in types
                                            for prefix in ("B", "I")])


def encode_tags(sentences, vocabulary):
    """The tag ids of each sentence (a list of int lists); an unknown tag names its file and line."""
    # A sentence's words are consecutive lines, so word i is on line `line + i`.
    return [[vocabulary.label_to_id(tag, f"{sentence.source}, line {sentence.line + index}")
             for index, tag in enumerate(sentence.tags)] for sentence in sentences]
