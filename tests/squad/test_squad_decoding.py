"""Decoding tests on hand-built features (NumPy only, every backend)."""

import json
import math
import re

import numpy as np
import pytest

from keras_bert_impl.squad import SquadExample, SquadFeatures, decode_squad_predictions, write_squad_predictions
from keras_bert_impl.squad.squad_decoding import softmax_probabilities
from tests.squad.squad_test_utils import original_best_windows, original_windows

pytestmark = pytest.mark.backend_independent

QUESTION_LENGTH = 2
DOC_OFFSET = QUESTION_LENGTH + 2  # [CLS] q q [SEP]


def synthetic_features(contexts, max_tokens_for_doc, doc_stride):
    """Features where every whitespace word of a context is one token, laid out as the feature builder does."""
    sequence_length = DOC_OFFSET + max_tokens_for_doc + 1
    rows = []
    for example_index, context in enumerate(contexts):
        words = [(m.start(), m.end()) for m in re.finditer(r"\S+", context)]
        windows = original_windows(len(words), max_tokens_for_doc, doc_stride)
        best = np.array(original_best_windows(windows, len(words)))
        for window_index, (start, length) in enumerate(windows):
            flags = best[start : start + length] == window_index
            rows.append((example_index, start, words[start : start + length], flags))
    n = len(rows)
    shape = (n, sequence_length)
    starts, ends = np.full(shape, -1, np.int32), np.full(shape, -1, np.int32)
    is_max = np.zeros(shape, bool)
    padding = np.zeros(shape, bool)
    for row, (_, _, spans, flags) in enumerate(rows):
        starts[row, DOC_OFFSET : DOC_OFFSET + len(spans)] = [s for s, _ in spans]
        ends[row, DOC_OFFSET : DOC_OFFSET + len(spans)] = [e for _, e in spans]
        is_max[row, DOC_OFFSET : DOC_OFFSET + len(spans)] = flags
        padding[row, : DOC_OFFSET + len(spans) + 1] = True
    return SquadFeatures(
        token_ids=np.ones(shape, np.int32),
        segment_ids=np.zeros(shape, np.int32),
        padding_mask=padding,
        start_positions=np.zeros(n, np.int32),
        end_positions=np.zeros(n, np.int32),
        example_index=np.array([r[0] for r in rows], np.int32),
        window_start=np.array([r[1] for r in rows], np.int32),
        token_char_starts=starts,
        token_char_ends=ends,
        token_is_max_context=is_max,
    )


def reference_decode(examples, features, start_logits, end_logits, n_best_size, max_answer_length, v2, threshold):
    """run_squad.py's write_predictions, transcribed loop for loop (text via character offsets)."""
    predictions, nbest_all, odds_all = {}, {}, {}
    for example_index, example in enumerate(examples):
        feature_ids = [f for f in range(len(features)) if features.example_index[f] == example_index]
        prelim = []
        score_null, null_feature, null_start, null_end = 1000000, 0, 0, 0
        for f in feature_ids:
            sl = [float(x) for x in start_logits[f]]
            el = [float(x) for x in end_logits[f]]
            starts = [i for i, _ in sorted(enumerate(sl), key=lambda x: x[1], reverse=True)][:n_best_size]
            ends = [i for i, _ in sorted(enumerate(el), key=lambda x: x[1], reverse=True)][:n_best_size]
            if v2 and sl[0] + el[0] < score_null:
                score_null, null_feature, null_start, null_end = sl[0] + el[0], f, sl[0], el[0]
            for s in starts:
                for e in ends:
                    if features.token_char_starts[f, s] < 0 or features.token_char_starts[f, e] < 0:
                        continue
                    if not features.token_is_max_context[f, s]:
                        continue
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    prelim.append((f, s, e, sl[s], el[e]))
        if v2:
            prelim.append((null_feature, 0, 0, null_start, null_end))
        prelim = sorted(prelim, key=lambda p: p[3] + p[4], reverse=True)
        seen, nbest = set(), []
        for f, s, e, sl_, el_ in prelim:
            if len(nbest) >= n_best_size:
                break
            if s > 0:
                text = example.context_text[features.token_char_starts[f, s] : features.token_char_ends[f, e]]
                if text in seen:
                    continue
            else:
                text = ""
            seen.add(text)
            nbest.append((text, sl_, el_))
        if v2 and "" not in seen:
            nbest.append(("", null_start, null_end))
        scores = [s + e for _, s, e in nbest]
        probabilities = [math.exp(x - max(scores)) for x in scores]
        probabilities = [p / sum(probabilities) for p in probabilities]
        nbest_all[example.qas_id] = [
            {"text": t, "probability": p, "start_logit": s, "end_logit": e}
            for (t, s, e), p in zip(nbest, probabilities)
        ]
        if not v2:
            predictions[example.qas_id] = nbest[0][0]
            continue
        best = next(entry for entry in nbest if entry[0])
        odds_all[example.qas_id] = score_null - best[1] - best[2]
        predictions[example.qas_id] = "" if odds_all[example.qas_id] > threshold else best[0]
    return predictions, nbest_all, odds_all


CONTEXT = "a0 b1 c2 d3 e4 f5 g6 h7"


def one_example(context=CONTEXT):
    return [SquadExample("q", "question?", context, ())]


def logits_for(features, starts, ends, background=0.0):
    start_logits = np.full(features.token_ids.shape, background, np.float32)
    end_logits = np.full(features.token_ids.shape, background, np.float32)
    for (f, position), value in starts.items():
        start_logits[f, position] = value
    for (f, position), value in ends.items():
        end_logits[f, position] = value
    return start_logits, end_logits


def test_invalid_spans_are_filtered():
    # One window of all 8 tokens; token i sits at position DOC_OFFSET + i.
    features = synthetic_features([CONTEXT], 8, 8)
    p = DOC_OFFSET
    start_logits, end_logits = logits_for(
        features,
        starts={(0, 1): 9.0, (0, p + 5): 8.0, (0, p + 1): 1.0},  # position 1 is a question token
        ends={(0, p + 4): 9.5, (0, p + 2): 2.0, (0, p + 7): 7.0},
        background=-10.0,
    )
    decoded = decode_squad_predictions(one_example(), features, start_logits, end_logits, max_answer_length=3)
    # (p+5, p+4): end < start; (p+5, p+7) length 3: kept; (1, *): outside the document.
    assert decoded.predictions == {"q": "f5 g6 h7"}
    decoded = decode_squad_predictions(one_example(), features, start_logits, end_logits, max_answer_length=2)
    # f5..h7 is now too long; the best remaining start/end pair in range is b1..c2.
    assert decoded.predictions == {"q": "b1 c2"}


def test_start_not_at_max_context_is_dropped():
    # Windows (0, 4), (2, 4), (4, 4): token 3 has max context in window 1, not window 0.
    features = synthetic_features([CONTEXT], 4, 2)
    p = DOC_OFFSET
    start_logits, end_logits = logits_for(
        features,
        starts={(0, p + 3): 10.0, (1, p + 1): 5.0},
        ends={(0, p + 3): 10.0, (1, p + 1): 5.0},
        background=-10.0,
    )
    decoded = decode_squad_predictions(one_example(), features, start_logits, end_logits)
    assert decoded.predictions["q"] == "d3"
    assert [entry["start_logit"] for entry in decoded.nbest["q"][:1]] == [5.0]


def test_nbest_is_deduplicated_sorted_and_softmaxed():
    features = synthetic_features([CONTEXT], 4, 2)
    p = DOC_OFFSET
    # Window 1 and window 2 both hold e4; e4 is at max context in window 1 (position p + 2).
    start_logits, end_logits = logits_for(
        features,
        starts={(1, p + 2): 3.0, (2, p + 0): 3.0, (1, p + 1): 1.0},
        ends={(1, p + 2): 2.0, (2, p + 0): 2.0, (1, p + 3): 1.5},
        background=-10.0,
    )
    decoded = decode_squad_predictions(one_example(), features, start_logits, end_logits, n_best_size=3)
    texts = [entry["text"] for entry in decoded.nbest["q"]]
    assert texts == ["e4", "e4 f5", "d3 e4"]
    scores = [5.0, 4.5, 3.0]
    expected = np.exp(scores) / np.exp(scores).sum()
    np.testing.assert_allclose([entry["probability"] for entry in decoded.nbest["q"]], expected, rtol=1e-12)


def test_v2_null_score_is_min_over_features_and_threshold_applies():
    features = synthetic_features([CONTEXT], 4, 2)  # windows 0, 1, 2
    p = DOC_OFFSET
    start_logits, end_logits = logits_for(
        features,
        starts={(0, 0): 4.0, (1, 0): 1.5, (2, 0): 3.0, (1, p + 2): 2.0},
        ends={(0, 0): 4.0, (1, 0): 1.0, (2, 0): 3.0, (1, p + 2): 1.0},
    )
    decoded = decode_squad_predictions(
        one_example(), features, start_logits, end_logits, version_2_with_negative=True
    )
    # Null score min(8, 2.5, 6) = 2.5; best non-null e4 = 3.0; odds -0.5 <= 0 -> answer.
    assert decoded.null_odds == {"q": pytest.approx(-0.5)}
    assert decoded.predictions == {"q": "e4"} and decoded.best_non_null == {"q": "e4"}
    null_entry = next(entry for entry in decoded.nbest["q"] if entry["text"] == "")
    assert (null_entry["start_logit"], null_entry["end_logit"]) == (1.5, 1.0)
    assert decoded.with_null_threshold(-0.6).predictions == {"q": ""}
    assert decoded.with_null_threshold(-0.5).predictions == {"q": "e4"}
    strict = decode_squad_predictions(
        one_example(), features, start_logits, end_logits, version_2_with_negative=True,
        null_score_diff_threshold=-1.0,
    )
    assert strict.predictions == {"q": ""} and strict.null_score_diff_threshold == -1.0


def test_answer_gives_the_prediction_with_its_context_offsets():
    features = synthetic_features([CONTEXT], 4, 2)
    p = DOC_OFFSET
    start_logits, end_logits = logits_for(
        features,
        starts={(0, 0): 4.0, (1, 0): 1.5, (2, 0): 3.0, (1, p + 2): 2.0},
        ends={(0, 0): 4.0, (1, 0): 1.0, (2, 0): 3.0, (1, p + 3): 1.0},
    )
    v1 = decode_squad_predictions(one_example(), features, start_logits, end_logits)
    answer = v1.answer("q")
    assert answer == {"text": "e4 f5", "start": 12, "end": 17, "score": 3.0}
    assert CONTEXT[answer["start"]:answer["end"]] == v1.predictions["q"]
    v2 = decode_squad_predictions(one_example(), features, start_logits, end_logits, version_2_with_negative=True)
    assert v2.answer("q") == {**answer, "null_odds": pytest.approx(-0.5)}
    assert v2.with_null_threshold(-0.6).answer("q") == {"text": "", "start": -1, "end": -1, "score": 3.0,
                                                         "null_odds": pytest.approx(-0.5)}
    empty = decode_squad_predictions(one_example(""), synthetic_features([""], 4, 2),
                                     *logits_for(synthetic_features([""], 4, 2), {}, {}))
    assert empty.answer("q") == {"text": "", "start": -1, "end": -1, "score": -math.inf}


def test_v1_with_null_threshold_is_an_error():
    features = synthetic_features([CONTEXT], 8, 8)
    decoded = decode_squad_predictions(one_example(), features, *logits_for(features, {}, {}))
    with pytest.raises(ValueError, match="only applies to SQuAD v2.0"):
        decoded.with_null_threshold(0.0)


def test_example_without_valid_span_predicts_empty():
    features = synthetic_features([""], 4, 2)
    logits = logits_for(features, {}, {})
    v1 = decode_squad_predictions(one_example(""), features, *logits)
    assert v1.predictions == {"q": ""} and v1.nbest["q"] == [
        {"text": "", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}
    ]
    v2 = decode_squad_predictions(one_example(""), features, *logits, version_2_with_negative=True)
    assert v2.predictions == {"q": ""} and v2.null_odds == {"q": math.inf}
    assert v2.with_null_threshold(1e9).predictions == {"q": ""}


@pytest.mark.parametrize("v2", [False, True])
def test_matches_transcribed_original_on_random_logits(rng, v2):
    contexts = [" ".join(f"w{i}x{j}" for j in range(n)) for i, n in enumerate([3, 11, 17, 6, 25])]
    examples = [SquadExample(f"q{i}", "?", c, ()) for i, c in enumerate(contexts)]
    features = synthetic_features(contexts, 6, 3)
    # One decimal: many exact ties, which exercise the ordering rules.
    start_logits = np.round(rng.normal(size=features.token_ids.shape), 1).astype(np.float32)
    end_logits = np.round(rng.normal(size=features.token_ids.shape), 1).astype(np.float32)
    decoded = decode_squad_predictions(examples, features, start_logits, end_logits, n_best_size=5,
                                       max_answer_length=4, version_2_with_negative=v2)
    predictions, nbest, odds = reference_decode(examples, features, start_logits, end_logits, 5, 4, v2, 0.0)
    assert decoded.predictions == predictions
    assert decoded.nbest == nbest
    assert decoded.null_odds == odds


def test_logit_shape_mismatch_is_an_error():
    features = synthetic_features([CONTEXT], 4, 2)
    with pytest.raises(ValueError, match=r"start_logits has shape \(2, 9\); .* \(3, 9\)"):
        decode_squad_predictions(one_example(), features, np.zeros((2, 9)), np.zeros((3, 9)))


def test_write_predictions_files(tmp_path):
    features = synthetic_features([CONTEXT], 4, 2)
    p = DOC_OFFSET
    logits = logits_for(features, {(0, p + 1): 3.0}, {(0, p + 1): 3.0})
    v1 = decode_squad_predictions(one_example(), features, *logits)
    paths = write_squad_predictions(v1, str(tmp_path / "v1"))
    assert sorted(paths) == ["nbest", "predictions"]
    assert json.loads(open(paths["predictions"], encoding="utf-8").read()) == {"q": "b1"}
    assert json.loads(open(paths["nbest"], encoding="utf-8").read())["q"][0]["text"] == "b1"
    v2 = decode_squad_predictions(one_example(), features, *logits, version_2_with_negative=True)
    paths = write_squad_predictions(v2, str(tmp_path / "v2"))
    assert json.loads(open(paths["null_odds"], encoding="utf-8").read()) == pytest.approx({"q": -6.0})
    assert sorted(p.name for p in (tmp_path / "v2").iterdir()) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"
    ]


def test_softmax_probabilities():
    assert softmax_probabilities([]) == []
    assert softmax_probabilities([1000.0, 1000.0]) == [0.5, 0.5]
