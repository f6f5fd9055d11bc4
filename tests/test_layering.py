"""The package's layering: imports run one way, and model code needs no TensorFlow.

layers -> models -> data / training / export -> cli, with `checkpoints` (tensor and config I/O) below
models and `backend` (per-backend helpers through public APIs) below layers. Two kinds of checks:

- static (ast): the module-level imports of every module of the package (plus, for `backend`, `layers` and
  `checkpoints`, every import anywhere) against the layering rules, and no import cycle among module-level
  imports;
- runtime: a subprocess on JAX and one on torch in which `tensorflow` and `tensorflow_text` cannot be
  imported builds, fits (on token ids), predicts, saves and reloads each model class.
"""

import ast
import os
import subprocess
import sys
import textwrap

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "keras_bert_impl"
PACKAGE_DIR = os.path.join(REPO_ROOT, PACKAGE)
TENSORFLOW_MODULES = ("tensorflow", "tensorflow_text")

# Subpackage -> subpackages of this package its modules must not import at module level.
FORBIDDEN_MODULE_LEVEL = {
    "layers": ("models", "training", "data", "cli", "export"),
    "models": ("cli", "export", "training", "data"),
}
# Subpackage -> subpackages its modules must not import anywhere (inside functions too).
FORBIDDEN_ANYWHERE = {
    "layers": ("models", "training", "data", "cli", "export"),
    "checkpoints": ("models", "training", "data", "cli", "export"),
    # The bottom layer: it imports nothing else from the package.
    "backend": tuple(
        name for name in sorted(os.listdir(PACKAGE_DIR))
        if name != "backend" and os.path.isfile(os.path.join(PACKAGE_DIR, name, "__init__.py"))
    ),
}
# Subpackages whose modules must not import TensorFlow at module level.
TENSORFLOW_FREE = ("backend", "layers", "models")


# -- static: the import graph ------------------------------------------------------------------------------

def _package_modules():
    """`{module name: file path}` for every module of the package."""
    modules = {}
    for directory, subdirectories, files in os.walk(PACKAGE_DIR):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith((".", "__pycache__")))
        for filename in sorted(files):
            if not filename.endswith(".py"):
                continue
            relative = os.path.relpath(os.path.join(directory, filename), REPO_ROOT)[: -len(".py")]
            parts = relative.split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = os.path.join(directory, filename)
    return modules


MODULES = _package_modules()


def _is_package(module):
    return MODULES[module].endswith("__init__.py")


def _module_level_statements(tree):
    """Statements that run on import: the module body, recursing into if/try/with/for/while and class bodies
    but not into function bodies."""
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(child for child in getattr(node, field, []) if isinstance(child, ast.AST))


def _all_statements(tree):
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def _targets(module, node):
    """Absolute names of the modules an import statement loads (for `from x import y`: `x.y` when it is a
    module of the package, else `x`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if _is_package(module) else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        targets.append(submodule if submodule in MODULES else source)
    return targets


def _imports(module, anywhere=False):
    with open(MODULES[module], encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), MODULES[module])
    statements = _all_statements(tree) if anywhere else _module_level_statements(tree)
    found = []
    for node in statements:
        for target in _targets(module, node):
            found.append((target, node.lineno))
    return found


def _subpackage(name):
    """"models" for "keras_bert_impl.models.backbone"; None outside the package or for its top module."""
    parts = name.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 else None


def _violations(rules, anywhere):
    violations = []
    for module in MODULES:
        forbidden = rules.get(_subpackage(module), ())
        for target, line in _imports(module, anywhere):
            if _subpackage(target) in forbidden:
                violations.append(f"{MODULES[module]}:{line}: {module} imports {target}")
    return violations


def test_layers_and_models_import_no_higher_layer_at_module_level():
    assert _violations(FORBIDDEN_MODULE_LEVEL, anywhere=False) == []


def test_backend_layers_and_checkpoints_never_import_a_higher_layer():
    # checkpoints reads, writes and assigns tensors; the models build themselves (models -> checkpoints).
    assert "layers" in FORBIDDEN_ANYWHERE["backend"] and "training" in FORBIDDEN_ANYWHERE["backend"]
    assert _violations(FORBIDDEN_ANYWHERE, anywhere=True) == []


def test_backend_layers_and_models_import_no_tensorflow_at_module_level():
    violations = [
        f"{MODULES[module]}:{line}: {module} imports {target}"
        for module in MODULES if _subpackage(module) in TENSORFLOW_FREE
        for target, line in _imports(module)
        if target.split(".")[0] in TENSORFLOW_MODULES
    ]
    assert violations == []


def _cycles(graph):
    """The strongly connected components of `graph` with more than one node or a self-loop (Tarjan)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_cycles_at_module_level():
    graph = {module: sorted({target for target, _ in _imports(module) if target in MODULES}) for module in MODULES}
    assert _cycles(graph) == []


def test_cycle_finder_finds_cycles():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _cycles({"a": ["a"], "b": []}) == [["a"]]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_import_targets_resolve_submodules_and_relative_imports():
    tree = ast.parse("from keras_bert_impl.models import backbone\nfrom . import conversion\nimport numpy\n")
    targets = [_targets("keras_bert_impl.checkpoints", node) for node in tree.body]
    assert targets == [["keras_bert_impl.models.backbone"], ["keras_bert_impl.checkpoints.conversion"], ["numpy"]]


# -- runtime: no TensorFlow needed on JAX and torch --------------------------------------------------------

# Makes `tensorflow` and `tensorflow_text` look not installed: every import finder is wrapped so that it finds
# neither the modules (`import` raises ModuleNotFoundError, `importlib.util.find_spec` returns None, as probes
# in torch and Keras expect) nor their distributions (`importlib.metadata`).
BLOCK_TENSORFLOW = f"""
import importlib.util
import sys

BLOCKED = {TENSORFLOW_MODULES!r}


class HideTensorFlow:
    def __init__(self, finder):
        self._finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return None
        find_spec = getattr(self._finder, "find_spec", None)
        return find_spec(name, path, target) if find_spec is not None else None

    def find_distributions(self, *args, **kwargs):
        find_distributions = getattr(self._finder, "find_distributions", None)
        if find_distributions is None:
            return []
        return [distribution for distribution in find_distributions(*args, **kwargs)
                if (distribution.metadata["Name"] or "").lower().replace("-", "_") not in BLOCKED]

    def __getattr__(self, name):
        return getattr(self._finder, name)


sys.meta_path[:] = [HideTensorFlow(finder) for finder in sys.meta_path]
for name in list(sys.modules):
    if name.split(".")[0] in BLOCKED:
        del sys.modules[name]
assert importlib.util.find_spec("tensorflow") is None
"""

WITHOUT_TENSORFLOW = BLOCK_TENSORFLOW + textwrap.dedent("""
    import os
    import tempfile

    import keras
    import numpy as np

    try:
        import tensorflow  # noqa: F401
    except ImportError:
        pass
    else:
        raise AssertionError("the TensorFlow blocker does not work")

    import keras_bert_impl
    from keras_bert_impl import BertBackbone, BertClassifier, BertPretrainer, BertQuestionAnswerer

    CONFIG = dict(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                  max_sequence_length=16)
    N, T, P = 8, 12, 3
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, CONFIG["vocabulary_size"], (N, T)).astype("int32")
    token_ids[:, 0] = 2
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones((N, T), bool)}
    directory = tempfile.mkdtemp()


    def numpy_outputs(outputs):
        return [keras.ops.convert_to_numpy(value) for value in keras.tree.flatten(outputs)]


    def round_trip(model, model_class, name, inputs, **load_kwargs):
        before = numpy_outputs(model.predict(inputs, verbose=0))
        path = os.path.join(directory, name)
        model.save_pretrained(path)
        loaded = model_class.from_pretrained(path, **load_kwargs)
        after = numpy_outputs(loaded.predict(inputs, verbose=0))
        assert len(before) == len(after), (name, len(before), len(after))
        for expected, actual in zip(before, after):
            np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=name)
        return loaded


    backbone = BertBackbone(**CONFIG)
    round_trip(backbone, BertBackbone, "backbone", x)

    classifier = BertClassifier(BertBackbone(**CONFIG), num_classes=2, labels=["neg", "pos"])
    classifier.compile()  # the default AdamWeightDecay: no TensorFlow either
    classifier.fit(x, (np.arange(N) % 2).astype("int32"), batch_size=4, epochs=1, verbose=0)
    assert classifier.predict(x, verbose=0).shape == (N, 2)
    loaded = round_trip(classifier, BertClassifier, "classifier", x)
    assert tuple(loaded.labels) == ("neg", "pos") and loaded.label_vocabulary.labels == ["neg", "pos"]
    # A task model's directory gives its encoder.
    round_trip(classifier.backbone, BertBackbone, "classifier_backbone", x)
    assert BertBackbone.from_pretrained(os.path.join(directory, "classifier")).load_report.missing == []

    answerer = BertQuestionAnswerer(BertBackbone(**CONFIG))
    answerer.compile()  # the default AdamWeightDecay: no TensorFlow either
    starts = rng.integers(1, T - 3, N).astype("int32")
    answerer.fit(x, {"start_positions": starts, "end_positions": starts + 1}, batch_size=4, epochs=1, verbose=0)
    round_trip(answerer, BertQuestionAnswerer, "question_answerer", x)

    pretrainer = BertPretrainer(BertBackbone(**CONFIG))
    pretrainer.compile()  # the default AdamWeightDecay: no TensorFlow either
    pretraining_x = dict(x, mask_positions=np.tile(np.arange(1, P + 1, dtype="int32"), (N, 1)))
    pretraining_y = {
        "mask_ids": rng.integers(5, CONFIG["vocabulary_size"], (N, P)).astype("int32"),
        "mask_weights": np.ones((N, P), "float32"),
        "next_sentence_labels": (np.arange(N) % 2).astype("int32"),
    }
    pretrainer.fit(pretraining_x, pretraining_y, batch_size=4, epochs=1, verbose=0)
    round_trip(pretrainer, BertPretrainer, "pretrainer", pretraining_x)

    loaded_tensorflow = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    assert not loaded_tensorflow, loaded_tensorflow
    print("WITHOUT_TENSORFLOW_OK", keras.backend.backend())
""")


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_models_build_fit_predict_save_and_load_without_tensorflow(backend):
    # The subprocess sets its own backend, so one pass suffices: each backend's own (the suite runs once per backend).
    import keras

    if keras.backend.backend() != backend:
        pytest.skip(f"runs in the KERAS_BACKEND={backend} pass")
    pytest.importorskip(backend)
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=os.pathsep.join(
        [REPO_ROOT] + [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]))
    result = subprocess.run([sys.executable, "-c", WITHOUT_TENSORFLOW], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and f"WITHOUT_TENSORFLOW_OK {backend}" in result.stdout, (
        f"exit {result.returncode}\nstdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-8000:]}")
