"""One writer per output: `output_lock` holds a lock file while a run writes, so a second run into the same place
refuses in one line naming the first (pid, host, start time, command) instead of mixing results.

The lock is created with `O_EXCL` and holds its holder's JSON record. A lock whose holder is gone (same host, pid
not running) is stale and taken over by the next run: takers go one at a time (an `O_EXCL` guard file) and remove
the lock only if it still holds the stale record. It lives in a folder a run writes into
(`<folder>/.keras_bert.lock`), or beside an output replaced as a whole (`.<name>.lock`).
"""

import contextlib
import functools
import inspect
import json
import logging
import os
import secrets
import shlex
import socket
import sys
import threading
import time

from keras_bert_impl.utils.atomic_io import RUN_LOCK_FILE, ensure_directory, process_running

logger = logging.getLogger(__name__)

LOCK_NAME = RUN_LOCK_FILE  # defined beside the folder checks, which ignore it
_UNREADABLE_RETRIES = 20  # a lock just created is empty until its holder writes the record: wait up to ~1 s
_GUARD_TIMEOUT = 10.0  # seconds after which a takeover guard is the leftover of a killed taker
_held = {}  # lock path -> the id of the thread of this process that holds it
_held_guard = threading.Lock()


class OutputInUseError(OSError):
    """Another run holds the lock of an output; nothing was written."""


def lock_path(path, replaced=False):
    """The absolute path of the lock file of output `path`.

    Args:
        path: str. The output: a folder written into, or (`replaced`) a folder or file replaced as a whole.
        replaced: bool. Lock beside `path` instead of inside it. Defaults to False.
    """
    path = os.path.abspath(os.fspath(path))
    if replaced:
        return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.lock")
    return os.path.join(path, LOCK_NAME)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _parse(record):
    try:
        holder = json.loads(record)
        return holder if isinstance(holder, dict) and isinstance(holder.get("pid"), int) else None
    except ValueError:
        return None


def _is_stale(holder):
    if holder.get("host") != socket.gethostname():
        return False  # another machine's process cannot be checked from here
    if holder["pid"] == os.getpid():
        return True  # this process's other threads are refused before they create the file: a leftover
    return not process_running(holder["pid"])


def _in_use_error(output, path, holder):
    program, _, arguments = holder.get("command", "?").partition(" ")
    command = f"{os.path.basename(program)} {arguments}".strip()  # the script's name, not its whole path
    command = command if len(command) <= 120 else command[:117] + "..."
    return OutputInUseError(
        f"{output} is being written by another run: pid {holder['pid']} on host {holder.get('host', '?')}, "
        f"started {holder.get('started', '?')} ({command}); wait for it to finish or choose another output path "
        f"(if that run is no longer going, delete its lock file {path}).")


def _take_over(path, stale_record, holder):
    """Remove the stale lock at `path` if it still holds `stale_record`; takers go one at a time (an `O_EXCL` guard
    file), so a later one finds the new holder's lock and leaves it."""
    guard = path + ".takeover"
    try:
        os.close(os.open(guard, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except FileExistsError:  # another taker is at it: try again shortly (a guard is held for microseconds)
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(guard) > _GUARD_TIMEOUT:  # its taker was killed holding it
                os.remove(guard)
        time.sleep(0.01)
        return
    try:
        if _read(path) == stale_record:
            os.remove(path)
            logger.warning("Taking over the stale lock %s of pid %s on %s (started %s), which is no longer "
                           "running.", path, holder["pid"], holder.get("host"), holder.get("started"))
    finally:
        os.remove(guard)


def _acquire(output, path):
    """Create the lock file `path` with this process's record (taking over a stale one); return the record."""
    record = json.dumps({
        "pid": os.getpid(), "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command": " ".join(shlex.quote(argument) for argument in sys.argv).replace("\n", " "),
        "token": secrets.token_hex(8),
    }, ensure_ascii=False).encode("utf-8")
    unreadable = 0
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            found = _read(path)
            if found is None:
                continue  # released meanwhile: try again
            holder = _parse(found)
            if holder is None:
                unreadable += 1
                if unreadable > _UNREADABLE_RETRIES:
                    raise OutputInUseError(
                        f"{output} has a lock file {path} that holds no run's record ({found[:40]!r}); if no "
                        f"run is writing there, delete it and run again.") from None
                time.sleep(0.05)
                continue
            if not _is_stale(holder):
                raise _in_use_error(output, path, holder) from None
            _take_over(path, found, holder)
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(record)
        return record


@contextlib.contextmanager
def output_lock(path, replaced=False):
    """Hold the lock of output `path` for the `with` block; nested in the same thread, it is held once.

    Args:
        path: str. The output: a folder written into (created if absent, removed if left empty), or with
            `replaced` a folder or file replaced as a whole.
        replaced: bool. The lock goes beside `path` (`.<name>.lock`) instead of inside it. Defaults to False.

    Raises:
        OutputInUseError: another run holds the lock; the message names its pid, host, start time and command.

    Example:
    >>> with output_lock("/tmp/example_run"):
    ...     pass  # write into /tmp/example_run
    """
    path_name = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path_name) if replaced else path_name
    lock = lock_path(path_name, replaced)
    with _held_guard:  # reserved before the file exists, so that another thread of this process is refused
        holder_thread = _held.get(lock)
        if holder_thread is None:
            _held[lock] = threading.get_ident()
    if holder_thread == threading.get_ident():  # nested: the outer block holds it
        yield
        return
    if holder_thread is not None:
        raise _in_use_error(path_name, lock, _parse(_read(lock) or b"") or {"pid": os.getpid()})
    try:
        created = not os.path.isdir(folder)
        ensure_directory(folder)
        record = _acquire(path_name, lock)
    except BaseException:
        with _held_guard:
            del _held[lock]
        raise
    try:
        yield
    finally:
        with _held_guard:
            del _held[lock]
        if _read(lock) == record:  # unless deleted and taken by another run meanwhile
            with contextlib.suppress(OSError):
                os.remove(lock)
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only if empty: a run that wrote nothing leaves no folder behind


def locks_output(output_of, replaced=False):
    """Decorate a writer so that each call runs holding `output_lock(output_of(arguments), replaced)`.

    Args:
        output_of: callable. `output_of(arguments) -> str`: the output the call writes; `arguments` maps the
            call's parameter names to their values (defaults included).
        replaced: bool. As `output_lock`'s. Defaults to False.

    Example:
    >>> @locks_output(lambda arguments: arguments["settings"].output_dir)
    ... def finetune_something(files, settings):
    ...     pass  # writes into settings.output_dir
    """
    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def locked(*args, **kwargs):
            arguments = signature.bind(*args, **kwargs)
            arguments.apply_defaults()
            with output_lock(output_of(arguments.arguments), replaced):
                return function(*args, **kwargs)

        return locked

    return decorate
