"""Export BERT task models as ONNX files (Keras' own `export(format="onnx")`, tf2onnx), from any Keras backend
(a JAX or torch model through a TensorFlow subprocess, `export.tensorflow_subprocess`).

The graph takes the task model's numeric inputs, `token_ids` int32 `(B, T)`, `segment_ids` int32 `(B, T)`,
`padding_mask` bool `(B, T)` (and `mask_positions` int32 `(B, P)` for `BertPretrainer`), every axis dynamic.
Outputs keep the task's names; a single output is named `logits`. The file's metadata holds `METADATA_KEYS`.
Layer norms and GELUs are written in the node patterns ONNX Runtime's transformer optimizer fuses (`onnx_rewrites`,
same values); `optimize=True` writes the optimizer's output instead, self-attention blocks fused into `Attention`
nodes (ONNX Runtime contrib ops: ONNX Runtime alone runs it).
ONNX cannot refuse a bad input by name (ORT wraps a token id of -1 to the table's last row): serve through
`run_onnx`, which checks the inputs first.
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
METADATA_KEYS = ("keras_bert_impl.model_class", "keras_bert_impl.labels", "keras_bert_impl.max_sequence_length",
                 "keras_bert_impl.vocabulary_size", "keras_bert_impl.num_segments")


def check_output(path, overwrite=False):
    """Raise `OutputExistsError` unless an ONNX file may be written at `path` (absent, or `overwrite`)."""
    if os.path.isdir(path):
        raise OutputExistsError(f"{path} is a folder; an ONNX export is one file: give a file path such as "
                                f"{os.path.join(path, 'model.onnx')}.")
    if os.path.lexists(path) and not overwrite:
        raise OutputExistsError(f"{path} already exists; refusing to replace it: choose another output path, or "
                                "pass --overwrite (overwrite=True) to replace it.")


def export_onnx(model, path=None, *, overwrite=False, opset=None, optimize=False):
    """Export a BERT task model as one ONNX file taking token ids (inputs and outputs: module docstring).

    Args:
        model: a task model of `models.registry.TASK_CLASSES`.
        path: str or None. The `.onnx` file to write. Defaults to None: `onnx_models/<model.name>.onnx`.
        overwrite: bool. Replace an existing file at `path`. Defaults to False.
        opset: int or None. ONNX opset; None takes tf2onnx's default. Defaults to None.
        optimize: bool. Write the graph after ONNX Runtime's transformer optimizer
            (`optimize_model(model_type="bert")`): layer norms fused with their residual add
            (`SkipLayerNormalization`), GELUs with their bias (`BiasGelu` / `FastGelu`), each self-attention block
            one `Attention` node (`onnx_rewrites.fuse_attention`); same outputs (to float rounding); the file
            then holds ONNX Runtime contrib ops that other runtimes lack. Defaults to False (standard ONNX ops only).

    Returns:
        str. The absolute path of the written file.

    Raises:
        ExportError: the model is not a supported task model, or `onnx` / `tf2onnx` (with `optimize`:
            `onnxruntime`) is not installed.
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
    packages = EXPORT_PACKAGES + (("onnxruntime",) if optimize else ())
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        raise ExportError(f"ONNX export needs the packages {', '.join(packages)} ({', '.join(missing)} not "
                          "installed): pip install \"keras-bert-impl[onnx]\".")
    if keras.backend.backend() == "tensorflow":  # the writer holds the lock (a subprocess: its own call)
        with output_lock(path, replaced=True):
            _export_with_tensorflow(model, class_name, path, opset, optimize)
    else:
        options = {"optimize": optimize, **({} if opset is None else {"opset": opset})}
        export_in_tensorflow_subprocess(model, class_name, "onnx", path, options, overwrite=overwrite)
    logger.info("Exported %s to %s", class_name, path)
    return path


def _metadata(model, class_name):
    labels = getattr(model, "labels", None)
    backbone = model if class_name == "BertBackbone" else model.backbone
    return {"keras_bert_impl.model_class": class_name,
            "keras_bert_impl.labels": json.dumps(list(labels) if labels is not None else None),
            **{f"keras_bert_impl.{name}": str(getattr(backbone, name))
               for name in ("max_sequence_length", "vocabulary_size", "num_segments")}}


def check_onnx_inputs(inputs, ranks, max_sequence_length, vocabulary_size, num_segments):
    """Raise `ValueError` with one line naming the input, its value, the limit and what to do unless `inputs`
    fit the exported model (the checks of the SavedModel's `serve_token_ids`, plus at least one row and token).

    Args:
        inputs: dict of array-likes: `token_ids`, `segment_ids`, `padding_mask` `(B, T)` (`(B, C, T)` for
            multiple choice), `mask_positions` `(B, P)` for a pretrainer.
        ranks: dict. Each graph input's name -> its rank.
        max_sequence_length: int. The model's position table: at most this many tokens per row.
        vocabulary_size: int. Token ids lie in `[0, vocabulary_size)`.
        num_segments: int. Segment ids lie in `[0, num_segments)`.
    """
    import numpy as np

    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    for name, rank in sorted(ranks.items(), key=lambda item: item[0] != "token_ids"):  # token_ids first
        if name in arrays and arrays[name].ndim != rank:
            raise ValueError(f"{name} has shape {list(arrays[name].shape)} (rank {arrays[name].ndim}) but the model "
                             f"takes rank {rank}: send a batch of rows, one row of ids per text")
    if "token_ids" not in arrays:
        raise ValueError(f"The inputs {sorted(arrays)} lack token_ids: feed the preprocessor's output dict")
    token_ids = arrays["token_ids"]
    for name in ("segment_ids", "padding_mask"):
        if name in arrays and arrays[name].shape != token_ids.shape:
            raise ValueError(f"{name} has shape {list(arrays[name].shape)} but token_ids has shape "
                             f"{list(token_ids.shape)}: send token_ids, segment_ids and padding_mask with the same "
                             "(batch, tokens) shape")
    if token_ids.size == 0 and token_ids.shape[-1] > 0:  # the graph's reshapes fail on it
        raise ValueError(f"token_ids has shape {list(token_ids.shape)}, no rows: send at least one row")
    length = token_ids.shape[-1]
    if not 0 < length <= max_sequence_length:
        raise ValueError(f"token_ids has {length} tokens per row, outside 1 to the {max_sequence_length} positions "
                         f"of the model: send 1 to {max_sequence_length} tokens per row (truncate or window longer "
                         "inputs)")
    for name, size, table, advice in (
            ("token_ids", vocabulary_size, "vocabulary", "tokenize with the vocab.txt exported with this model"),
            ("segment_ids", num_segments, "segment table", "use 0 for the first segment and 1 for the second")):
        values = arrays.get(name)
        if values is not None and values.size and (values.min() < 0 or values.max() >= size):
            bad = values.min() if values.min() < 0 else values.max()
            raise ValueError(f"{name} holds {bad}, outside the model {table} of {size} ids (0 to {size - 1}): "
                             f"{advice}")
    positions = arrays.get("mask_positions")
    if positions is not None:
        if positions.shape[0] != token_ids.shape[0]:
            raise ValueError(f"mask_positions has {positions.shape[0]} rows but token_ids has {token_ids.shape[0]}: "
                             "send one row of mask positions per token_ids row")
        if positions.size and (positions.min() < 0 or positions.max() >= length):
            bad = positions.min() if positions.min() < 0 else positions.max()
            raise ValueError(f"mask_positions holds {bad}, outside the {length} tokens of each token_ids row (0 to "
                             f"{length - 1}): give positions inside the row")


def run_onnx(session, inputs, output_names=None):
    """`session.run(output_names, inputs)` after `check_onnx_inputs`, with the limits `export_onnx` stored in
    the file's metadata: a bad input is one `ValueError` line, never a wrapped id or an internal ORT error.

    Args:
        session: `onnxruntime.InferenceSession` of a file `export_onnx` wrote.
        inputs: dict. The graph's inputs (a preprocessor's output dict), shapes as in the module docstring.
        output_names: list of str or None. The outputs to compute; None computes every one. Defaults to None.

    Returns:
        list of np.ndarray, one per output.

    Example:
    >>> import onnxruntime  # doctest: +SKIP
    >>> session = onnxruntime.InferenceSession("/tmp/bert_sentiment.onnx")  # doctest: +SKIP
    >>> run_onnx(session, {"token_ids": [[2, -1, 3]], ...})  # doctest: +SKIP
    ValueError: token_ids holds -1, outside the model vocabulary of 8 ids (0 to 7): tokenize with the vocab.txt ...
    """
    metadata = session.get_modelmeta().custom_metadata_map
    missing = [key for key in METADATA_KEYS if key not in metadata]
    if missing:
        raise ValueError(f"The ONNX file lacks the metadata {', '.join(missing)} that export_onnx writes; export "
                         "the model again with this version.")
    check_onnx_inputs(inputs, {spec.name: len(spec.shape) for spec in session.get_inputs()},
                      *(int(metadata[f"keras_bert_impl.{key}"]) for key in ("max_sequence_length", "vocabulary_size",
                                                                             "num_segments")))
    return session.run(output_names, inputs)


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


def _optimize_for_onnxruntime(proto, model, class_name):
    """ONNX Runtime's transformer optimizer (its Python fusions, `opt_level=0`) on `proto` (an `onnx.ModelProto`),
    then `fuse_attention`; returns the optimized `onnx.ModelProto`, its nodes in topological order."""
    from onnxruntime.transformers import optimizer

    from keras_bert_impl.export.onnx_rewrites import fuse_attention  # imports onnx: the `onnx` extra

    backbone = model if class_name == "BertBackbone" else model.backbone
    optimizer_logger = logging.getLogger(optimizer.__name__)
    level = optimizer_logger.level
    optimizer_logger.setLevel(logging.ERROR)  # it warns that the producer is tf2onnx, not PyTorch: expected here
    try:
        optimized = optimizer.optimize_model(proto, model_type="bert", num_heads=backbone.num_heads,
                                             hidden_size=backbone.hidden_dim, opt_level=0)
    finally:
        optimizer_logger.setLevel(level)
    fused = fuse_attention(optimized.model, backbone.num_heads, backbone.hidden_dim)
    logger.info("Fused %d of %s's %d self-attention blocks into ONNX Runtime Attention nodes", fused, class_name,
                backbone.num_layers)
    optimized.topological_sort()
    return optimized.model


def _export_with_tensorflow(model, class_name, path, opset, optimize=False):
    """Convert `model` with Keras' ONNX export (tf2onnx) into a temporary file renamed over `path`: layer norms
    and GELUs rewritten for ONNX Runtime's optimizer, which runs on the file when `optimize`."""
    import onnx

    from keras_bert_impl.export.onnx_rewrites import rewrite_for_onnxruntime  # imports onnx, as above

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
        rewrite_for_onnxruntime(proto)
        if optimize:
            proto = _optimize_for_onnxruntime(proto, model, class_name)
        onnx.helper.set_model_props(proto, _metadata(model, class_name))
        onnx.save(proto, tmp)
