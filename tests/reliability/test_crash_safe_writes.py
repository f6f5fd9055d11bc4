"""A crash or a full disk in the middle of a write leaves the previous good file, never a partial one.

Each test writes a good version, then simulates the failure inside the next write (the disk fills after a
few bytes, or the writer raises between two files of a directory) and checks that the final path still holds
the good version and that no temporary file is left beside it. `utils.atomic_io` is what guarantees it;
these tests pin that every writer of TFRecord shards, prediction files, vocabularies, label vocabularies,
training checkpoints and model directories goes through it.
"""

import errno
import os

import numpy as np
import pytest

from keras_bert_impl.utils import atomic_io

pytestmark = pytest.mark.backend_independent


def no_partial_files(directory):
    """Names under `directory` (recursively) that look like leftovers of an interrupted write."""
    leftovers = []
    for root, dirs, files in os.walk(directory):
        leftovers += [os.path.join(root, name) for name in dirs + files if ".tmp-" in name or ".old-" in name]
    return leftovers


def disk_full_after(monkeypatch, budget):
    """Make every file that `atomic_io` opens accept `budget` bytes (or characters), then raise ENOSPC."""
    real_fdopen = os.fdopen

    class FillingHandle:
        def __init__(self, handle):
            self._handle, self._left = handle, budget

        def write(self, data):
            if len(data) > self._left:
                self._handle.write(data[: self._left])
                self._left = 0
                raise OSError(errno.ENOSPC, "No space left on device")
            self._left -= len(data)
            return self._handle.write(data)

        def __getattr__(self, name):
            return getattr(self._handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self._handle.__exit__(*exc)

    monkeypatch.setattr(atomic_io.os, "fdopen", lambda *a, **k: FillingHandle(real_fdopen(*a, **k)))


def test_squad_prediction_files_survive_a_full_disk(tmp_path, monkeypatch):
    from keras_bert_impl.squad.squad_decoding import write_squad_predictions

    class Decoded:  # the fields write_squad_predictions reads
        def __init__(self, answer):
            self.predictions = {"q1": answer}
            self.nbest = {"q1": [{"text": answer, "probability": 1.0}]}
            self.null_odds = {"q1": -1.5}
            self.version_2_with_negative = True

    paths = write_squad_predictions(Decoded("old answer"), str(tmp_path))
    before = {name: open(path, "rb").read() for name, path in paths.items() if path}
    disk_full_after(monkeypatch, 5)
    with pytest.raises(OSError, match="No space left"):
        write_squad_predictions(Decoded("new answer " * 100), str(tmp_path))
    monkeypatch.undo()
    for name, content in before.items():
        assert open(paths[name], "rb").read() == content, name
    assert not no_partial_files(tmp_path)


def test_classification_predictions_and_eval_results_survive_a_full_disk(tmp_path, monkeypatch):
    from keras_bert_impl.training import finetuning

    path = tmp_path / "dev_predictions.tsv"
    finetuning.write_classification_predictions(str(path), np.array([[0.1, 0.9]]))
    disk_full_after(monkeypatch, 8)
    with pytest.raises(OSError, match="No space left"):
        finetuning.write_classification_predictions(str(path), np.zeros((1000, 2)))
    monkeypatch.undo()
    assert path.read_text() == "index\tprediction\n0\t1\n"
    assert not no_partial_files(tmp_path)


def test_tfrecord_shards_survive_a_crash_mid_shard(tmp_path, monkeypatch):
    import tensorflow as tf

    from keras_bert_impl.data import pretraining_tfrecords
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.cli.cli_test_utils import write_corpus

    corpus, vocab = write_corpus(tmp_path)
    preprocessor = BertPretrainingPreprocessor(BertTokenizer(str(vocab)), sequence_length=24, max_predictions_per_seq=4)
    settings = dict(num_shards=2, dupe_factor=1, seed=1)
    output = tmp_path / "shards" / "train"
    pretraining_tfrecords.write_pretraining_tfrecords([str(corpus)], str(output), preprocessor, **settings)
    shards = sorted((tmp_path / "shards").iterdir())
    before = {shard.name: shard.read_bytes() for shard in shards}  # two shards and their settings
    assert len(before) == 3 and all(before.values()) and "train.settings.json" in before

    real_writer = tf.io.TFRecordWriter

    class CrashingWriter(real_writer):
        written = 0

        def write(self, record):
            if CrashingWriter.written == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
            CrashingWriter.written += 1
            super().write(record)

    monkeypatch.setattr(tf.io, "TFRecordWriter", CrashingWriter)
    with pytest.raises(OSError, match="No space left"):
        pretraining_tfrecords.write_pretraining_tfrecords([str(corpus)], str(output), preprocessor,
                                                          **{**settings, "seed": 2})
    assert {shard.name: shard.read_bytes() for shard in sorted((tmp_path / "shards").iterdir())} == before
    assert not no_partial_files(tmp_path / "shards")


def test_vocabulary_files_survive_a_full_disk(tmp_path, monkeypatch):
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.cli.cli_test_utils import SPECIAL_TOKENS, WORDS

    BertTokenizer(SPECIAL_TOKENS + WORDS[:5]).save_pretrained(str(tmp_path))
    before = (tmp_path / "vocab.txt").read_text()
    disk_full_after(monkeypatch, 10)
    with pytest.raises(OSError, match="No space left"):
        BertTokenizer(SPECIAL_TOKENS + WORDS).save_pretrained(str(tmp_path))
    monkeypatch.undo()
    assert (tmp_path / "vocab.txt").read_text() == before
    assert BertTokenizer.from_pretrained(str(tmp_path)).vocabulary_size() == len(SPECIAL_TOKENS) + 5
    assert not no_partial_files(tmp_path)


def test_trained_vocabulary_survives_a_full_disk(tmp_path, monkeypatch):
    from keras_bert_impl.tokenization.vocabulary_training import train_wordpiece_vocabulary
    from tests.cli.cli_test_utils import write_corpus

    corpus, _ = write_corpus(tmp_path)
    output = tmp_path / "trained" / "vocab.txt"
    train_wordpiece_vocabulary([str(corpus)], 60, output_path=str(output))
    before = output.read_text()
    disk_full_after(monkeypatch, 10)
    with pytest.raises(OSError, match="No space left"):
        train_wordpiece_vocabulary([str(corpus)], 80, output_path=str(output))
    monkeypatch.undo()
    assert output.read_text() == before
    assert not no_partial_files(tmp_path / "trained")


def test_classifier_directory_and_its_label_vocabulary_are_replaced_together(tmp_path, monkeypatch):
    from keras_bert_impl.data.label_vocabulary import LabelVocabulary
    from keras_bert_impl.models.classifier import BertClassifier
    from tests.helpers import tiny_backbone

    path = tmp_path / "best"
    BertClassifier(tiny_backbone(num_layers=1), 2, labels=["neg", "pos"]).save_pretrained(str(path))
    before = {name: (path / name).read_bytes() for name in os.listdir(path)}
    assert "label_vocabulary.json" in before

    def crash(self, file_path):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LabelVocabulary, "save", crash)
    with pytest.raises(OSError, match="No space left"):
        BertClassifier(tiny_backbone(num_layers=1), 3, labels=["a", "b", "c"]).save_pretrained(str(path))
    monkeypatch.undo()
    assert {name: (path / name).read_bytes() for name in os.listdir(path)} == before
    assert BertClassifier.from_pretrained(str(path)).labels == ("neg", "pos")
    assert not no_partial_files(tmp_path)


@pytest.mark.slow
def test_training_checkpoint_and_latest_pointer_survive_a_crash_mid_save(tmp_path, monkeypatch):
    from keras_bert_impl.training import callbacks
    from tests.models.test_pretrainer import pretraining_batch
    from tests.training.test_callbacks import small_pretrainer

    x, y = pretraining_batch()
    model = small_pretrainer()
    checkpoint = callbacks.TrainingCheckpoint(tmp_path, steps_per_epoch=1, keep=2)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[checkpoint])
    good = callbacks.latest_training_checkpoint(tmp_path)
    weights_before = (tmp_path / "step_00000001" / callbacks.WEIGHTS_FILE).read_bytes()

    def full_disk(*args, **kwargs):  # the weights are written, then the RNG file fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(callbacks.np, "savez", full_disk)
    with pytest.raises(OSError, match="No space left"):
        model.fit(x, y, batch_size=4, epochs=2, initial_epoch=1, shuffle=False, verbose=0, callbacks=[checkpoint])
    monkeypatch.undo()
    assert callbacks.latest_training_checkpoint(tmp_path) == good
    assert sorted(os.listdir(tmp_path)) == ["latest", "step_00000001"]
    assert (tmp_path / "step_00000001" / callbacks.WEIGHTS_FILE).read_bytes() == weights_before
    callbacks.restore_training_checkpoint(small_pretrainer(), good[0])


def test_finetuned_model_directory_survives_a_crash_mid_save(tmp_path, monkeypatch):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training import finetuning
    from tests.helpers import tiny_backbone

    model = BertClassifier(tiny_backbone(num_layers=1), 2)
    finetuning.save_finetuned(model, str(tmp_path / "last"), results={"accuracy": 0.5})
    before = {name: (tmp_path / "last" / name).read_bytes() for name in os.listdir(tmp_path / "last")}
    disk_full_after(monkeypatch, 3)  # eval_results.json is the last file of the directory
    with pytest.raises(OSError, match="No space left"):
        finetuning.save_finetuned(model, str(tmp_path / "last"), results={"accuracy": 0.75})
    monkeypatch.undo()
    assert {name: (tmp_path / "last" / name).read_bytes() for name in os.listdir(tmp_path / "last")} == before
    assert not no_partial_files(tmp_path)
