"""Crash-safe writes: content goes to a temporary name beside the destination, is flushed and renamed over it in
one step, so a crash leaves the previous file (and a `.<name>.tmp-<pid>-*` leftover the next write removes).
Every directory this package writes holds `MARKER_FILE`: only such a folder is ever replaced (`check_output`)."""

import contextlib
import errno
import glob
import json
import os
import re
import shutil
import tempfile


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask_mode(base):
    """`base` (0o666 files, 0o777 directories) less the umask: what `open` / `mkdir` give, unlike `tempfile`."""
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
            raise _not_a_directory(parent, blocker) from error
        raise OSError(f"Cannot create output directory {parent!r}: {error.strerror}.") from error
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"Output directory {parent!r} is not writable; choose another path or fix its "
                              f"permissions.")
    return parent


def _not_a_directory(directory, blocker):
    return NotADirectoryError(f"Cannot create output directory {directory!r}: {blocker!r} is a file, not a directory; "
                              f"choose another output path.")


def ensure_directory(path):
    """Create the directory `path` and return its absolute path; a file in the way or a read-only folder: one line."""
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
    fd, tmp_path = tempfile.mkstemp(dir=parent, prefix=_temporary_prefix(path))
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
    """Whether `error` reports a full disk: `OSError` ENOSPC, or a writer's error saying so (h5py's "No space left
    on device", safetensors' "StorageFull")."""
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


# `.<name>.tmp-<pid>-<random>` (`.old-`: a replaced directory on its way out); older writers left no pid.
_TEMPORARY = r"\.(?:tmp|old)-(?:(\d+)-)?[a-z0-9_]+\Z"


def _temporary_prefix(path, kind="tmp"):
    """The name prefix of `path`'s temporaries: `.<name>.tmp-<pid>-`, after removing those of killed writers."""
    remove_stale_temporaries(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    return f".{os.path.basename(path)}.{kind}-{os.getpid()}-"


def process_running(pid):
    """Whether process `pid` of this host is running (a zombie is not; one we may not signal is)."""
    if pid == os.getpid() or os.name == "nt":  # on Windows os.kill would terminate it: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat", encoding="ascii",
                                                         errors="replace") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def remove_stale_temporaries(directory, name, prefix=False):
    """Delete (and return) the leftovers `.<name>.tmp-*` / `.<name>.old-*` in `directory` whose writer process is
    gone (with `prefix`: of every entry whose name starts with `name`)."""
    pattern = re.compile(re.escape(f".{name}") + (".*?" if prefix else "") + _TEMPORARY)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    stale = []
    for entry in names:
        match = pattern.match(entry)
        if match and not (match.group(1) and process_running(int(match.group(1)))):
            stale.append(os.path.join(directory, entry))
            _remove(stale[-1])
    return stale


@contextlib.contextmanager
def scratch_directory(path):
    """A scratch folder `.<name>.tmp-<pid>-*` beside `path`, removed when the block ends (after a kill: next write)."""
    tmp_dir = tempfile.mkdtemp(dir=_ensure_parent(path), prefix=_temporary_prefix(path))
    try:
        yield tmp_dir
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


class OutputExistsError(FileExistsError):
    """An output path holds something this package may not replace; nothing was written."""


MARKER_FILE = ".keras_bert_impl"  # in every directory this package writes: only such a folder is replaced
_MARKER_TEXT = "Written by keras_bert_impl; its commands replace this folder only when told to (--overwrite).\n"
# The lock a run holds inside its folder while it writes (`utils.output_lock`): it does not make a folder non-empty.
RUN_LOCK_FILE = ".keras_bert.lock"


def _run_bookkeeping(name):
    """Whether entry `name` is a claim or lock in progress (the lock, its takeover guard, a marker being written:
    the processes of one distributed run claim the folder at once), not content."""
    return name.startswith((RUN_LOCK_FILE, f".{MARKER_FILE}.tmp-"))


def is_ours(path):
    """Whether directory `path` holds `MARKER_FILE`: this package wrote it."""
    return os.path.isfile(os.path.join(path, MARKER_FILE)) and not os.path.islink(path)


def _within(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_not_input(path, inputs, what="output"):
    """Raise one `ValueError` line if output `path` is, is inside, or holds one of `inputs` (local paths or TF
    prefixes a command reads; None and names that are no local path are skipped)."""
    real = os.path.realpath(path)
    for source in filter(None, inputs):
        source = os.fspath(source)
        if not (os.path.lexists(source) or glob.glob(glob.escape(source) + ".*")):
            continue
        source_real = os.path.realpath(source)
        if _within(real, source_real) or _within(source_real, real):
            relation = "is" if real == source_real else "is inside" if _within(real, source_real) else "holds"
            raise ValueError(f"The {what} {path} {relation} the input {source}; writing there would replace or mix "
                             f"into what is read: choose an output path outside it.")


def check_output(path, inputs=(), overwrite=False, what="output directory", keep=False):
    """Raise one line unless directory `path` may be written: it does not overlap `inputs`; it is absent, empty, or
    a folder this package wrote (`MARKER_FILE`), replaced only with `overwrite`; its nearest existing parent is
    writable. Someone else's folder or file is never replaced.

    Args:
        path: str. The output directory.
        inputs: iterable of str or None. Paths the command reads (None entries are skipped). Defaults to ().
        overwrite: bool. Replace a previous output of this package. Defaults to False.
        what: str. What is written, for the messages. Defaults to "output directory".
        keep: bool. A run's folder, added to and resumed in: ours is used without `overwrite`. Defaults to False.

    Raises:
        ValueError: `path` overlaps an input (`check_not_input`).
        OutputExistsError: `path` is a file, someone else's folder, or (without `overwrite`) a previous output.
        OSError: no writable folder to create `path` in.
    """
    check_not_input(path, inputs, what)
    if os.path.lexists(path):
        if keep and not os.path.isdir(path):
            raise _not_a_directory(path, path)
        if not os.path.isdir(path) or os.path.islink(path):
            raise OutputExistsError(f"{path} is an existing file, not a {what}; refusing to replace it: choose "
                                    f"another output path, or move or delete it yourself.")
        entries = sorted(name for name in os.listdir(path) if not _run_bookkeeping(name))
        if entries and not is_ours(path):
            shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
            raise OutputExistsError(
                f"{path} is a non-empty folder that keras_bert_impl did not write (no {MARKER_FILE}; it holds "
                f"{shown}); refusing to write into it: choose another output path, or move or delete it yourself.")
        if entries and not (overwrite or keep):
            raise OutputExistsError(f"{path} holds a previous {what}; refusing to replace it: choose another output "
                                    f"path, or pass --overwrite (overwrite=True) to replace it.")
    # Where the writes go: a kept folder itself; else the nearest existing parent (the folder is swapped there).
    folder = os.path.abspath(path) if keep and os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise _not_a_directory(path, folder)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"The {what} {path} cannot be written: {folder} is not writable; choose another path "
                              f"or fix its permissions.")


def claim_output_directory(path, inputs=(), what="output directory"):
    """`check_output(keep=True)`, then create `path` with `MARKER_FILE` (proving it writable before any work), for
    a run that writes into it and resumes there. Returns its absolute path."""
    check_output(path, inputs, what=what, keep=True)
    path = ensure_directory(path)
    atomic_write_text(os.path.join(path, MARKER_FILE), _MARKER_TEXT)
    return path


@contextlib.contextmanager
def claimed_output_directory(path, inputs=(), what="output directory"):
    """`claim_output_directory` for a `with` block: if the block fails, what the claim added to a folder that held
    nothing (its marker; the folder if the claim created it) is removed again."""
    absent = not os.path.lexists(path)
    new = absent or (os.path.isdir(path) and set(os.listdir(path)) <= {RUN_LOCK_FILE})
    path = claim_output_directory(path, inputs, what)
    try:
        yield path
    except BaseException:
        if new and set(os.listdir(path)) <= {MARKER_FILE, RUN_LOCK_FILE}:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(path, MARKER_FILE))
                if absent:
                    os.rmdir(path)  # unless the run's lock is still there
        raise


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
def atomic_directory(path, overwrite=True, what="output directory"):
    """Yield a temporary directory that replaces directory `path` (if `check_output(path, overwrite=overwrite)`
    allows) only when the block succeeds, with `MARKER_FILE` added and the umask permissions; a full disk is one
    `disk_full_error` line. `overwrite` defaults to True: `save_pretrained`, `last/`, `best/` rewrite their folder.

    Example:
    >>> import os
    >>> with atomic_directory("/tmp/example_dir") as tmp:
    ...     with open(os.path.join(tmp, "a.txt"), "w") as f:
    ...         _ = f.write("a")
    """
    path = os.path.abspath(path)
    check_output(path, overwrite=overwrite, what=what)
    parent = _ensure_parent(path)
    tmp_dir = tempfile.mkdtemp(dir=parent, prefix=_temporary_prefix(path))
    os.chmod(tmp_dir, _umask_mode(0o777))
    try:
        yield tmp_dir
        with open(os.path.join(tmp_dir, MARKER_FILE), "w", encoding="utf-8") as handle:
            handle.write(_MARKER_TEXT)
        _set_umask_modes(tmp_dir)
    except BaseException as error:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        if is_disk_full(error):
            raise disk_full_error(path, then="the previous version is kept; free some space and run again") from None
        raise
    backup = None
    if os.path.lexists(path):
        backup = tempfile.mkdtemp(dir=parent, prefix=_temporary_prefix(path, "old"))
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
