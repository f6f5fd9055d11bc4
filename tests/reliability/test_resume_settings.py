"""Issue #16 item 2: `keras-bert pretrain` stores the settings that define a run with every checkpoint and
refuses a resume that changes one, naming the setting, both values and the way out; the step count may change
with `--allow-changed-settings`."""

import pytest

from tests.cli.cli_test_utils import run_cli, write_corpus

pytestmark = [pytest.mark.slow, pytest.mark.backend_independent]


def pretrain(capsys, directory, *extra):
    return run_cli(
        capsys, "pretrain", "--input-files", directory / "corpus.txt", "--vocab-file", directory / "vocab.txt",
        "--preset", "tiny", "--seq-length", "24", "--max-predictions-per-seq", "4", "--batch-size", "4",
        "--learning-rate", "1e-3", "--checkpoint-every", "2", "--output-dir", directory / "run", "--verbose", "0",
        *extra)


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("resume_settings")
    write_corpus(directory)
    return directory


@pytest.mark.parametrize("changed, message", [
    (("--batch-size", "8"), "it was trained with batch_size=4, this run asks for batch_size=8"),
    (("--seed", "999", "--learning-rate", "0.5"), "it was trained with seed=12345, this run asks for seed=999 "
                                                   "(and learning_rate)"),
    (("--seq-length", "16"), "sequence_length=24, this run asks for sequence_length=16"),
    (("--steps", "6"), "steps=4, this run asks for steps=6. Run with the same settings to resume, choose a new "
                       "--output-dir to start over or pass --allow-changed-settings"),
])
def test_resume_with_other_settings_is_refused(interrupted_run, capsys, changed, message):
    if not (interrupted_run / "run").exists():
        assert pretrain(capsys, interrupted_run, "--steps", "4", "--max-steps-this-run", "2")[0] == 0
    extra = changed if "--steps" in changed else ("--steps", "4", *changed)
    status, _, err = pretrain(capsys, interrupted_run, *extra)
    assert status == 1, err
    assert err.startswith("keras-bert pretrain: error: Cannot resume ") and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_allow_changed_settings_lets_only_the_step_count_change(interrupted_run, capsys):
    if not (interrupted_run / "run").exists():
        assert pretrain(capsys, interrupted_run, "--steps", "4", "--max-steps-this-run", "2")[0] == 0
    status, _, err = pretrain(capsys, interrupted_run, "--steps", "4", "--batch-size", "8",
                              "--allow-changed-settings")
    assert status == 1 and "batch_size=4" in err
    status, out, err = pretrain(capsys, interrupted_run, "--steps", "6", "--allow-changed-settings")
    assert status == 0, err
    assert "(step 6;" in out
