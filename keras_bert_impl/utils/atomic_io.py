"""Crash-safe file and directory writes: content is written under a temporary name in the destination's
folder, flushed to disk and renamed over the destination in one step, so a crash leaves the previous file
(and at worst a `*.tmp-*` leftover)."""

import contextlib
import errno
import glob
import json
import os
import shutil
import tempfile


def _fsync(path):
    """Flush the file or directory `path` to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask_mode(base):
    """`base` (0o666 files, 0o777 directories) less the umask, the mode `open` / `mkdir` give (not `tempfile`'s
    owner-only 0o600 / 0o700)."""
    umask = os.umask(0)
    os.umask(umask)
    return base & ~umask


def _ensure_parent(path):
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        blocker = parent
        while blocker and not os.path.lexists(blocker):
            blocker = os.path.dirname(blocker)
        if os.path.lexists(blocker) and not os.path.isdir(blocker):
            raise NotADirectoryError(
                f"Cannot create output directory {parent!r}: {blocker!r} is a file, not a directory; choose "
                f"another output path."
            ) from error
        raise OSError(f"Cannot create output directory {parent!r}: {error.strerror}.") from error
    if not os.access(parent, os.W_OK):
        raise PermissionError(
            f"Output directory {parent!r} is not writable; choose another path or fix its permissions."
        )
    return parent


def ensure_directory(path):
    """Create the directory `path` (and its parents); return its absolute path. A file in the way or a read-only
    folder raises one line naming it."""
    return _ensure_parent(os.path.join(path, "_"))


@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """Open a temporary file that replaces `path` only when the `with` block succeeds.

    Args:
        path: str. Final file path.
        mode: str. `"wb"` or `"w"` (UTF-8 text). Defaults to `"wb"`.

    Example:
    >>> with atomic_write("/tmp/example.txt", "w") as f:
    ...     _ = f.write("hello")
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write supports modes 'w' and 'wb', got {mode!r}.")
    encoding = "utf-8" if mode == "w" else None
    with atomic_path(path) as tmp_path, os.fdopen(os.open(tmp_path, os.O_WRONLY), mode, encoding=encoding) as handle:
        yield handle


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary file name that replaces `path` only when the `with` block succeeds, for writers that
    take a file name (`tf.io.TFRecordWriter`, safetensors).

    Args:
        path: str. Final file path.

    Example:
    >>> with atomic_path("/tmp/example.bin") as tmp:
    ...     with open(tmp, "wb") as f:
    ...         _ = f.write(b"data")
    """
    parent = _ensure_parent(path)
    fd, tmp_path = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.tmp-")
    os.close(fd)
    os.chmod(tmp_path, _umask_mode(0o666))
    try:
        yield tmp_path
        _fsync(tmp_path)
        os.replace(tmp_path, path)
        with contextlib.suppress(OSError):  # some filesystems cannot sync a directory
            _fsync(parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp_path)
        raise


def atomic_write_text(path, text):
    """Write `text` (UTF-8) to `path` atomically."""
    with atomic_write(path, "w") as handle:
        handle.write(text)


def atomic_write_json(path, obj, indent=2):
    """Write `obj` as JSON to `path` atomically."""
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


def _human_size(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024


def free_space(path):
    """Bytes free for this user on the filesystem of `path` (or of its nearest existing parent)."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free


def is_disk_full(error):
    """Whether `error` reports a full disk: `OSError` ENOSPC, or any writer's error saying so: h5py's
    `RuntimeError` ("... No space left on device"), safetensors' `SafetensorError` ("Error while serializing:
    IoError(Os { code: 28, kind: StorageFull, ... })")."""
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or (
        isinstance(error, Exception) and any(sign in str(error) for sign in ("No space left on device", "StorageFull")))


def disk_full_error(path, needed=None, then="free some space or write elsewhere, then run again"):
    """A one-line `OSError` (ENOSPC) naming `path`, the space free there and, if known, the space `needed`."""
    need = f", about {_human_size(needed)} needed" if needed is not None else ""
    return OSError(errno.ENOSPC, f"No space left on device writing {path}: {_human_size(free_space(path))} free "
                                 f"there{need}; {then}.")


def require_free_space(path, needed, then="free some space or write elsewhere, then run again"):
    """Raise `disk_full_error` before writing `needed` bytes at `path` when the filesystem has less free."""
    if free_space(path) < needed:
        raise disk_full_error(path, needed, then)


def remove_stale_temporaries(directory, prefix):
    """Delete the leftovers of interrupted `atomic_*` writes of entries named `prefix*` in `directory`
    (`.<prefix>*.tmp-*` and `.<prefix>*.old-*`); nothing else. Returns the removed paths."""
    pattern = os.path.join(glob.escape(os.fspath(directory)), f".{glob.escape(prefix)}*")
    stale = [path for path in glob.glob(pattern) if ".tmp-" in os.path.basename(path)
             or ".old-" in os.path.basename(path)]
    for path in stale:
        _remove(path)
    return stale


class OutputExistsError(FileExistsError):
    """An output path holds something that is not a previous output of the same kind; nothing was written."""


def check_replaceable(path, markers=(), overwrite=False, what="output directory", force_hint=None):
    """Raise `OutputExistsError` unless `path` is absent, an empty directory, or holds one of `markers` (a
    previous output of the same kind), or `overwrite` is set.

    Args:
        path: str. The destination directory.
        markers: tuple of str. File names that identify a previous output of this kind.
        overwrite: bool. Replace whatever is there (the user asked for it). Defaults to False.
        what: str. What is written, for the message. Defaults to "output directory".
        force_hint: str or None. How to force it (e.g. "pass --overwrite to replace it"). Defaults to None.
    """
    if overwrite or not os.path.lexists(path):
        return
    way_out = f"choose another output path, or {force_hint or 'move or delete it yourself if it is no longer needed'}."
    if not os.path.isdir(path) or os.path.islink(path):
        raise OutputExistsError(f"{path} is an existing file, not a {what}; refusing to replace it: {way_out}")
    entries = sorted(os.listdir(path))
    if not entries or any(name in entries for name in markers):
        return
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    expected = f" (it has none of {', '.join(markers)})" if markers else ""
    raise OutputExistsError(
        f"{path} is a non-empty folder that is not a previous {what}{expected}; replacing it would delete "
        f"{shown}: {way_out}"
    )


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.remove(path)


def _set_umask_modes(directory):
    """Give every file and folder under `directory` the umask mode: some writers (safetensors) create 0600."""
    file_mode, dir_mode = _umask_mode(0o666), _umask_mode(0o777)
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            os.chmod(os.path.join(root, name), dir_mode)
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), file_mode)


@contextlib.contextmanager
def atomic_directory(path, markers=(), overwrite=False, what="output directory", force_hint=None):
    """Yield a temporary directory that replaces directory `path` (if `check_replaceable` allows) only when the
    block succeeds; files get the umask permissions, and a full disk becomes one `disk_full_error` line.

    Example:
    >>> import os
    >>> with atomic_directory("/tmp/example_dir", markers=("a.txt",)) as tmp:
    ...     with open(os.path.join(tmp, "a.txt"), "w") as f:
    ...         _ = f.write("a")
    """
    path = os.path.abspath(path)
    check_replaceable(path, markers, overwrite, what, force_hint)
    parent = _ensure_parent(path)
    tmp_dir = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.tmp-")
    os.chmod(tmp_dir, _umask_mode(0o777))
    try:
        yield tmp_dir
        _set_umask_modes(tmp_dir)
    except BaseException as error:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        if is_disk_full(error):
            raise disk_full_error(path, then="the previous version is kept; free some space and run again") from None
        raise
    backup = None
    if os.path.lexists(path):
        backup = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.old-")
        os.rmdir(backup)
        os.replace(path, backup)
    try:
        os.replace(tmp_dir, path)
    except BaseException:
        if backup is not None:
            os.replace(backup, path)
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    with contextlib.suppress(OSError):
        _fsync(parent)
    if backup is not None:
        _remove(backup)
