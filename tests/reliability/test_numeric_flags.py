"""Issue #16 item 11: numeric training flags are checked when parsed (finite, in range), so a NaN learning rate
is a usage error instead of two steps of training and a NaN stop."""

import pytest

from tests.cli.cli_test_utils import run_cli

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize("command", ["pretrain", "finetune-classifier", "finetune-squad"])
@pytest.mark.parametrize("flag, value, message", [
    ("--learning-rate", "nan", "must be a finite number, got nan"),
    ("--learning-rate", "inf", "must be a finite number, got inf"),
    ("--learning-rate", "0", "must be a positive number, got 0"),
    ("--learning-rate", "-1e-4", "must be a positive number, got -1e-4"),
    ("--learning-rate", "fast", "must be a number, got 'fast'"),
    ("--weight-decay", "nan", "must be a finite number, got nan"),
    ("--weight-decay", "-0.01", "must be >= 0, got -0.01"),
    ("--warmup-fraction", "nan", "must be a finite number, got nan"),
])
def test_bad_numeric_flag_is_a_usage_error(capsys, command, flag, value, message):
    status, _, err = run_cli(capsys, command, f"{flag}={value}")
    assert status == 2
    assert f"argument {flag}: {message}" in err


@pytest.mark.parametrize("flag, value", [("--phase2-learning-rate", "nan"), ("--dropout", "1.5"),
                                         ("--dropout", "nan")])
def test_bad_pretraining_numeric_flag_is_a_usage_error(capsys, flag, value):
    status, _, err = run_cli(capsys, "pretrain", f"{flag}={value}")
    assert status == 2 and f"argument {flag}: " in err
