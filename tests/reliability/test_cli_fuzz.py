"""Issue #16, "Done when": a table of generated bad files and flag values for every command that reads files.

Each case builds the folder a user points the command at (the bad file beside good ones: a corpus, a
vocabulary, a tiny checkpoint, a tiny fine-tuned classifier), runs `keras-bert` in this process and checks
that it
- ends with exit status 0, 1 or 2, never an uncaught exception (a traceback) or a signal;
- says what went wrong in exactly one line on stderr (argparse's usage block before an exit-2 line aside);
- takes less than 60 s;
- leaves every file the folder had, byte for byte (new files may appear; none may go or change).
"""

import os
import shutil
import signal
import time

import numpy as np
import pytest

from tests.cli.cli_test_utils import SPECIAL_TOKENS, WORDS, run_cli
from tests.training.finetuning_test_utils import write_tiny_checkpoint

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]  # as the other command-line reliability tests

LIMIT_S = 60
RANDOM_BYTES = np.random.default_rng(16).integers(0, 256, 600, dtype=np.uint8).tobytes()
VOCAB = ("\n".join(SPECIAL_TOKENS + [".", *WORDS]) + "\n").encode()
TSV = b"sentence\tlabel\nthe cat sat .\t1\na dog ran .\t0\n"


def _squad(qas, context="the cat sat on the mat ."):
    import json

    return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context,
                                                                                 "qas": qas}]}]}).encode()


GOOD_QUESTION = {"id": "q1", "question": "where ?", "answers": [{"text": "the mat", "answer_start": 15}]}

# (case id, command and flags with {d} for the user's folder, {files}: name -> bytes, or "checkpoint" /
# "classifier" for a copy of a tiny model directory). Ids say what is bad.
CASES = [
    # vocab
    ("vocab-empty-corpus", "vocab --input-files {d}/c.txt --vocab-size 40 --output-dir {d}/out", {"c.txt": b""}),
    ("vocab-binary-corpus", "vocab --input-files {d}/c.txt --vocab-size 40 --output-dir {d}/out",
     {"c.txt": RANDOM_BYTES}),
    ("vocab-no-match", "vocab --input-files {d}/*.nope --vocab-size 40 --output-dir {d}/out", {"c.txt": b"a b\n"}),
    ("vocab-size-negative", "vocab --input-files {d}/c.txt --vocab-size -5 --output-dir {d}/out",
     {"c.txt": b"a b\n"}),
    ("vocab-output-is-file", "vocab --input-files {d}/c.txt --vocab-size 40 --output-dir {d}/keep.txt",
     {"c.txt": b"the cat sat .\n", "keep.txt": b"mine"}),
    ("vocab-input-is-folder", "vocab --input-files {d}/sub --vocab-size 40 --output-dir {d}/out",
     {"sub/a.txt": b"a b\n"}),
    # create-data
    ("create-data-binary-corpus", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o",
     {"c.txt": RANDOM_BYTES, "vocab.txt": VOCAB}),
    ("create-data-empty-vocab", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o",
     {"c.txt": b"the cat sat .\n", "vocab.txt": b""}),
    ("create-data-vocab-not-utf8", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o",
     {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB + b"caf\xe9\n"}),
    ("create-data-vocab-without-specials",
     "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o",
     {"c.txt": b"the cat sat .\n", "vocab.txt": b"the\ncat\n"}),
    ("create-data-length-2", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o "
     "--sequence-length 2", {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB}),
    ("create-data-mask-rate-nan", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o "
     "--mask-rate nan", {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB}),
    ("create-data-prefix-under-file", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt "
     "--output-prefix {d}/keep.txt/o", {"c.txt": b"the cat sat .\n\nthe dog ran .\n", "vocab.txt": VOCAB,
                                         "keep.txt": b"mine"}),
    ("create-data-shards-0", "create-data --input-files {d}/c.txt --vocab {d}/vocab.txt --output-prefix {d}/o "
     "--num-shards 0", {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB}),
    # pretrain
    ("pretrain-missing-vocab", "pretrain --input-files {d}/c.txt --vocab-file {d}/nope.txt --preset tiny "
     "--output-dir {d}/run", {"c.txt": b"the cat sat .\n"}),
    ("pretrain-blank-corpus", "pretrain --input-files {d}/c.txt --vocab-file {d}/vocab.txt --preset tiny "
     "--steps 2 --checkpoint-every 2 --output-dir {d}/run", {"c.txt": b"\n\n  \n\n", "vocab.txt": VOCAB}),
    ("pretrain-garbage-init-checkpoint", "pretrain --input-files {d}/c.txt --vocab-file {d}/vocab.txt "
     "--init-checkpoint {d}/ckpt --steps 2 --checkpoint-every 2 --sequence-length 32 --output-dir {d}/run",
     {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB, "ckpt/config.json": b"{not json",
      "ckpt/model.safetensors": RANDOM_BYTES}),
    ("pretrain-config-not-json", "pretrain --config {d}/flags.json", {"flags.json": b"{\"steps\": 2,,}"}),
    ("pretrain-config-unknown-key", "pretrain --config {d}/flags.json",
     {"flags.json": b"{\"stepz\": 2, \"checkpoint_every\": 2}"}),
    ("pretrain-garbage-tfrecords", "pretrain --input-tfrecords {d}/data.tfrecord --preset tiny --steps 2 --checkpoint-every 2 "
     "--vocab-file {d}/vocab.txt --output-dir {d}/run", {"data.tfrecord": RANDOM_BYTES, "vocab.txt": VOCAB}),
    ("pretrain-batch-size-0", "pretrain --input-files {d}/c.txt --vocab-file {d}/vocab.txt --batch-size 0 "
     "--output-dir {d}/run", {"c.txt": b"the cat sat .\n", "vocab.txt": VOCAB}),
    # finetune-classifier
    ("classifier-ragged-tsv", "finetune-classifier --train-file {d}/train.tsv --text-columns sentence "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.tsv": b"sentence\tlabel\nthe cat sat .\n", "ckpt": "checkpoint"}),
    ("classifier-binary-train", "finetune-classifier --train-file {d}/train.tsv --text-columns sentence "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.tsv": RANDOM_BYTES, "ckpt": "checkpoint"}),
    ("classifier-missing-text-column", "finetune-classifier --train-file {d}/train.tsv --text-columns nope "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.tsv": TSV, "ckpt": "checkpoint"}),
    ("classifier-corrupt-config", "finetune-classifier --train-file {d}/train.tsv --text-columns sentence "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.tsv": TSV, "ckpt": "checkpoint", "ckpt/config.json": b"{\"vocabulary_size\": "}),
    ("classifier-truncated-weights", "finetune-classifier --train-file {d}/train.tsv --text-columns sentence "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.tsv": TSV, "ckpt": "checkpoint", "ckpt/model.safetensors": RANDOM_BYTES[:40]}),
    ("classifier-malformed-jsonl", "finetune-classifier --train-file {d}/train.jsonl --file-format jsonl "
     "--text-columns sentence --label-column label --init-checkpoint {d}/ckpt --output-dir {d}/run",
     {"train.jsonl": b"{\"sentence\": \"a\", \"label\": 1}\n{\"sentence\": \n", "ckpt": "checkpoint"}),
    ("classifier-output-is-user-folder", "finetune-classifier --train-file {d}/train.tsv --text-columns sentence "
     "--label-column label --init-checkpoint {d}/ckpt --output-dir {d}/ckpt --epochs 1 --batch-size 2 "
     "--sequence-length 32",
     {"train.tsv": TSV, "ckpt": "checkpoint"}),
    # finetune-squad
    ("squad-malformed-json", "finetune-squad --train-file {d}/train.json --init-checkpoint {d}/ckpt "
     "--output-dir {d}/run", {"train.json": b"{\"data\": [", "ckpt": "checkpoint"}),
    ("squad-data-not-a-list", "finetune-squad --train-file {d}/train.json --init-checkpoint {d}/ckpt "
     "--output-dir {d}/run", {"train.json": b"{\"data\": {\"a\": 1}}", "ckpt": "checkpoint"}),
    ("squad-answer-start-text", "finetune-squad --train-file {d}/train.json --init-checkpoint {d}/ckpt "
     "--output-dir {d}/run --sequence-length 64 --doc-stride 32 --max-query-length 16",
     {"train.json": _squad([{**GOOD_QUESTION, "answers": [{"text": "mat", "answer_start": "x"}]}]),
      "ckpt": "checkpoint"}),
    ("squad-doc-stride-0", "finetune-squad --train-file {d}/train.json --init-checkpoint {d}/ckpt "
     "--output-dir {d}/run --doc-stride 0", {"train.json": _squad([GOOD_QUESTION]), "ckpt": "checkpoint"}),
    # predict
    ("predict-missing-model", "predict --model {d}/nope --text hello", {"keep.txt": b"mine"}),
    ("predict-garbage-model-config", "predict --model {d}/model --text hello",
     {"model": "classifier", "model/config.json": RANDOM_BYTES}),
    ("predict-empty-input-file", "predict --model {d}/model --input-file {d}/texts.txt",
     {"model": "classifier", "texts.txt": b""}),
    ("predict-binary-input-file", "predict --model {d}/model --input-file {d}/texts.txt",
     {"model": "classifier", "texts.txt": RANDOM_BYTES}),
    ("predict-output-under-file", "predict --model {d}/model --text hello --output-file {d}/keep.txt/p.json",
     {"model": "classifier", "keep.txt": b"mine"}),
    ("predict-squad-file-on-classifier", "predict --model {d}/model --squad-file {d}/dev.json",
     {"model": "classifier", "dev.json": b"[1, 2"}),
    # evaluate
    ("evaluate-malformed-predictions", "evaluate --squad-file {d}/dev.json --predictions {d}/p.json",
     {"dev.json": _squad([GOOD_QUESTION]), "p.json": b"{\"q1\": "}),
    ("evaluate-predictions-list", "evaluate --squad-file {d}/dev.json --predictions {d}/p.json",
     {"dev.json": _squad([GOOD_QUESTION]), "p.json": b"[\"the mat\"]"}),
    ("evaluate-binary-squad-file", "evaluate --squad-file {d}/dev.json --predictions {d}/p.json",
     {"dev.json": RANDOM_BYTES, "p.json": b"{\"q1\": \"the mat\"}"}),
    ("evaluate-gold-missing-column", "evaluate --gold-file {d}/dev.tsv --label-column nope --predictions {d}/p.tsv",
     {"dev.tsv": TSV, "p.tsv": b"label\n1\n0\n"}),
    # convert
    ("convert-garbage-input-file", "convert --input {d}/model.bin --output {d}/out", {"model.bin": RANDOM_BYTES}),
    ("convert-empty-input-folder", "convert --input {d}/in --output {d}/out", {"in/.keep": b""}),
    ("convert-output-is-user-folder", "convert --input {d}/model --output {d}/mine",
     {"model": "classifier", "mine/notes.txt": b"mine", "mine/sub/data.csv": b"1,2\n"}),
    ("convert-truncated-config", "convert --input {d}/model --output {d}/out",
     {"model": "classifier", "model/config.json": b"{\"class_name\": \"BertCl"}),
    # export
    ("export-missing-model", "export --model {d}/nope --output {d}/out", {"keep.txt": b"mine"}),
    ("export-truncated-weights", "export --model {d}/model --output {d}/out",
     {"model": "classifier", "model/model.safetensors": RANDOM_BYTES[:100]}),
    ("export-output-is-user-folder", "export --model {d}/model --output {d}/mine",
     {"model": "classifier", "mine/notes.txt": b"mine"}),
    ("export-sequence-length-huge", "export --model {d}/model --output {d}/out --sequence-length 100000",
     {"model": "classifier"}),
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """A tiny backbone checkpoint and a tiny classifier directory, copied into each case's folder."""
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from tests.helpers import tiny_backbone

    root = tmp_path_factory.mktemp("fuzz_models")
    vocabulary = SPECIAL_TOKENS + [".", *WORDS]
    BertClassifier(tiny_backbone(vocabulary_size=len(vocabulary)), 2).save_pretrained(root / "classifier")
    BertTokenizer(vocabulary).save_pretrained(root / "classifier")
    return {"checkpoint": write_tiny_checkpoint(root / "checkpoint"), "classifier": root / "classifier"}


def _build(folder, files, model_dirs):
    for name, content in files.items():  # model copies first, so a bad file can replace one of theirs
        if isinstance(content, str):
            shutil.copytree(model_dirs[content], folder / name)
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content)


def _snapshot(folder):
    return {os.path.relpath(os.path.join(root, name), folder): open(os.path.join(root, name), "rb").read()
            for root, _, names in os.walk(folder) for name in names}


def _message_lines(err):
    """stderr without argparse's usage block (`usage: ...` and its indented continuation lines)."""
    lines, in_usage = [], False
    for line in err.splitlines():
        if line.startswith("usage:"):
            in_usage = True
        elif in_usage and line.startswith(" "):
            continue
        else:
            in_usage = False
            if line.strip():
                lines.append(line)
    return lines


class _TookTooLong(BaseException):
    """Raised by the alarm; a BaseException so that the command's own error handling cannot swallow it."""


def _alarm(signum, frame):
    raise _TookTooLong(f"the command ran for more than {LIMIT_S} s")


# Defects the table found, fixed: the line each of these cases gave before said neither file nor fix.
NAMED = {
    "vocab-output-is-file": "keep.txt' is a file, not a directory; choose another output path",  # [Errno 17] File exists
    "predict-garbage-model-config": "config.json, line 1: bytes b'\\xe0' at byte 2 of the line are not valid UTF-8",
    # TensorFlow's "{{function_node ...IteratorGetNext}} corrupted record at 0", without the file
    "pretrain-garbage-tfrecords": "data.tfrecord is not a TFRecord file (its first record is corrupted)",
}


@pytest.mark.parametrize("case, argv, files", CASES, ids=[case[0] for case in CASES])
def test_bad_input_ends_in_one_line_within_a_minute_and_keeps_every_file(tmp_path, capsys, model_dirs, case, argv,
                                                                         files):
    folder = tmp_path / "user"
    folder.mkdir()
    _build(folder, files, model_dirs)
    before = _snapshot(folder)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    start = time.monotonic()
    try:
        status, _, err = run_cli(capsys, *argv.format(d=folder).split())
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.monotonic() - start
    assert status in (0, 1, 2), (status, err)
    assert "Traceback" not in err, err
    lines = _message_lines(err)
    if status == 0:
        assert lines == [], err
    else:
        assert len(lines) == 1 and lines[0].startswith(f"keras-bert {argv.split()[0]}: error: "), err
        assert NAMED.get(case, "") in lines[0]
    assert elapsed < LIMIT_S
    after = _snapshot(folder)
    assert {name: after.get(name) for name in before} == before, f"files lost or changed: {err}"


def test_the_table_covers_every_command_that_reads_files():
    commands = {case[1].split()[0] for case in CASES}
    assert commands == {"vocab", "create-data", "pretrain", "finetune-classifier", "finetune-squad", "predict",
                        "evaluate", "convert", "export"}
    assert len(CASES) >= 30 and len({case[0] for case in CASES}) == len(CASES)
