"""`preprocessing.squad_span_graph.squad_windows`, the one SQuAD windowing, against hand-computed layouts and
run_squad.py's window and max-context loops (transcribed in `squad_test_utils`)."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.squad.squad_test_utils import original_best_windows, original_windows

from keras_bert_impl.preprocessing.squad_span_graph import squad_windows

pytestmark = pytest.mark.backend_independent

QUESTION_LENGTH = 2  # [CLS] q q [SEP]: windows hold sequence_length - 5 tokens


def windows_of(num_tokens, max_tokens_for_doc, doc_stride, stride_semantics="step", answer=None):
    """`squad_windows` on one example with `num_tokens` context tokens (token i spans characters [2i, 2i + 1))."""
    questions = tf.ragged.constant([[7] * QUESTION_LENGTH], tf.int64, ragged_rank=1)
    context = tf.RaggedTensor.from_row_lengths(tf.fill([num_tokens], tf.constant(9, tf.int64)), [num_tokens])
    answer_spans = None
    if answer is not None:
        starts = context.with_flat_values(2 * tf.range(num_tokens, dtype=tf.int64))
        answer_spans = (starts, starts + 1, tf.constant([answer[0]], tf.int64), tf.constant([answer[1]], tf.int64))
    return squad_windows(questions, context, max_tokens_for_doc + QUESTION_LENGTH + 3, doc_stride, QUESTION_LENGTH,
                         stride_semantics, answer_spans)


def spans(windows):
    return list(zip(windows["window_start"].numpy().tolist(), windows["window_length"].numpy().tolist()))


def test_step_windows_match_hand_computed_layout():
    assert spans(windows_of(10, 4, 2)) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    # The last window is shorter when the step does not land on the end.
    assert spans(windows_of(10, 4, 4)) == [(0, 4), (4, 4), (8, 2)]
    # A stride longer than a window is clamped to the window length, so no token is skipped.
    assert spans(windows_of(10, 4, 5)) == [(0, 4), (4, 4), (8, 2)]
    assert spans(windows_of(3, 4, 2)) == [(0, 3)]


def test_overlap_windows_share_doc_stride_tokens():
    assert spans(windows_of(10, 4, 1, "overlap")) == [(0, 4), (3, 4), (6, 4)]
    assert spans(windows_of(10, 4, 0, "overlap")) == [(0, 4), (4, 4), (8, 2)]
    # Same windows as the original's step of max_tokens_for_doc - overlap.
    assert spans(windows_of(50, 7, 3, "overlap")) == spans(windows_of(50, 7, 4, "step"))


def test_empty_document_has_one_empty_window():
    assert spans(windows_of(0, 4, 2)) == [(0, 0)]


def test_max_context_flags_match_hand_computed_example():
    flags = windows_of(10, 4, 2)["is_max_context"].to_list()
    # Token 3 has 0.04 in window 0 and 1.04 in window 1; best windows per token: 0 0 0 1 1 2 2 3 3 3.
    assert flags == [[True, True, True, False], [False, True, True, False], [False, True, True, False],
                     [False, True, True, True]]


@settings(max_examples=60, deadline=None)
@given(num_tokens=st.integers(1, 60), max_tokens=st.integers(1, 12), stride=st.integers(1, 14))
def test_windows_and_max_context_agree_with_the_original(num_tokens, max_tokens, stride):
    windows = windows_of(num_tokens, max_tokens, stride)
    expected = original_windows(num_tokens, max_tokens, stride)
    assert spans(windows) == expected
    best = original_best_windows(expected, num_tokens)
    for index, ((start, length), flags) in enumerate(zip(expected, windows["is_max_context"].to_list())):
        assert flags == [best[position] == index for position in range(start, start + length)]


@pytest.mark.parametrize(
    "answer, starts, ends",
    [
        ((0, 1), [4, 0, 0, 0], [4, 0, 0, 0]),  # token 0: only window 0 holds it
        ((6, 7), [7, 5, 0, 0], [7, 5, 0, 0]),  # token 3 sits in windows 0 and 1
        ((5, 15), [0, 0, 0, 0], [0, 0, 0, 0]),  # tokens 3..7: no window holds all of it
        ((13, 17), [0, 0, 0, 5], [0, 0, 0, 6]),  # tokens 7..8: the tightest cover of characters 13..16
        ((-1, -1), [0, 0, 0, 0], [0, 0, 0, 0]),  # no answer (impossible question)
    ],
)
def test_labels_are_the_tightest_token_span_in_the_window_that_holds_it(answer, starts, ends):
    # Windows (0, 4), (2, 4), (4, 4), (6, 4); a window token sits at its position + [CLS] q q [SEP].
    windows = windows_of(10, 4, 2, answer=answer)
    assert windows["start_positions"].numpy().tolist() == starts
    assert windows["end_positions"].numpy().tolist() == ends
    assert not windows["skipped"].numpy().any()


def test_answer_covering_no_token_skips_the_example():
    windows = windows_of(10, 4, 2, answer=(3, 4))  # character 3 lies between tokens 1 and 2
    assert windows["skipped"].numpy().tolist() == [True]
    assert windows["num_windows"].numpy().tolist() == [0] and len(windows["start_positions"]) == 0
    np.testing.assert_array_equal(windows_of(0, 4, 2, answer=(0, 1))["skipped"], [True])  # empty context
