"""Tiny generated fine-tuning data for the fine-tuning glue and script tests: a vocabulary, GLUE-style TSVs,
SQuAD-format JSON, and a small checkpoint directory with its vocab.txt."""

import json
import os

import numpy as np

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "far", "away", "good", "bad", "very", "is",
         "was", "what", "where", "who", "did", "?", ".", ",", "paris", "france", "berlin", "in", "city",
         "river", "old", "new", "red", "blue", "green", "house", "tree", "walked", "home", "today"]
FILLER = [word for word in WORDS if word not in ("good", "?", ".", ",", "river", "paris", "france", "berlin")]
VOCABULARY = SPECIAL_TOKENS + WORDS
TINY_CHECKPOINT_BACKBONE = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                max_sequence_length=64)


def tokenizer():
    from keras_bert_impl.tokenization import BertTokenizer

    return BertTokenizer(VOCABULARY)


def sentence(rng, length, with_good):
    words = list(rng.choice(FILLER, length))
    if with_good:
        words[int(rng.integers(0, length))] = "good"
    return " ".join(words) + " ."


def write_mrpc_tsv(path, num_rows, seed):
    """An MRPC-layout TSV: label 1 iff the second sentence contains "good"."""
    rng = np.random.default_rng(seed)
    lines = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    for row in range(num_rows):
        label = row % 2
        first = sentence(rng, int(rng.integers(3, 12)), False)
        second = sentence(rng, int(rng.integers(3, 12)), bool(label))
        lines.append(f"{label}\t{2 * row}\t{2 * row + 1}\t{first}\t{second}")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return str(path)


def write_regression_jsonl(path, num_rows, seed):
    """A JSONL file with `text` and a float `score`: the number of "good" words."""
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(num_rows):
            words = list(rng.choice(FILLER, int(rng.integers(4, 10))))
            count = int(rng.integers(0, 3))
            for index in rng.choice(len(words), count, replace=False):
                words[index] = "good"
            handle.write(json.dumps({"text": " ".join(words), "score": float(count)}) + "\n")
    return str(path)


def write_squad_json(path, num_paragraphs, seed, version_2=True):
    """SQuAD-format JSON: "where is the X ?" answered by the place after "in"; v2.0 adds an unanswerable
    question per paragraph about a "river" (never in a context)."""
    rng = np.random.default_rng(seed)
    places = ["paris", "france", "berlin"]
    articles = []
    for index in range(num_paragraphs):
        thing, place = str(rng.choice(["cat", "dog", "house", "tree"])), str(rng.choice(places))
        before = " ".join(rng.choice(FILLER, int(rng.integers(3, 25))))
        after = " ".join(rng.choice(FILLER, int(rng.integers(3, 25))))
        context = f"{before} . the {thing} sat in {place} today . {after} ."
        start = context.index(f" in {place} ") + 4
        qas = [{"id": f"q{index}", "question": f"where is the {thing} ?",
                "answers": [{"text": place, "answer_start": start}]}]
        if version_2:
            qas[0]["is_impossible"] = False
            qas.append({"id": f"q{index}_impossible", "question": "where is the river ?", "answers": [],
                        "is_impossible": True})
        articles.append({"title": f"a{index}", "paragraphs": [{"context": context, "qas": qas}]})
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"version": "v2.0" if version_2 else "1.1", "data": articles}, handle)
    return str(path)


def write_tiny_checkpoint(directory, hidden_activation="gelu_approximate"):
    """A randomly initialised backbone directory (`save_pretrained`) with the test vocabulary beside it."""
    from keras_bert_impl.models.backbone import BertBackbone

    backbone = BertBackbone(vocabulary_size=len(VOCABULARY), hidden_activation=hidden_activation,
                            **TINY_CHECKPOINT_BACKBONE)
    backbone.save_pretrained(directory)
    tokenizer().save_pretrained(directory)
    return os.fspath(directory)
