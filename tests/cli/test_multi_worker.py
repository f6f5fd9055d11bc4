"""`keras-bert pretrain` across processes on 127.0.0.1, against one device on the same global batch.

TensorFlow, `--distribution multi_worker`: two worker processes (tests/cli/pretrain_worker.py, one CPU
device each) with their own `TF_CONFIG`, as on two machines sharing `--output-dir` (the original's shared
bucket): the chief (worker 0) writes the checkpoints, logs and final/, both read the checkpoints on a
resume. Worker 1 kills itself (SIGKILL) right after step 2; the chief, waiting for it in step 3's
all-reduce, is killed once its step-2 checkpoint is written, as a job scheduler stops the rest of a job
that lost a machine. The same command on both workers then resumes at step 2.

JAX, `--distribution jax_data_parallel`: on one process with 2 host devices, and on two processes with one
device each joined by `keras.distribution.initialize` (`KERAS_DISTRIBUTION_*` variables, JAX's CPU
collectives).

The runs are fresh processes started from the TensorFlow pass (the backends and devices must be set
before the framework initialises); the TensorFlow one-device reference runs in the pytest process.
"""

import json
import os
import signal
import socket
import subprocess
import time

import pytest

from keras_bert_impl.cli import main
from keras_bert_impl.training.callbacks import latest_training_checkpoint
from tests.cli.cli_test_utils import write_corpus
from tests.cli.test_pretrain import (
    assert_same_final_weights, run_pretrain_process, worker_command, worker_environment,
)

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]

WORKERS = 2
TIMEOUT_SECONDS = 600  # one run of a process; they take well under a minute on an idle machine
# One prediction per sequence gives every replica the same mask-weight sum: each replica normalises the MLM
# loss by its own weights (as the original's per-TPU-core loss), which then equals one device's.
FLAGS = ("--steps", "4", "--max-predictions-per-seq", "1")


def free_ports(count):
    """`count` TCP ports on 127.0.0.1 that nothing listens on now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return [one.getsockname()[1] for one in sockets]
    finally:
        for one in sockets:
            one.close()


def start_processes(directory, output, run, environments, *extra, backend="tensorflow"):
    """Start one `keras-bert pretrain` process (one CPU device) per dict of environment variables in
    `environments`: `[(process, log path)]`, logs in `directory/<run>_<i>.log`."""
    processes = []
    for index, variables in enumerate(environments):
        log = directory / f"{run}_{index}.log"
        with open(log, "w") as handle:
            process = subprocess.Popen(worker_command(directory, output, 1, *extra),
                                       env=worker_environment(backend, **variables), stdout=handle,
                                       stderr=subprocess.STDOUT)
        processes.append((process, log))
    return processes


def start_workers(directory, output, run, kill_after_step=None):
    """Start `--distribution multi_worker` on every worker of a new localhost cluster: worker `i`'s
    `TF_CONFIG` names the cluster and task `i`; `kill_after_step`, `{worker: step}`, has a worker SIGKILL
    itself after that step."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(WORKERS)]}
    environments = []
    for index in range(WORKERS):
        variables = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})}
        if index in (kill_after_step or {}):
            variables["KILL_AFTER_STEP"] = str(kill_after_step[index])
        environments.append(variables)
    return start_processes(directory, output, run, environments, *FLAGS, "--distribution", "multi_worker")


def wait_until_done(processes):
    """Wait for every process; each must exit 0. Returns their logs."""
    try:
        for process, _ in processes:
            process.wait(timeout=TIMEOUT_SECONDS)
        logs = worker_logs(processes)
        assert [process.returncode for process, _ in processes] == [0] * len(processes), logs
    finally:
        stop(processes)
    return [log.read_text() for _, log in processes]


def wait_for(condition, what, workers):
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {TIMEOUT_SECONDS} s\n{worker_logs(workers)}"
        time.sleep(0.5)


def worker_logs(workers):
    return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for _, log in workers)


def stop(workers):
    for process, _ in workers:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_multi_worker_on_two_local_processes_killed_and_resumed_equals_one_device(tmp_path):
    write_corpus(tmp_path)
    assert main(worker_command(tmp_path, tmp_path / "one_device", 1, *FLAGS)[3:]) == 0
    output = tmp_path / "multi_worker"

    workers = start_workers(tmp_path, output, "killed", kill_after_step={1: 2})
    try:
        (chief, _), (worker, _) = workers
        wait_for(lambda: worker.poll() is not None, "exit of worker 1", workers)
        assert worker.returncode == -signal.SIGKILL, worker_logs(workers)

        def chief_checkpoint_step():
            found = latest_training_checkpoint(output / "checkpoints" / "phase1")
            return found and found[1]["step"]

        wait_for(lambda: chief_checkpoint_step() == 2 or chief.poll() is not None, "step-2 checkpoint", workers)
        assert chief_checkpoint_step() == 2, worker_logs(workers)
    finally:
        stop(workers)
    assert not (output / "final").exists()

    for log in wait_until_done(start_workers(tmp_path, output, "resumed")):
        assert "MultiWorkerMirroredStrategy with 2 replicas in sync" in log, log[-3000:]
        assert "Resuming phase 1 at step 2" in log, log[-3000:]
        assert "batch 4 (2 per replica, 2 replicas)" in log, log[-3000:]
    assert sorted(os.listdir(output)) == sorted(os.listdir(tmp_path / "one_device"))  # the chief wrote all
    assert json.loads((output / "summary.json").read_text())["final_step"] == 4
    assert_same_final_weights(tmp_path / "one_device", output, "multi_worker (killed once and resumed)")


def test_jax_data_parallel_on_two_host_devices_and_on_two_processes_equals_one_device(tmp_path):
    """Default optimizer and clipping; the step is traced over the global batch, so the MLM loss is
    normalised globally as on one device. The mesh and the per-replica batch are logged. In the two-process
    run every process writes the same outputs (reading a weight is a collective there), process 1 into
    `<output>/process1`."""
    write_corpus(tmp_path)
    steps = ("--steps", "4", "--distribution", "jax_data_parallel")
    run_pretrain_process(tmp_path, tmp_path / "one_device", 1, *steps[:2], backend="jax")
    log = run_pretrain_process(tmp_path, tmp_path / "two_devices", 2, *steps, backend="jax")
    assert "DataParallel over a 2-device mesh: shape (2,), axis names ('batch',) (batch axis 'batch')" in log
    assert "batch 4 (2 per replica, 2 replicas)" in log
    assert_same_final_weights(tmp_path / "one_device", tmp_path / "two_devices", "jax_data_parallel, 2 devices")

    coordinator = f"127.0.0.1:{free_ports(1)[0]}"
    environments = [{"KERAS_DISTRIBUTION_JOB_ADDRESSES": coordinator, "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
                     "KERAS_DISTRIBUTION_PROCESS_ID": str(index)} for index in range(2)]
    output = tmp_path / "two_processes"
    logs = wait_until_done(start_processes(tmp_path, output, "jax", environments, *steps, backend="jax"))
    for index, log in enumerate(logs):
        assert f"JAX process {index} of 2 (coordinator {coordinator}), 1 of the 2 devices local" in log, log[-3000:]
        assert "batch 4 (2 per replica, 2 replicas)" in log, log[-3000:]
    assert_same_final_weights(tmp_path / "one_device", output, "jax_data_parallel, 2 processes")
    assert_same_final_weights(tmp_path / "one_device", output / "process1", "jax_data_parallel, process 1's copy")
