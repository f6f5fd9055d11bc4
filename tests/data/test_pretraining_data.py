import glob
import os
import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.data.masking import MaskedLMMasker
from keras_bert_impl.data.documents import read_documents, split_sentences, tokenize_documents
from keras_bert_impl.data.pretraining_batches import pretraining_dataset
from keras_bert_impl.data.pretraining_instances import instances_from_document, iterate_pretraining_instances
from keras_bert_impl.data.pretraining_tfrecords import (
    read_pretraining_settings,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
from keras_bert_impl.tokenization import BertTokenizer

backend_independent = pytest.mark.backend_independent

CLS, SEP = 1, 2
WORDS = [f"word{i}" for i in range(60)]
VOCABULARY = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", ".", "##s"] + WORDS


def _tokenizer():
    return BertTokenizer(VOCABULARY)

def _id_corpus(num_documents, sentences_per_document, sentence_length, seed=0):
    """Documents of unique ids, so every token says which document and sentence it came from."""
    rng = random.Random(seed)
    documents, origin, next_id = [], {}, 10
    for d in range(num_documents):
        document = []
        for s in range(rng.randint(*sentences_per_document)):
            length = rng.randint(*sentence_length)
            document.append(list(range(next_id, next_id + length)))
            for token in document[-1]:
                origin[token] = (d, s)
            next_id += length
        documents.append(document)
    return documents, origin


def _split_instance(instance):
    return instance["first"], instance["second"]


def _text_documents(num_documents, seed=0):
    rng = random.Random(seed)
    return [
        " ".join(
            " ".join(rng.choice(WORDS).capitalize() if w == 0 else rng.choice(WORDS) for w in range(rng.randint(3, 12)))
            + "."
            for _ in range(rng.randint(1, 8))
        )
        for _ in range(num_documents)
    ]


@pytest.mark.backend_independent
def test_split_sentences_handles_abbreviations_initials_quotes_and_cjk():
    text = 'Dr. Smith met J. Doe at 5 p.m. yesterday. "Really?" She asked! (It was late.) 3 left. 你好。再见！'
    assert split_sentences(text) == [
        "Dr. Smith met J. Doe at 5 p.m. yesterday.",
        '"Really?"',
        "She asked!",
        "(It was late.)",
        "3 left.",
        "你好。",
        "再见！",
    ]
    assert split_sentences("   ") == []
    assert split_sentences("no end mark") == ["no end mark"]


@pytest.mark.backend_independent
def test_read_documents_formats_and_empty_lines(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n\nFirst.\n  Second.  \n\n\n\nOnly one.\n\n", encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text("Continues? No, a new file starts a new document.\n", encoding="utf-8")
    assert read_documents([str(path), str(other)]) == [
        ["First.", "Second."],
        ["Only one."],
        ["Continues? No, a new file starts a new document."],
    ]
    per_line = tmp_path / "docs.txt"
    per_line.write_text("A one. A two.\n\nB one.\n", encoding="utf-8")
    assert read_documents(str(per_line), "document_per_line") == [["A one.", "A two."], ["B one."]]
    assert read_documents(str(tmp_path / "*.txt"))  # glob patterns


@pytest.mark.backend_independent
def test_non_utf8_bytes_raise_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("fine line\nsecond\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt, line 3: .*not valid UTF-8"):
        read_documents(str(path))
    assert read_documents(str(path), errors="replace") == [["fine line", "second", "caf\ufffd au lait"]]
    with pytest.raises(FileNotFoundError, match="missing"):
        read_documents(str(tmp_path / "missing*.txt"))


@pytest.mark.backend_independent
def test_tokenize_documents_drops_sentences_and_documents_without_tokens():
    documents = tokenize_documents([["word1 word2.", "\u200b"], ["\x00"], ["word3"]], _tokenizer())
    assert documents == [[[VOCABULARY.index("word1"), VOCABULARY.index("word2"), 5]], [[VOCABULARY.index("word3")]]]


@pytest.mark.backend_independent
def test_instances_follow_the_layout_and_length_limits():
    documents, origin = _id_corpus(40, (1, 12), (1, 30))
    instances = list(iterate_pretraining_instances(documents, sequence_length=32, dupe_factor=2, seed=1))
    assert instances
    for instance in instances:
        tokens_a, tokens_b = _split_instance(instance)
        assert tokens_a and tokens_b and len(tokens_a) + len(tokens_b) + 3 <= 32  # room for [CLS] A [SEP] B [SEP]
        # Each segment is a contiguous run of its document (ids count up through a document).
        for segment in (tokens_a, tokens_b):
            assert segment == list(range(segment[0], segment[0] + len(segment)))
        if instance["next_sentence_labels"] == 0:
            # IsNext: B follows A in the same document.
            assert origin[tokens_a[0]][0] == origin[tokens_b[-1]][0] and tokens_a[-1] < tokens_b[0]


@pytest.mark.backend_independent
def test_instances_dataset_packs_each_pair_with_the_segment_packer_layout():
    from keras_bert_impl.data.pretraining_batches import pretraining_instances_dataset

    documents, _ = _id_corpus(20, (1, 8), (1, 20))
    pairs = list(iterate_pretraining_instances(documents, sequence_length=24, dupe_factor=2, seed=5))
    packed = list(pretraining_instances_dataset(documents, CLS, SEP, sequence_length=24, dupe_factor=2,
                                                seed=5).as_numpy_iterator())
    assert len(packed) == len(pairs) > 10
    for pair, instance in zip(pairs, packed):
        a, b = pair["first"], pair["second"]
        assert instance["token_ids"].tolist() == [CLS, *a, SEP, *b, SEP]
        assert instance["segment_ids"].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1)
        assert instance["padding_mask"].all() and instance["next_sentence_labels"] == pair["next_sentence_labels"]


@pytest.mark.backend_independent
def test_random_next_comes_from_another_document_and_labels_are_balanced():
    documents, origin = _id_corpus(300, (20, 40), (5, 15))
    instances = list(iterate_pretraining_instances(documents, sequence_length=64, seed=2))
    labels = np.array([instance["next_sentence_labels"] for instance in instances])
    assert len(labels) > 2000
    # Random next with probability 0.5, and always for one-sentence chunks (a document's last sentence left
    # over after put-backs), so a little above one half, as in the original.
    assert 0.5 < labels.mean() < 0.6
    for instance in instances:
        tokens_a, tokens_b = _split_instance(instance)
        same_document = origin[tokens_a[0]][0] == origin[tokens_b[-1]][0]
        assert same_document != bool(instance["next_sentence_labels"])


@pytest.mark.backend_independent
def test_short_seq_prob_picks_short_targets_per_document():
    documents, _ = _id_corpus(3000, (30, 30), (8, 8))
    rng = random.Random(0)
    first_instances = [instances_from_document(documents, index, 67, 0.1, rng)[0] for index in range(3000)]
    # An IsNext pair is a whole chunk: sentences of 8 tokens until the target t is reached, so it holds
    # 8 * ceil(t / 8) tokens (64 after truncation). It is shorter than 57 iff t <= 56. Chunks with t <= 8
    # have one sentence and are always random next, so among IsNext pairs the expected short fraction is
    # P(short target, 9 <= t <= 56) / P(t >= 9) = 0.1 * 48/63 / (0.9 + 0.1 * 56/63).
    lengths = np.array([len(a) + len(b) for a, b, is_random_next in first_instances if not is_random_next])
    assert len(lengths) > 1200
    assert abs(np.mean(lengths < 57) - 0.1 * 48 / 63 / (0.9 + 0.1 * 56 / 63)) < 0.025
    rng = random.Random(0)
    first_instances = [instances_from_document(documents, index, 67, 0.0, rng)[0] for index in range(200)]
    assert all(len(a) + len(b) == 64 for a, b, is_random_next in first_instances if not is_random_next)


@pytest.mark.backend_independent
def test_same_seed_same_instances():
    documents, _ = _id_corpus(30, (1, 8), (1, 20))
    first = list(iterate_pretraining_instances(documents, 40, seed=3))
    again = list(iterate_pretraining_instances(documents, 40, seed=3))
    other = list(iterate_pretraining_instances(documents, 40, seed=4))
    assert first == again and first != other


@pytest.mark.backend_independent
def test_one_sentence_documents_long_sentences_and_a_single_document():
    long_sentence = list(range(10, 5010))
    documents = [[long_sentence], [[7, 8]], [[9]]]
    instances = list(iterate_pretraining_instances(documents, sequence_length=16, seed=0))
    assert instances and all(len(instance["first"]) + len(instance["second"]) + 3 <= 16 for instance in instances)
    assert all(instance["next_sentence_labels"] == 1 for instance in instances)  # one-sentence chunks
    alone = list(iterate_pretraining_instances([[[5, 6]]], sequence_length=8, seed=0))
    assert len(alone) == 1 and (alone[0]["first"], alone[0]["second"]) == ([5, 6], [5, 6])
    with pytest.raises(ValueError, match="sequence_length"):
        list(iterate_pretraining_instances(documents, sequence_length=4))


@backend_independent
def test_static_tfrecords_round_trip(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(split_sentences(d)) for d in _text_documents(60)), encoding="utf-8")
    prefix = str(tmp_path / "out" / "train")
    preprocessor = BertPretrainingPreprocessor(_tokenizer(), sequence_length=32, max_predictions_per_seq=5)
    paths = write_pretraining_tfrecords(str(corpus), prefix, preprocessor, num_shards=3, dupe_factor=2)
    assert paths == [f"{prefix}-0000{i}-of-00003.tfrecord" for i in range(3)]
    # The shards and their settings, no temporaries.
    names = [os.path.basename(p) for p in paths] + ["train.settings.json"]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(names)
    assert read_pretraining_settings(prefix + "-*")["num_shards"] == 3
    again = write_pretraining_tfrecords(str(corpus), str(tmp_path / "again"), preprocessor, num_shards=3,
                                        dupe_factor=2)
    for path, other in zip(paths, again):
        assert list(tf.data.TFRecordDataset(path).as_numpy_iterator()) == list(
            tf.data.TFRecordDataset(other).as_numpy_iterator()
        )

    dataset = read_pretraining_tfrecords(prefix + "-*", 8, 32, 5, shuffle=False, drop_remainder=False)
    batches = list(dataset.as_numpy_iterator())
    x = {key: np.concatenate([b[0][key] for b in batches]) for key in batches[0][0]}
    y = {key: np.concatenate([b[1][key] for b in batches]) for key in batches[0][1]}
    assert x["token_ids"].dtype == np.int32 and x["padding_mask"].dtype == bool
    assert y["mask_weights"].dtype == np.float32 and y["next_sentence_labels"].shape == (len(x["token_ids"]),)
    for row in range(len(x["token_ids"])):
        count = int(y["mask_weights"][row].sum())
        positions = x["mask_positions"][row, :count]
        assert count >= 1 and (np.diff(positions) > 0).all()
        assert x["padding_mask"][row, positions].all()
        assert not np.isin(y["mask_ids"][row, :count], [0, CLS, SEP]).any()
        assert (x["mask_positions"][row, count:] == 0).all()


def _dynamic_records(tmp_path, **settings):
    """Unmasked (dynamic) TFRecord shards of 40 documents at length 32: (prefix, tokenizer)."""
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(_text_documents(40)), encoding="utf-8")
    tokenizer = _tokenizer()
    prefix = str(tmp_path / "dyn")
    write_pretraining_tfrecords(
        str(corpus), prefix, BertPretrainingPreprocessor(tokenizer, sequence_length=32), masking="dynamic",
        dupe_factor=1, input_format="document_per_line", **settings,
    )
    return prefix, tokenizer


@backend_independent
def test_dynamic_tfrecords_get_new_masks_every_epoch(tmp_path):
    prefix, tokenizer = _dynamic_records(tmp_path)
    with pytest.raises(ValueError, match="no 'masked_lm_positions' feature"):
        read_pretraining_tfrecords(prefix + "-*", 4, 32)
    with pytest.raises(ValueError, match="'input_ids' has length 32, expected 64"):
        read_pretraining_tfrecords(prefix + "-*", 4, 64, masker=MaskedLMMasker.from_tokenizer(tokenizer))
    record = next(iter(tf.data.TFRecordDataset(glob.glob(prefix + "-*"))))
    features = tf.train.Example.FromString(record.numpy()).features.feature
    assert "masked_lm_positions" not in features and "input_ids" in features
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=5)
    dataset = read_pretraining_tfrecords(prefix + "-*", 4, 32, masker=masker, shuffle=False, epochs=2)
    batches = [x["mask_positions"] for x, _ in dataset.as_numpy_iterator()]
    epochs = [np.concatenate(batches[:len(batches) // 2]), np.concatenate(batches[len(batches) // 2:])]
    assert not np.array_equal(epochs[0], epochs[1])
    # Keyed by (seed, epoch), not by the pass: a second pass (or epoch 1 read on its own) repeats them.
    again = [x["mask_positions"] for x, _ in dataset.as_numpy_iterator()]
    np.testing.assert_array_equal(np.concatenate(again), np.concatenate(batches))
    second = read_pretraining_tfrecords(prefix + "-*", 4, 32, masker=masker, shuffle=False, initial_epoch=1)
    np.testing.assert_array_equal(np.concatenate([x["mask_positions"] for x, _ in second.as_numpy_iterator()]),
                                  epochs[1])


@backend_independent
def test_shuffled_tfrecords_are_the_same_on_every_pass(tmp_path):
    prefix, tokenizer = _dynamic_records(tmp_path, num_shards=2)
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=5)
    dataset = read_pretraining_tfrecords(prefix + "-*", 4, 32, masker=masker, shuffle_buffer_size=64, epochs=2)
    passes = [[(x["token_ids"], x["mask_positions"]) for x, _ in dataset.as_numpy_iterator()] for _ in range(2)]
    for (tokens, masks), (tokens_again, masks_again) in zip(*passes):
        np.testing.assert_array_equal(tokens, tokens_again)
        np.testing.assert_array_equal(masks, masks_again)
    half = len(passes[0]) // 2
    assert not np.array_equal(np.concatenate([t for t, _ in passes[0][:half]]),
                              np.concatenate([t for t, _ in passes[0][half:]]))  # epoch 1 is reshuffled


def _write_records(path, rows, seq_length=8, predictions=2):
    """A TFRecord of statically masked records with the given `input_ids` / `masked_lm_ids` rows."""

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for input_ids, masked_lm_ids in rows:
            features = {
                "input_ids": ints(input_ids), "input_mask": ints([1] * seq_length),
                "segment_ids": ints([0] * seq_length), "next_sentence_labels": ints([0]),
                "masked_lm_positions": ints([1, 2]), "masked_lm_ids": ints(masked_lm_ids),
                "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * predictions)),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return str(path)


@backend_independent
@pytest.mark.parametrize(
    "field, rows, bad, words",
    [
        ("input_ids", [([1, 5, 6, 2, 7, 8, 9, 2], [5, 6]), ([1, 5, 40, 2, 7, 8, 9, 2], [5, 6])], 40,
         ">= vocabulary_size 40"),
        ("masked_lm_ids", [([1, 5, 6, 2, 7, 8, 9, 2], [5, 57])], 57, ">= vocabulary_size 40"),
        ("input_ids", [([1, 5, -3, 2, 7, 8, 9, 2], [5, 6])], -3, "negative token id"),
    ],
)
def test_token_ids_beyond_the_vocabulary_are_named(tmp_path, field, rows, bad, words):
    path = _write_records(tmp_path / "big-vocab.tfrecord", rows)
    dataset = read_pretraining_tfrecords(path, 4, 8, 2, shuffle=False, drop_remainder=False, vocabulary_size=40)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(dataset.as_numpy_iterator())
    message = str(raised.value)
    assert f"TFRecords {path}: feature {field} holds a" in message and words in message
    assert f"[{bad}]" in message and "ids must be in [0, 40)" in message


@backend_independent
def test_token_ids_within_the_vocabulary_read_unchanged(tmp_path):
    rows = [([1, 5, 6, 2, 7, 8, 39, 2], [5, 39]), ([1, 0, 6, 2, 7, 8, 9, 2], [0, 6])]
    path = _write_records(tmp_path / "ok.tfrecord", rows)
    read = [list(read_pretraining_tfrecords(path, 2, 8, 2, shuffle=False, vocabulary_size=size).as_numpy_iterator())
            for size in (None, 40)]
    (x, y), = read[1]
    np.testing.assert_array_equal(x["token_ids"], [row[0] for row in rows])
    np.testing.assert_array_equal(y["mask_ids"], [row[1] for row in rows])
    for key in x:
        np.testing.assert_array_equal(x[key], read[0][0][0][key])
    for key in y:
        np.testing.assert_array_equal(y[key], read[0][0][1][key])
    for size in (0, 2.5, True):
        with pytest.raises(ValueError, match="vocabulary_size must be a positive integer"):
            read_pretraining_tfrecords(path, 2, 8, 2, vocabulary_size=size)


@backend_independent
@pytest.mark.parametrize("masking", ["dynamic", "static"])
@pytest.mark.slow
def test_pretraining_dataset_structure_and_determinism(masking):
    preprocessor = BertPretrainingPreprocessor(_tokenizer(), sequence_length=24, max_predictions_per_seq=4)

    def epochs(seed):
        dataset = pretraining_dataset(
            preprocessor, documents=_text_documents(50), batch_size=8, masking=masking, seed=seed, epochs=2,
        )
        batches = list(dataset.as_numpy_iterator())
        # The stream depends on (seed, epoch) only: a second pass over the same object repeats it exactly
        # (Keras reads a dataset once more under a tf.distribute strategy).
        for (x1, y1), (x2, y2) in zip(batches, dataset.as_numpy_iterator(), strict=True):
            for key in x1:
                np.testing.assert_array_equal(x1[key], x2[key])
            for key in y1:
                np.testing.assert_array_equal(y1[key], y2[key])
        return [batches[:len(batches) // 2], batches[len(batches) // 2:]]

    first, again, other = epochs(5), epochs(5), epochs(6)
    assert len(first[0]) == len(first[1]) > 1
    x, y = first[0][0]
    assert set(x) == {"token_ids", "segment_ids", "padding_mask", "mask_positions"}
    assert set(y) == {"mask_ids", "mask_weights", "next_sentence_labels"}
    assert x["token_ids"].shape == (8, 24) and x["mask_positions"].shape == (8, 4)
    assert y["next_sentence_labels"].shape == (8,)
    assert x["token_ids"].dtype == np.int32 and y["next_sentence_labels"].dtype == np.int32
    for epoch in range(2):
        for (x1, y1), (x2, y2) in zip(first[epoch], again[epoch]):
            np.testing.assert_array_equal(x1["token_ids"], x2["token_ids"])
            np.testing.assert_array_equal(y1["mask_ids"], y2["mask_ids"])
    assert not np.array_equal(first[0][0][0]["token_ids"], other[0][0][0]["token_ids"])

    def masks_by_instance(epoch):
        # Unmasked instance (token ids with the original ids put back) -> its mask positions.
        masks = {}
        for x, y in epoch:
            for row in range(len(x["token_ids"])):
                tokens = x["token_ids"][row].copy()
                count = int(y["mask_weights"][row].sum())
                tokens[x["mask_positions"][row, :count]] = y["mask_ids"][row, :count]
                masks[tokens.tobytes()] = x["mask_positions"][row].tolist()
        return masks

    masks = [masks_by_instance(epoch) for epoch in first]
    assert masks[0].keys() == masks[1].keys()
    assert (masks[0] == masks[1]) == (masking == "static")
    # Epoch 1 read on its own (initial_epoch=1) is the second epoch of the two-epoch stream.
    alone = pretraining_dataset(
        preprocessor, documents=_text_documents(50), batch_size=8, masking=masking, seed=5, initial_epoch=1,
    )
    for (x1, y1), (x2, y2) in zip(first[1], alone.as_numpy_iterator(), strict=True):
        np.testing.assert_array_equal(x1["token_ids"], x2["token_ids"])
        np.testing.assert_array_equal(x1["mask_positions"], x2["mask_positions"])
    with pytest.raises(ValueError, match="epochs must be a positive integer or None"):
        pretraining_dataset(preprocessor, documents=_text_documents(5), epochs=0)


def test_pretraining_dataset_feeds_fit_on_every_backend():
    preprocessor = BertPretrainingPreprocessor(_tokenizer(), sequence_length=16, max_predictions_per_seq=3)
    dataset = pretraining_dataset(preprocessor, documents=_text_documents(30), batch_size=4)
    seq_length, predictions, vocabulary_size = 16, 3, len(VOCABULARY)

    inputs = {
        "token_ids": keras.Input((seq_length,), dtype="int32", name="token_ids"),
        "segment_ids": keras.Input((seq_length,), dtype="int32", name="segment_ids"),
        "padding_mask": keras.Input((seq_length,), dtype="bool", name="padding_mask"),
        "mask_positions": keras.Input((predictions,), dtype="int32", name="mask_positions"),
    }
    hidden = keras.layers.Embedding(vocabulary_size, 8)(inputs["token_ids"])
    hidden = hidden + keras.layers.Embedding(2, 8)(inputs["segment_ids"])
    gathered = keras.ops.take_along_axis(hidden, keras.ops.expand_dims(inputs["mask_positions"], -1), axis=1)
    mlm = keras.layers.Dense(vocabulary_size, name="mlm")(gathered)
    nsp = keras.layers.Dense(2, name="nsp")(hidden[:, 0])
    model = keras.Model(inputs, {"mlm": mlm, "nsp": nsp})
    model.compile(
        optimizer="adam",
        loss={
            "mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    )
    dataset = dataset.map(
        lambda x, y: (
            x,
            {"mlm": y["mask_ids"], "nsp": y["next_sentence_labels"]},
            {"mlm": y["mask_weights"], "nsp": tf.ones_like(y["next_sentence_labels"], tf.float32)},
        )
    )
    history = model.fit(dataset, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@backend_independent
def test_masker_from_tokenizer_masks_whole_words():
    tokenizer = _tokenizer()
    masker = MaskedLMMasker.from_tokenizer(
        tokenizer, whole_word_masking=True, mask_rate=0.4, max_predictions_per_seq=4  # round(5 * 0.4) = 2
    )
    token_ids = [[CLS, *tokenizer.tokenize("word1s word2"), SEP]]  # [CLS] word1 ##s word2 [SEP]
    assert token_ids[0][2] == VOCABULARY.index("##s")
    outcomes = set()
    for seed in range(20):
        out = masker({"token_ids": np.array(token_ids, np.int32)}, seed=[seed, 0])
        count = int(out["mask_weights"].numpy().sum())
        outcomes.add(tuple(out["mask_positions"].numpy()[0, :count]))
    assert outcomes == {(1, 2), (3,)}
