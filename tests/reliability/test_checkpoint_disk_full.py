"""Issue #16 item 3: a full disk at a pretraining checkpoint ends in one line (ENOSPC, the path, the space free),
exit 1, the previous checkpoint intact and no temp folder; a library that reports the full disk otherwise (h5py's
`RuntimeError`) gives the same line. Item 4: temp folders of interrupted checkpoint writes (`.step_*.tmp-*`) are
removed when training starts and ends, and nothing else is."""

import errno
import os
import shutil

import pytest

from tests.cli.cli_test_utils import run_cli, write_corpus

pytestmark = pytest.mark.backend_independent


def pretrain(capsys, directory, *extra):
    return run_cli(
        capsys, "pretrain", "--input-files", directory / "corpus.txt", "--vocab-file", directory / "vocab.txt",
        "--preset", "tiny", "--seq-length", "24", "--max-predictions-per-seq", "4", "--batch-size", "4",
        "--checkpoint-every", "2", "--output-dir", directory / "run", "--verbose", "0", *extra)


@pytest.mark.slow
def test_full_disk_at_a_pretraining_checkpoint_is_one_line_and_keeps_the_previous_one(tmp_path, capsys,
                                                                                      monkeypatch):
    from keras_bert_impl.utils import atomic_io

    write_corpus(tmp_path)
    assert pretrain(capsys, tmp_path, "--steps", "4", "--max-steps-this-run", "2")[0] == 0
    phase = tmp_path / "run" / "checkpoints" / "phase1"
    before = sorted(os.listdir(phase))
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(atomic_io.shutil, "disk_usage", lambda path: usage._replace(free=1000))
    status, _, err = pretrain(capsys, tmp_path, "--steps", "4")
    assert status == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "[Errno 28] No space left on device writing " in err and str(phase) in err
    assert "1000 bytes free there, about " in err and "the last checkpoint " in err and "step_00000002 is kept" in err
    assert sorted(os.listdir(phase)) == before == ["latest", "step_00000002"]


def test_a_library_error_about_a_full_disk_becomes_one_line_and_leaves_no_temp_folder(tmp_path):
    from keras_bert_impl.utils.atomic_io import atomic_directory

    target = tmp_path / "step_00000004"
    with pytest.raises(OSError) as caught:
        with atomic_directory(str(target)) as tmp:
            with open(os.path.join(tmp, "training.weights.h5"), "wb") as handle:
                handle.write(b"partial")
            raise RuntimeError("Can't synchronously write data (file write failed: errno = 28, error message = "
                               "'No space left on device')")
    assert caught.value.errno == errno.ENOSPC
    assert str(caught.value).startswith(f"[Errno 28] No space left on device writing {target}: ")
    assert "free there; the previous version is kept" in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_stale_checkpoint_temp_folders_are_removed_at_start_and_end(tmp_path):
    import keras
    import numpy as np

    from keras_bert_impl.training.callbacks import TrainingCheckpoint

    directory = tmp_path / "checkpoints"
    directory.mkdir()
    stale = directory / ".step_00000002.tmp-abc123"
    stale.mkdir()
    (stale / "training.weights.h5").write_bytes(b"x" * 1000)
    (directory / ".step_00000002.old-def456").mkdir()
    (directory / "notes.txt").write_text("mine")
    (directory / ".other.tmp-1").mkdir()  # not this writer's naming: kept
    inputs = keras.Input((4,), dtype="int32")
    classifier = keras.Model(inputs, keras.layers.Dense(1)(keras.ops.cast(inputs, "float32")))
    classifier.compile(optimizer="sgd", loss="mse")
    callback = TrainingCheckpoint(str(directory), steps_per_epoch=1)
    callback.set_model(classifier)
    callback.on_train_begin()
    assert sorted(os.listdir(directory)) == [".other.tmp-1", "notes.txt"]
    (directory / ".step_00000004.tmp-zzz").mkdir()
    classifier.fit(np.zeros((2, 4), "int32"), np.zeros((2, 1)), epochs=1, verbose=0, callbacks=[callback])
    assert sorted(os.listdir(directory)) == [".other.tmp-1", "latest", "notes.txt", "step_00000001"]


def test_a_full_disk_while_safetensors_writes_is_one_line(tmp_path, capsys, monkeypatch):
    """Issue #29 item 7: safetensors reports a full disk as `SafetensorError` ("Error while serializing:
    IoError(Os { code: 28, kind: StorageFull, ... })"), not an OSError: it was a traceback."""
    import safetensors.numpy
    from safetensors import SafetensorError

    from tests.training.finetuning_test_utils import write_tiny_checkpoint

    source = write_tiny_checkpoint(tmp_path / "checkpoint")

    def full_disk(tensors, filename, metadata=None):
        with open(filename, "wb") as handle:
            handle.write(b"partial")
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
                              'left on device" })')

    monkeypatch.setattr(safetensors.numpy, "save_file", full_disk)
    status, _, err = run_cli(capsys, "convert", "--input", source, "--output", tmp_path / "out")
    assert status == 1 and len(err.strip().splitlines()) == 1, err
    assert f"error: [Errno 28] No space left on device writing {tmp_path / 'out'}: " in err
    assert "free there; the previous version is kept" in err
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]  # no output, no temp folder
