"""Start/end logits -> answer texts, n-best lists and null odds, after `run_squad.py`'s `write_predictions`.

Per example, over all its features (document windows):

1. Take the `n_best_size` highest start logits and end logits of each feature (ties: lower index first).
2. Keep pairs whose start and end are document tokens of the window, whose start token is at its max
   context, with end >= start and at most `max_answer_length` tokens.
3. SQuAD v2.0: the null score is the smallest `start_logits[0] + end_logits[0]` ([CLS]) over the features;
   the null answer joins the candidates with that score.
4. Sort by start + end logit (stable: earlier features, higher start logits first on ties), map each span
   to the context by the tokens' character offsets, drop repeated texts, keep `n_best_size`, and softmax
   the summed logits over the n-best list.
5. v1.1: the answer is the top n-best text. v2.0: the null odds are `null score - best non-null score`, and
   the answer is "" iff the odds exceed `null_score_diff_threshold`.

Differences from the original, all in corner cases: answer text is the exact context slice (the original
re-joins whitespace-split words with single spaces); an example with no valid span (e.g. an empty context)
gets "" with probability 1 instead of the placeholder text "empty", and in v2.0 null odds of +inf (written
as `Infinity` in null_odds.json, which Python's `json` reads) instead of a crash.
"""

import dataclasses
import math
import os

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_write_json

PREDICTIONS_FILENAME = "predictions.json"
NBEST_FILENAME = "nbest_predictions.json"
NULL_ODDS_FILENAME = "null_odds.json"


NO_SPAN = (-1, -1, -math.inf)


def softmax_probabilities(scores):
    """Softmax of a list of floats, computed as the original (max subtracted, Python floats).

    Args:
        scores: list of float.

    Returns:
        list of float summing to 1 (empty for empty input).
    """
    if not scores:
        return []
    max_score = max(scores)
    exps = [math.exp(score - max_score) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


def top_indices(logits, n_best_size):
    """Indices of the `n_best_size` largest logits, largest first; equal logits keep index order."""
    return np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")[:n_best_size]


@dataclasses.dataclass
class SquadPredictions:
    """Decoded SQuAD answers.

    Args:
        predictions: dict qas_id -> str. The answer ("" = no answer in v2.0).
        nbest: dict qas_id -> list of dicts `{"text", "probability", "start_logit", "end_logit"}`, best
            first.
        null_odds: dict qas_id -> float. v2.0 only (empty for v1.1): null score - best non-null score;
            the larger, the more likely the question has no answer.
        best_non_null: dict qas_id -> str. v2.0 only: the best non-empty answer, what is predicted when
            the odds do not exceed the threshold.
        null_score_diff_threshold: float. The threshold `predictions` were made with.
        version_2_with_negative: bool. Whether null answers were considered.
        best_spans: dict qas_id -> `(char_start, char_end, score)` of the best non-null answer (the one
            `predictions` holds unless it is ""): its code point span in the context (end exclusive) and its
            start + end logit; `(-1, -1, -inf)` when there is none.
    """

    predictions: dict
    nbest: dict
    null_odds: dict
    best_non_null: dict
    null_score_diff_threshold: float
    version_2_with_negative: bool
    best_spans: dict = dataclasses.field(default_factory=dict)

    def answer(self, qas_id):
        """The prediction of `qas_id` with where it is in the context.

        Returns:
            dict `{"text", "start", "end", "score"}`: the answer ("" for none), its code point offsets in the
            context (`context[start:end] == text`; -1 and -1 for ""), and the start + end logit of the best
            non-null span (-inf when there is none). v2.0 adds `null_odds`.
        """
        text = self.predictions[qas_id]
        start, end, score = self.best_spans.get(qas_id, NO_SPAN)
        if not text:
            start = end = -1
        answer = {"text": text, "start": int(start), "end": int(end), "score": float(score)}
        if self.version_2_with_negative:
            answer["null_odds"] = float(self.null_odds[qas_id])
        return answer

    def with_null_threshold(self, null_score_diff_threshold):
        """The same decoding with another v2.0 threshold (e.g. one from `tune_null_threshold`).

        Args:
            null_score_diff_threshold: float. Predict "" iff null odds > this.

        Returns:
            `SquadPredictions`.
        """
        if not self.version_2_with_negative:
            raise ValueError("A null threshold only applies to SQuAD v2.0 decoding (version_2_with_negative=True).")
        predictions = {
            qas_id: "" if odds > null_score_diff_threshold else self.best_non_null[qas_id]
            for qas_id, odds in self.null_odds.items()
        }
        return dataclasses.replace(
            self, predictions=predictions, null_score_diff_threshold=float(null_score_diff_threshold)
        )


def _feature_candidates(feature, start_logits, end_logits, n_best_size, max_answer_length, char_starts,
                        is_max_context):
    """Valid (start, end) pairs of one feature in the original's loop order: start rank, then end rank."""
    starts = top_indices(start_logits, n_best_size)
    ends = top_indices(end_logits, n_best_size)
    start_grid, end_grid = np.meshgrid(starts, ends, indexing="ij")
    start_grid, end_grid = start_grid.ravel(), end_grid.ravel()
    in_document = (char_starts[start_grid] >= 0) & (char_starts[end_grid] >= 0)
    valid = (
        in_document
        & is_max_context[start_grid]
        & (end_grid >= start_grid)
        & (end_grid - start_grid + 1 <= max_answer_length)
    )
    return [(feature, int(s), int(e)) for s, e in zip(start_grid[valid], end_grid[valid])]


def decode_squad_predictions(
    examples,
    features,
    start_logits,
    end_logits,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """Decodes per-feature start/end logits into answers, as `run_squad.py`'s `write_predictions`.

    Args:
        examples: sequence of `SquadExample`, the list `features` was built from.
        features: `SquadFeatures` from `convert_examples_to_features(examples, ...)`.
        start_logits: float array `(F, T)`. Start logits per feature, in feature order.
        end_logits: float array `(F, T)`. End logits per feature.
        n_best_size: int. Candidates per feature and size of the n-best list. Defaults to 20.
        max_answer_length: int. Longest answer in tokens. Defaults to 30.
        version_2_with_negative: bool. SQuAD v2.0: consider the null answer. Defaults to False.
        null_score_diff_threshold: float. v2.0: predict "" iff null score - best non-null score > this.
            Defaults to 0.0.

    Returns:
        `SquadPredictions`.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> from keras_bert_impl.squad import SquadExample, convert_examples_to_features
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "?",
    ...                            "in", "france", "."])
    >>> examples = [SquadExample("q", "Where is Paris?", "Paris is in France.", ())]
    >>> features = convert_examples_to_features(examples, tokenizer, sequence_length=12, max_query_length=4)
    >>> start_logits, end_logits = np.zeros((1, 12)), np.zeros((1, 12))
    >>> start_logits[0, 9] = end_logits[0, 9] = 5.0  # [CLS] where is paris ? [SEP] paris is in >france< . [SEP]
    >>> decode_squad_predictions(examples, features, start_logits, end_logits).predictions
    {'q': 'France'}
    """
    start_logits = np.asarray(start_logits, dtype=np.float64)
    end_logits = np.asarray(end_logits, dtype=np.float64)
    expected_shape = (len(features), features.sequence_length)
    for name, logits in (("start_logits", start_logits), ("end_logits", end_logits)):
        if logits.shape != expected_shape:
            raise ValueError(
                f"{name} has shape {logits.shape}; the features need (num_features, sequence_length) = "
                f"{expected_shape}."
            )
    if n_best_size < 1 or max_answer_length < 1:
        raise ValueError(
            f"n_best_size ({n_best_size}) and max_answer_length ({max_answer_length}) must be at least 1."
        )
    examples = list(examples)
    if len(features) and int(features.example_index.max()) >= len(examples):
        raise ValueError(
            f"The features refer to example {int(features.example_index.max())}, but only {len(examples)} "
            f"examples were given; pass the examples the features were built from."
        )
    features_of_example = [[] for _ in examples]
    for feature, example_index in enumerate(features.example_index.tolist()):
        features_of_example[example_index].append(feature)

    predictions, nbest_json, null_odds, best_non_null, best_spans = {}, {}, {}, {}, {}
    for example_index, example in enumerate(examples):
        candidates = []
        null_score, null_logits = math.inf, (0.0, 0.0)
        for feature in features_of_example[example_index]:
            if version_2_with_negative:
                feature_null = start_logits[feature, 0] + end_logits[feature, 0]
                if feature_null < null_score:
                    null_score = feature_null
                    null_logits = (float(start_logits[feature, 0]), float(end_logits[feature, 0]))
            candidates += _feature_candidates(
                feature,
                start_logits[feature],
                end_logits[feature],
                n_best_size,
                max_answer_length,
                features.token_char_starts[feature],
                features.token_is_max_context[feature],
            )
        scored = [
            (start_logits[f, s] + end_logits[f, e], float(start_logits[f, s]), float(end_logits[f, e]), f, s, e)
            for f, s, e in candidates
        ]
        has_null = version_2_with_negative and math.isfinite(null_score)
        if has_null:
            scored.append((null_score, null_logits[0], null_logits[1], None, 0, 0))
        scored.sort(key=lambda candidate: candidate[0], reverse=True)

        # Entries: (text, start_logit, end_logit, (char_start, char_end, score) or None for the null answer).
        nbest, seen = [], set()
        for score, start_logit, end_logit, feature, start, end in scored:
            if len(nbest) >= n_best_size:
                break
            span = None
            if feature is None:
                text = ""
            else:
                char_start = int(features.token_char_starts[feature, start])
                char_end = int(features.token_char_ends[feature, end])
                text = example.context_text[char_start:char_end]
                if text in seen:
                    continue
                span = (char_start, char_end, float(score))
            seen.add(text)
            nbest.append((text, start_logit, end_logit, span))
        if has_null and "" not in seen:
            nbest.append(("", null_logits[0], null_logits[1], None))
        if not nbest:
            nbest.append(("", 0.0, 0.0, None))
        probabilities = softmax_probabilities([start + end for _, start, end, _ in nbest])
        nbest_json[example.qas_id] = [
            {"text": text, "probability": probability, "start_logit": start, "end_logit": end}
            for (text, start, end, _), probability in zip(nbest, probabilities)
        ]
        best = next((entry for entry in nbest if entry[0]), None)
        best_spans[example.qas_id] = NO_SPAN if best is None else best[3]
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0][0]
            continue
        if best is None:
            odds, best_text = math.inf, ""
        else:
            odds, best_text = float(null_score - best[1] - best[2]), best[0]
        null_odds[example.qas_id] = odds
        best_non_null[example.qas_id] = best_text
        predictions[example.qas_id] = "" if odds > null_score_diff_threshold else best_text
    return SquadPredictions(
        predictions=predictions,
        nbest=nbest_json,
        null_odds=null_odds,
        best_non_null=best_non_null,
        null_score_diff_threshold=float(null_score_diff_threshold),
        version_2_with_negative=version_2_with_negative,
        best_spans=best_spans,
    )


def write_squad_predictions(decoded, output_dir):
    """Writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json atomically.

    Args:
        decoded: `SquadPredictions`.
        output_dir: str. Directory (created if needed).

    Returns:
        dict "predictions" / "nbest" / "null_odds" -> written path.
    """
    paths = {
        "predictions": os.path.join(output_dir, PREDICTIONS_FILENAME),
        "nbest": os.path.join(output_dir, NBEST_FILENAME),
    }
    atomic_write_json(paths["predictions"], decoded.predictions)
    atomic_write_json(paths["nbest"], decoded.nbest)
    if decoded.version_2_with_negative:
        paths["null_odds"] = os.path.join(output_dir, NULL_ODDS_FILENAME)
        atomic_write_json(paths["null_odds"], decoded.null_odds)
    return paths
