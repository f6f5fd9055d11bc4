"""The package's layering: imports run one way, importing changes nothing, and model code needs no TensorFlow.

The subpackages stand in one declared order, lowest first (`LAYER_ORDER`):

    backend, utils, optimization, layers, tokenization, metrics, squad, checkpoints, data, preprocessing,
    models, training, export, cli

A module imports its own subpackage and those before it, never one after it; every import statement counts,
inside functions too (a deferred import is still a dependency, and a cycle held together by one is still a
cycle). The tasks (`models`) sit above `preprocessing` as in keras-hub, where each task names its preprocessor
class; the backbone and the layers need no preprocessor. The tasks import `preprocessing` (TensorFlow) only
inside functions, so a JAX or torch user builds, trains and predicts on token ids without TensorFlow.

- static (ast): every import of every module against the order, each violation reported as
  `file:line: module imports target`; no cycle among the subpackages, nor among the modules; no TensorFlow
  import at module level in `backend`, `layers` and `models`;
- runtime: `import keras_bert_impl` adds no import hook and sets no environment variable; a subprocess on JAX
  and one on torch in which `tensorflow` and `tensorflow_text` cannot be imported builds, fits (on token ids),
  predicts, saves and reloads each model class.
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

# The subpackages, lowest first: each may import only itself and those before it (imports inside functions count).
LAYER_ORDER = (
    "backend", "utils", "optimization", "layers", "tokenization", "metrics", "squad", "checkpoints", "data",
    "preprocessing", "models", "training", "export", "cli",
)
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


def _targets(module, node, is_package=None):
    """Absolute names of the modules an import statement loads (for `from x import y`: `x.y` when it is a
    module of the package, else `x`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = _is_package(module) if is_package is None else is_package
        base = module.split(".") if package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        targets.append(submodule if submodule in MODULES else source)
    return targets


def _imports_in(module, source, anywhere, is_package=None):
    """`[(imported module, line)]` of `source` (the text of `module`): every import statement with `anywhere`,
    else those that run on import."""
    tree = ast.parse(source)
    statements = _all_statements(tree) if anywhere else _module_level_statements(tree)
    return [(target, node.lineno) for node in statements for target in _targets(module, node, is_package)]


def _imports(module, anywhere=False):
    with open(MODULES[module], encoding="utf-8") as handle:
        return _imports_in(module, handle.read(), anywhere)


def _subpackage(name):
    """"models" for "keras_bert_impl.models.backbone"; None outside the package or for its top module."""
    parts = name.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 else None


def _order_violations(imports):
    """`file:line: module imports target` for each import of a higher subpackage.

    Args:
        imports: dict. `{module: [(imported module, line)]}`.
    """
    rank = {name: index for index, name in enumerate(LAYER_ORDER)}
    violations = []
    for module, found in imports.items():
        own = _subpackage(module)
        for target, line in found:
            other = _subpackage(target)
            if own is not None and other is not None and rank[other] > rank[own]:
                path = os.path.relpath(MODULES[module], REPO_ROOT) if module in MODULES else module
                violations.append(f"{path}:{line}: {module} imports {target}")
    return violations


IMPORTS_ANYWHERE = {module: _imports(module, anywhere=True) for module in MODULES}


@pytest.mark.backend_independent
def test_the_declared_order_names_every_subpackage_once():
    on_disk = sorted(name for name in {_subpackage(module) for module in MODULES} if name is not None)
    assert len(set(LAYER_ORDER)) == len(LAYER_ORDER) and sorted(LAYER_ORDER) == on_disk


@pytest.mark.backend_independent
def test_no_module_imports_a_higher_subpackage_anywhere():
    assert _order_violations(IMPORTS_ANYWHERE) == []


@pytest.mark.backend_independent
def test_order_check_counts_imports_inside_functions_and_names_file_and_line():
    source = textwrap.dedent("""
        from keras_bert_impl.utils import atomic_io

        def load():
            from keras_bert_impl.models import task
            from . import packing
    """)
    module = "keras_bert_impl.data.example"
    assert _imports_in(module, source, anywhere=False, is_package=False) == [("keras_bert_impl.utils.atomic_io", 2)]
    found = _imports_in(module, source, anywhere=True, is_package=False)
    assert sorted(found) == [("keras_bert_impl.data.packing", 6), ("keras_bert_impl.models.task", 5),
                             ("keras_bert_impl.utils.atomic_io", 2)]
    assert _order_violations({module: found}) == [f"{module}:5: {module} imports keras_bert_impl.models.task"]


@pytest.mark.backend_independent
def test_backend_layers_and_models_import_no_tensorflow_at_module_level():
    violations = [
        f"{os.path.relpath(MODULES[module], REPO_ROOT)}:{line}: {module} imports {target}"
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


@pytest.mark.backend_independent
def test_subpackage_graph_has_no_cycle():
    graph = {name: set() for name in LAYER_ORDER}
    for module, found in IMPORTS_ANYWHERE.items():
        own = _subpackage(module)
        for target, _ in found:
            other = _subpackage(target)
            if own is not None and other is not None and other != own:
                graph[own].add(other)
    assert _cycles({name: sorted(successors) for name, successors in graph.items()}) == []


@pytest.mark.backend_independent
def test_module_graph_has_no_cycle():
    graph = {module: sorted({target for target, _ in found if target in MODULES})
             for module, found in IMPORTS_ANYWHERE.items()}
    assert _cycles(graph) == []


@pytest.mark.backend_independent
def test_cycle_finder_finds_cycles():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _cycles({"a": ["a"], "b": []}) == [["a"]]
    assert _cycles({"a": ["b"], "b": []}) == []


@pytest.mark.backend_independent
def test_import_targets_resolve_submodules_and_relative_imports():
    tree = ast.parse("from keras_bert_impl.models import backbone\nfrom . import conversion\nimport numpy\n")
    targets = [_targets("keras_bert_impl.checkpoints", node) for node in tree.body]
    assert targets == [["keras_bert_impl.models.backbone"], ["keras_bert_impl.checkpoints.conversion"], ["numpy"]]


# -- runtime: importing the package changes no global state ---------------------------------------------------

NO_IMPORT_SIDE_EFFECTS = textwrap.dedent("""
    import importlib
    import os
    import sys


    def check(what):
        assert sys.meta_path == meta_path, (what, [finder for finder in sys.meta_path if finder not in meta_path])
        changed = {key for key in set(environment) | set(os.environ) if environment.get(key) != os.environ.get(key)}
        assert not changed, (what, "sets environment variables", sorted(changed))


    meta_path, environment = list(sys.meta_path), dict(os.environ)
    import keras_bert_impl

    check("import keras_bert_impl")
    # Then every module (what Keras and TensorFlow change on their own import is theirs, so it is taken first).
    import keras

    try:
        import tensorflow  # noqa: F401
    except ImportError:
        pass
    meta_path, environment = list(sys.meta_path), dict(os.environ)
    for module in sys.argv[1:]:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if (error.name or "").split(".")[0] not in ("tensorflow", "tensorflow_text"):
                raise
        check(module)
    print("NO_IMPORT_SIDE_EFFECTS_OK")
""")


@pytest.mark.slow
def test_importing_the_package_or_any_module_adds_no_import_hook_and_sets_no_environment_variable():
    # A fresh process without TF_CPP_MIN_LOG_LEVEL: the variable the CLI sets (cli.command_line.main) must stay unset.
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path])
    modules = [module for module in MODULES if not module.endswith(".__main__")]  # `__main__` runs the CLI
    result = subprocess.run([sys.executable, "-c", NO_IMPORT_SIDE_EFFECTS, *modules], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "NO_IMPORT_SIDE_EFFECTS_OK" in result.stdout, (
        f"exit {result.returncode}\nstdout:\n{result.stdout[-2000:]}\nstderr:\n{result.stderr[-4000:]}")


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
