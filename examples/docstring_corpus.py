"""Build a small, reproducible English pretraining corpus from the docstrings of Python's standard library.

    python examples/docstring_corpus.py --output-dir corpus --vocabulary-size 4000
    # about twice the text: also the installed numpy / scipy / scikit-learn / matplotlib / sympy modules
    python examples/docstring_corpus.py --output-dir corpus_large --vocabulary-size 8000 --extra-modules scientific

Writes `train.txt` and `eval.txt` (one sentence per line, a blank line between documents; one document per
module, every tenth module to eval) with `keras_bert_impl.data.default_corpus`, then learns `vocab.txt` from
`train.txt` (`tokenization.train_wordpiece_vocabulary`). The same Python version gives the same corpus.
`keras-bert quickstart` starts from this corpus.
"""

import argparse
import importlib.util
import logging
import os

# Documented third-party modules the test extras install (one document each, like a stdlib module).
SCIENTIFIC_MODULES = [
    "numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.ma", "scipy.stats", "scipy.linalg",
    "scipy.optimize", "scipy.signal", "scipy.special", "scipy.sparse", "scipy.interpolate", "scipy.integrate",
    "sklearn.metrics", "sklearn.linear_model", "sklearn.preprocessing", "sklearn.model_selection",
    "sklearn.cluster", "sklearn.decomposition", "matplotlib.pyplot", "matplotlib.axes", "safetensors",
    "tokenizers", "hypothesis", "hypothesis.strategies", "yaml", "jinja2", "requests", "click", "sympy",
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", default="corpus", help="where train.txt, eval.txt, vocab.txt go")
    parser.add_argument("--vocabulary-size", type=int, default=4000, help="at most this many WordPiece tokens")
    parser.add_argument("--eval-every", type=int, default=10, help="every n-th module goes to eval.txt")
    parser.add_argument("--extra-modules", default="",
                        help="comma-separated importable modules to add, or 'scientific' for SCIENTIFIC_MODULES")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    from keras_bert_impl.data.default_corpus import (
        collect_stdlib_docstrings,
        stdlib_module_names,
        write_docstring_corpus,
    )
    from keras_bert_impl.tokenization import train_wordpiece_vocabulary

    extra = SCIENTIFIC_MODULES if args.extra_modules == "scientific" else [
        name for name in args.extra_modules.split(",") if name]
    missing = [name for name in extra if importlib.util.find_spec(name.split(".")[0]) is None]
    if missing:
        parser.error(f"--extra-modules: not installed: {', '.join(missing)}")
    documented = collect_stdlib_docstrings(list(stdlib_module_names()) + extra) if extra else None
    corpus = write_docstring_corpus(args.output_dir, documented, eval_every=args.eval_every)
    for split in ("train", "eval"):
        logging.info("%s: %d documents, %d sentences, %d words", corpus[split], corpus[f"{split}_documents"],
                     corpus[f"{split}_sentences"], corpus[f"{split}_words"])
    vocabulary = train_wordpiece_vocabulary(corpus["train"], args.vocabulary_size,
                                            output_path=os.path.join(args.output_dir, "vocab.txt"))
    logging.info("vocab.txt: %d tokens in %s", len(vocabulary), os.path.join(args.output_dir, "vocab.txt"))


if __name__ == "__main__":
    main()
