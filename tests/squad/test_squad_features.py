import logging

import numpy as np
import pytest

from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor, convert_examples_to_features
from keras_bert_impl.squad import SquadAnswer, SquadExample
from keras_bert_impl.tokenization import BertTokenizer

pytestmark = pytest.mark.backend_independent

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"t{i}" for i in range(20)] + ["1990", "##s", ",", ".", "what", "is", "when"]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(SPECIALS + WORDS)


def ids(tokenizer, text):
    return [tokenizer.token_to_id(token) for token in text.split()]


CONTEXT = " ".join(f"t{i}" for i in range(10))  # "t0 t1 ... t9": token i covers chars [3i, 3i + 2)


def answer(text, context=CONTEXT):
    return SquadAnswer(text, context.index(text))


def test_window_layout_matches_hand_computed_features(tokenizer):
    example = SquadExample("q", "what is t1", CONTEXT, (answer("t5 t6"),))
    # 3 question tokens; sequence_length 10 leaves 10 - 3 - 3 = 4 document tokens per window; step 2.
    features = convert_examples_to_features([example], tokenizer, sequence_length=10, doc_stride=2, max_query_length=4)
    assert len(features) == 4
    assert features.window_start.tolist() == [0, 2, 4, 6]
    assert features.token_ids[1].tolist() == ids(tokenizer, "[CLS] what is t1 [SEP] t2 t3 t4 t5 [SEP]")
    assert features.segment_ids[1].tolist() == [0] * 5 + [1] * 5
    assert features.padding_mask.all()
    assert features.example_index.tolist() == [0, 0, 0, 0]
    assert features.token_char_starts[1].tolist() == [-1] * 5 + [6, 9, 12, 15, -1]
    assert features.token_char_ends[1].tolist() == [-1] * 5 + [8, 11, 14, 17, -1]
    # Max-context window of document tokens 0..9 is [0, 0, 0, 1, 1, 2, 2, 3, 3, 3].
    flags = features.token_is_max_context[:, 5:9].tolist()
    assert flags == [
        [True, True, True, False],
        [False, True, True, False],
        [False, True, True, False],
        [False, True, True, True],
    ]
    assert not features.token_is_max_context[:, [0, 1, 2, 3, 4, 9]].any()


def test_training_labels_tightest_span_in_window_else_cls(tokenizer):
    example = SquadExample("q", "what is t1", CONTEXT, (answer("t5 t6"),))
    features = convert_examples_to_features(
        [example], tokenizer, sequence_length=10, doc_stride=2, max_query_length=4, is_training=True
    )
    # Document tokens 5..6 lie wholly only in the third window (tokens 4..7), at positions 6..7.
    assert features.start_positions.tolist() == [0, 0, 6, 0]
    assert features.end_positions.tolist() == [0, 0, 7, 0]
    assert features.labels()["start_positions"].dtype == np.int32


def test_answer_at_window_boundaries(tokenizer):
    first_window_last_token = SquadExample("a", "what", CONTEXT, (answer("t3"),))
    second_window_first_token = SquadExample("b", "what", CONTEXT, (answer("t2"),))
    features = convert_examples_to_features(
        [first_window_last_token, second_window_first_token],
        tokenizer,
        sequence_length=8,  # 1 question token -> 4 document tokens per window
        doc_stride=2,
        max_query_length=4,
        is_training=True,
    )
    doc_offset = 3
    by_example = {
        index: list(zip(features.window_start[features.example_index == index].tolist(),
                        features.start_positions[features.example_index == index].tolist()))
        for index in (0, 1)
    }
    assert by_example[0] == [(0, doc_offset + 3), (2, doc_offset + 1), (4, 0), (6, 0)]
    assert by_example[1] == [(0, doc_offset + 2), (2, doc_offset + 0), (4, 0), (6, 0)]


def test_sub_word_and_punctuation_answers(tokenizer):
    context = "t0 1990s, t1."
    examples = [
        SquadExample("whole", "when", context, (SquadAnswer("1990s", 3),)),
        SquadExample("prefix", "when", context, (SquadAnswer("1990", 3),)),
        SquadExample("suffix", "when", context, (SquadAnswer("990s,", 4),)),
        SquadExample("punct", "when", context, (SquadAnswer("t1.", 10),)),
    ]
    features = convert_examples_to_features(
        examples, tokenizer, sequence_length=16, max_query_length=4, is_training=True
    )
    # [CLS] when [SEP] t0 1990 ##s , t1 . [SEP]
    assert features.token_ids[0, :10].tolist() == ids(tokenizer, "[CLS] when [SEP] t0 1990 ##s , t1 . [SEP]")
    spans = list(zip(features.start_positions.tolist(), features.end_positions.tolist()))
    assert spans == [(4, 5), (4, 4), (4, 6), (7, 8)]


def test_impossible_questions_label_cls(tokenizer):
    example = SquadExample("q", "what", CONTEXT, (), is_impossible=True)
    features = convert_examples_to_features(
        [example], tokenizer, sequence_length=8, doc_stride=2, max_query_length=4, is_training=True
    )
    assert len(features) == 4
    assert not features.start_positions.any() and not features.end_positions.any()


def test_long_question_is_truncated(tokenizer):
    long_question = " ".join(f"t{i % 20}" for i in range(30))
    example = SquadExample("q", long_question, CONTEXT, (answer("t9"),))
    features = convert_examples_to_features(
        [example], tokenizer, sequence_length=12, doc_stride=3, max_query_length=4, is_training=True
    )
    # 4 question tokens -> 12 - 4 - 3 = 5 document tokens per window: windows (0, 5), (3, 5), (6, 4).
    assert features.token_ids[0, :6].tolist() == ids(tokenizer, "[CLS] t0 t1 t2 t3 [SEP]")
    assert features.window_start.tolist() == [0, 3, 6]
    assert features.padding_mask.sum(axis=1).tolist() == [12, 12, 11]
    assert features.start_positions.tolist() == [0, 0, 9]


def test_empty_context_gets_one_feature(tokenizer):
    examples = [SquadExample("e", "what", "", ()), SquadExample("w", "what", "  \n ", ())]
    features = convert_examples_to_features(examples, tokenizer, sequence_length=8, max_query_length=4)
    assert features.example_index.tolist() == [0, 1]
    assert features.token_ids[0, :4].tolist() == ids(tokenizer, "[CLS] what [SEP] [SEP]")
    assert features.padding_mask[0].tolist() == [True] * 4 + [False] * 4
    assert (features.token_char_starts == -1).all() and not features.token_is_max_context.any()


def test_padding(tokenizer):
    example = SquadExample("q", "what", "t0 t1", ())
    features = convert_examples_to_features([example], tokenizer, sequence_length=9, max_query_length=4)
    assert features.token_ids[0].tolist() == ids(tokenizer, "[CLS] what [SEP] t0 t1 [SEP]") + [0, 0, 0]
    assert features.segment_ids[0].tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert features.padding_mask[0].tolist() == [True] * 6 + [False] * 3


def test_answer_covering_no_token_is_skipped_in_training(tokenizer, caplog):
    context = "t0 \u200b t1"  # a zero-width space is dropped by the tokenizer
    example = SquadExample("zw", "what", context, (SquadAnswer("\u200b", 3),))
    with caplog.at_level(logging.WARNING):
        features = convert_examples_to_features(
            [example], tokenizer, sequence_length=8, max_query_length=4, is_training=True
        )
    assert len(features) == 0 and features.skipped_example_indices == [0]
    assert "covers no token" in caplog.text


def test_overlap_semantics(tokenizer):
    example = SquadExample("q", "what is t1", CONTEXT, ())
    features = convert_examples_to_features(
        [example], tokenizer, sequence_length=10, doc_stride=1, max_query_length=3, stride_semantics="overlap"
    )
    assert features.window_start.tolist() == [0, 3, 6]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(sequence_length=10, max_query_length=7), r"sequence_length \(10\) must exceed max_query_length \(7\) \+ 3"),
        (dict(sequence_length=10, max_query_length=3, doc_stride=4, stride_semantics="overlap"), "smaller than"),
        (dict(sequence_length=10, max_query_length=3, doc_stride=0), "doc_stride must be at least 1"),
        (dict(sequence_length=10, max_query_length=3, stride_semantics="hf"), "stride_semantics must be one of"),
    ],
)
def test_invalid_lengths_are_clear_errors(tokenizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        convert_examples_to_features([SquadExample("q", "what", CONTEXT, ())], tokenizer, **kwargs)


def test_make_dataset_batches_inputs_and_labels(tokenizer):
    example = SquadExample("q", "what is t1", CONTEXT, (answer("t5 t6"),))
    features = convert_examples_to_features(
        [example], tokenizer, sequence_length=10, doc_stride=2, max_query_length=4, is_training=True
    )
    preprocessor = BertQuestionAnsweringPreprocessor(tokenizer, sequence_length=10, doc_stride=2, max_query_length=4)
    x, y = next(iter(preprocessor.make_dataset(features.inputs(), features.labels(), batch_size=3)))
    assert {k: (v.shape, v.dtype.name) for k, v in x.items()} == {
        "token_ids": ((3, 10), "int32"),
        "segment_ids": ((3, 10), "int32"),
        "padding_mask": ((3, 10), "bool"),
    }
    assert y["start_positions"].numpy().tolist() == [0, 0, 6]
    batches = list(preprocessor.make_dataset(features.inputs(), batch_size=3))
    assert [b["token_ids"].shape[0] for b in batches] == [3, 1]
    np.testing.assert_array_equal(np.concatenate([b["token_ids"] for b in batches]), features.token_ids)


def test_training_example_without_answer_start_is_a_clear_error(tokenizer):
    example = SquadExample("q", "what", CONTEXT, (SquadAnswer("t1", None),))
    with pytest.raises(ValueError, match="Training example 'q' needs an answer with answer_start"):
        convert_examples_to_features([example], tokenizer, sequence_length=8, max_query_length=4, is_training=True)
