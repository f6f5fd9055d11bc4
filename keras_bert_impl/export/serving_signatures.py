"""The serving signatures of an exported BERT model, as `tf.function`s over a Keras model (TensorFlow backend).

Text signatures hold the tokenizer and packing (TF ops), so serving needs only `tensorflow` and
`tensorflow_text`. Signatures (B batch, T tokens, H hidden width, C classes, P masked slots, V vocabulary,
E entities):

- every model: `serve_token_ids(token_ids, segment_ids, padding_mask)`, int32 `(B, T)` each (mask 1 on real
  tokens); `BertPretrainer` adds `mask_positions` int32 `(B, P)` and returns `mlm_logits` `(B, P, V)`,
  `nsp_logits` `(B, 2)`.
- `BertBackbone` with a tokenizer: `serve_text(text)` and `serve_text_pair(text, text_pair)`, tf.string
  `(B,)` -> `sequence_output` float32 `(B, T, H)`, `pooled_output` `(B, H)`, `padding_mask` int32 `(B, T)`.
- `BertClassifier` with a tokenizer: the same signatures -> `probabilities` float32 `(B, C)`, `label_id`
  int32 `(B,)`, `label` tf.string `(B,)`, `logits` `(B, C)`; regression returns `score` float32 `(B,)`.
- `BertQuestionAnswerer` with a tokenizer: `serve_text(question, context)` -> `answer` tf.string `(B,)`,
  `start_char` / `end_char` int64 `(B,)` (code point offsets into the context, -1 for no answer), `score`
  float32 `(B,)`; long contexts are windowed (`preprocessing.squad_span_graph`).
- `BertTokenClassifier`: `logits` float32 `(B, T, C)`; with a tokenizer `serve_text(text)` -> `entity_text`,
  `entity_type` tf.string `(B, E)`, `entity_start` / `entity_end` int64 `(B, E)` (-1 as padding),
  `entity_score` float32 `(B, E)`, `num_entities` int32 `(B,)` (`preprocessing.entity_span_graph`).

Text is truncated (longest segment first) or windowed, never rejected for length. Numeric inputs are checked
in the graph first; a failed check raises `InvalidArgumentError` naming the input, its value and the limit.
"""

import tensorflow as tf

from keras_bert_impl.preprocessing import entity_span_graph, squad_span_graph
from keras_bert_impl.preprocessing.preprocessor import Preprocessor

SERVE_TOKEN_IDS = "serve_token_ids"
SERVE_TEXT = "serve_text"
SERVE_TEXT_PAIR = "serve_text_pair"
SERVING_DEFAULT = "serving_default"

# Any rank: a loaded signature does not enforce its declared input shapes; `_with_rank` checks them in the graph.
_TOKEN_SPEC = tf.TensorSpec(None, tf.int32)
_TEXT_SPEC = tf.TensorSpec(None, tf.string)


def _numeric_inputs(token_ids, segment_ids, padding_mask):
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": tf.not_equal(padding_mask, 0)}


def _served_outputs(model, kind, outputs):
    """The model's outputs as served: float32, a single tensor named `logits`; a classifier's decoded too."""
    if kind != "classifier":
        outputs = outputs if isinstance(outputs, dict) else {"logits": outputs}
        return {name: tf.cast(value, tf.float32) for name, value in outputs.items()}
    logits = tf.cast(outputs, tf.float32)  # (B, C)
    if model.is_regression:
        return {"score": logits[:, 0]}
    labels = model.labels or tuple(str(index) for index in range(model.num_classes))
    label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
            "label": tf.gather(tf.constant(labels, tf.string), label_id)}


def _at_least_two_columns(packed):
    """Pad an empty batch (width 0, which the pooler's [CLS] slice rejects) to `[CLS] [SEP]` width."""
    missing = tf.maximum(2 - tf.shape(packed["token_ids"])[1], 0)
    return {name: tf.pad(value, [[0, 0], [0, missing]]) for name, value in packed.items()}


def _check(condition, template, values):
    """An in-graph check whose failure reads `assertion failed: [<one sentence>]` (one formatted string)."""
    return tf.debugging.Assert(condition, [tf.strings.format(template, values)], summarize=8)


def _after(checks, *tensors):
    """`tensors`, each waiting for `checks`, so no op of the model fails first with a vaguer error."""
    with tf.control_dependencies(checks):
        return [tf.identity(tensor) for tensor in tensors]


def _with_rank(rank, **tensors):
    """`tensors` (declared of any rank: a loaded signature does not enforce declared shapes) with `rank` dimensions,
    or `InvalidArgumentError` "Shape of tensor text [1,1] is not compatible with expected shape [?]"."""
    return [tf.ensure_shape(value, [None] * rank) for value in tensors.values()]


def _assert_same_batch_size(first, second, first_name, second_name):
    """Rows pair up one to one (a mismatch would fail deep inside packing)."""
    first_rows, second_rows = tf.size(first), tf.size(second)
    return _check(tf.equal(first_rows, second_rows), f"{first_name} and {second_name} must have the same batch size, "
                  f"got {{}} and {{}} rows: send one {second_name} per {first_name}", (first_rows, second_rows))


def _token_input_checks(backbone, token_ids, segment_ids, padding_mask, mask_positions=None):
    """Checks of the numeric inputs the model would otherwise answer with an error deep in the graph or a
    silently wrong result (a negative id, a batch of 1 beside a larger one)."""
    shape = tf.shape(token_ids)
    checks = [_check(
        tf.logical_or(shape[1] > 0, shape[0] == 0),
        "token_ids has 0 tokens per row: send at least 1 token per row ([CLS] ... [SEP], as serve_text packs)", ())]
    for name, value in (("segment_ids", segment_ids), ("padding_mask", padding_mask)):
        checks.append(_check(
            tf.reduce_all(tf.equal(tf.shape(value), shape)),
            f"{name} has shape {{}} but token_ids has shape {{}}: send token_ids, segment_ids and padding_mask "
            "with the same (batch, tokens) shape", (tf.shape(value), shape)))
    limit = backbone.max_sequence_length
    checks.append(_check(
        shape[1] <= limit,
        f"token_ids has {{}} tokens per row, more than the {limit} positions of the model: send at most {limit} "
        "tokens per row (truncate or window longer inputs, as serve_text does)", (shape[1],)))
    for name, value, size, table, advice in (
            ("token_ids", token_ids, backbone.vocabulary_size, "vocabulary",
             "tokenize with the vocab.txt exported with this model"),
            ("segment_ids", segment_ids, backbone.num_segments, "segment table",
             "use 0 for the first segment and 1 for the second")):
        low, high = tf.reduce_min(value), tf.reduce_max(value)  # int32 max and min on an empty batch: pass
        checks.append(_check(
            tf.logical_and(low >= 0, high < size),
            f"{name} holds {{}}, outside the model {table} of {size} ids (0 to {size - 1}): {advice}",
            (tf.where(low < 0, low, high),)))
    if mask_positions is not None:
        positions = tf.shape(mask_positions)
        checks.append(_check(
            tf.equal(positions[0], shape[0]),
            "mask_positions has {} rows but token_ids has {}: send one row of mask positions per token_ids row",
            (positions[0], shape[0])))
        low, high = tf.reduce_min(mask_positions), tf.reduce_max(mask_positions)
        checks.append(_check(
            tf.logical_and(low >= 0, high < shape[1]),
            "mask_positions holds {}, outside the {} tokens of each token_ids row (0 to {}): give positions "
            "inside the row", (tf.where(low < 0, low, high), shape[1], shape[1] - 1)))
    return checks


def build_serving_module(model, kind, tokenizer, settings):
    """A `tf.Module` holding the model's variables, and the signature functions by name.

    Args:
        model: a task model of `models.registry` under the TensorFlow backend.
        kind: str. Its kind (`models.registry.TASK_KINDS`).
        tokenizer: `BertTokenizer` or None (numeric signature only).
        settings: dict. `sequence_length`, and for QA `doc_stride`, `max_query_length`,
            `max_answer_length`, `n_best_size`, `version_2_with_negative`, `null_score_diff_threshold`.

    Returns:
        `(module, signatures)`: signature name -> concrete function, `serving_default` included.
    """
    # The model's variables (not the model, as `keras.export.ExportArchive`) and later the assets; the functions
    # travel as signatures only (attributes too would save every graph twice).
    module = tf.Module(name="bert_serving")
    module.model_variables = list(model.variables)
    signatures = {}

    def run_model(inputs):
        return model(inputs, training=False)

    backbone = model if kind == "backbone" else model.backbone
    if kind == "pretrainer":
        @tf.function(input_signature=[_TOKEN_SPEC] * 4, autograph=False)
        def serve_token_ids(token_ids, segment_ids, padding_mask, mask_positions):
            token_ids, segment_ids, padding_mask, mask_positions = _with_rank(
                2, token_ids=token_ids, segment_ids=segment_ids, padding_mask=padding_mask,
                mask_positions=mask_positions)
            checks = _token_input_checks(backbone, token_ids, segment_ids, padding_mask, mask_positions)
            token_ids, segment_ids, padding_mask, mask_positions = _after(
                checks, token_ids, segment_ids, padding_mask, mask_positions)
            inputs = _numeric_inputs(token_ids, segment_ids, padding_mask)
            return _served_outputs(model, kind, run_model({**inputs, "mask_positions": mask_positions}))
    else:
        @tf.function(input_signature=[_TOKEN_SPEC] * 3, autograph=False)
        def serve_token_ids(token_ids, segment_ids, padding_mask):
            token_ids, segment_ids, padding_mask = _with_rank(
                2, token_ids=token_ids, segment_ids=segment_ids, padding_mask=padding_mask)
            checks = _token_input_checks(backbone, token_ids, segment_ids, padding_mask)
            token_ids, segment_ids, padding_mask = _after(checks, token_ids, segment_ids, padding_mask)
            return _served_outputs(model, kind, run_model(_numeric_inputs(token_ids, segment_ids, padding_mask)))

    signatures[SERVE_TOKEN_IDS] = serve_token_ids.get_concrete_function()

    if tokenizer is not None and kind in ("backbone", "classifier"):
        packer = Preprocessor(tokenizer, settings["sequence_length"]).segment_packer(padding="dynamic")

        def packed_outputs(text, text_pair):
            second = None if text_pair is None else tokenizer.tokenize_tensor(text_pair)
            packed = _at_least_two_columns(packer(tokenizer.tokenize_tensor(text), second))
            outputs = _served_outputs(model, kind, run_model(packed))
            if kind == "classifier":
                return outputs
            return {**outputs, "padding_mask": tf.cast(packed["padding_mask"], tf.int32)}

        @tf.function(input_signature=[_TEXT_SPEC], autograph=False)
        def serve_text(text):
            return packed_outputs(*_with_rank(1, text=text), None)

        @tf.function(input_signature=[_TEXT_SPEC, _TEXT_SPEC], autograph=False)
        def serve_text_pair(text, text_pair):
            text, text_pair = _with_rank(1, text=text, text_pair=text_pair)
            (text,) = _after([_assert_same_batch_size(text, text_pair, "text", "text_pair")], text)
            return packed_outputs(text, text_pair)

        signatures[SERVE_TEXT] = serve_text.get_concrete_function()
        signatures[SERVE_TEXT_PAIR] = serve_text_pair.get_concrete_function()

    if tokenizer is not None and kind == "question_answerer":
        signatures[SERVE_TEXT] = _question_answering_function(run_model, tokenizer, settings).get_concrete_function()

    if tokenizer is not None and kind == "token_classifier":
        signatures[SERVE_TEXT] = _entity_function(run_model, model.labels, tokenizer, settings).get_concrete_function()

    signatures[SERVING_DEFAULT] = signatures.get(SERVE_TEXT, signatures[SERVE_TOKEN_IDS])
    return module, signatures


def _question_answering_function(run_model, tokenizer, settings):
    """`serve_text(question, context)`: `preprocessing.squad_span_graph`'s windowing and span decoding."""
    sequence_length = settings["sequence_length"]

    @tf.function(input_signature=[_TEXT_SPEC, _TEXT_SPEC], autograph=False)
    def serve_text(question, context):
        question, context = _with_rank(1, question=question, context=context)
        (context,) = _after([_assert_same_batch_size(question, context, "question", "context")], context)
        features = squad_span_graph.windowed_features(tokenizer, question, context, sequence_length,
                                                      settings["doc_stride"], settings["max_query_length"])
        outputs = run_model(features["inputs"])
        return squad_span_graph.answers_from_logits(
            outputs["start_logits"], outputs["end_logits"], features, settings["n_best_size"],
            settings["max_answer_length"], settings.get("version_2_with_negative", False),
            settings.get("null_score_diff_threshold", 0.0))

    return serve_text


def _entity_function(run_model, labels, tokenizer, settings):
    """`serve_text(text)`: `BertTokenClassificationPreprocessor`'s windowing and `entity_span_graph`'s decoding."""
    from keras_bert_impl.preprocessing.token_classification_preprocessor import first_piece_table, window_features

    sequence_length, stride = settings["sequence_length"], settings["stride"]
    packer = Preprocessor(tokenizer, sequence_length).segment_packer(padding="dynamic")
    first_pieces = first_piece_table(tokenizer)

    @tf.function(input_signature=[_TEXT_SPEC], autograph=False)
    def serve_text(text):
        (text,) = _with_rank(1, text=text)
        features = window_features(tokenizer, packer, sequence_length, stride, texts=text, first_pieces=first_pieces)
        inputs = _at_least_two_columns(features["inputs"])
        logits = run_model(inputs)[:, : tf.shape(features["word_index"])[1]]
        return entity_span_graph.decode_entities(features, logits, labels)

    return serve_text
