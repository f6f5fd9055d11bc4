"""Fresh-process SavedModel client for the export tests: TensorFlow and tensorflow-text's kernels only.

Usage: `python saved_model_client.py requests.json report.json`. `requests.json` is a list of
`{"model_dir", "signature", "inputs", "outputs"}` (paths of .npz files: string inputs as bytes arrays, dtype
"S"); every signature's outputs are written to its `outputs` .npz (strings as dtype "S"). The report lists
the asset files each SavedModel carries, the text of its `export_config.json`, and whether `keras` or
`keras_bert_impl` were imported (they must not be).

To show that a SavedModel serves without Keras or this package, both are made impossible to load before
TensorFlow is imported. Two details of the installed TensorFlow stack shape how:
- `import tensorflow` tries to import `keras.src.optimizers` and ignores an ImportError, but reads keras'
  directory to set up the lazy `tf.keras` alias, so keras' spec is still found (with its real location)
  and only loading it fails.
- `import tensorflow_text` defines Keras layers (`tf.keras.layers.Layer` subclasses) at import time, so it
  cannot be imported without Keras. The serving graph needs only tensorflow-text's op kernels, which this
  client registers with `tf.load_op_library` from the package's `python/ops/_*.so` files, as
  `import tensorflow_text` does (and as TF Serving does with custom op libraries).
"""

import glob
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys

BLOCKED_PACKAGES = ("keras", "keras_bert_impl")


class _RefuseToLoad(importlib.abc.Loader):
    def create_module(self, spec):
        raise ImportError(f"{spec.name} is blocked in the serving client")

    def exec_module(self, module):
        raise ImportError(f"{module.__name__} is blocked in the serving client")


class _BlockPackages(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in BLOCKED_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None:
            spec.loader = _RefuseToLoad()
        return spec


sys.meta_path.insert(0, _BlockPackages())

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def _load_tensorflow_text_kernels():
    """Register tensorflow-text's ops without executing its Python package (see the module docstring)."""
    package_dirs = importlib.util.find_spec("tensorflow_text").submodule_search_locations
    libraries = sorted(glob.glob(os.path.join(package_dirs[0], "python", "ops", "_*.so")))
    if not libraries:
        raise RuntimeError(f"No tensorflow-text op libraries under {package_dirs[0]}.")
    for library in libraries:
        tf.load_op_library(library)


_load_tensorflow_text_kernels()


def _to_tensor(array):
    if array.dtype.kind == "S":
        return tf.constant(list(array.tolist()), dtype=tf.string)
    return tf.constant(array)


def _to_numpy(tensor):
    value = tensor.numpy()
    if tensor.dtype == tf.string:
        return np.array(value.tolist(), dtype="S")
    return value


def main(requests_path, report_path):
    with open(requests_path, encoding="utf-8") as handle:
        requests = json.load(handle)
    loaded, report = {}, {"assets": {}, "export_config": {}}
    for request in requests:
        model_dir = request["model_dir"]
        if model_dir not in loaded:
            loaded[model_dir] = tf.saved_model.load(model_dir)
            report["assets"][model_dir] = sorted(os.listdir(os.path.join(model_dir, "assets")))
            with open(loaded[model_dir].export_config_file.asset_path.numpy(), encoding="utf-8") as handle:
                report["export_config"][model_dir] = json.load(handle)
        with np.load(request["inputs"]) as inputs:
            arguments = {name: _to_tensor(inputs[name]) for name in inputs.files}
        outputs = loaded[model_dir].signatures[request["signature"]](**arguments)
        np.savez(request["outputs"], **{name: _to_numpy(value) for name, value in outputs.items()})
    report["imported"] = sorted(name for name in BLOCKED_PACKAGES if name in sys.modules)
    with open(report_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
