"""Build a small, reproducible English pretraining corpus from the docstrings of Python's standard library.

    python examples/docstring_corpus.py --output-dir corpus --vocabulary-size 4000

Each module is one document: its docstring and those of its public classes, functions and methods, with
doctest lines and reStructuredText markup dropped, split into sentences (`data.split_sentences`) and written
one sentence per line with a blank line between documents (the original's format). Every tenth module (in
sorted order) goes to `eval.txt`, the rest to `train.txt`; a WordPiece vocabulary is learned from
`train.txt` (`tokenization.train_wordpiece_vocabulary`). The same Python version gives the same corpus.
"""

import argparse
import importlib
import inspect
import logging
import os
import re
import sys
import warnings

# Modules that print, spawn or need a display when imported, or are private / platform-specific.
SKIPPED_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "ensurepip",
                   "pydoc_data", "test", "msilib", "winreg", "winsound", "_winapi", "nturl2path", "xxsubtype"}
MARKUP = re.compile(r":[a-z]+:`([^`]*)`|``([^`]*)``|`([^`]*)`")


def clean_paragraphs(docstring):
    """Docstring -> prose paragraphs: doctest/code lines and markup removed, whitespace collapsed."""
    paragraphs, current = [], []
    for line in docstring.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith((">>>", "...", "$", "%", "#")) or line.startswith("    "):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(MARKUP.sub(lambda m: next(g for g in m.groups() if g is not None), stripped))
    if current:
        paragraphs.append(" ".join(current))
    # Keep prose: a paragraph with a few words and some letters.
    return [p for p in paragraphs if len(p.split()) >= 4 and sum(c.isalpha() for c in p) > len(p) / 2]


def module_docstrings(module):
    docs = [inspect.getdoc(module) or ""]
    for name, member in sorted(vars(module).items()):
        if name.startswith("_") or getattr(member, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(member) or inspect.isfunction(member):
            docs.append(inspect.getdoc(member) or "")
        if inspect.isclass(member):
            for method_name, method in sorted(vars(member).items()):
                if not method_name.startswith("_") and inspect.isfunction(method):
                    docs.append(inspect.getdoc(method) or "")
    return docs


def stdlib_module_names():
    names = set(sys.stdlib_module_names) - SKIPPED_MODULES
    return sorted(name for name in names if not name.startswith("_"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", default="corpus")
    parser.add_argument("--vocabulary-size", type=int, default=4000)
    parser.add_argument("--eval-every", type=int, default=10, help="every n-th module goes to eval.txt")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    from keras_bert_impl.data import split_sentences
    from keras_bert_impl.tokenization import train_wordpiece_vocabulary
    from keras_bert_impl.utils.atomic_io import atomic_write_text

    splits = {"train": [], "eval": []}
    for position, name in enumerate(stdlib_module_names()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - platform modules fail in many ways; skip them
            logging.info("skipping %s (%s)", name, type(error).__name__)
            continue
        sentences = [s for doc in module_docstrings(module) for p in clean_paragraphs(doc) for s in split_sentences(p)]
        if len(sentences) >= 2:
            splits["eval" if position % args.eval_every == 0 else "train"].append(sentences)
    os.makedirs(args.output_dir, exist_ok=True)
    for split, documents in splits.items():
        text = "\n\n".join("\n".join(sentences) for sentences in documents) + "\n"
        atomic_write_text(os.path.join(args.output_dir, f"{split}.txt"), text)
        words = sum(len(s.split()) for d in documents for s in d)
        logging.info("%s.txt: %d documents, %d sentences, %d words", split, len(documents),
                     sum(len(d) for d in documents), words)
    train_wordpiece_vocabulary(os.path.join(args.output_dir, "train.txt"), args.vocabulary_size,
                               output_path=os.path.join(args.output_dir, "vocab.txt"))
    logging.info("vocab.txt: %s", os.path.join(args.output_dir, "vocab.txt"))


if __name__ == "__main__":
    main()
