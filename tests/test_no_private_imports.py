"""No other library's internals in the package: no `jax._src`, `tensorflow.python`, `keras.src`, private
tensorflow-text modules or attributes, private attributes of third-party modules, or lookups of variables
by name suffix. (Python's standard library is not checked: `cli/config_files.py` reads argparse's private
action classes.)

A speed trick with no public route may only live in an opt-in module listed in `OPT_IN_MODULES` (none
today): named for the trick, off unless the user calls it, version-guarded, with its own test that fails
when the guarded names disappear. The names are not even mentioned elsewhere (docstrings and comments
included), so `grep -rn "jax\\._src\\|tensorflow\\.python\\|keras\\.src" keras_bert_impl/` stays clean.
"""

import ast
import os
import re
import sys

import pytest

pytestmark = pytest.mark.backend_independent

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "keras_bert_impl"
PACKAGE_DIR = os.path.join(REPO_ROOT, PACKAGE)

# Package-relative paths of the opt-in modules allowed to use private names (see the module docstring).
OPT_IN_MODULES = frozenset()

PRIVATE_MODULES = re.compile(
    r"^(jax\._src|jaxlib\.|tensorflow\.python|tensorflow\.core|tensorflow\.compiler|tf_keras\.src|keras\.src"
    r"|keras\._tf_keras|tensorflow_text\.python|tensorflow_text\.core)(\.|$)"
)
# The same names as text, anywhere in a file (also catches `importlib.import_module("jax._src...")`).
PRIVATE_TEXT = re.compile(r"\b(jax\._src|tensorflow\.python|keras\.src|tensorflow_text\.(python|core))\b")
# Private attributes of other libraries' objects this package once read (`FastWordpieceTokenizer._model`).
PRIVATE_ATTRIBUTES = ("_model",)
# Underscored names other libraries' modules publish.
PUBLIC_DUNDERS = ("__version__", "__name__", "__file__", "__doc__")


def _package_files():
    for directory, subdirectories, files in os.walk(PACKAGE_DIR):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        for filename in sorted(files):
            if filename.endswith(".py"):
                path = os.path.join(directory, filename)
                yield os.path.relpath(path, PACKAGE_DIR).replace(os.sep, "/"), path


def _is_other_library(module):
    """A third-party module: neither this package nor Python's standard library."""
    return module.split(".")[0] not in {PACKAGE, *sys.stdlib_module_names}


def _other_library_names(tree):
    """Local names bound to third-party modules or objects by the file's imports (`tf`, `keras`, ...)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_other_library(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_other_library(node.module):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _attribute_chain(node):
    """`["tf", "random", "uniform"]` for `tf.random.uniform`; None when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id] + parts[::-1] if isinstance(node, ast.Name) else None


def _violations(relative, source):
    tree = ast.parse(source)
    libraries = _other_library_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if PRIVATE_MODULES.match(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if PRIVATE_MODULES.match(node.module):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Attribute):
            chain = _attribute_chain(node)
            if node.attr in PRIVATE_ATTRIBUTES:
                found.append((node.lineno, f".{node.attr}"))
            elif chain and chain[0] in libraries and node.attr.startswith("_") and node.attr not in PUBLIC_DUNDERS:
                found.append((node.lineno, f"{'.'.join(chain)} (a private attribute of another library)"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "endswith":
            # `variable.path.endswith(...)` / `variable.name.endswith(...)`: finding variables by name suffix.
            target = node.func.value
            if isinstance(target, ast.Attribute) and target.attr in ("path", "name"):
                found.append((node.lineno, f"{ast.unparse(node)} (a variable lookup by name suffix)"))
    for number, line in enumerate(source.splitlines(), start=1):
        if PRIVATE_TEXT.search(line):
            found.append((number, line.strip()))
    return [f"{PACKAGE}/{relative}:{number}: {what}" for number, what in sorted(set(found))]


def test_no_private_names_of_other_libraries():
    violations = []
    for relative, path in _package_files():
        if relative in OPT_IN_MODULES:
            continue
        with open(path, encoding="utf-8") as handle:
            violations += _violations(relative, handle.read())
    assert violations == [], "Private names of other libraries:\n" + "\n".join(violations)


def test_opt_in_modules_exist():
    for relative in OPT_IN_MODULES:
        assert os.path.isfile(os.path.join(PACKAGE_DIR, relative)), relative


def test_the_checker_finds_each_kind():
    source = '''
"""Mentions jax._src in a docstring."""
import jax._src.random
from tensorflow.python.framework import ops
from keras.src.backend import config
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops
import importlib
mlir = importlib.import_module("jax._src.interpreters.mlir")
buffer = tokenizer._model
states = [v for v in model.variables if v.path.endswith("seed_generator_state")]
import keras  # keras.src in a comment
ok = name.endswith(".ckpt.index")
import tensorflow as tf
tracking = tf.__internal__.tracking
import numpy as np
import argparse
from keras_bert_impl.layers import dropout
ok = (tf.__version__, np.float32, dropout._private_is_ours, self._wordpiece_model, argparse._StoreTrueAction)
'''
    found = _violations("example.py", source)
    assert {int(entry.split(":")[1]) for entry in found} == {2, 3, 4, 5, 6, 8, 9, 10, 11, 14}, found
