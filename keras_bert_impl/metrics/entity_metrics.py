"""Entity-level precision, recall and F1 over IOB tag sequences, with the conlleval convention.

A predicted chunk counts only with exactly the gold chunk's words and type. A chunk starts at a `B-` tag, or at
an `I-` tag after `O` or another type (so IOB1 and IOB2 read alike), as `conlleval` reads them. Micro-averaged;
a ratio with denominator 0 is 0.0.
"""

import dataclasses

OUTSIDE_TAG = "O"
TAG_PREFIXES = ("B", "I")


@dataclasses.dataclass(frozen=True)
class EntityChunk:
    """One entity in a tag sequence: its type and the words `[start, end)` it spans."""

    type: str
    start: int
    end: int


def split_tag(tag):
    """`(prefix, type)` of an IOB tag: `("O", "")` for "O", `("B", "PER")` for "B-PER"; ValueError for others."""
    if tag == OUTSIDE_TAG:
        return OUTSIDE_TAG, ""
    prefix, separator, entity_type = tag.partition("-")
    if not separator or prefix not in TAG_PREFIXES or not entity_type:
        raise ValueError(f"tag {tag!r} is not an IOB tag: expected 'O', 'B-<type>' or 'I-<type>' (e.g. 'B-PER').")
    return prefix, entity_type


def entity_chunks(tags):
    """The `EntityChunk`s of one sequence of IOB1 or IOB2 `tags`, in order, read as conlleval reads them.

    Example:
    >>> [(c.type, c.start, c.end) for c in entity_chunks(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])]
    [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5), ('ORG', 5, 6)]
    """
    chunks, current_type, current_start = [], None, 0
    for index, tag in enumerate(tags):
        prefix, entity_type = split_tag(tag)
        continues = prefix == "I" and entity_type == current_type
        if current_type is not None and not continues:
            chunks.append(EntityChunk(current_type, current_start, index))
            current_type = None
        if prefix != OUTSIDE_TAG and not continues:
            current_type, current_start = entity_type, index
    if current_type is not None:
        chunks.append(EntityChunk(current_type, current_start, len(tags)))
    return chunks


def to_iob2(tags):
    """The same entities written in IOB2 (every entity starts with `B-`), from IOB1 or IOB2 tags.

    Example:
    >>> to_iob2(["I-ORG", "I-ORG", "O", "I-PER", "B-PER"])
    ['B-ORG', 'I-ORG', 'O', 'B-PER', 'B-PER']
    """
    iob2 = [OUTSIDE_TAG] * len(tags)
    for chunk in entity_chunks(tags):
        iob2[chunk.start] = f"B-{chunk.type}"
        for index in range(chunk.start + 1, chunk.end):
            iob2[index] = f"I-{chunk.type}"
    return iob2


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _precision_recall_f1(correct, predicted, gold):
    precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
    return precision, recall, _ratio(2 * precision * recall, precision + recall)


def entity_scores(gold_tags, predicted_tags):
    """Entity-level precision, recall and F1 of predicted tag sequences against gold ones (conlleval).

    Args:
        gold_tags: sequence of sequences of str. Gold IOB tags per sentence.
        predicted_tags: sequence of sequences of str. Predicted tags, as many per sentence as the gold ones.

    Returns:
        dict: `precision`, `recall`, `f1` (micro), `accuracy` (of word tags), and `<type>_precision`,
        `<type>_recall`, `<type>_f1` per entity type.

    Example:
    >>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> scores["precision"], scores["recall"], scores["f1"], scores["PER_f1"], scores["LOC_recall"]
    (0.5, 0.5, 0.5, 1.0, 0.0)
    """
    if len(gold_tags) != len(predicted_tags):
        raise ValueError(f"{len(gold_tags)} gold sentences but {len(predicted_tags)} predicted ones.")
    if not gold_tags:
        raise ValueError("Entity scores need at least one sentence; got none.")
    counts = {}  # type -> [correct, predicted, gold]
    words = correct_words = 0
    for index, (gold, predicted) in enumerate(zip(gold_tags, predicted_tags)):
        if len(gold) != len(predicted):
            raise ValueError(f"Sentence {index}: {len(gold)} gold tags but {len(predicted)} predicted ones.")
        gold_chunks, predicted_chunks = set(entity_chunks(gold)), set(entity_chunks(predicted))
        for chunk in gold_chunks | predicted_chunks:
            count = counts.setdefault(chunk.type, [0, 0, 0])
            count[0] += chunk in gold_chunks and chunk in predicted_chunks
            count[1] += chunk in predicted_chunks
            count[2] += chunk in gold_chunks
        words += len(gold)
        correct_words += sum(g == p for g, p in zip(gold, predicted))
    names = ("precision", "recall", "f1")
    totals = (sum(count[i] for count in counts.values()) for i in range(3))
    scores = dict(zip(names, _precision_recall_f1(*totals)), accuracy=_ratio(correct_words, words))
    for entity_type in sorted(counts):
        type_scores = _precision_recall_f1(*counts[entity_type])
        scores.update({f"{entity_type}_{name}": value for name, value in zip(names, type_scores)})
    return scores
