import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_impl.squad.squad_features import (
    DocumentWindow,
    answer_token_span,
    best_window_per_token,
    document_windows,
    max_context_score,
)


def spans(windows):
    return [(w.start, w.length) for w in windows]


def test_step_windows_match_hand_computed_layout():
    assert spans(document_windows(10, 4, 2)) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    # The last window is shorter when the step does not land on the end.
    assert spans(document_windows(10, 4, 4)) == [(0, 4), (4, 4), (8, 2)]
    # A stride longer than a window is clamped to the window length, so no token is skipped.
    assert spans(document_windows(10, 4, 5)) == [(0, 4), (4, 4), (8, 2)]
    assert spans(document_windows(3, 4, 2)) == [(0, 3)]


def test_overlap_windows_share_doc_stride_tokens():
    assert spans(document_windows(10, 4, 1, "overlap")) == [(0, 4), (3, 4), (6, 4)]
    assert spans(document_windows(10, 4, 0, "overlap")) == [(0, 4), (4, 4), (8, 2)]
    # Same windows as the original's step of max_tokens_for_doc - overlap.
    assert spans(document_windows(50, 7, 3, "overlap")) == spans(document_windows(50, 7, 4, "step"))


def test_empty_document_has_one_empty_window():
    assert spans(document_windows(0, 4, 2)) == [(0, 0)]


@pytest.mark.parametrize(
    "args, message",
    [
        ((10, 0, 2), "max_tokens_for_doc must be at least 1"),
        ((10, 4, 0), "doc_stride must be at least 1"),
        ((10, 4, 4, "overlap"), r"doc_stride \(4\) must be in \[0, max_tokens_for_doc=4\)"),
        ((10, 4, 2, "stride"), "stride_semantics must be one of"),
    ],
)
def test_invalid_window_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        document_windows(*args)


def test_max_context_flags_match_hand_computed_example():
    windows = document_windows(10, 4, 2)
    assert best_window_per_token(windows, 10).tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    assert max_context_score(windows[1], 3) == pytest.approx(1.04)
    assert max_context_score(windows[0], 3) == pytest.approx(0.04)


def original_is_max_context(windows, window_index, position):
    """`_check_is_max_context` of run_squad.py, transcribed loop for loop."""
    best_score, best_index = None, None
    for index, window in enumerate(windows):
        end = window.start + window.length - 1
        if position < window.start or position > end:
            continue
        score = min(position - window.start, end - position) + 0.01 * window.length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return window_index == best_index


@settings(max_examples=60, deadline=None)
@given(
    num_tokens=st.integers(1, 60),
    max_tokens=st.integers(1, 12),
    stride=st.integers(1, 14),
)
def test_max_context_agrees_with_original_definition(num_tokens, max_tokens, stride):
    windows = document_windows(num_tokens, max_tokens, stride)
    best = best_window_per_token(windows, num_tokens)
    for index, window in enumerate(windows):
        for position in range(window.start, window.end):
            assert (best[position] == index) == original_is_max_context(windows, index, position)
    covered = sorted({p for w in windows for p in range(w.start, w.end)})
    assert covered == list(range(num_tokens))


def test_answer_token_span_is_tightest_cover():
    # Tokens: "1990" [0, 4), "##s" [4, 5), "," [5, 6), "e" [7, 8)
    starts, ends = [0, 4, 5, 7], [4, 5, 6, 8]
    assert answer_token_span(starts, ends, 0, 4) == (0, 0)
    assert answer_token_span(starts, ends, 1, 5) == (0, 1)
    assert answer_token_span(starts, ends, 0, 8) == (0, 3)
    assert answer_token_span(starts, ends, 6, 7) is None  # only the space between tokens
    assert answer_token_span([], [], 0, 3) is None


def test_document_window_end():
    assert DocumentWindow(3, 4).end == 7
