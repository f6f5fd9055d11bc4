"""`--tune-fraction`'s split: seeded, disjoint, complete; SQuAD by whole article."""

import pytest

from keras_bert_impl.training.finetuning import held_out_count, split_articles, split_rows

pytestmark = pytest.mark.backend_independent


def test_rows_are_split_disjointly_in_order_and_the_same_for_the_same_seed():
    rows = list(range(50))
    kept, held = split_rows(rows, 0.2, seed=3)
    assert len(held) == 10 and sorted(kept + held) == rows
    assert kept == sorted(kept) and held == sorted(held)
    assert split_rows(rows, 0.2, seed=3) == (kept, held)
    assert split_rows(rows, 0.2, seed=4)[1] != held


def test_squad_is_split_by_whole_article():
    articles = [{"title": f"t{index}", "paragraphs": [{"context": "c", "qas": [{"id": f"q{index}_{q}"}
                                                                             for q in range(3)]}]}
                for index in range(12)]
    kept, held = split_articles({"version": "v2.0", "data": articles}, 0.25, seed=0)
    assert kept["version"] == held["version"] == "v2.0"
    assert len(held["data"]) == 3 and len(kept["data"]) == 9
    assert {a["title"] for a in kept["data"]}.isdisjoint(a["title"] for a in held["data"])
    assert sorted(a["title"] for a in kept["data"] + held["data"]) == sorted(a["title"] for a in articles)


def test_at_least_one_item_on_each_side_or_a_clear_error():
    assert held_out_count(3, 0.01, "articles") == 1
    assert held_out_count(3, 0.99, "articles") == 2
    with pytest.raises(ValueError, match="Cannot hold out a fraction of 1 articles"):
        held_out_count(1, 0.5, "articles")
    with pytest.raises(ValueError, match="between 0 and 1"):
        held_out_count(10, 1.0, "rows")
