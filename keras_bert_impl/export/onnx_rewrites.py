"""Value-preserving rewrites of tf2onnx's BERT graph into the node patterns ONNX Runtime's transformer optimizer fuses.

`rewrite_for_onnxruntime` applies both: `rewrite_layer_norms` and `rewrite_gelus`. `fuse_attention` (run on the
optimizer's output by `export_onnx(optimize=True)`) writes each self-attention block as one ONNX Runtime `Attention`
node, a pattern the optimizer cannot find in our graph.

tf2onnx lowers Keras' `LayerNormalization` (TensorFlow's `tf.nn.moments` + `batch_normalization`) to
`GlobalAveragePool` means and a `Neg`/`Mul`/`Add` shift; `onnxruntime.transformers.optimizer.optimize_model`
recognises a layer norm only from `ReduceMean` means and a `Mul`/`Sub` shift (its `FusionLayerNormalizationTF`).
`rewrite_layer_norms` turns the first form into the second, op for op with the same arithmetic (the means may
sum in another order: outputs agree to about 1e-9), so the optimizer fuses every layer norm (and the residual
`Add` before it into `SkipLayerNormalization`). TensorFlow's exact GELU `0.5 x erfc(-x / sqrt(2))` (tf2onnx:
`Erf` of `Neg`, then `1 - erf`) becomes `x ((1 + erf(x / sqrt(2))) 0.5)`, the form the optimizer fuses into
`Gelu`. The rewrites only change how the same values are computed: no layer is written here.

Node legend: `x` the normalised `(..., H)` tensor, `m` its mean over H, `s` the scale `gamma / sqrt(var + eps)`.
"""

import collections

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import helper


def _consumers(graph):
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return consumers


def _ranks(model):
    """Each value's rank where ONNX shape inference knows it."""
    inferred = onnx.shape_inference.infer_shapes(model).graph
    return {value.name: len(value.type.tensor_type.shape.dim)
            for value in list(inferred.value_info) + list(inferred.input) + list(inferred.output)
            if value.type.tensor_type.HasField("shape")}


def _opset(model):
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


def _last_axis_mean(pool, opset):
    """`ReduceMean` over the last axis, keeping it: a rank-3 `GlobalAveragePool`'s values `(B, T, 1)`."""
    if opset >= 18:  # `axes` became an input
        axes = helper.make_tensor(f"{pool.name}/axes", onnx.TensorProto.INT64, [1], [-1])
        node = helper.make_node("ReduceMean", [pool.input[0], axes.name], list(pool.output), name=pool.name,
                                keepdims=1)
        return node, axes
    return helper.make_node("ReduceMean", [pool.input[0]], list(pool.output), name=pool.name, axes=[-1],
                            keepdims=1), None


def _use_vector(graph, initializers, node):
    """Point `node` at a 1-D copy of its `(1, ..., 1, H)` constant input: the fused layer norm's gamma and beta
    must be `(H,)` (broadcasting against the `(B, T, H)` operand, the values are the same)."""
    for position, name in enumerate(node.input):
        tensor = initializers.get(name)
        if tensor is None or len(tensor.dims) < 2 or any(size != 1 for size in tensor.dims[:-1]):
            continue
        vector_name = f"{name}/vector"
        if vector_name not in initializers:
            vector = onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(tensor).reshape(-1), vector_name)
            graph.initializer.append(vector)
            initializers[vector_name] = vector
        node.input[position] = vector_name


def rewrite_layer_norms(model):
    """Rewrite tf2onnx's layer-norm pattern in `model` (an `onnx.ModelProto`, changed in place) into the one
    ONNX Runtime's optimizer fuses; values are unchanged.

    Two rewrites:
    - `GlobalAveragePool(x)` of a rank-3 `x` `(B, T, H)` -> `ReduceMean(x, axes=[-1], keepdims=1)` (the same
      mean over H, summed in the kernel's order);
    - `Add(Mul(Neg(m), s), beta)` -> `Sub(beta, Mul(m, s))` (IEEE negation is exact, so both give the same
      float).

    Args:
        model: `onnx.ModelProto` written by tf2onnx.

    Returns:
        int. The number of layer norms rewritten (shift patterns found).

    Example:
    >>> import onnx  # doctest: +SKIP
    >>> model = onnx.load("tf2onnx_bert.onnx")  # a 1-block encoder as tf2onnx wrote it  # doctest: +SKIP
    >>> rewrite_layer_norms(model)  # the embeddings' layer norm and the block's 2  # doctest: +SKIP
    3
    """
    graph = model.graph
    ranks, opset = _ranks(model), _opset(model)
    for index, node in enumerate(graph.node):
        if node.op_type == "GlobalAveragePool" and ranks.get(node.input[0]) == 3:
            mean, axes = _last_axis_mean(node, opset)
            graph.node[index].CopyFrom(mean)
            if axes is not None:
                graph.initializer.append(axes)
    producers = {output: node for node in graph.node for output in node.output}
    consumers = _consumers(graph)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    negations = []
    for node in graph.node:
        if node.op_type != "Neg" or len(consumers.get(node.output[0], [])) != 1:
            continue
        shift_mul = consumers[node.output[0]][0]
        mean_producer = producers.get(node.input[0])
        shift_adds = consumers.get(shift_mul.output[0], [])
        if (shift_mul.op_type != "Mul" or mean_producer is None or mean_producer.op_type != "ReduceMean"
                or len(shift_adds) != 1 or shift_adds[0].op_type != "Add"):
            continue
        shift_add = shift_adds[0]
        scale = next(name for name in shift_mul.input if name != node.output[0])
        scale_producer = producers.get(scale)
        if scale_producer is not None and scale_producer.op_type == "Mul":
            _use_vector(graph, initializers, scale_producer)  # gamma
        _use_vector(graph, initializers, shift_add)  # beta
        beta = next(name for name in shift_add.input if name != shift_mul.output[0])
        shift_mul.input[:] = [node.input[0], scale]  # m * s
        shift_add.op_type = "Sub"
        shift_add.input[:] = [beta, shift_mul.output[0]]  # beta - m * s
        for output_add in consumers.get(shift_add.output[0], []):  # the optimizer wants x * s + (beta - m * s)
            if output_add.op_type == "Add" and output_add.input[0] == shift_add.output[0]:
                output_add.input[:] = [output_add.input[1], output_add.input[0]]
        negations.append(node)
    for node in negations:
        graph.node.remove(node)
    return len(negations)


def _constant(initializers, name):
    tensor = initializers.get(name)
    return None if tensor is None else onnx.numpy_helper.to_array(tensor)


def _is_scalar(initializers, name, value):
    array = _constant(initializers, name)
    return array is not None and array.size == 1 and float(array.reshape(())) == value


def _sort_topologically(graph):
    """Reorder `graph.node` so every node follows the producers of its inputs (rewrites may swap two)."""
    available = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer} | {""}
    pending, ordered = list(graph.node), []
    while pending:
        ready = [node for node in pending if all(name in available for name in node.input)]
        if not ready:
            raise ValueError("the rewritten ONNX graph has a cycle")  # a rewrite bug, never the user's input
        for node in ready:
            ordered.append(node)
            available.update(node.output)
        pending = [node for node in pending if node not in ready]
    del graph.node[:]
    graph.node.extend(ordered)


def rewrite_gelus(model):
    """Rewrite tf2onnx's exact-GELU nodes in `model` (changed in place) into the form ONNX Runtime's optimizer
    fuses into `Gelu`; values are unchanged.

    `Mul(Mul(0.5, x), Sub(1, Erf(Mul(Neg(x), c))))` -> `Mul(x, Mul(Add(Erf(Mul(x, c)), 1), 0.5))`: `erf` is odd
    and negation exact, and scaling by 0.5 is exact whichever factor takes it.

    Args:
        model: `onnx.ModelProto` written by tf2onnx (with `onnx_export`'s `Erfc` conversion).

    Returns:
        int. The number of GELUs rewritten.
    """
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    consumers = _consumers(graph)
    rewritten, negations = 0, []
    for erf in [node for node in graph.node if node.op_type == "Erf"]:
        scaling = producers.get(erf.input[0])
        negation = producers.get(scaling.input[0]) if scaling is not None and scaling.op_type == "Mul" else None
        complements = consumers.get(erf.output[0], [])
        if (negation is None or negation.op_type != "Neg" or len(complements) != 1
                or complements[0].op_type != "Sub" or not _is_scalar(initializers, complements[0].input[0], 1.0)):
            continue
        complement = complements[0]
        products = consumers.get(complement.output[0], [])
        if len(products) != 1 or products[0].op_type != "Mul":
            continue
        product = products[0]
        half = producers.get(next(name for name in product.input if name != complement.output[0]))
        x = negation.input[0]
        if half is None or half.op_type != "Mul" or x not in half.input:
            continue
        one_half = next(name for name in half.input if name != x)
        if not _is_scalar(initializers, one_half, 0.5):
            continue
        scaling.input[0] = x  # x * c
        complement.op_type = "Add"
        complement.input[:] = [erf.output[0], complement.input[0]]  # erf(x c) + 1
        half.input[:] = [complement.output[0], one_half]  # (1 + erf(x c)) * 0.5
        product.input[:] = [x, half.output[0]]
        if len(consumers[negation.output[0]]) == 1:
            negations.append(negation)
        rewritten += 1
    for node in negations:
        graph.node.remove(node)
    _sort_topologically(graph)
    return rewritten


def rewrite_for_onnxruntime(model):
    """`rewrite_layer_norms` and `rewrite_gelus` on `model` (an `onnx.ModelProto`, changed in place)."""
    rewrite_layer_norms(model)
    rewrite_gelus(model)


# Ops tf2onnx writes between the fused projection's bias add and the context: the head split (slices, reshapes,
# transposes, the einsums' MatMuls and their shape arithmetic), the scaling, the select mask and the softmax.
_ATTENTION_OPS = {"Add", "And", "Cast", "Concat", "Constant", "Expand", "Gather", "MatMul", "Max", "Mul", "Not",
                  "ReduceProd", "Reshape", "Shape", "Slice", "Softmax", "Squeeze", "Transpose", "Unsqueeze"}


def _initializer_shape(initializers, name):
    tensor = initializers.get(name)
    return None if tensor is None else tuple(tensor.dims)


def _attention_block(graph, producers, initializers, ranks, context, hidden_dim):
    """The self-attention subgraph that computes `context` `(B, T, N, D)`, or None where it is not exactly
    tf2onnx's form of `BertSelfAttention`'s projection path.

    Walks back from `context` to the fused projection's bias add; every value entering the walked nodes must be
    a constant, the projection's input `x` (only through `Shape`), or the `padding_mask` graph input.

    Returns:
        `(x, kernel, bias, padding_mask)` value names: `x` `(B, T, H)`, `kernel` `(H, 3H)`, `bias` `(3H,)`.
    """
    graph_inputs = {value.name: value for value in graph.input}
    walked, pending, bias_add = {}, [context], None
    while pending:
        node = producers.get(pending.pop())
        if node is None or id(node) in walked:
            continue
        walked[id(node)] = node
        if node.op_type not in _ATTENTION_OPS:
            return None
        projection = producers.get(node.input[0]) if node.op_type == "Add" else None
        if projection is not None and projection.op_type == "MatMul" and \
                _initializer_shape(initializers, projection.input[1]) == (hidden_dim, 3 * hidden_dim):
            if bias_add is not None and bias_add is not node:
                return None  # two projections: not one attention block
            bias_add = node
            continue  # the walk stops at the projection
        if node.op_type != "Shape":  # `x` enters through its shape alone; the check below finds what else does
            pending.extend(name for name in node.input if name and name not in initializers)
    if bias_add is None or _initializer_shape(initializers, bias_add.input[1]) != (3 * hidden_dim,):
        return None
    projection = producers[bias_add.input[0]]
    flatten = producers.get(projection.input[0])  # `x` `(B, T, H)` -> `(B*T, H)` rows
    if flatten is None or flatten.op_type != "Reshape":
        return None
    x = flatten.input[0]
    if ranks.get(x, 3) != 3:  # unknown after a contrib op (`SkipLayerNormalization`): its schema is ORT's
        return None
    nodes = [node for node in walked.values() if node is not bias_add]
    produced = {output for node in nodes for output in node.output} | set(bias_add.output)
    entering = {name for node in nodes for name in node.input if name and name not in produced
                and name not in initializers and producers.get(name, onnx.NodeProto()).op_type != "Constant"}
    masks = [name for name in entering if name in graph_inputs]
    mask_type = graph_inputs[masks[0]].type.tensor_type if len(masks) == 1 else None
    # `(B, T)` as the block sees it: a multiple-choice `(B, C, T)` mask is reshaped on the way (not fused)
    if mask_type is None or mask_type.elem_type != onnx.TensorProto.BOOL or len(mask_type.shape.dim) != 2:
        return None
    if entering - {x, masks[0]}:
        return None
    if any(node.op_type != "Shape" for node in nodes if x in node.input):
        return None  # `x` may enter only as the source of the dynamic sizes
    operations = collections.Counter(node.op_type for node in nodes)
    if operations["Softmax"] != 1 or operations["MatMul"] != 2:  # scores and context: nothing else multiplied
        return None
    return x, projection.input[1], bias_add.input[1], masks[0]


def fuse_attention(model, num_heads, hidden_dim):
    """Replace each `BertSelfAttention` subgraph of `model` (tf2onnx's graph, rewritten and optimized by ONNX
    Runtime's optimizer or not; changed in place) from the fused query/key/value projection to the context
    `(B, T, N, D)` with one ONNX Runtime `com.microsoft.Attention` node; values agree to float rounding (ONNX
    Runtime's kernel sums in its own order).

    The layer's kernel `(H, 3H)` is already laid out as `Attention` expects (query | key | value, heads
    contiguous in each), and its scale is `Attention`'s default `1 / sqrt(D)`. The boolean padding mask becomes
    the 2-D `mask_index` `(B, T)` (int32, 1 for real tokens), padded keys scored -1e9 as in the layer. A
    subgraph that differs in any way (the classifier's [CLS]-only last block, a multiple-choice model's reshaped
    mask) is left as it is.

    Args:
        model: `onnx.ModelProto`.
        num_heads: int. `N`.
        hidden_dim: int. `H`.

    Returns:
        int. The number of attention blocks fused.

    Example:
    >>> import onnx  # doctest: +SKIP
    >>> model = onnx.load("bert_question_answerer.onnx")  # 2 encoder blocks  # doctest: +SKIP
    >>> fuse_attention(model, num_heads=2, hidden_dim=16)  # doctest: +SKIP
    2
    """
    graph = model.graph
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):  # shape inference needs it
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    ranks = _ranks(model)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    head_shape = f"attention_head_shape_{num_heads}"  # (0, 0, N, D): (B, T, H) -> (B, T, N, D), B and T copied
    fused = []
    for output_projection in [node for node in graph.node if node.op_type == "MatMul"]:
        rows = producers.get(output_projection.input[0])  # the context `(B, T, N, D)` as `(B*T, H)` rows
        if (_initializer_shape(initializers, output_projection.input[1]) != (hidden_dim, hidden_dim)
                or rows is None or rows.op_type != "Reshape" or ranks.get(rows.input[0]) != 4):
            continue
        context = rows.input[0]
        block = _attention_block(graph, producers, initializers, ranks, context, hidden_dim)
        if block is None:
            continue
        x, kernel, bias, padding_mask = block
        mask_index = f"{padding_mask}/int32"
        name = producers[context].name
        attention = helper.make_node("Attention", [x, kernel, bias, mask_index], [f"{name}/attention"],
                                     name=f"{name}/attention", domain="com.microsoft", num_heads=num_heads,
                                     mask_filter_value=-1e9)  # the layer's: a row of padding alone still matches
        heads = helper.make_node("Reshape", [attention.output[0], head_shape], [context], name=f"{name}/heads")
        graph.node.remove(producers[context])
        graph.node.extend([attention, heads])
        fused.append((mask_index, padding_mask))
    if not fused:
        return 0
    graph.initializer.append(onnx.numpy_helper.from_array(
        np.array([0, 0, num_heads, hidden_dim // num_heads], "int64"), head_shape))
    mask_index, padding_mask = fused[0]
    graph.node.append(helper.make_node("Cast", [padding_mask], [mask_index], name=mask_index,
                                       to=onnx.TensorProto.INT32))
    _remove_unused(graph)
    _sort_topologically(graph)
    return len(fused)


def _remove_unused(graph):
    """Drop the nodes and initializers no graph output depends on (the replaced subgraphs)."""
    producers = {output: node for node in graph.node for output in node.output}
    needed, pending, live = set(), [value.name for value in graph.output], {}
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producers.get(name)
        if node is not None and id(node) not in live:
            live[id(node)] = node
            pending.extend(name for name in node.input if name)
    kept = [node for node in graph.node if id(node) in live]
    del graph.node[:]
    graph.node.extend(kept)
    initializers = [tensor for tensor in graph.initializer if tensor.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
