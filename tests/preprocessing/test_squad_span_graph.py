"""In-graph SQuAD windows and span helpers against run_squad.py's loops (transcribed) and the offline pipeline."""

import collections
import os
import re

import numpy as np
import pytest

from tests.squad.squad_test_utils import original_best_windows, original_windows


@pytest.mark.backend_independent
@pytest.mark.parametrize("sequence_length,doc_stride,max_query_length", [(16, 3, 4), (12, 20, 5), (10, 1, 2)])
def test_windows_and_max_context_match_python(sequence_length, doc_stride, max_query_length):
    import tensorflow as tf

    from keras_bert_impl.preprocessing.squad_span_graph import squad_windows

    rng = np.random.default_rng(sequence_length)
    question_lengths = [0, 1, 3, 7, 2, 4]
    context_lengths = [0, 30, 5, 40, 13, 27]  # example 1 has even-length windows: max-context ties
    questions = [list(rng.integers(5, 50, n)) for n in question_lengths]
    contexts = [list(rng.integers(5, 50, n)) for n in context_lengths]
    windows = squad_windows(tf.ragged.constant(questions, tf.int32, ragged_rank=1, row_splits_dtype=tf.int64),
                            tf.ragged.constant(contexts, tf.int32, ragged_rank=1, row_splits_dtype=tf.int64),
                            sequence_length, doc_stride, max_query_length)

    expected_rows = []
    for example, (question, context) in enumerate(zip(questions, contexts)):
        max_tokens_for_doc = sequence_length - min(len(question), max_query_length) - 3
        python_windows = original_windows(len(context), max_tokens_for_doc, doc_stride)
        best = np.array(original_best_windows(python_windows, len(context)))
        for index, (start, length) in enumerate(python_windows):
            expected_rows.append((example, question[:max_query_length], start, length,
                                  (best[start:start + length] == index).tolist()))
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
    if doc_stride < sequence_length - max_query_length - 3:
        # Windows overlap: some tokens are at max context in one of their windows only.
        assert any(not all(r[4]) for r in expected_rows)


@pytest.mark.backend_independent
def test_byte_span_to_answer_gives_code_point_offsets():
    import tensorflow as tf

    from keras_bert_impl.preprocessing.squad_span_graph import byte_span_to_answer, repair_utf8

    context = "Café über 東京 x"
    raw = context.encode("utf-8")
    start, end = raw.index("über".encode()), raw.index("京".encode()) + 3
    answer, start_char, end_char = byte_span_to_answer(tf.constant([raw]), tf.constant([start], tf.int64),
                                                      tf.constant([end], tf.int64))
    assert answer.numpy()[0].decode() == "über 東京" == context[start_char.numpy()[0]:end_char.numpy()[0]]
    assert repair_utf8(tf.constant([b"a\xffb"])).numpy()[0].decode() == "a\ufffdb"


@pytest.mark.backend_independent
def test_best_spans_match_python_decoding_on_random_logits():
    """Random logits over windowed features: the graph's best span is `decode_squad_predictions`' answer."""
    import tensorflow as tf

    from keras_bert_impl.preprocessing.squad_span_graph import byte_span_to_answer, decode_best_spans, squad_windows
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import SquadExample, decode_squad_predictions
    from tests.training.finetuning_test_utils import tokenizer as make_tokenizer

    tokenizer = make_tokenizer()
    settings = dict(sequence_length=14, doc_stride=2, max_query_length=3)
    questions = ["where is the cat ?", "who", "", "what did the dog do ?"]
    contexts = ["the cat sat in paris today . the dog ran far away .", "the mat", "",
                "a red house , a blue tree and the old city river walked home today ."]
    examples = [SquadExample(str(i), q, c, ()) for i, (q, c) in enumerate(zip(questions, contexts))]
    features = convert_examples_to_features(examples, tokenizer, **settings)
    context_ids, context_starts, context_ends = tokenizer.tokenize_with_offsets_tensor(tf.constant(contexts))
    windows = squad_windows(tokenizer.tokenize_tensor(tf.constant(questions)), context_ids,
                            settings["sequence_length"], settings["doc_stride"], settings["max_query_length"])
    assert windows["example_index"].numpy().tolist() == features.example_index.tolist()
    decode = tf.function(lambda start, end: decode_best_spans(
        start, end, windows, context_starts, context_ends, n_best_size=3, max_answer_length=4))
    rng = np.random.default_rng(0)
    for _ in range(10):
        start, end = rng.normal(size=(2, len(features), settings["sequence_length"])).astype("float32")
        decoded = decode_squad_predictions(examples, features, start, end, n_best_size=3, max_answer_length=4)
        best = decode(tf.constant(start), tf.constant(end))
        answers, _, _ = byte_span_to_answer(tf.constant(contexts), best["byte_start"], best["byte_end"])
        answers = [a.decode() if found else "" for a, found in zip(answers.numpy(), best["found"].numpy())]
        assert answers == [decoded.predictions[example.qas_id] for example in examples]
        for index, example in enumerate(examples):
            top = decoded.nbest[example.qas_id][0]
            if top["text"]:
                assert best["score"].numpy()[index] == top["start_logit"] + top["end_logit"]


@pytest.mark.backend_independent
def test_tied_spans_are_ordered_as_decode_squad_predictions_orders_them():
    """Equal summed logits: the higher start logit wins, then the lower start, then the lower end (not the
    lower start first)."""
    import tensorflow as tf

    from keras_bert_impl.preprocessing.squad_span_graph import decode_best_spans, select_answers, windowed_features
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import SquadExample, decode_squad_predictions
    from tests.training.finetuning_test_utils import tokenizer as make_tokenizer

    tokenizer = make_tokenizer()
    question, context = "where ?", "the cat sat on the mat today"  # [CLS] where ? [SEP] the cat sat ...
    examples = [SquadExample("q", question, context, ())]
    features = convert_examples_to_features(examples, tokenizer, sequence_length=16, max_query_length=4)
    start, end = np.zeros((2, 1, 16), "float32")
    start[0, 5], end[0, 6] = 0.0, 2.0  # "cat sat": start 0 + end 2
    start[0, 7], end[0, 7] = 2.0, 0.0  # "on": start 2 + end 0, the same sum, the higher start logit
    start[0, 0] = end[0, 0] = -1.0
    for logits in (start, end):
        logits[0, np.flatnonzero(features.token_char_starts[0] < 0)] -= 5.0  # keep [CLS] etc. out of the top
        logits[0, 0] = -9.0
    for n_best_size in (8, 20):
        decoded = decode_squad_predictions(examples, features, start, end, n_best_size=n_best_size,
                                           max_answer_length=3)
        chunk = windowed_features(tokenizer, tf.constant([question]), tf.constant([context]), 16, 128, 4)
        best = decode_best_spans(start, end, chunk["windows"], chunk["context_starts"], chunk["context_ends"],
                                 n_best_size, 3)
        served = select_answers(chunk["context"], best)["answer"].numpy()[0].decode()
        assert served == decoded.predictions["q"] == "on"


# -- the served answer is the offline answer, on the real SQuAD sample ---------------------------------------

SQUAD_SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "squad",
                            "squad-v2.0-dev-sample.json")
SAMPLE_SETTINGS = dict(sequence_length=128, doc_stride=48, max_query_length=32)
GRAPH_CHUNK = 400  # examples per graph call: the (F, T, max_answer_length) pair scores stay small


def _sample_vocabulary(examples, num_words=3000):
    """A WordPiece vocabulary of the sample: its most frequent lowercased words, plus every character alone
    and as a continuation piece, so that every word tokenizes (few [UNK])."""
    counts = collections.Counter()
    characters = set()
    for example in examples:
        for text in (example.question_text, example.context_text):
            text = text.lower()
            counts.update(re.findall(r"\w+|[^\w\s]", text))
            characters.update(char for char in text if not char.isspace())
    characters = sorted(characters)
    words = [word for word, _ in counts.most_common(num_words) if word not in characters]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters, *("##" + c for c in characters), *words]


@pytest.fixture(scope="module")
def squad_sample():
    """Every question of the sample, its tokenizer, the offline features, and the graph's features."""
    if not os.path.isfile(SQUAD_SAMPLE):
        pytest.skip(f"The SQuAD sample is absent ({os.path.normpath(SQUAD_SAMPLE)}; see ../shared/data/README.md).")
    import tensorflow as tf

    from keras_bert_impl.preprocessing import squad_span_graph
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import read_squad_examples
    from keras_bert_impl.tokenization import BertTokenizer

    examples = list(read_squad_examples(SQUAD_SAMPLE))
    tokenizer = BertTokenizer(_sample_vocabulary(examples))
    features = convert_examples_to_features(
        examples, tokenizer, sequence_length=SAMPLE_SETTINGS["sequence_length"],
        doc_stride=SAMPLE_SETTINGS["doc_stride"], max_query_length=SAMPLE_SETTINGS["max_query_length"])
    chunks = []
    for begin in range(0, len(examples), GRAPH_CHUNK):
        chunk = examples[begin:begin + GRAPH_CHUNK]
        chunks.append(squad_span_graph.windowed_features(
            tokenizer, tf.constant([e.question_text for e in chunk]),
            tf.constant([e.context_text for e in chunk]), **SAMPLE_SETTINGS))
    return examples, features, chunks


@pytest.mark.backend_independent
@pytest.mark.slow
def test_served_windows_equal_the_offline_features_on_the_squad_sample(squad_sample):
    examples, features, chunks = squad_sample
    assert len(examples) == 6078
    assert np.bincount(features.example_index).max() >= 4  # long contexts: several windows
    for key, value in features.inputs().items():
        served = np.concatenate([chunk["inputs"][key].numpy() for chunk in chunks])
        np.testing.assert_array_equal(served, value, err_msg=key)


@pytest.mark.backend_independent
@pytest.mark.parametrize("logits, version_2, n_best_size, max_answer_length", [
    ("normal", True, 20, 30),  # v2.0, the null threshold at the median null odds
    # Logits mostly 0, some 1 and 2: exact ties of the summed logits between spans that split them
    # differently, so the tie order decides (the graph's former order differed on 1 question in 400).
    ("ties", False, 20, 30),
    ("ties", True, 3, 5),
    ("ties", True, 1, 8),  # a one-entry n-best list
])
@pytest.mark.slow
def test_served_answers_equal_the_offline_answers_on_the_squad_sample(squad_sample, logits, version_2,
                                                                      n_best_size, max_answer_length):
    """Seeded random logits on every window of every question: `decode_best_spans` + `select_answers` (the
    SavedModel's `serve_text`) answer exactly what `decode_squad_predictions` answers, at the same offsets."""
    import tensorflow as tf

    from keras_bert_impl.preprocessing import squad_span_graph
    from keras_bert_impl.squad import decode_squad_predictions

    examples, features, chunks = squad_sample
    rng = np.random.default_rng(7)
    shape = (2, len(features), features.sequence_length)
    if logits == "normal":
        start, end = rng.normal(size=shape).astype("float32")
    else:
        start, end = rng.choice([0.0, 1.0, 2.0], p=[0.8, 0.15, 0.05], size=shape).astype("float32")
    decoded = decode_squad_predictions(examples, features, start, end, n_best_size=n_best_size,
                                       max_answer_length=max_answer_length,
                                       version_2_with_negative=version_2)
    threshold = 0.0
    if version_2:
        # A threshold among the odds: both outcomes, and an example whose odds equal it exactly.
        threshold = float(np.median([decoded.null_odds[example.qas_id] for example in examples]))
        decoded = decoded.with_null_threshold(threshold)
    @tf.function(reduce_retracing=True)
    def serve(start, end, chunk):
        best = squad_span_graph.decode_best_spans(start, end, chunk["windows"], chunk["context_starts"],
                                                  chunk["context_ends"], n_best_size, max_answer_length,
                                                  version_2_with_negative=version_2)
        return squad_span_graph.select_answers(chunk["context"], best, version_2_with_negative=version_2,
                                               null_score_diff_threshold=threshold)

    served_text, served_span = [], []
    first_feature = 0
    for chunk in chunks:
        num_features = len(chunk["windows"]["example_index"])
        rows = slice(first_feature, first_feature + num_features)
        first_feature += num_features
        chunk = {key: value for key, value in chunk.items() if key != "inputs"}
        answers = serve(tf.constant(start[rows]), tf.constant(end[rows]), chunk)
        served_text += [answer.decode("utf-8") for answer in answers["answer"].numpy()]
        served_span += list(zip(answers["start_char"].numpy().tolist(), answers["end_char"].numpy().tolist()))
    assert first_feature == len(features)
    expected_text = [decoded.predictions[example.qas_id] for example in examples]
    mismatches = [(example.qas_id, served, expected) for example, served, expected
                  in zip(examples, served_text, expected_text) if served != expected]
    assert not mismatches, f"{len(mismatches)} of {len(examples)} answers differ, e.g. {mismatches[:3]}"
    expected_span = [decoded.answer(example.qas_id) for example in examples]
    assert served_span == [(answer["start"], answer["end"]) for answer in expected_span]
    assert any(expected_text) and (not version_2 or "" in expected_text)
