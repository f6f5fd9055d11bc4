"""In-graph SQuAD windows and span helpers against the Python pipeline (`squad.squad_features`)."""

import numpy as np
import pytest

from keras_bert_impl.squad.squad_features import best_window_per_token, document_windows


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("max_sequence_length,doc_stride,max_query_length", [(16, 3, 4), (12, 20, 5), (10, 1, 2)])
def test_windows_and_max_context_match_python(max_sequence_length, doc_stride, max_query_length):
    import tensorflow as tf

    from keras_bert_impl.export.squad_span_graph import squad_windows

    rng = np.random.default_rng(max_sequence_length)
    question_lengths = [0, 1, 3, 7, 2, 4]
    context_lengths = [0, 30, 5, 40, 13, 27]  # example 1 has even-length windows: max-context ties
    questions = [list(rng.integers(5, 50, n)) for n in question_lengths]
    contexts = [list(rng.integers(5, 50, n)) for n in context_lengths]
    windows = squad_windows(tf.ragged.constant(questions, tf.int32, ragged_rank=1, row_splits_dtype=tf.int64),
                            tf.ragged.constant(contexts, tf.int32, ragged_rank=1, row_splits_dtype=tf.int64),
                            max_sequence_length, doc_stride, max_query_length)

    expected_rows = []
    for example, (question, context) in enumerate(zip(questions, contexts)):
        max_tokens_for_doc = max_sequence_length - min(len(question), max_query_length) - 3
        python_windows = document_windows(len(context), max_tokens_for_doc, doc_stride)
        best = best_window_per_token(python_windows, len(context))
        for index, window in enumerate(python_windows):
            expected_rows.append((example, question[:max_query_length], window.start, window.length,
                                  (best[window.start:window.end] == index).tolist()))
    assert windows["num_windows"].numpy().tolist() == np.bincount([r[0] for r in expected_rows]).tolist()
    assert windows["example_index"].numpy().tolist() == [r[0] for r in expected_rows]
    assert windows["question_ids"].to_list() == [r[1] for r in expected_rows]
    assert windows["window_length"].numpy().tolist() == [r[3] for r in expected_rows]
    context_starts = np.cumsum([0] + context_lengths)
    window_index = windows["window_index"].to_list()
    for row, (example, _, start, length, is_max) in enumerate(expected_rows):
        first = context_starts[example] + start
        assert window_index[row] == list(range(first, first + length))
    assert windows["is_max_context"].to_list() == [r[4] for r in expected_rows]
    if doc_stride < max_sequence_length - max_query_length - 3:
        # Windows overlap: some tokens are at max context in one of their windows only.
        assert any(not all(r[4]) for r in expected_rows)


@pytest.mark.tensorflow_only
def test_byte_span_to_answer_gives_code_point_offsets():
    import tensorflow as tf

    from keras_bert_impl.export.squad_span_graph import byte_span_to_answer, repair_utf8

    context = "Café über 東京 x"
    raw = context.encode("utf-8")
    start, end = raw.index("über".encode()), raw.index("京".encode()) + 3
    answer, start_char, end_char = byte_span_to_answer(tf.constant([raw]), tf.constant([start], tf.int64),
                                                      tf.constant([end], tf.int64))
    assert answer.numpy()[0].decode() == "über 東京" == context[start_char.numpy()[0]:end_char.numpy()[0]]
    assert repair_utf8(tf.constant([b"a\xffb"])).numpy()[0].decode() == "a\ufffdb"


@pytest.mark.tensorflow_only
def test_best_spans_match_python_decoding_on_random_logits():
    """Random logits over windowed features: the graph's best span is `decode_squad_predictions`' answer."""
    import tensorflow as tf

    from keras_bert_impl.export.squad_span_graph import byte_span_to_answer, decode_best_spans, squad_windows
    from keras_bert_impl.squad import SquadExample, convert_examples_to_features, decode_squad_predictions
    from tests.training.finetuning_test_utils import tokenizer as make_tokenizer

    tokenizer = make_tokenizer()
    settings = dict(max_seq_length=14, doc_stride=2, max_query_length=3)
    questions = ["where is the cat ?", "who", "", "what did the dog do ?"]
    contexts = ["the cat sat in paris today . the dog ran far away .", "the mat", "",
                "a red house , a blue tree and the old city river walked home today ."]
    examples = [SquadExample(str(i), q, c, ()) for i, (q, c) in enumerate(zip(questions, contexts))]
    features = convert_examples_to_features(examples, tokenizer, **settings)
    context_ids, context_starts, context_ends = tokenizer.tokenize_with_offsets_tensor(tf.constant(contexts))
    windows = squad_windows(tokenizer.tokenize_tensor(tf.constant(questions)), context_ids,
                            settings["max_seq_length"], settings["doc_stride"], settings["max_query_length"])
    assert windows["example_index"].numpy().tolist() == features.example_index.tolist()
    decode = tf.function(lambda start, end: decode_best_spans(
        start, end, windows, context_starts, context_ends, n_best_size=3, max_answer_length=4))
    rng = np.random.default_rng(0)
    for _ in range(10):
        start, end = rng.normal(size=(2, len(features), settings["max_seq_length"])).astype("float32")
        decoded = decode_squad_predictions(examples, features, start, end, n_best_size=3, max_answer_length=4)
        best = decode(tf.constant(start), tf.constant(end))
        answers, _, _ = byte_span_to_answer(tf.constant(contexts), best["byte_start"], best["byte_end"])
        answers = [a.decode() if found else "" for a, found in zip(answers.numpy(), best["found"].numpy())]
        assert answers == [decoded.predictions[example.qas_id] for example in examples]
        for index, example in enumerate(examples):
            top = decoded.nbest[example.qas_id][0]
            if top["text"]:
                assert best["score"].numpy()[index] == top["start_logit"] + top["end_logit"]
