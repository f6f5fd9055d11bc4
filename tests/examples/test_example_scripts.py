"""The example scripts stay runnable with their documented flags: each is a thin front of a `keras-bert`
subcommand (whose full runs are tested in tests/cli), so their `--help` is that subcommand's."""

import importlib.util
import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(REPO_ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script, subcommand, flag", [
    ("pretrain", "pretrain", "--input-tfrecords"),
    ("finetune_classifier", "finetune-classifier", "--text-columns"),
    ("finetune_squad", "finetune-squad", "--doc-stride"),
])
def test_example_script_is_the_subcommand(capsys, script, subcommand, flag):
    with pytest.raises(SystemExit) as exit_:
        load_example(script).main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"usage: keras-bert {subcommand}") and flag in out


def test_example_script_reports_bad_flags_like_the_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_:
        load_example("finetune_squad").main(["--output-dir", "out", "--preset", "tiny"])
    assert exit_.value.code == 2 and "training needs --train-file" in capsys.readouterr().err


def test_docstring_corpus_script_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        load_example("docstring_corpus").main(["--help"])
    assert exit_.value.code == 0 and "--vocabulary-size" in capsys.readouterr().out


@pytest.mark.slow
def test_demo_ranks_sentences_and_reloads_both_formats(tmp_path, capsys):
    load_example("demo").main(["--output-dir", str(tmp_path)])
    output = capsys.readouterr().out
    ranked = [line.split(None, 1)[1] for line in output.splitlines() if line.startswith("  +") or line.startswith("  -")]
    # The query asks about fine-tuning for question answering: the two QA sentences rank first.
    assert {sentence.split()[0] for sentence in ranked[:2]} == {"Fine-tuning", "Question"}
    assert ranked[-1].startswith("The recipe for banana bread")
    assert output.count("Saved and reloaded") == 2 and "Demo finished." in output
    assert os.path.isfile(tmp_path / "minilm_huggingface" / "config.json")
