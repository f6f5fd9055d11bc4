"""Tuning data held out of the training data (`--tune-fraction`): rows for classification, whole articles
for SQuAD, since the questions of one article share its paragraphs and a split by question would let the
held-out questions be answered from text the model trained on."""

import numpy as np


def held_out_count(total, fraction, what):
    """How many of `total` items a `fraction` in (0, 1) holds out: rounded, at least 1, leaving at least 1.

    Args:
        total: int. Items to split.
        fraction: float. Share held out, in (0, 1).
        what: str. The items, for the error message ("training rows", "articles").

    Returns:
        int.

    Example:
    >>> held_out_count(12, 0.2, "articles")
    2
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"The held-out fraction must be between 0 and 1 (exclusive), got {fraction}.")
    if total < 2:
        raise ValueError(f"Cannot hold out a fraction of {total} {what}: it takes at least 2 (one to train on, one "
                         f"to tune on); give more training data or leave out --tune-fraction.")
    return min(total - 1, max(1, round(total * fraction)))


def _held_out_indices(total, fraction, seed, what):
    count = held_out_count(total, fraction, what)
    return set(np.random.default_rng(seed).permutation(total)[:count].tolist())


def split_rows(rows, fraction, seed):
    """`(kept, held_out)`: a seeded random `fraction` of `rows` held out, both in their original order.

    Args:
        rows: sequence. Training examples.
        fraction: float. Share held out, in (0, 1).
        seed: int. The same seed holds out the same rows.

    Returns:
        (list, list).

    Example:
    >>> kept, held = split_rows(list(range(10)), 0.3, seed=0)
    >>> len(kept), len(held), sorted(kept + held) == list(range(10))
    (7, 3, True)
    """
    held = _held_out_indices(len(rows), fraction, seed, "training rows")
    return ([row for index, row in enumerate(rows) if index not in held],
            [row for index, row in enumerate(rows) if index in held])


def split_articles(squad_json, fraction, seed):
    """`(kept, held_out)` SQuAD JSON objects: a seeded random `fraction` of the articles (`data[]`) held out.

    Args:
        squad_json: dict. A SQuAD file's object (`{"version", "data": [article, ...]}`).
        fraction: float. Share of the articles held out, in (0, 1).
        seed: int. The same seed holds out the same articles.

    Returns:
        (dict, dict): each the input's top level with its part of `data`, articles in their original order.

    Example:
    >>> data = {"version": "v2.0", "data": [{"title": t, "paragraphs": []} for t in "abcde"]}
    >>> kept, held = split_articles(data, 0.2, seed=0)
    >>> len(kept["data"]), len(held["data"])
    (4, 1)
    """
    articles = squad_json["data"]
    held = _held_out_indices(len(articles), fraction, seed, "articles")
    return ({**squad_json, "data": [a for index, a in enumerate(articles) if index not in held]},
            {**squad_json, "data": [a for index, a in enumerate(articles) if index in held]})
