"""`keras-bert vocab` and `keras-bert create-data` on a tiny generated corpus."""

import json

import pytest

from tests.cli.cli_test_utils import SPECIAL_TOKENS, WORDS, run_cli, write_corpus

pytestmark = pytest.mark.backend_independent


def test_vocab_learns_the_corpus_words(capsys, tmp_path):
    corpus, _ = write_corpus(tmp_path)
    status, out, _ = run_cli(capsys, "vocab", "--input-files", str(tmp_path / "corpus*.txt"), "--vocab-size", "200",
                             "--output-dir", tmp_path / "vocab")
    assert status == 0 and "tokens learned from 1 file(s) (uncased)" in out
    tokens = (tmp_path / "vocab" / "vocab.txt").read_text().split("\n")
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert set(WORDS) <= set(tokens)
    assert json.loads((tmp_path / "vocab" / "tokenizer_config.json").read_text())["do_lower_case"] is True


def test_create_data_writes_readable_masked_shards(capsys, tmp_path):
    from keras_bert_impl.data import read_pretraining_tfrecords

    corpus, vocab = write_corpus(tmp_path)
    status, out, _ = run_cli(capsys, "create-data", "--input-files", corpus, "--vocab", vocab, "--output-prefix",
                             tmp_path / "data" / "train", "--num-shards", "2", "--max-seq-length", "24",
                             "--max-predictions-per-seq", "4", "--dupe-factor", "2")
    assert status == 0
    shards = sorted(str(path) for path in (tmp_path / "data").glob("train-*-of-00002.tfrecord"))
    assert len(shards) == 2 and all(shard in out for shard in shards)
    x, y = next(iter(read_pretraining_tfrecords(shards, batch_size=4, sequence_length=24, max_predictions_per_seq=4)))
    assert x["token_ids"].shape == (4, 24) and y["mask_ids"].shape == (4, 4)
    assert float(y["mask_weights"].numpy().sum()) > 0


@pytest.mark.slow
def test_pretrain_names_tfrecord_ids_beyond_the_model_vocabulary(capsys, tmp_path):
    corpus, vocab = write_corpus(tmp_path)
    bigger = tmp_path / "bigger_vocab.txt"  # the corpus words get ids beyond vocab.txt's size
    bigger.write_text("\n".join(SPECIAL_TOKENS + [f"[unused{i}]" for i in range(40)] + [".", *WORDS]) + "\n")
    status, _, _ = run_cli(capsys, "create-data", "--input-files", corpus, "--vocab", bigger, "--output-prefix",
                           tmp_path / "data" / "train", "--max-seq-length", "24", "--max-predictions-per-seq", "4",
                           "--dupe-factor", "1")
    assert status == 0
    size = len(vocab.read_text().split())
    status, _, err = run_cli(capsys, "pretrain", "--input-tfrecords", tmp_path / "data" / "train-*", "--vocab-file",
                             vocab, "--preset", "tiny", "--seq-length", "24", "--max-predictions-per-seq", "4",
                             "--masking", "static", "--batch-size", "4", "--steps", "2", "--checkpoint-every", "2",
                             "--output-dir", tmp_path / "out", "--verbose", "0")
    assert status == 1
    assert f"feature input_ids holds a token id >= vocabulary_size {size}" in err and "train-*" in err
    assert len(err.strip().splitlines()) == 1 and "Graph execution error" not in err


def test_create_data_writes_its_packing_and_masking_settings_beside_the_shards(capsys, tmp_path):
    from keras_bert_impl.data.pretraining_tfrecords import read_pretraining_settings

    corpus, vocab = write_corpus(tmp_path)
    status, out, _ = run_cli(capsys, "create-data", "--input-files", corpus, "--vocab", vocab, "--output-prefix",
                             tmp_path / "data" / "train", "--max-seq-length", "24", "--max-predictions", "6",
                             "--masking", "dynamic", "--mask-rate", "0.3", "--masking-rule", "ceil",
                             "--whole-word-masking", "--replacement-unit", "token", "--mask-token-rate", "0.7",
                             "--random-token-rate", "0.2", "--dupe-factor", "1", "--seed", "7")
    assert status == 0
    path = tmp_path / "data" / "train.settings.json"
    assert str(path) in out
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["train-00000-of-00001.tfrecord",
                                                                     "train.settings.json"]
    settings = json.loads(path.read_text())
    assert settings["masking"] == "dynamic" and settings["dupe_factor"] == 1 and settings["seed"] == 7
    assert settings["preprocessor"] == {
        "sequence_length": 24, "truncation": "random_front_back", "mask_rate": 0.3, "max_predictions_per_seq": 6,
        "counting": "ceil", "whole_word_masking": True, "replacement_unit": "token", "mask_token_rate": 0.7,
        "random_token_rate": 0.2, "seed": 7,
    }
    # Found from the shards' glob (which does not match the settings file itself) or from a glob that does.
    for pattern in (tmp_path / "data" / "train-*", tmp_path / "data" / "*"):
        assert read_pretraining_settings(str(pattern)) == {**settings, "path": str(path)}
