"""Names of a package that load on first use (PEP 562), so importing the package imports none of their modules."""

import importlib
import sys


def lazy_exports(package, exports):
    """`(__getattr__, __dir__)` of a package whose public names load on first use, to assign at its module level.

    Args:
        package: str. The package's `__name__`.
        exports: dict of str to str. Public name -> the module that defines it.

    Example:
    >>> import keras_bert_impl.data
    >>> keras_bert_impl.data.__getattr__("LabelVocabulary").__module__
    'keras_bert_impl.data.label_vocabulary'
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
