"""The one SQuAD span decoder: start/end logits -> every example's valid spans, ranked as `run_squad.py` ranks them.

TensorFlow ops, run eagerly by `squad.decode_squad_predictions` and in-graph by an exported model's `serve_text`.
Candidates are each feature's `n_best_size` top start and end logits; ties keep the original's listing order
(feature, start rank, end rank). The v2.0 null score is the smallest `start_logits[f, 0] + end_logits[f, 0]`
over an example's features, and its odds `(null score - start logit) - end logit` of the best span.

Shape legend: B examples, F features (windows of all examples), T sequence length, C valid candidates.
"""

import tensorflow as tf


def _gather_or(values, index, use, fill):
    """`values[index]` where `use`, else `fill` (reading nothing out of range, even from an empty `values`)."""
    padded = tf.concat([values, tf.fill([1], tf.cast(fill, values.dtype))], axis=0)
    return tf.gather(padded, tf.where(use, index, tf.shape(values, out_type=index.dtype)[0]))


def rank_spans(start_logits, end_logits, example_index, can_start, can_end, n_best_size, max_answer_length):
    """Every valid candidate span, grouped by example (ascending) and best first within an example.

    Args:
        start_logits: float `(F, T)`. Start logits per feature.
        end_logits: float `(F, T)`. End logits per feature.
        example_index: int `(F,)`. The example of each feature.
        can_start: bool `(F, T)`. Positions an answer may start at (document tokens at their max context).
        can_end: bool `(F, T)`. Positions an answer may end at (document tokens).
        n_best_size: int. Start and end candidates per feature.
        max_answer_length: int. Longest answer in tokens.

    Returns:
        dict of `(C,)` tensors: `example` int64, `feature`, `start`, `end` int64 (token positions in the
        feature, end inclusive), `start_logit`, `end_logit` and `score` float64.
    """
    start_logits = tf.cast(start_logits, tf.float64)
    end_logits = tf.cast(end_logits, tf.float64)
    k = min(n_best_size, start_logits.shape[1])
    starts = tf.math.top_k(start_logits, k=k, sorted=True).indices  # (F, k) by start rank
    ends = tf.math.top_k(end_logits, k=k, sorted=True).indices  # (F, k) by end rank
    start_grid = tf.cast(tf.repeat(starts, k, axis=1), tf.int64)  # (F, k * k): (start rank, end rank) row-major
    end_grid = tf.cast(tf.tile(ends, [1, k]), tf.int64)  # (F, k * k)
    valid = (tf.gather(can_start, start_grid, batch_dims=1) & tf.gather(can_end, end_grid, batch_dims=1)
             & (end_grid >= start_grid) & (end_grid - start_grid < max_answer_length))  # (F, k * k)
    feature = tf.broadcast_to(tf.range(tf.shape(valid, out_type=tf.int64)[0])[:, tf.newaxis], tf.shape(valid))
    candidates = {name: tf.boolean_mask(grid, valid) for name, grid in
                  (("feature", feature), ("start", start_grid), ("end", end_grid))}  # (C,) each, in listing order
    position = tf.stack([candidates["feature"], candidates["start"]], axis=1)
    end_position = tf.stack([candidates["feature"], candidates["end"]], axis=1)
    candidates["start_logit"] = tf.gather_nd(start_logits, position)
    candidates["end_logit"] = tf.gather_nd(end_logits, end_position)
    candidates["score"] = candidates["start_logit"] + candidates["end_logit"]
    candidates["example"] = tf.gather(tf.cast(example_index, tf.int64), candidates["feature"])
    # Two stable sorts: by score (descending), then by example; equal keys keep the listing order.
    order = tf.argsort(candidates["score"], direction="DESCENDING", stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(candidates["example"], order), stable=True))
    return {name: tf.gather(values, order) for name, values in candidates.items()}


def best_spans(ranked, start_logits, end_logits, example_index, num_examples, n_best_size,
               version_2_with_negative=False):
    """The best span and the SQuAD v2.0 null score and odds of every example.

    Args:
        ranked: dict from `rank_spans`.
        start_logits: float `(F, T)`, as given to `rank_spans`.
        end_logits: float `(F, T)`.
        example_index: int `(F,)`.
        num_examples: int or int scalar tensor. B.
        n_best_size: int.
        version_2_with_negative: bool. With `n_best_size=1`, a null answer that outranks every span leaves no
            best span. Defaults to False.

    Returns:
        dict of `(B,)` tensors: `found` bool (a best span exists), `feature`, `start`, `end` int64 (0 when
        none), `score`, `start_logit`, `end_logit` float64 (-inf when none), `null_score`,
        `null_start_logit`, `null_end_logit` and `null_odds` float64.
    """
    start_logits = tf.cast(start_logits, tf.float64)
    end_logits = tf.cast(end_logits, tf.float64)
    example_index = tf.cast(example_index, tf.int64)
    num_candidates = tf.shape(ranked["example"], out_type=tf.int64)[0]
    first = tf.math.unsorted_segment_min(tf.range(num_candidates), ranked["example"], num_examples)  # (B,)
    found = first < num_candidates  # an empty segment gives the dtype's maximum
    best = {}
    for name, fill in (("feature", 0), ("start", 0), ("end", 0), ("score", -float("inf")),
                       ("start_logit", -float("inf")), ("end_logit", -float("inf"))):
        best[name] = _gather_or(ranked[name], first, found, fill)

    null_scores = start_logits[:, 0] + end_logits[:, 0]  # (F,)
    null_score = tf.math.unsorted_segment_min(null_scores, example_index, num_examples)  # (B,)
    num_features = tf.shape(null_scores, out_type=tf.int64)[0]
    at_min = tf.equal(null_scores, tf.gather(null_score, example_index))
    null_feature = tf.math.unsorted_segment_min(tf.where(at_min, tf.range(num_features), num_features), example_index,
                                                num_examples)  # (B,) the first feature with the smallest null score
    has_null = null_feature < num_features
    best["null_score"] = tf.where(has_null, null_score, float("inf"))
    best["null_start_logit"] = _gather_or(start_logits[:, 0], null_feature, has_null, 0.0)
    best["null_end_logit"] = _gather_or(end_logits[:, 0], null_feature, has_null, 0.0)
    null_score = best["null_score"]
    if version_2_with_negative and n_best_size == 1:
        found &= ~((null_score > best["score"]) & tf.math.is_finite(null_score))
        for name in [name for name in best if not name.startswith("null")]:
            fill = 0 if best[name].dtype == tf.int64 else -float("inf")
            best[name] = tf.where(found, best[name], tf.cast(fill, best[name].dtype))
    infinity = tf.constant(float("inf"), tf.float64)
    best["null_odds"] = tf.where(found, (null_score - best["start_logit"]) - best["end_logit"], infinity)
    best["found"] = found
    return best
