"""Export BERT task models as ONNX files (Keras' own `export(format="onnx")`, tf2onnx), from any Keras backend.

Keras' torch path needs static shapes and its JAX path `jax2onnx`, so a JAX or torch model is exported by a
TensorFlow subprocess (`export.tensorflow_subprocess`). The graph takes the task model's numeric inputs,
`token_ids` int32 `(B, T)`, `segment_ids` int32 `(B, T)`, `padding_mask` bool `(B, T)` (and `mask_positions`
int32 `(B, P)` for `BertPretrainer`), every axis dynamic: feed it the preprocessor's output dict. Outputs keep
the task's names; a single output is named `logits`. The file's metadata holds `METADATA_KEYS`, and it is
written atomically (`utils.atomic_io.atomic_path`).
"""

import contextlib
import functools
import importlib.util
import io
import json
import logging
import os
import warnings

import keras

from keras_bert_impl.export.tensorflow_subprocess import (ExportError, export_in_tensorflow_subprocess,
                                                          exported_class_name)
from keras_bert_impl.utils.atomic_io import OutputExistsError, atomic_path
from keras_bert_impl.utils.output_lock import output_lock

logger = logging.getLogger(__name__)

DEFAULT_ONNX_ROOT = "onnx_models"
# The packages the TensorFlow-backend export imports (`pip install "keras-bert-impl[onnx]"`).
EXPORT_PACKAGES = ("onnx", "tf2onnx")
SINGLE_OUTPUT_NAME = "logits"
# Metadata (`onnx.ModelProto.metadata_props`) every export carries.
METADATA_KEYS = ("keras_bert_impl.model_class", "keras_bert_impl.labels", "keras_bert_impl.max_sequence_length")


def check_output(path, overwrite=False):
    """Raise `OutputExistsError` unless an ONNX file may be written at `path` (absent, or `overwrite`)."""
    if os.path.isdir(path):
        raise OutputExistsError(f"{path} is a folder; an ONNX export is one file: give a file path such as "
                                f"{os.path.join(path, 'model.onnx')}.")
    if os.path.lexists(path) and not overwrite:
        raise OutputExistsError(f"{path} already exists; refusing to replace it: choose another output path, or "
                                "pass --overwrite (overwrite=True) to replace it.")


def export_onnx(model, path=None, *, overwrite=False, opset=None):
    """Export a BERT task model as one ONNX file taking token ids (inputs and outputs: module docstring).

    Args:
        model: a task model of `models.registry.TASK_CLASSES`.
        path: str or None. The `.onnx` file to write. Defaults to None: `onnx_models/<model.name>.onnx`.
        overwrite: bool. Replace an existing file at `path`. Defaults to False.
        opset: int or None. ONNX opset; None takes tf2onnx's default. Defaults to None.

    Returns:
        str. The absolute path of the written file.

    Raises:
        ExportError: the model is not a supported task model, or `onnx` / `tf2onnx` is not installed.
        OutputExistsError: `path` is a folder, or an existing file and `overwrite` is False.

    Example:
    >>> import numpy as np, onnxruntime
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> from keras_bert_impl.models.classifier import BertClassifier
    >>> from keras_bert_impl.preprocessing import BertPreprocessor
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> backbone = BertBackbone(vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=8,
    ...                         intermediate_dim=16, max_sequence_length=16)
    >>> path = export_onnx(BertClassifier(backbone, num_classes=2), "/tmp/bert_sentiment.onnx", overwrite=True)
    >>> preprocessor = BertPreprocessor(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good",
    ...                                                "bad", "film"]), sequence_length=8)
    >>> session = onnxruntime.InferenceSession(path)
    >>> session.run(["logits"], preprocessor(["good film", "bad"]))[0].shape
    (2, 2)
    """
    class_name = exported_class_name(model, "export_onnx")
    path = os.path.abspath(os.fspath(path) if path is not None else os.path.join(DEFAULT_ONNX_ROOT,
                                                                                  f"{model.name}.onnx"))
    check_output(path, overwrite)
    missing = [name for name in EXPORT_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ExportError(
            f"ONNX export needs the packages {', '.join(EXPORT_PACKAGES)} ({', '.join(missing)} not installed): "
            "pip install \"keras-bert-impl[onnx]\"."
        )
    if keras.backend.backend() == "tensorflow":  # the writer holds the lock (a subprocess: its own call)
        with output_lock(path, replaced=True):
            _export_with_tensorflow(model, class_name, path, opset)
    else:
        options = {} if opset is None else {"opset": opset}
        export_in_tensorflow_subprocess(model, class_name, "onnx", path, options, overwrite=overwrite)
    logger.info("Exported %s to %s", class_name, path)
    return path


def _metadata(model, class_name):
    labels = getattr(model, "labels", None)
    backbone = model if class_name == "BertBackbone" else model.backbone
    return {
        "keras_bert_impl.model_class": class_name,
        "keras_bert_impl.labels": json.dumps(list(labels) if labels is not None else None),
        "keras_bert_impl.max_sequence_length": str(backbone.max_sequence_length),
    }


@functools.cache
def _register_erfc_conversion():
    """Teach tf2onnx TensorFlow's `Erfc` (the exact GELU's), as `1 - erf(x)`, through `tf2onnx.handler.tf_op`."""
    import numpy as np
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    @tf_op("Erfc")
    class Erfc:
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            node.type = "Erf"
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
            one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype))
            ctx.insert_new_node_on_output("Sub", node.output[0], name=utils.make_name(f"{node.name}_complement"),
                                          inputs=[one.output[0], node.output[0]])

    return Erfc


def _export_with_tensorflow(model, class_name, path, opset):
    """Convert `model` with Keras' ONNX export (tf2onnx) into a temporary file renamed over `path`."""
    import onnx

    _register_erfc_conversion()
    # The task's own inputs, every axis dynamic; a single output is named rather than left `Identity:0`.
    outputs = model.output if isinstance(model.output, dict) else {SINGLE_OUTPUT_NAME: model.output}
    exported = keras.Model(inputs=model.input, outputs=outputs, name=model.name)
    signature = [{name: keras.InputSpec(shape=(None,) * len(tensor.shape), dtype=tensor.dtype, name=name)
                  for name, tensor in model.input.items()}]
    # tf2onnx prints its progress to stdout; an export prints only its own result.
    with atomic_path(path) as tmp, warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # tf2onnx's numpy-2 patch warns about `np.object`
        exported.export(tmp, format="onnx", verbose=False, input_signature=signature, opset_version=opset)
        proto = onnx.load(tmp)
        try:
            onnx.checker.check_model(proto, full_check=True)
        except onnx.checker.ValidationError as error:  # e.g. a TensorFlow op tf2onnx could not convert
            first_line = str(error).strip().splitlines()[0]
            raise ExportError(f"The ONNX graph tf2onnx made of {class_name} is invalid ({first_line}); nothing "
                              f"was written to {path}.") from None
        onnx.helper.set_model_props(proto, _metadata(model, class_name))
        onnx.save(proto, tmp)
