"""Issue #16 item 10: the SavedModel signatures name the bad input, its value, the limit and what to do.

Before, a text-pair batch-size mismatch, a token id of 99999 and a 600-token row were answered with a
gather or shape error from deep inside the model ("Graph execution error ... indices[0,1] = 99999 is not in
[0, 45)"), and a token id of -1 or a one-row `segment_ids` beside a two-row `token_ids` were served silently
(wrapped or broadcast). The checks run in the graph, so the loaded SavedModel carries them.

Issue #29 item 7: an ONNX graph cannot fail with a message (ORT wraps a token id of -1 to the table's last row
and answers a 0-token row with an internal error), so `export.run_onnx` checks the same inputs before ORT, with
the limits the file's metadata holds, and names the input, its value, the limit and what to do.
"""

import numpy as np
import pytest

from tests.export.test_saved_model_export import TINY, exports  # noqa: F401 (a fixture)

pytestmark = pytest.mark.backend_independent  # SavedModel export

POSITIONS = TINY["max_sequence_length"]


@pytest.fixture(scope="module")
def served(exports):  # noqa: F811
    """The tiny classifier, question answerer and pretrainer of tests/export, loaded back as SavedModels."""
    import tensorflow as tf

    loaded = {name: tf.saved_model.load(str(exports["paths"][name]))
              for name in ("classifier", "question_answerer", "pretrainer")}
    return loaded, exports["tokenizer"].vocabulary_size()


def _ids(rows, tokens, **at):
    """int32 `(rows, tokens)` zeros with `at={"r_c": value}` set."""
    array = np.zeros([rows, tokens], "int32")
    for key, value in at.items():
        row, column = (int(part) for part in key[1:].split("_"))
        array[row, column] = value
    return array


def _numeric(token_ids, segment_ids=None, padding_mask=None, **extra):
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids) if segment_ids is None else segment_ids,
            "padding_mask": np.ones_like(token_ids) if padding_mask is None else padding_mask, **extra}


CASES = [
    ("classifier", "serve_text_pair", {"text": ["a dog", "the cat"], "text_pair": ["a tree"]},
     "text and text_pair must have the same batch size, got 2 and 1 rows: send one text_pair per text"),
    ("question_answerer", "serve_text", {"question": ["who ?"], "context": ["the dog ran .", "the cat sat ."]},
     "question and context must have the same batch size, got 1 and 2 rows: send one context per question"),
    ("classifier", "serve_token_ids", _numeric(_ids(1, 4, r0_1=99999)),
     "token_ids holds 99999, outside the model vocabulary of {V} ids (0 to {V-1}): tokenize with the vocab.txt "
     "exported with this model"),
    ("classifier", "serve_token_ids", _numeric(_ids(2, 4, r1_3=-1)),
     "token_ids holds -1, outside the model vocabulary of {V} ids"),
    ("classifier", "serve_token_ids", _numeric(_ids(2, 0)),
     "token_ids has 0 tokens per row: send at least 1 token per row"),
    ("classifier", "serve_token_ids", _numeric(_ids(1, 600)),
     f"token_ids has 600 tokens per row, more than the {POSITIONS} positions of the model: send at most "
     f"{POSITIONS} tokens per row"),
    ("classifier", "serve_token_ids", _numeric(_ids(1, 4), segment_ids=_ids(1, 4, r0_2=2)),
     "segment_ids holds 2, outside the model segment table of 2 ids (0 to 1): use 0 for the first segment"),
    ("classifier", "serve_token_ids", _numeric(_ids(2, 4), segment_ids=_ids(1, 4)),
     "segment_ids has shape [1 4] but token_ids has shape [2 4]: send token_ids, segment_ids and padding_mask "
     "with the same (batch, tokens) shape"),
    ("classifier", "serve_token_ids", _numeric(_ids(1, 4), padding_mask=np.ones([1, 5], "int32")),
     "padding_mask has shape [1 5] but token_ids has shape [1 4]"),
    ("pretrainer", "serve_token_ids", _numeric(_ids(1, 4, r0_0=99999), mask_positions=np.array([[1]], "int32")),
     "token_ids holds 99999, outside the model vocabulary"),
    ("pretrainer", "serve_token_ids", _numeric(_ids(1, 4), mask_positions=np.array([[1, 4]], "int32")),
     "mask_positions holds 4, outside the 4 tokens of each token_ids row (0 to 3): give positions inside the row"),
    ("pretrainer", "serve_token_ids", _numeric(_ids(1, 4), mask_positions=np.array([[1], [2]], "int32")),
     "mask_positions has 2 rows but token_ids has 1: send one row of mask positions per token_ids row"),
]


@pytest.mark.parametrize("model, signature, inputs, message", CASES,
                         ids=[f"{case[0]}-{case[3].split(':')[0][:40]}" for case in CASES])
@pytest.mark.slow
def test_bad_serving_inputs_are_named_with_value_limit_and_advice(served, model, signature, inputs, message):
    import tensorflow as tf

    loaded, vocabulary_size = served
    message = message.replace("{V}", str(vocabulary_size)).replace("{V-1}", str(vocabulary_size - 1))
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        loaded[model].signatures[signature](**{name: tf.constant(value) for name, value in inputs.items()})
    assert f"assertion failed: [{message}" in str(error.value), str(error.value)


RANK_CASES = [
    ("classifier", "serve_text", {"text": [["a dog"]]}, "Shape of tensor text [1,1] is not compatible with expected "
     "shape [?]"),
    # Both inputs are scalars: TensorFlow checks them in no fixed order, so either name may come first.
    ("classifier", "serve_text_pair", {"text": "a dog", "text_pair": "a cat"}, "Shape of tensor text"),
    ("question_answerer", "serve_text", {"question": [["who ?"]], "context": [["the dog ran ."]]},
     "is not compatible with expected shape [?]"),
    ("classifier", "serve_token_ids", _numeric(np.zeros([1, 2, 3], "int32")), "is not compatible with expected "
     "shape [?,?]"),
]


@pytest.mark.parametrize("model, signature, inputs, message", RANK_CASES,
                         ids=[f"{case[0]}-{case[1]}-rank" for case in RANK_CASES])
def test_serving_inputs_of_another_rank_are_named(served, model, signature, inputs, message):
    """Issue #29 item 7: a loaded signature does not enforce its declared shapes; a text of rank 2 failed deep in
    the tokenizer ("The second input must be a scalar")."""
    import tensorflow as tf

    loaded, _ = served
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Shape of tensor \w+ \[") as error:
        loaded[model].signatures[signature](**{name: tf.constant(value) for name, value in inputs.items()})
    assert message in str(error.value), str(error.value)


def test_inputs_at_the_limits_are_served(served):
    """The checks are not off by one: the last vocabulary id and segment, a row as long as the position table,
    the last mask position and an empty batch all pass."""
    import tensorflow as tf

    loaded, vocabulary_size = served
    token_ids = _ids(2, POSITIONS, r0_0=vocabulary_size - 1)
    segment_ids = _ids(2, POSITIONS, r1_5=1)
    outputs = loaded["classifier"].signatures["serve_token_ids"](
        **{name: tf.constant(value) for name, value in _numeric(token_ids, segment_ids).items()})
    assert outputs["logits"].shape == (2, 3)
    outputs = loaded["pretrainer"].signatures["serve_token_ids"](**{
        name: tf.constant(value) for name, value in
        _numeric(token_ids, mask_positions=np.array([[0, POSITIONS - 1]] * 2, "int32")).items()})
    assert outputs["mlm_logits"].shape == (2, 2, vocabulary_size)
    empty = _numeric(np.zeros([0, 2], "int32"))
    assert loaded["classifier"].signatures["serve_token_ids"](
        **{name: tf.constant(value) for name, value in empty.items()})["logits"].shape == (0, 3)


ONNX_CASES = [
    ("classifier", _numeric(_ids(2, 4, r1_3=-1)), "token_ids holds -1, outside the model vocabulary of 32 ids "
     "(0 to 31): tokenize with the vocab.txt exported with this model"),
    ("classifier", _numeric(_ids(1, 4, r0_1=32)), "token_ids holds 32, outside the model vocabulary of 32 ids"),
    ("classifier", _numeric(_ids(2, 0)), "token_ids has 0 tokens per row, outside 1 to the 32 positions of the "
     "model: send 1 to 32 tokens per row"),
    ("classifier", _numeric(_ids(1, 33)), "token_ids has 33 tokens per row, outside 1 to the 32 positions"),
    ("classifier", _numeric(_ids(0, 4)), "token_ids has shape [0, 4], no rows: send at least one row"),
    ("classifier", _numeric(np.zeros([4], "int32")), "token_ids has shape [4] (rank 1) but the model takes rank 2"),
    ("classifier", _numeric(_ids(1, 4), segment_ids=_ids(1, 4, r0_2=2)),
     "segment_ids holds 2, outside the model segment table of 2 ids (0 to 1)"),
    ("classifier", _numeric(_ids(2, 4), segment_ids=_ids(1, 4)),
     "segment_ids has shape [1, 4] but token_ids has shape [2, 4]: send token_ids, segment_ids and padding_mask "
     "with the same (batch, tokens) shape"),
    ("pretrainer", _numeric(_ids(1, 4), mask_positions=np.array([[1, 4]], "int32")),
     "mask_positions holds 4, outside the 4 tokens of each token_ids row (0 to 3)"),
    ("pretrainer", _numeric(_ids(1, 4), mask_positions=np.array([[1], [2]], "int32")),
     "mask_positions has 2 rows but token_ids has 1"),
]


@pytest.fixture(scope="module")
def onnx_sessions(tmp_path_factory):
    """A tiny classifier and pretrainer exported to ONNX, as ONNX Runtime sessions."""
    onnxruntime = pytest.importorskip("onnxruntime", reason="ONNX serving needs the `onnx` extra")
    from keras_bert_impl.export import export_onnx
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.pretrainer import BertPretrainer

    root = tmp_path_factory.mktemp("onnx_checks")
    tiny = dict(TINY, vocabulary_size=32)
    models = {"classifier": BertClassifier(BertBackbone(**tiny), 3), "pretrainer": BertPretrainer(BertBackbone(**tiny))}
    return {name: onnxruntime.InferenceSession(export_onnx(model, root / f"{name}.onnx"),
                                               providers=["CPUExecutionProvider"]) for name, model in models.items()}


def _onnx_inputs(inputs):
    return {**inputs, "padding_mask": np.asarray(inputs["padding_mask"]).astype(bool)}


@pytest.mark.slow
@pytest.mark.parametrize("model, inputs, message", ONNX_CASES,
                         ids=[f"onnx-{case[0]}-{case[2].split(':')[0][:40]}" for case in ONNX_CASES])
def test_bad_onnx_inputs_are_named_before_onnx_runtime_runs(onnx_sessions, model, inputs, message):
    from keras_bert_impl.export import run_onnx

    with pytest.raises(ValueError) as error:
        run_onnx(onnx_sessions[model], _onnx_inputs(inputs))
    assert str(error.value).startswith(message), str(error.value)


@pytest.mark.slow
def test_onnx_inputs_at_the_limits_are_served_and_match_the_unchecked_session(onnx_sessions):
    """The checks are not off by one (last id and segment, a full-length row, one token), and what they let
    through is what ORT computes; ORT alone serves a token id of -1 (wrapped), which is why they exist."""
    from keras_bert_impl.export import run_onnx

    session = onnx_sessions["classifier"]
    inputs = _onnx_inputs(_numeric(_ids(2, POSITIONS, r0_0=31), segment_ids=_ids(2, POSITIONS, r1_5=1)))
    np.testing.assert_array_equal(run_onnx(session, inputs)[0], session.run(None, inputs)[0])
    assert run_onnx(session, _onnx_inputs(_numeric(_ids(1, 1))))[0].shape == (1, 3)
    assert session.run(None, _onnx_inputs(_numeric(_ids(1, 4, r0_1=-1))))[0].shape == (1, 3)  # unchecked: served
    positions = np.array([[0, POSITIONS - 1]] * 2, "int32")
    outputs = run_onnx(onnx_sessions["pretrainer"],
                       _onnx_inputs(_numeric(_ids(2, POSITIONS), mask_positions=positions)))
    assert outputs[0].shape[:2] == (2, 2)
