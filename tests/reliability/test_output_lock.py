"""One writer per output (`utils.output_lock`): a second run into a held output refuses in one line naming the
holder, a killed run's stale lock is taken over (by one of several racing runs only), and every long writer
(fine-tune recipes, `finetune`, `pretrain`, `convert`, export) takes the lock before it builds or reads
anything. The SIGKILL-and-resume path is in `test_kill_and_resume.py`."""

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time

import keras
import pytest

from keras_bert_impl.utils import output_lock as locking
from keras_bert_impl.utils.output_lock import LOCK_NAME, OutputInUseError, lock_path, locks_output, output_lock

pytestmark = pytest.mark.backend_independent

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENVIRONMENT = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONPATH=REPOSITORY + os.pathsep + os.environ.get("PYTHONPATH", ""))


def dead_pid():
    """The pid of a process of this host that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_lock(path, pid, host=None, started="2026-01-02 03:04:05 UTC", command="keras-bert finetune-ner --x"):
    record = {"pid": pid, "host": host or socket.gethostname(), "started": started, "command": command}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    return record


def test_the_lock_records_its_holder_and_is_released_on_exit_and_on_errors(tmp_path):
    out = tmp_path / "run"
    with output_lock(out):
        record = json.loads((out / LOCK_NAME).read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        assert record["started"].endswith("UTC") and record["command"]
        with output_lock(out):  # nested in the same thread (a recipe calling finetune): held once
            pass
        assert (out / LOCK_NAME).exists()
        (out / "result.txt").write_text("x")
    assert sorted(os.listdir(out)) == ["result.txt"]
    with pytest.raises(RuntimeError), output_lock(out):
        raise RuntimeError("the run failed")
    assert sorted(os.listdir(out)) == ["result.txt"]
    with output_lock(tmp_path / "nothing_written"):
        pass
    assert not (tmp_path / "nothing_written").exists()  # a run that wrote nothing leaves no folder


def test_a_replaced_output_is_locked_beside_it_never_inside(tmp_path):
    assert lock_path(tmp_path / "saved" / "mrpc", replaced=True) == str(tmp_path / "saved" / ".mrpc.lock")
    with output_lock(tmp_path / "saved" / "mrpc", replaced=True):
        assert os.listdir(tmp_path / "saved") == [".mrpc.lock"]
        os.makedirs(tmp_path / "saved" / "mrpc")  # what the writer replaces
    assert os.listdir(tmp_path / "saved") == ["mrpc"]
    assert os.listdir(tmp_path / "saved" / "mrpc") == []


def test_a_live_holder_is_refused_in_one_line_naming_it(tmp_path):
    out = tmp_path / "run"
    hold = (f"import sys\nfrom keras_bert_impl.utils.output_lock import output_lock\n"
            f"with output_lock({str(out)!r}):\n    print('held', flush=True)\n    sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", hold], env=ENVIRONMENT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = json.loads((out / LOCK_NAME).read_text())["started"]
        with pytest.raises(OutputInUseError) as refused, output_lock(out):
            pass
        message = str(refused.value)
        assert "\n" not in message
        assert f"{out} is being written by another run: pid {holder.pid} on host {socket.gethostname()}, " \
               f"started {started}" in message
        assert "wait for it to finish or choose another output path" in message
    finally:
        holder.communicate("")
    assert holder.returncode == 0
    assert not (out / LOCK_NAME).exists()
    with output_lock(out):  # released: free again
        pass


def test_another_thread_of_the_same_process_is_refused(tmp_path):
    entered, release, errors = threading.Event(), threading.Event(), []

    def hold():
        with output_lock(tmp_path):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert entered.wait(10)
        with pytest.raises(OutputInUseError, match=f"pid {os.getpid()} "), output_lock(tmp_path):
            errors.append("entered")
    finally:
        release.set()
        thread.join()
    assert not errors and not (tmp_path / LOCK_NAME).exists()


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path, caplog):
    stale = write_lock(str(tmp_path / LOCK_NAME), dead_pid())
    with caplog.at_level(logging.WARNING), output_lock(tmp_path):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert f"Taking over the stale lock {tmp_path / LOCK_NAME} of pid {stale['pid']}" in caplog.text
    assert os.listdir(tmp_path) == []  # nothing left of the stale lock either


@pytest.mark.parametrize("case", ["other host", "alive", "unreadable"])
def test_locks_that_may_be_live_are_not_taken_over(tmp_path, monkeypatch, case):
    path = tmp_path / LOCK_NAME
    if case == "unreadable":
        monkeypatch.setattr(locking, "_UNREADABLE_RETRIES", 2)
        path.write_text("{not json")
    else:  # a pid of another host cannot be checked from here; our parent process is alive
        write_lock(path, dead_pid() if case == "other host" else os.getppid(),
                   host="elsewhere" if case == "other host" else None)
    before = path.read_text()
    with pytest.raises(OutputInUseError) as refused, output_lock(tmp_path):
        pass
    assert "\n" not in str(refused.value)
    assert f"delete {'it' if case == 'unreadable' else 'its lock file'}" in str(refused.value)
    assert path.read_text() == before


def test_a_taker_removes_only_the_stale_record_and_only_holding_the_takeover_guard(tmp_path):
    lock, path = tmp_path / LOCK_NAME, str(tmp_path / LOCK_NAME)
    stale = json.dumps(write_lock(path, dead_pid())).encode()
    fresh = write_lock(path, os.getppid(), started="now")  # another run took over first: left alone
    locking._take_over(path, stale, json.loads(stale))
    assert json.loads(lock.read_text()) == fresh and os.listdir(tmp_path) == [LOCK_NAME]
    lock.write_bytes(stale)
    (tmp_path / f"{LOCK_NAME}.takeover").touch()  # another taker is at it: wait
    locking._take_over(path, stale, json.loads(stale))
    assert lock.read_bytes() == stale
    os.utime(path + ".takeover", (0, 0))  # a guard left by a taker killed while holding it is cleared
    locking._take_over(path, stale, json.loads(stale))
    locking._take_over(path, stale, json.loads(stale))
    assert os.listdir(tmp_path) == []


# Waits until all racers are ready, then takes the lock; a takeover waits 0.2 s after finding the stale lock, so
# that every racer has found it before the first one replaces it (the window a naive remove-and-create loses).
RACER = """
import os, sys, time
from keras_bert_impl.utils import output_lock as locking
from keras_bert_impl.utils.output_lock import OutputInUseError, output_lock
take_over = locking._take_over
locking._take_over = lambda *args: (time.sleep(0.2), take_over(*args))
out, ready, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
open(os.path.join(ready, str(os.getpid())), "w").close()
while len(os.listdir(ready)) < count:
    time.sleep(0.001)
try:
    with output_lock(out):
        print("won", flush=True)
        time.sleep(1.5)
except OutputInUseError as error:
    print("refused:", error)
"""


@pytest.mark.parametrize("stale", [False, True])
@pytest.mark.slow
def test_of_racing_processes_exactly_one_wins(tmp_path, stale):
    out, ready, count = tmp_path / "out", tmp_path / "ready", 4
    ready.mkdir()
    if stale:
        write_lock(str(out / LOCK_NAME), dead_pid())
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(out), str(ready), str(count)], env=ENVIRONMENT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), outputs
    lines = [out_.strip() for out_, _ in outputs]
    assert sorted(line.split(":")[0] for line in lines) == ["refused"] * (count - 1) + ["won"], lines
    assert not out.exists() or os.listdir(out) == []  # no lock (nor a takeover guard) left


def test_the_decorator_locks_the_output_its_arguments_name(tmp_path):
    @locks_output(lambda arguments: arguments["settings"]["out"])
    def write(files, settings, extra=None):
        return os.listdir(settings["out"])

    assert write(None, {"out": str(tmp_path)}) == [LOCK_NAME]
    assert write.__name__ == "write" and os.listdir(tmp_path) == []


def held_by_another_run(path):
    """A lock of a live process (our parent) at `path`: the writer must refuse before it reads anything."""
    write_lock(path, os.getppid())


def _finetune_calls(tmp_path):
    from keras_bert_impl.training import classifier_finetuning, finetuning, squad_finetuning

    missing = str(tmp_path / "missing.tsv")  # read only after the lock: the lock error must come first
    source = finetuning.ModelSource(init_checkpoint=str(tmp_path / "no_checkpoint"))
    settings = finetuning.FinetuningSettings(str(tmp_path / "out"), epochs=1)
    files = finetuning.FinetuningFiles(train_file=missing)
    return {
        "finetune_classifier": lambda: classifier_finetuning.finetune_classifier(
            classifier_finetuning.ClassificationFiles(train_file=missing, task="mrpc"), source, settings),
        "finetune_multiple_choice": lambda: classifier_finetuning.finetune_multiple_choice(files, source, settings),
        "finetune_token_classifier": lambda: classifier_finetuning.finetune_token_classifier(files, source, settings),
        "finetune_squad": lambda: squad_finetuning.finetune_squad(
            squad_finetuning.SquadFiles(train_file=missing), squad_finetuning.SquadSettings(), source, settings),
        "finetune": lambda: finetuning.finetune(None, {}, None, settings, counts=""),
    }


@pytest.mark.parametrize("recipe", ["finetune_classifier", "finetune_multiple_choice", "finetune_token_classifier",
                                    "finetune_squad", "finetune"])
def test_every_finetune_recipe_refuses_a_held_output_before_reading_anything(tmp_path, recipe):
    held_by_another_run(str(tmp_path / "out" / LOCK_NAME))
    with pytest.raises(OutputInUseError, match=f"pid {os.getppid()} "):
        _finetune_calls(tmp_path)[recipe]()


def test_pretrain_refuses_a_held_output_before_reading_anything(tmp_path):
    from keras_bert_impl.training.pretraining import PretrainingSettings, pretrain

    held_by_another_run(str(tmp_path / "out" / LOCK_NAME))
    settings = PretrainingSettings(input_files=[str(tmp_path / "missing.txt")],
                                   vocab_file=str(tmp_path / "missing_vocab.txt"), output_dir=str(tmp_path / "out"))
    with pytest.raises(OutputInUseError, match=f"pid {os.getppid()} "):
        pretrain(settings)


def test_convert_refuses_a_held_output_in_one_line_before_loading(tmp_path, capsys):
    from tests.cli.cli_test_utils import run_cli

    held_by_another_run(str(tmp_path / ".converted.lock"))
    status, _, err = run_cli(capsys, "convert", "--input", tmp_path / "missing", "--output", tmp_path / "converted")
    assert status == 1
    assert err.count("\n") == 1 and f"is being written by another run: pid {os.getppid()} " in err


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="other backends export in a subprocess")
def test_export_holds_the_lock_beside_the_saved_model(tmp_path):
    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.models.classifier import BertClassifier
    from tests.helpers import tiny_backbone

    model = BertClassifier(tiny_backbone(num_layers=1), 2)
    held_by_another_run(str(tmp_path / ".exported.lock"))
    with pytest.raises(OutputInUseError, match=f"pid {os.getppid()} "):
        export_saved_model(model, tmp_path / "exported")
    assert sorted(os.listdir(tmp_path)) == [".exported.lock"]
    os.remove(tmp_path / ".exported.lock")
    export_saved_model(model, tmp_path / "exported")
    assert sorted(os.listdir(tmp_path)) == ["exported"]  # no lock left, none inside the SavedModel
    assert not any(name.endswith(".lock") for _, _, names in os.walk(tmp_path / "exported") for name in names)


def run_finetune(tmp_path, seed, epochs):
    """`keras-bert finetune-classifier` on a tiny checkpoint and generated MRPC files, into `tmp_path/out`."""
    return subprocess.Popen(
        [sys.executable, "-m", "keras_bert_impl.cli", "finetune-classifier", "--task", "mrpc",
         "--train-file", str(tmp_path / "train.tsv"), "--dev-file", str(tmp_path / "dev.tsv"),
         "--init-checkpoint", str(tmp_path / "checkpoint"), "--output-dir", str(tmp_path / "out"),
         "--epochs", str(epochs), "--batch-size", "4", "--max-seq-length", "32", "--no-jit", "--verbose", "0",
         "--seed", str(seed)], cwd=REPOSITORY, env=ENVIRONMENT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


@pytest.mark.slow
def test_a_second_concurrent_finetune_into_the_same_folder_refuses_and_the_first_finishes(tmp_path):
    from tests.training.finetuning_test_utils import write_mrpc_tsv, write_tiny_checkpoint

    write_tiny_checkpoint(tmp_path / "checkpoint")
    write_mrpc_tsv(tmp_path / "train.tsv", 200, 0)
    write_mrpc_tsv(tmp_path / "dev.tsv", 10, 1)
    first = run_finetune(tmp_path, seed=1, epochs=4)
    deadline = time.monotonic() + 120
    while not (tmp_path / "out" / LOCK_NAME).exists():
        assert first.poll() is None, first.communicate()[1][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = run_finetune(tmp_path, seed=2, epochs=4)
    _, second_err = second.communicate(timeout=120)
    assert first.poll() is None, "the first run ended before the second was refused; give it more steps"
    first_out, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err[-3000:]
    assert second.returncode == 1
    lines = [line for line in second_err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("keras-bert finetune-classifier: error: "), second_err[-3000:]
    assert f"is being written by another run: pid {first.pid} on host {socket.gethostname()}" in lines[0]
    assert sorted(os.listdir(tmp_path / "out")) == [".keras_bert_impl", "best", "dev_predictions.tsv",
                                                     "eval_results.json", "last", "training_state"]
    assert "dev:" in first_out
