"""Issue #29 items 7 and 9: a generated fuzz of the JSON files the package reads.

From one good file of each kind (our `config.json` and `preprocessor.json`, a Hugging Face `config.json` and
`model.safetensors.index.json`, a `training_state.json`) the table makes every key the readers need missing,
every such key each wrong JSON type, and sizes absurd (negative, zero, 10**9). Each case runs the command that
reads the file in this process and must end with exit 1 (2 for flags), one line on stderr naming the file, no
traceback, in under 30 s. Training states are read through `TrainingCheckpoint.restore`, whose error must be
one that `keras-bert` prints as one line.
"""

import copy
import json
import os
import shutil
import signal
import time

import pytest

from tests.cli.cli_test_utils import run_cli
from tests.reliability.test_cli_fuzz import _alarm, _message_lines
from tests.training.finetuning_test_utils import TINY_CHECKPOINT_BACKBONE, tokenizer

pytestmark = pytest.mark.backend_independent  # raw-text predict needs the TensorFlow preprocessor

LIMIT_S = 30
DELETE = object()
# One value of each JSON type; a case puts each one the key does not take.
WRONG_VALUES = {"string": "x", "number": 1.5, "boolean": True, "null": None, "list": [1], "object": {"a": 1}}
ABSURD_SIZES = (-1, 0)
# 10**9: sizes no machine can hold, refused before anything is allocated (`checkpoints.conversion.check_config_fits`,
# the saved preprocessor's length against the position table); without those checks a model of 10**9 layers is
# built for minutes and a preprocessor pads every text to 10**9 ids.

BACKBONE_KEYS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim")
HUGGINGFACE_KEYS = ("vocab_size", "num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size")
# File kind -> (the file in the model folder, the command that reads it, {key path: JSON types it takes, "absent"
# where it may be missing}, the key paths that hold sizes).
FILES = {
    "native-config": ("model/config.json", "predict --model {d}/model --text the", {
        (): ("object",), ("class_name",): ("string",), ("config",): ("object",), ("extra",): ("object",),
        ("extra", "backbone_config"): ("object",), ("config", "labels"): ("list", "null", "absent"),
        **{("extra", "backbone_config", key): ("integer",) for key in BACKBONE_KEYS}},
        [("extra", "backbone_config", key) for key in BACKBONE_KEYS]),
    "preprocessor": ("model/preprocessor.json", "predict --model {d}/model --text the", {
        (): ("object",), ("class_name",): ("string",), ("config",): ("object",),
        ("config", "sequence_length"): ("integer", "absent")}, [("config", "sequence_length")]),
    "huggingface-config": ("hf/config.json", "convert --input {d}/hf --output {d}/out", {
        (): ("object",), ("hidden_act",): ("string", "absent"), ("model_type",): ("string", "absent"),
        **{(key,): ("integer",) for key in HUGGINGFACE_KEYS}}, [(key,) for key in HUGGINGFACE_KEYS]),
    "index": ("hf_sharded/model.safetensors.index.json", "convert --input {d}/hf_sharded --output {d}/out", {
        (): ("object",), ("weight_map",): ("object",), ("weight_map", "embeddings.word_embeddings.weight"): (
            "string", "absent")}, []),
}
STATE_TYPES = {(): ("object",), ("step",): ("integer",), ("epoch",): ("integer",),
               ("settings",): ("object", "null", "absent")}


def _kinds(value):
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    return {{str: "string", float: "number", type(None): "null", list: "list", dict: "object"}[type(value)]}


def _mutations(types, sizes):
    """`(id, key path, new value or DELETE, marks)` for each missing key, wrong type and absurd size."""
    for path, kinds in types.items():
        name = ".".join(path) or "document"
        if path and "absent" not in kinds:
            yield f"{name}-missing", path, DELETE, ()
        for label, value in WRONG_VALUES.items():
            if not _kinds(value) & set(kinds):
                yield f"{name}-{label}", path, value, ()
    for path in sizes:
        for value in ABSURD_SIZES:
            yield f"{'.'.join(path)}-{value}", path, value, ()
        yield f"{'.'.join(path)}-huge", path, 10**9, ()


def _mutated(document, path, value):
    if not path:
        return value
    document = copy.deepcopy(document)
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value
    return document


CASES = [pytest.param(kind, path, value, id=f"{kind}-{case}", marks=marks)
         for kind, (_, _, types, sizes) in FILES.items() for case, path, value, marks in _mutations(types, sizes)]
STATE_CASES = [pytest.param(path, value, id=case, marks=marks)
               for case, path, value, marks in _mutations(STATE_TYPES, [("step",), ("epoch",)]) if value != 10**9]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A tiny classifier with its preprocessor, and the same encoder as a Hugging Face folder, whole and
    sharded (`model.safetensors.index.json`)."""
    from keras_bert_impl.checkpoints import save_huggingface
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor

    root = tmp_path_factory.mktemp("json_fuzz")
    backbone = BertBackbone(vocabulary_size=tokenizer().vocabulary_size(), **TINY_CHECKPOINT_BACKBONE)
    BertClassifier(backbone, 2, preprocessor=BertPreprocessor(tokenizer(), sequence_length=16)).save_pretrained(
        root / "model")
    save_huggingface(backbone, root / "hf")
    shutil.copytree(root / "hf", root / "hf_sharded")
    from safetensors.numpy import load_file

    names = load_file(root / "hf" / "model.safetensors")
    os.rename(root / "hf_sharded" / "model.safetensors", root / "hf_sharded" / "model-00001-of-00001.safetensors")
    (root / "hf_sharded" / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": dict.fromkeys(names, "model-00001-of-00001.safetensors")}))
    return root


def _run_with_limit(capsys, argv):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    start = time.monotonic()
    try:
        status, _, err = run_cli(capsys, *argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return status, err, time.monotonic() - start


@pytest.mark.parametrize("kind, path, value", CASES)
def test_a_bad_json_file_ends_in_one_line_naming_it(tmp_path, capsys, folders, kind, path, value):
    relative, command, _, _ = FILES[kind]
    for name in ("model", "hf", "hf_sharded"):
        shutil.copytree(folders / name, tmp_path / name)
    file = tmp_path / relative
    file.write_text(json.dumps(_mutated(json.loads(file.read_text()), path, value)))
    status, err, elapsed = _run_with_limit(capsys, command.format(d=tmp_path).split())
    lines = _message_lines(err)
    assert status in (1, 2) and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith(f"keras-bert {command.split()[0]}: error: "), err
    assert elapsed < LIMIT_S
    assert os.path.basename(relative) in lines[0] and (".".join(path) or "the document") in lines[0], lines[0]


@pytest.mark.parametrize("path, value", STATE_CASES)
def test_a_bad_training_state_is_one_line_naming_it(tmp_path, path, value):
    import keras

    from keras_bert_impl.cli.command_line import _is_user_facing, _one_line
    from keras_bert_impl.training.callbacks import TrainingCheckpoint

    step = tmp_path / "checkpoints" / "step_00000002"
    step.mkdir(parents=True)
    (step / "training.weights.h5").write_bytes(b"not read before the state")
    state = {"step": 2, "epoch": 1, "logs": {}, "settings": {"learning_rate": 0.001}}
    (step / "training_state.json").write_text(json.dumps(_mutated(state, path, value)))
    (tmp_path / "checkpoints" / "latest").write_text("step_00000002\n")
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    checkpoint = TrainingCheckpoint(str(tmp_path / "checkpoints"), steps_per_epoch=1,
                                    settings={"learning_rate": 0.001})
    with pytest.raises(Exception) as caught:
        checkpoint.restore(model)
    assert _is_user_facing(caught.value), repr(caught.value)
    message = _one_line(caught.value)
    assert "\n" not in message and "training_state.json" in message, message


def test_the_fuzz_covers_every_json_file_kind_and_defect():
    assert {case.values[0] for case in CASES} == set(FILES)
    ids = [case.id for case in CASES] + [case.id for case in STATE_CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 100
    assert all(any(case_id.endswith(ending) for case_id in ids) for ending in ("-missing", "-null", "--1", "-huge"))
