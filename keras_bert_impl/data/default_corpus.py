"""The default corpus: English prose from the docstrings of Python's standard library (no download needed).

Each importable top-level module is one document: the prose of its and its public members' docstrings.

Example:
>>> documented = collect_stdlib_docstrings(["json"])
>>> documented["json"][0].kind, documented["json"][0].qualified_name
('module', 'json')
>>> len(module_sentences(documented)["json"]) > 10
True
"""

import dataclasses
import importlib
import inspect
import logging
import os
import re
import sys
import warnings

from keras_bert_impl.data.documents import split_sentences
from keras_bert_impl.utils.atomic_io import atomic_write_text

logger = logging.getLogger(__name__)

# Modules that print, open windows or spawn when imported, need a display, or are platform-specific.
SKIPPED_MODULES = frozenset({
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "ensurepip", "pydoc_data",
    "test", "msilib", "winreg", "winsound", "_winapi", "nturl2path", "xxsubtype",
})
_MARKUP = re.compile(r":[a-z]+:`([^`]*)`|``([^`]*)``|`([^`]*)`")
_CODE_LINE_PREFIXES = (">>>", "...", "$", "%", "#")


@dataclasses.dataclass(frozen=True)
class DocumentedObject:
    """One documented object of a module.

    Args:
        module: str. The top-level module name, e.g. "math".
        qualified_name: str. "math" for the module, "sqrt" for a function, "Random.randint" for a method.
        kind: str. "module", "class", "function" or "method".
        docstring: str. The cleaned-up docstring (`inspect.getdoc`).
        parameters: tuple of str or None. A routine's parameter names (no `self` / `cls`); None for modules,
            classes and unknown signatures. Defaults to None.
    """

    module: str
    qualified_name: str
    kind: str
    docstring: str
    parameters: tuple = None


def clean_paragraphs(docstring):
    """Docstring -> prose paragraphs (four words or more, mostly letters), code lines and markup removed.

    Example:
    >>> clean_paragraphs("Return the ``square root`` of x.\\n\\n>>> sqrt(4)\\n2.0\\n")
    ['Return the square root of x.']
    """
    paragraphs, current = [], []
    for line in docstring.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(_CODE_LINE_PREFIXES) or line.startswith("    "):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(_MARKUP.sub(lambda match: next(g for g in match.groups() if g is not None), stripped))
    if current:
        paragraphs.append(" ".join(current))
    paragraphs = [" ".join(paragraph.split()) for paragraph in paragraphs]
    return [p for p in paragraphs if len(p.split()) >= 4 and sum(c.isalpha() for c in p) > len(p) / 2]


def stdlib_module_names():
    """The public top-level standard-library module names of this Python, sorted, `SKIPPED_MODULES` left out."""
    return sorted(name for name in set(sys.stdlib_module_names) - SKIPPED_MODULES if not name.startswith("_"))


def _is_routine(member):
    return inspect.isfunction(member) or inspect.isbuiltin(member) or inspect.ismethoddescriptor(member)


def _parameter_names(routine, kind):
    """A routine's parameter names (no `*args`, `**kwargs`, nor a method's `self` / `cls`); None if unknown."""
    try:
        names = [name for name, parameter in inspect.signature(routine).parameters.items()
                 if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
    except (TypeError, ValueError):  # built-ins without a text signature
        return None
    if kind == "method" and names and names[0] in ("self", "cls"):
        names = names[1:]
    return tuple(names)


def documented_objects(module):
    """The `DocumentedObject`s a module defines: itself, then its public classes, routines and methods by name."""
    name = module.__name__
    entries = [(name, "module", module)]
    for member_name, member in sorted(vars(module).items()):
        if member_name.startswith("_") or getattr(member, "__module__", None) != name:
            continue
        if inspect.isclass(member):
            entries.append((member_name, "class", member))
            for method_name, method in sorted(vars(member).items()):
                if not method_name.startswith("_") and _is_routine(method):
                    entries.append((f"{member_name}.{method_name}", "method", method))
        elif _is_routine(member):
            entries.append((member_name, "function", member))
    documented = []
    for qualified_name, kind, member in entries:
        try:
            docstring = inspect.getdoc(member) or ""
        except Exception:  # noqa: BLE001 - a broken __doc__ property must not stop the walk
            docstring = ""
        if docstring.strip():
            parameters = _parameter_names(member, kind) if kind in ("function", "method") else None
            documented.append(DocumentedObject(name, qualified_name, kind, docstring, parameters))
    return documented


def collect_stdlib_docstrings(module_names=None):
    """Import the standard-library modules and collect their documented objects.

    Args:
        module_names: list of str or None. Modules to read. Defaults to None (`stdlib_module_names()`).

    Returns:
        dict module name -> list of `DocumentedObject`, sorted; modules that fail to import are left out.
    """
    collected = {}
    for name in sorted(stdlib_module_names() if module_names is None else module_names):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - platform modules fail to import in many ways; skip them
            logger.debug("Skipping module %s (%s).", name, type(error).__name__)
            continue
        objects = documented_objects(module)
        if objects:
            collected[name] = objects
    logger.info("Read the docstrings of %d standard-library modules.", len(collected))
    return collected


def module_sentences(documented):
    """Module -> its prose as sentences, from `collect_stdlib_docstrings` output; modules with fewer than two
    sentences (too few for next-sentence prediction) left out."""
    sentences = {}
    for module, objects in documented.items():
        found = [sentence for entry in objects for paragraph in clean_paragraphs(entry.docstring)
                 for sentence in split_sentences(paragraph)]
        if len(found) >= 2:
            sentences[module] = found
    return sentences


def write_docstring_corpus(output_dir, documented=None, eval_every=10):
    """Write the corpus as `train.txt` and `eval.txt`, one sentence per line, a blank line between documents.

    Args:
        output_dir: str. Created if missing; the files are written atomically.
        documented: dict or None. `collect_stdlib_docstrings()` output. Defaults to None (collect now).
        eval_every: int. Every `eval_every`-th module (sorted order) goes to `eval.txt`. Defaults to 10.

    Returns:
        dict: `train` and `eval` paths, and `<split>_documents`, `<split>_sentences`, `<split>_words` counts.
    """
    if int(eval_every) < 2:
        raise ValueError(f"eval_every must be >= 2 (a training split is needed), got {eval_every}.")
    documented = collect_stdlib_docstrings() if documented is None else documented
    splits = {"train": [], "eval": []}
    for position, (module, sentences) in enumerate(sorted(module_sentences(documented).items())):
        splits["eval" if position % eval_every == 0 else "train"].append(sentences)
    if not splits["train"] or not splits["eval"]:
        raise ValueError(f"Too few documented modules ({sum(map(len, splits.values()))}) for a train/eval split.")
    report = {}
    for split, documents in splits.items():
        path = os.path.join(output_dir, f"{split}.txt")
        atomic_write_text(path, "\n\n".join("\n".join(sentences) for sentences in documents) + "\n")
        report[split] = path
        report[f"{split}_documents"] = len(documents)
        report[f"{split}_sentences"] = sum(len(document) for document in documents)
        report[f"{split}_words"] = sum(len(sentence.split()) for document in documents for sentence in document)
    return report
