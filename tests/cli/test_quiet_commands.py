"""`keras-bert` and a script that calls `quiet_tensorflow_startup()` keep TensorFlow's native start-up log lines off
stderr (they are written to file descriptor 2 while TensorFlow loads, whatever TF_CPP_MIN_LOG_LEVEL says);
`--debug` and TF_CPP_MIN_LOG_LEVEL=0 show them. `import keras_bert_impl` alone changes nothing
(tests/test_layering.py). Each case is a fresh process, since TensorFlow loads once per process. The whole main job's
stderr (empty) and its progress to a pipe (no redraws) are checked in test_quickstart.py, on the one reduced
quickstart the suite runs."""

import os
import subprocess
import sys

import pytest

REPOSITORY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What TensorFlow 2.21 prints while loading on a CPU machine, and on one with CUDA libraries but no GPU.
NOISE = ("cudart_stub", "cuda_platform", "cuInit", "oneDNN custom operations", "This TensorFlow binary is optimized",
         "All log messages before absl::InitializeLog()")
CLI = [sys.executable, "-m", "keras_bert_impl.cli"]
# What a script runs first to get the command's quiet start-up.
QUIET = ("from keras_bert_impl.utils.tensorflow_startup_logs import quiet_tensorflow_startup; "
         "quiet_tensorflow_startup(); ")

pytestmark = pytest.mark.backend_independent


def run(command, **environment):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(KERAS_BACKEND="tensorflow", **environment)
    result = subprocess.run(command, env=env, cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout, result.stderr


def noise_in(stderr):
    return [line for line in stderr.splitlines() if any(marker in line for marker in NOISE)]


@pytest.mark.slow
def test_help_and_a_failing_command_print_no_tensorflow_noise(tmp_path):
    status, out, err = run(CLI + ["--help"])
    assert status == 0 and "finetune-classifier" in out and noise_in(err) == [], err
    status, _, err = run(CLI + ["convert", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "out")])
    assert status == 1 and err == f"keras-bert convert: error: Checkpoint path {tmp_path / 'missing'} does not exist.\n"


def test_help_and_flags_that_do_not_parse_import_neither_keras_nor_tensorflow():
    """Only the subcommand being run gets its flags (`command_line.build_parser`), and building them imports no
    Keras (the recipes' settings modules import it where it is used): help and usage errors answer in a fraction
    of a second, not after the ~5 CPU-s of loading Keras and TensorFlow."""
    commands = (["--help"], ["pretrian", "--steps", "3"], ["quickstart", "--help"], ["pretrain", "--help"],
                ["finetune-squad", "--help"], ["finetune-classifier", "--epochs", "-1", "--output-dir", "out"])
    code = ("import sys\nfrom keras_bert_impl.cli.command_line import main\n"
            f"for argv in {commands!r}:\n"
            "    try:\n        main(argv)\n    except SystemExit as exit:\n        print('exit', exit.code)\n"
            "print('loaded:', *sorted(name for name in ('keras', 'tensorflow', 'jax', 'torch')\n"
            "                         if name in sys.modules))")
    status, out, err = run([sys.executable, "-c", code])
    assert status == 0 and "finetune-classifier" in out and "--doc-stride" in out, err
    assert "invalid choice: 'pretrian'" in err and "argument --epochs: must be >= 0, got -1" in err, err
    assert [line for line in out.splitlines() if line.startswith(("exit", "loaded"))] == [
        "exit 0", "exit 2", "exit 0", "exit 0", "exit 0", "exit 2", "loaded:"], out


def test_quiet_startup_filters_only_the_noise_and_keeps_other_stderr():
    code = QUIET + ("import sys, tensorflow as tf; print('kept', file=sys.stderr); "
                    "print(tf.constant([1, 2]).numpy().sum())")
    status, out, err = run([sys.executable, "-c", code])
    assert status == 0 and out.strip() == "3" and noise_in(err) == [] and "kept" in err, err


@pytest.mark.slow
def test_debug_and_tf_cpp_min_log_level_0_show_the_lines(tmp_path):
    """Without the filter the lines are there on this machine: the checks above would see them."""
    _, _, err = run(CLI + ["convert", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "out"),
                           "--debug"])
    assert noise_in(err) and "CheckpointError" in err
    _, _, err = run([sys.executable, "-c", QUIET + "import tensorflow"], TF_CPP_MIN_LOG_LEVEL="0")
    assert noise_in(err)
    _, _, err = run([sys.executable, "-c", "import keras_bert_impl, tensorflow"])
    assert noise_in(err), "import keras_bert_impl changes no global state: TensorFlow's lines are not filtered"
