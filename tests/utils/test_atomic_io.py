import os
import stat

import pytest

from keras_bert_impl.utils.atomic_io import atomic_directory, atomic_write, atomic_write_json, atomic_write_text

pytestmark = pytest.mark.backend_independent


def test_atomic_write_replaces_only_on_success(tmp_path):
    path = tmp_path / "file.txt"
    atomic_write_json(str(path), {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic_write(str(path), "w") as handle:
            handle.write("partial")
            raise RuntimeError("crash mid-write")
    assert path.read_text() == '{\n  "a": 1\n}\n'
    assert os.listdir(tmp_path) == ["file.txt"]


def test_atomic_directory_keeps_old_directory_on_failure(tmp_path):
    target = tmp_path / "out"
    with atomic_directory(str(target)) as tmp:
        open(os.path.join(tmp, "a"), "w").write("old")
    with pytest.raises(RuntimeError):
        with atomic_directory(str(target)) as tmp:
            open(os.path.join(tmp, "a"), "w").write("new")
            raise RuntimeError("crash")
    assert (target / "a").read_text() == "old"
    with atomic_directory(str(target)) as tmp:
        open(os.path.join(tmp, "b"), "w").write("new")
    assert sorted(os.listdir(target)) == [".keras_bert_impl", "b"] and os.listdir(tmp_path) == ["out"]


def test_uncreatable_output_directory_is_named(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(OSError, match="Cannot create output directory .*blocker"):
        atomic_write_json(str(blocker / "sub" / "x.json"), {})


def test_disk_full_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "predictions.json"
    atomic_write_json(str(path), {"q1": "old"})

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_json(str(path), {"q1": "new"})
    assert '"old"' in path.read_text() and os.listdir(tmp_path) == ["predictions.json"]


def test_mode_is_checked(tmp_path):
    with pytest.raises(ValueError, match="modes 'w' and 'wb'"):
        with atomic_write(str(tmp_path / "x"), "a"):
            pass


def test_written_files_and_directories_get_the_umask_permissions(tmp_path):
    previous = os.umask(0o022)
    try:
        atomic_write_text(str(tmp_path / "vocab.txt"), "a\n")
        with atomic_directory(str(tmp_path / "checkpoint")) as tmp:
            atomic_write_text(os.path.join(tmp, "config.json"), "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(tmp_path / "vocab.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "checkpoint").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(tmp_path / "checkpoint" / "config.json").st_mode) == 0o644
