"""Windowed SQuAD features (`SquadFeatures`, built by `preprocessing.convert_examples_to_features`) and their
start/end logits -> answer texts, n-best lists and null odds, after `run_squad.py`'s `write_predictions`.

`squad.span_ranking` (also run in-graph by exported models) ranks the spans; here they are mapped to context
text, deduplicated and joined by the null answer. Unlike the original, the answer is the exact context slice, and
an example with no valid span gets "" (v2.0 null odds +inf) instead of "empty" or a crash.
"""

import dataclasses
import functools
import math
import os

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_write_json

PREDICTIONS_FILENAME = "predictions.json"
NBEST_FILENAME = "nbest_predictions.json"
NULL_ODDS_FILENAME = "null_odds.json"
NO_SPAN = (-1, -1, -math.inf)


def softmax_probabilities(scores):
    """Softmax of a list of floats (empty for none), computed as the original: max subtracted, Python floats."""
    if not scores:
        return []
    max_score = max(scores)
    exps = [math.exp(score - max_score) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


@dataclasses.dataclass
class SquadFeatures:
    """Packed SQuAD features (one row per document window) plus what decoding needs.

    `F` features, `T` = sequence_length.

    Args:
        token_ids: int32 `(F, T)`. `[CLS] question [SEP] window [SEP]`, then padding.
        segment_ids: int32 `(F, T)`. 0 for `[CLS] question [SEP]`, 1 for the window and its `[SEP]`.
        padding_mask: bool `(F, T)`. True on real tokens.
        start_positions: int32 `(F,)`. Answer start token (0 = [CLS]: impossible, out of window or unlabeled).
        end_positions: int32 `(F,)`. Answer end token (inclusive).
        example_index: int32 `(F,)`. Index of the example (in the list given) this feature came from.
        window_start: int32 `(F,)`. Document token index of the window's first token.
        token_char_starts: int32 `(F, T)`. Context character where each window token starts; -1 outside it.
        token_char_ends: int32 `(F, T)`. Context character one past each window token's end; -1 outside.
        token_is_max_context: bool `(F, T)`. True where this window is the token's max-context window.
        skipped_example_indices: list of int. Training examples left out: their answer covers no token.
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    window_start: np.ndarray
    token_char_starts: np.ndarray
    token_char_ends: np.ndarray
    token_is_max_context: np.ndarray
    skipped_example_indices: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.token_ids)

    @property
    def sequence_length(self):
        """T, the padded sequence length."""
        return self.token_ids.shape[1]

    def inputs(self):
        """The backbone inputs: `{"token_ids", "segment_ids", "padding_mask"}` NumPy arrays."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids, "padding_mask": self.padding_mask}

    def labels(self):
        """The QA labels: `{"start_positions", "end_positions"}` NumPy arrays."""
        return {"start_positions": self.start_positions, "end_positions": self.end_positions}


@dataclasses.dataclass
class SquadPredictions:
    """Decoded SQuAD answers.

    Args:
        predictions: dict qas_id -> str. The answer ("" = no answer in v2.0).
        nbest: dict qas_id -> list of `{"text", "probability", "start_logit", "end_logit"}`, best first.
        null_odds: dict qas_id -> float. v2.0 only: null score - best non-null score.
        best_non_null: dict qas_id -> str. v2.0 only: the best non-empty answer.
        null_score_diff_threshold: float. The threshold `predictions` were made with.
        version_2_with_negative: bool. Whether null answers were considered.
        best_spans: dict qas_id -> `(char_start, char_end, score)` of the best non-null answer: its context
            span (end exclusive) and start + end logit; `(-1, -1, -inf)` when there is none.
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
            dict `{"text", "start", "end", "score"}` (`context[start:end] == text`, -1 for ""; the best non-null
            span's start + end logit); v2.0 adds `null_odds`.
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
        """These `SquadPredictions` with another v2.0 threshold: "" iff null odds > `null_score_diff_threshold`."""
        if not self.version_2_with_negative:
            raise ValueError("A null threshold only applies to SQuAD v2.0 decoding (version_2_with_negative=True).")
        predictions = {
            qas_id: "" if odds > null_score_diff_threshold else self.best_non_null[qas_id]
            for qas_id, odds in self.null_odds.items()
        }
        threshold = float(null_score_diff_threshold)
        return dataclasses.replace(self, predictions=predictions, null_score_diff_threshold=threshold)


def decode_squad_predictions(examples, features, start_logits, end_logits, n_best_size=20, max_answer_length=30,
                             version_2_with_negative=False, null_score_diff_threshold=0.0):
    """Decodes per-feature start/end logits into answers, as `run_squad.py`'s `write_predictions`.

    Args:
        examples: sequence of `SquadExample`, the list `features` was built from.
        features: `SquadFeatures` from `convert_examples_to_features(examples, ...)`.
        start_logits: float array `(F, T)`. Start logits per feature, in feature order.
        end_logits: float array `(F, T)`. End logits per feature.
        n_best_size: int. Candidates per feature and size of the n-best list. Defaults to 20.
        max_answer_length: int. Longest answer in tokens. Defaults to 30.
        version_2_with_negative: bool. SQuAD v2.0: consider the null answer. Defaults to False.
        null_score_diff_threshold: float. v2.0: predict "" iff null odds > this. Defaults to 0.0.

    Returns:
        `SquadPredictions`.

    Example:
    >>> import numpy as np
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> from keras_bert_impl.preprocessing import convert_examples_to_features
    >>> from keras_bert_impl.squad import SquadExample
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
            raise ValueError(f"{name} has shape {logits.shape}; the features need (num_features, sequence_length) = "
                             f"{expected_shape}.")
    if n_best_size < 1 or max_answer_length < 1:
        raise ValueError(f"n_best_size ({n_best_size}) and max_answer_length ({max_answer_length}) must be at least 1.")
    examples = list(examples)
    if len(features) and int(features.example_index.max()) >= len(examples):
        raise ValueError(f"The features refer to example {int(features.example_index.max())}, but only {len(examples)} "
                         f"examples were given; pass the examples the features were built from.")
    # TensorFlow: the one span decoder, which exported models run in-graph.
    from keras_bert_impl.squad import span_ranking

    ranked = span_ranking.rank_spans(
        start_logits, end_logits, features.example_index,
        (features.token_char_starts >= 0) & features.token_is_max_context, features.token_char_starts >= 0,
        n_best_size, max_answer_length,
    )
    best = span_ranking.best_spans(ranked, start_logits, end_logits, features.example_index, len(examples),
                                   n_best_size, version_2_with_negative)
    ranked = {name: values.numpy() for name, values in ranked.items()}
    best = {name: values.numpy() for name, values in best.items()}
    bounds = np.searchsorted(ranked["example"], np.arange(len(examples) + 1))

    predictions, nbest_json, null_odds, best_non_null, best_spans = {}, {}, {}, {}, {}
    for example_index, example in enumerate(examples):
        span = functools.partial(_span_in_context, example.context_text, features, ranked)
        null_score = best["null_score"][example_index]
        has_null = version_2_with_negative and math.isfinite(null_score)
        null_entry = ("", float(best["null_start_logit"][example_index]), float(best["null_end_logit"][example_index]))
        nbest, seen = [], set()
        for row in _with_null(range(*bounds[example_index : example_index + 2]), ranked["score"], null_score, has_null):
            if len(nbest) >= n_best_size:
                break
            text = "" if row is None else span(row)[0]
            if row is None:
                nbest.append(null_entry)
            elif text not in seen:
                nbest.append((text, float(ranked["start_logit"][row]), float(ranked["end_logit"][row])))
            seen.add(text)
        if has_null and "" not in seen:
            nbest.append(null_entry)
        if not nbest:
            nbest.append(("", 0.0, 0.0))
        probabilities = softmax_probabilities([start + end for _, start, end in nbest])
        nbest_json[example.qas_id] = [
            {"text": text, "probability": probability, "start_logit": start, "end_logit": end}
            for (text, start, end), probability in zip(nbest, probabilities)
        ]
        best_text, best_spans[example.qas_id] = "", NO_SPAN
        if best["found"][example_index]:
            best_text, char_start, char_end = span(bounds[example_index])
            best_spans[example.qas_id] = (char_start, char_end, float(best["score"][example_index]))
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0][0]
            continue
        null_odds[example.qas_id] = odds = float(best["null_odds"][example_index])
        best_non_null[example.qas_id] = best_text
        predictions[example.qas_id] = "" if odds > null_score_diff_threshold else best_text
    return SquadPredictions(predictions, nbest_json, null_odds, best_non_null, float(null_score_diff_threshold),
                            version_2_with_negative, best_spans)


def _span_in_context(context, features, ranked, row):
    """(text, char start, char end) of the ranked candidate `row`."""
    feature = ranked["feature"][row]
    char_start = int(features.token_char_starts[feature, ranked["start"][row]])
    char_end = int(features.token_char_ends[feature, ranked["end"][row]])
    return context[char_start:char_end], char_start, char_end


def _with_null(rows, scores, null_score, has_null):
    """The candidate rows with None (the null answer) inserted after every candidate scoring at least as much."""
    for row in rows:
        if has_null and scores[row] < null_score:
            has_null = False
            yield None
        yield row
    if has_null:
        yield None


def write_squad_predictions(decoded, output_dir):
    """Writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json atomically.

    Args:
        decoded: `SquadPredictions`.
        output_dir: str. Directory (created if needed).

    Returns:
        dict "predictions" / "nbest" / "null_odds" -> written path.
    """
    paths = {key: os.path.join(output_dir, name) for key, name in (("predictions", PREDICTIONS_FILENAME),
                                                                    ("nbest", NBEST_FILENAME))}
    atomic_write_json(paths["predictions"], decoded.predictions)
    atomic_write_json(paths["nbest"], decoded.nbest)
    if decoded.version_2_with_negative:
        paths["null_odds"] = os.path.join(output_dir, NULL_ODDS_FILENAME)
        atomic_write_json(paths["null_odds"], decoded.null_odds)
    return paths
