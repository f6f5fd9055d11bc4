"""Issue #29 items 1, 8 and 6 (outputs): a command never writes onto what is not its own. An output that is, is
inside or holds an input (convert's `--input`, export's `--model`, a fine-tune's or pretraining's
`--init-checkpoint`) is refused in one line; a folder is replaced only if this package wrote it (its marker
file, not a `config.json`), by `convert` / `export` only with `--overwrite`; these checks run before any model is
built. The temporaries a killed writer leaves beside its output are removed by the next write of that output,
and export stages nothing in the system temp directory."""

import hashlib
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

from keras_bert_impl.utils.atomic_io import MARKER_FILE
from tests.cli.cli_test_utils import run_cli
from tests.training.finetuning_test_utils import write_mrpc_tsv, write_tiny_checkpoint

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hashes(folder):
    """`{relative path: sha256}` of every file under `folder`."""
    return {os.path.relpath(os.path.join(root, name), folder):
            hashlib.sha256(pathlib.Path(root, name).read_bytes()).hexdigest()
            for root, _, names in os.walk(folder) for name in names}


def _hub_folder(path, checkpoint):
    """A Hugging Face model folder as downloaded (not ours): weights, config, tokenizer, model card, pooling."""
    from keras_bert_impl.checkpoints import save_huggingface
    from keras_bert_impl.models.backbone import BertBackbone

    save_huggingface(BertBackbone.from_pretrained(checkpoint), path)
    os.remove(os.path.join(path, MARKER_FILE))
    for name, text in (("vocab.txt", pathlib.Path(checkpoint, "vocab.txt").read_text()),
                       ("tokenizer.json", '{"version": "1.0"}'), ("README.md", "# model card\n"),
                       (os.path.join("1_Pooling", "config.json"), '{"pooling_mode_mean_tokens": true}')):
        os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
        with open(os.path.join(path, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return str(path)


def _nothing_loaded(monkeypatch):
    """Make building or loading a model fail loudly: a refusal must come before it."""
    from keras_bert_impl.models import task_loading
    from keras_bert_impl.training.finetuning import ModelSource

    def fail(*args, **kwargs):
        raise AssertionError("a model was loaded before the output was checked")

    monkeypatch.setattr(task_loading, "load_task", fail)
    monkeypatch.setattr(ModelSource, "build", fail)


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_convert_in_place_and_onto_a_foreign_folder_are_refused_and_leave_it_byte_identical(
        tmp_path, capsys, monkeypatch, overwrite):
    checkpoint = write_tiny_checkpoint(tmp_path / "ours")
    hub, other = _hub_folder(tmp_path / "hub", checkpoint), _hub_folder(tmp_path / "other", checkpoint)
    before = {hub: _hashes(hub), other: _hashes(other)}
    _nothing_loaded(monkeypatch)
    cases = [(hub, hub, "is the input"), (hub, os.path.join(hub, "converted"), "is inside the input"),
             (checkpoint, other, "non-empty folder that keras_bert_impl did not write")]
    for source, output, expected in cases:
        status, out, err = run_cli(capsys, "convert", "--input", source, "--output", output, *overwrite)
        assert status == 1 and expected in err and len(err.strip().splitlines()) == 1, err
        assert not out
    assert {hub: _hashes(hub), other: _hashes(other)} == before
    assert "tokenizer.json" in before[hub] and "model.safetensors" in before[hub]


def test_convert_refuses_an_output_that_holds_its_input(tmp_path, capsys):
    run = tmp_path / "run"
    assert run_cli(capsys, "convert", "--input", write_tiny_checkpoint(tmp_path / "ours"), "--output", run)[0] == 0
    checkpoint = write_tiny_checkpoint(run / "model")  # inside a folder of ours: --overwrite would delete it
    status, _, err = run_cli(capsys, "convert", "--input", checkpoint, "--output", run, "--overwrite")
    assert status == 1 and f"{run} holds the input {checkpoint}" in err
    assert (run / "model" / "model.safetensors").is_file()


@pytest.mark.parametrize("export_format, name", [("saved_model", "served"), ("onnx", "model.onnx")])
def test_export_into_its_model_directory_is_refused(tmp_path, capsys, monkeypatch, export_format, name):
    checkpoint = write_tiny_checkpoint(tmp_path / "model")
    before = _hashes(checkpoint)
    _nothing_loaded(monkeypatch)
    status, _, err = run_cli(capsys, "export", "--model", checkpoint, "--format", export_format,
                             "--output", os.path.join(checkpoint, name))
    assert status == 1 and "is inside the input" in err and len(err.strip().splitlines()) == 1, err
    assert _hashes(checkpoint) == before


@pytest.mark.parametrize("output", ["same", "inside", "holding"])
def test_finetune_results_never_go_into_the_init_checkpoint(tmp_path, capsys, monkeypatch, output):
    run = tmp_path / "run"
    run.mkdir()
    (run / MARKER_FILE).write_text("")  # a previous run of ours, holding the checkpoint to score
    checkpoint = write_tiny_checkpoint(run / "best")
    before = _hashes(run)
    dev = write_mrpc_tsv(tmp_path / "dev.tsv", 4, seed=0)
    _nothing_loaded(monkeypatch)
    target = {"same": checkpoint, "inside": os.path.join(checkpoint, "scores"), "holding": run}[output]
    status, _, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--dev-file", dev, "--epochs", "0",
                             "--init-checkpoint", checkpoint, "--output-dir", target)
    relation = {"same": "is the input", "inside": "is inside the input", "holding": "holds the input"}[output]
    assert status == 1 and f"The fine-tuning output directory {target} {relation} {checkpoint}" in err, err
    assert len(err.strip().splitlines()) == 1
    assert _hashes(run) == before  # no eval_results.json, dev_predictions.tsv or marker written


def test_finetune_refuses_a_foreign_folder_before_building_and_resumes_in_its_own(tmp_path, capsys, monkeypatch):
    from keras_bert_impl.utils.atomic_io import (
        OutputExistsError,
        check_output,
        claim_output_directory,
    )

    foreign = tmp_path / "data"
    foreign.mkdir()
    (foreign / "eval_results.json").write_text('{"accuracy": 0.9}')
    train = write_mrpc_tsv(tmp_path / "train.tsv", 4, seed=0)
    _nothing_loaded(monkeypatch)
    status, _, err = run_cli(capsys, "finetune-classifier", "--task", "mrpc", "--train-file", train, "--preset",
                             "tiny", "--vocab", write_tiny_checkpoint(tmp_path / "vocab"), "--output-dir", foreign)
    assert status == 1 and f"{foreign} is a non-empty folder that keras_bert_impl did not write" in err, err
    assert os.listdir(foreign) == ["eval_results.json"]
    run = tmp_path / "run"
    run.mkdir()
    (run / ".keras_bert.lock").write_text("{}")  # the run's own lock (utils.output_lock), taken first
    assert claim_output_directory(str(run)) == str(run)  # a new folder: created and marked
    (run / "last").mkdir()
    assert claim_output_directory(str(run)) == str(run)  # ours: a rerun resumes there
    assert sorted(os.listdir(run)) == [".keras_bert.lock", MARKER_FILE, "last"]
    (tmp_path / "file").write_text("x")
    for blocked in (tmp_path / "file", tmp_path / "file" / "run"):
        with pytest.raises(NotADirectoryError, match="file'? is a file, not a directory; choose another output"):
            claim_output_directory(str(blocked))
    with pytest.raises(OutputExistsError, match="is an existing file"):  # a folder to replace
        check_output(str(tmp_path / "file"))


def test_a_failed_run_removes_the_folder_it_created_and_keeps_its_own_earlier_one(tmp_path):
    from keras_bert_impl.utils.atomic_io import claimed_output_directory

    for folder in (tmp_path / "new", tmp_path / "earlier"):
        with pytest.raises(RuntimeError), claimed_output_directory(str(folder)):
            assert os.listdir(folder) == [MARKER_FILE]
            if folder.name == "new":
                raise RuntimeError("refused input")
            (folder / "last").mkdir()
            raise RuntimeError("a later failure")
    assert sorted(os.listdir(tmp_path)) == ["earlier"] and sorted(os.listdir(tmp_path / "earlier")) == [
        MARKER_FILE, "last"]


def test_pretraining_into_its_init_checkpoint_is_refused(tmp_path, capsys):
    checkpoint = write_tiny_checkpoint(tmp_path / "bert")
    before = _hashes(checkpoint)
    (tmp_path / "corpus.txt").write_text("the cat sat.\nthe dog ran.\n\nthe bird flew.\nit was red.\n")
    status, _, err = run_cli(capsys, "pretrain", "--input-files", tmp_path / "corpus.txt", "--init-checkpoint",
                             checkpoint, "--output-dir", checkpoint, "--steps", "1",
                             "--checkpoint-every", "1")
    assert status == 1 and "The pretraining output directory" in err and "is the input" in err, err
    assert _hashes(checkpoint) == before


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def test_the_next_write_removes_only_the_temporaries_of_dead_writers_of_that_name(tmp_path):
    from keras_bert_impl.utils.atomic_io import atomic_directory, atomic_write_text

    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = [f".out.tmp-{dead}-abcd1234", f".out.old-{dead}-abcd_678", ".out.tmp-k2j4h5g6",  # no pid: older
                 f".vocab.txt.tmp-{dead}-zz99zz99"]
        kept = [f".out.tmp-{live.pid}-abcd1234", f".out2.tmp-{dead}-abcd1234", f".vocab.txt.tmp-{live.pid}-a1",
                ".out.tmp-notes.txt", ".other.tmp-1", "notes.txt"]
        for name in stale + kept:
            if name.startswith(".vocab") or "." in name[len(".out.tmp-"):] or name == "notes.txt":
                (tmp_path / name).write_bytes(b"x" * 100)
            else:
                (tmp_path / name).mkdir()
                (tmp_path / name / "model.safetensors").write_bytes(b"x" * 1000)
        with atomic_directory(str(tmp_path / "out")) as tmp:
            atomic_write_text(os.path.join(tmp, "config.json"), "{}")
        atomic_write_text(str(tmp_path / "vocab.txt"), "[PAD]\n")
        assert sorted(os.listdir(tmp_path)) == sorted(kept + ["out", "vocab.txt"])
    finally:
        live.kill()
        live.wait()


_KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import tensorflow as tf
    from keras_bert_impl.tokenization import BertTokenizer
    from keras_bert_impl.cli import main

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[1] == "convert":
        BertTokenizer.save_pretrained = die  # after the weights are staged
    else:
        tf.saved_model.save = die  # after the assets are staged
    main(sys.argv[1:])
""")


@pytest.mark.parametrize("command", ["convert", "export"])
@pytest.mark.slow
def test_a_killed_writer_leaves_nothing_in_the_system_temp_dir_and_the_next_run_cleans_up(tmp_path, capsys,
                                                                                          command):
    checkpoint = write_tiny_checkpoint(tmp_path / "model")
    system_temp = tmp_path / "system_temp"
    system_temp.mkdir()
    output = tmp_path / "out"
    flag = "--input" if command == "convert" else "--model"
    env = dict(os.environ, PYTHONPATH=REPO, KERAS_BACKEND="tensorflow", TMPDIR=str(system_temp))
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, command, flag, checkpoint, "--output", output],
                            env=env, capture_output=True, text=True, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    leftovers = [name for name in os.listdir(tmp_path) if name.startswith(".out.tmp-")]
    assert leftovers and os.listdir(system_temp) == []
    status, _, err = run_cli(capsys, command, flag, checkpoint, "--output", output)
    assert status == 0, err
    assert sorted(os.listdir(tmp_path)) == ["model", "out", "system_temp"]
    assert os.path.isfile(output / MARKER_FILE)


def test_an_original_tf_prefix_counts_as_an_input_and_a_hub_id_does_not(tmp_path, monkeypatch):
    from keras_bert_impl.utils.atomic_io import check_not_input

    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "bert_model.ckpt.index").write_bytes(b"")
    prefix = str(tmp_path / "ckpt" / "bert_model.ckpt")
    with pytest.raises(ValueError, match=r"The output .*ckpt holds the input .*bert_model\.ckpt; writing there"):
        check_not_input(str(tmp_path / "ckpt"), [prefix])
    check_not_input(str(tmp_path / "ckpt" / "ours"), [prefix])  # a new folder beside the checkpoint's files
    monkeypatch.chdir(tmp_path)
    check_not_input(".", ["google-bert/bert-base-uncased", None])  # a Hub id is no local path


def test_a_folder_another_process_is_claiming_is_not_taken_for_someone_elses(tmp_path):
    """Processes of one distributed run claim the run folder at once: the marker another one is writing (its
    temporary) or its lock does not make the folder foreign; anything else still does."""
    from keras_bert_impl.utils.atomic_io import RUN_LOCK_FILE, OutputExistsError, claim_output_directory

    run = tmp_path / "run"
    run.mkdir()
    (run / f".{MARKER_FILE}.tmp-12345-abcd1234").write_text("being written")
    (run / RUN_LOCK_FILE).write_text("{}")
    (run / f"{RUN_LOCK_FILE}.takeover").write_text("")
    assert claim_output_directory(str(run)) == str(run)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / ".keras_bert_impl.tmp.txt").write_text("a user's file")
    with pytest.raises(OutputExistsError, match="did not write"):
        claim_output_directory(str(foreign))
