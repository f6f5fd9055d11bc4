"""Keep TensorFlow's native start-up log lines off stderr: TensorFlow writes absl lines (`Could not find cuda
drivers`, oneDNN notices) to descriptor 2 before `TF_CPP_MIN_LOG_LEVEL` applies, so `quiet_tensorflow_startup()`
(called by `keras-bert`, never on import) filters it during the first `import tensorflow` and its device listing.
"""

import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile

LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# Hides TensorFlow's native INFO, WARNING and ERROR lines once its logging is initialised (oneDNN's "supports
# DT_INT64 only on platforms with AVX-512" is an ERROR line); a failing op still raises its Python exception.
QUIET_LOG_LEVEL = "3"
# absl's line prefix: severity (Info, Warning, Error), date, time, thread, file:line]. Fatal lines stay.
NATIVE_LOG_LINE = re.compile(r"[IWE]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w.-]+:\d+\] ")
NOISE_LINES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    # The second line of cpu_feature_guard.cc's message.
    "To enable the following instructions:",
)


def is_startup_noise(line):
    """Whether `line` is one of TensorFlow's native start-up log lines.

    Example:
    >>> is_startup_noise("I0000 00:00:1.5    88 cudart_stub.cc:31] Could not find cuda drivers")
    True
    >>> is_startup_noise("UserWarning: something the user should see")
    False
    """
    return NATIVE_LOG_LINE.match(line) is not None or line.startswith(NOISE_LINES)


@contextlib.contextmanager
def _filtered_stderr():
    """Capture file descriptor 2 in the block; then write back what is not start-up noise."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no usable descriptor 2 (a detached process): nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines = capture.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not is_startup_noise(line))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


class _QuietLoader(importlib.abc.Loader):
    """Runs the wrapped loader's `exec_module` with stderr filtered; puts the original loader back after."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self.loader
        with _filtered_stderr():
            self.loader.exec_module(module)
            # Physical devices (cuInit and its error line) are found on first use, not at import: do it here.
            # Logical devices stay unset, so `tf.config.set_visible_devices` / memory growth still apply.
            module.config.list_physical_devices()


class _TensorFlowImportHook(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` through the other finders and wraps its loader, once."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorflow":
            return None
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _TensorFlowImportHook)]
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow_startup():
    """Filter TensorFlow's native start-up lines from stderr when it is first imported, and set
    `TF_CPP_MIN_LOG_LEVEL=3` unless set. Does nothing when TensorFlow is already imported or the user set
    `TF_CPP_MIN_LOG_LEVEL=0`."""
    if os.environ.get(LOG_LEVEL_VARIABLE) == "0" or "tensorflow" in sys.modules:
        return
    os.environ.setdefault(LOG_LEVEL_VARIABLE, QUIET_LOG_LEVEL)
    if not any(isinstance(finder, _TensorFlowImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TensorFlowImportHook())
