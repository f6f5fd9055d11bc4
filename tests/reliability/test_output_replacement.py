"""Issue #16 item 1, #29 item 1: a writer that swaps a directory (`convert`, `export`, `save_pretrained`,
fine-tuning's `best/` / `last/`, `final/`) replaces its destination only if it is empty or a previous output of
this package (its marker file; `convert` / `export` only with `--overwrite`); a folder of other files or an
existing file is refused in one line naming the path, `--overwrite` or not, and keeps every file it had.
Item 5: every file of such a directory (`model.safetensors` too) gets the umask permissions."""

import os
import stat

import pytest

from tests.cli.cli_test_utils import run_cli
from tests.helpers import tiny_backbone
from tests.training.finetuning_test_utils import write_tiny_checkpoint

pytestmark = pytest.mark.backend_independent


def _unrelated_folder(path):
    path.mkdir()
    (path / "notes.txt").write_text("my notes")
    (path / "sub").mkdir()
    (path / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return path


def _files(path):
    return sorted(os.path.relpath(os.path.join(root, name), path)
                  for root, _, names in os.walk(path) for name in names)


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
@pytest.mark.parametrize("command", ["convert", "export"])
def test_cli_refuses_to_replace_a_folder_of_other_files(tmp_path, capsys, command, overwrite):
    model = write_tiny_checkpoint(tmp_path / "model")
    target = _unrelated_folder(tmp_path / "target")
    flag = "--input" if command == "convert" else "--model"
    status, _, err = run_cli(capsys, command, flag, model, "--output", target, *overwrite)
    assert status == 1, err
    assert f"{target} is a non-empty folder that keras_bert_impl did not write" in err
    assert "it holds notes.txt, sub" in err and "move or delete it yourself" in err
    assert len(err.strip().splitlines()) == 1
    assert _files(target) == ["notes.txt", os.path.join("sub", "data.csv")]
    assert (target / "notes.txt").read_text() == "my notes"


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
@pytest.mark.parametrize("command", ["convert", "export"])
def test_cli_refuses_to_replace_a_file(tmp_path, capsys, command, overwrite):
    model = write_tiny_checkpoint(tmp_path / "model")
    target = tmp_path / "target"
    target.write_text("keep me")
    flag = "--input" if command == "convert" else "--model"
    status, _, err = run_cli(capsys, command, flag, model, "--output", target, *overwrite)
    assert status == 1 and f"{target} is an existing file" in err and "move or delete it yourself" in err
    assert target.read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["model", "target"]


def test_convert_replaces_its_own_previous_output_only_with_overwrite(tmp_path, capsys):
    model = write_tiny_checkpoint(tmp_path / "model")
    target = tmp_path / "target"
    assert run_cli(capsys, "convert", "--input", model, "--output", target)[0] == 0
    status, _, err = run_cli(capsys, "convert", "--input", model, "--output", target, "--format", "huggingface")
    assert status == 1 and f"{target} holds a previous model directory" in err and "pass --overwrite" in err
    assert "model_type" not in (target / "config.json").read_text()  # still the native output
    status, _, err = run_cli(capsys, "convert", "--input", model, "--output", target, "--format", "huggingface",
                             "--overwrite")
    assert status == 0, err
    assert "model_type" in (target / "config.json").read_text()
    assert sorted(os.listdir(tmp_path)) == ["model", "target"]  # no hidden .target.old-* left


def test_save_pretrained_and_finetuned_directories_refuse_a_folder_of_other_files(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training.finetuning_results import save_finetuned
    from keras_bert_impl.utils.atomic_io import OutputExistsError

    target = _unrelated_folder(tmp_path / "target")
    (target / "config.json").write_text("{}")  # a config.json does not make it ours
    backbone = tiny_backbone(num_layers=1)
    with pytest.raises(OutputExistsError, match="non-empty folder that keras_bert_impl did not write"):
        backbone.save_pretrained(str(target))
    with pytest.raises(OutputExistsError, match="it holds config.json, notes.txt, sub"):
        save_finetuned(BertClassifier(backbone, 2), str(target))
    assert _files(target) == ["config.json", "notes.txt", os.path.join("sub", "data.csv")]
    empty = tmp_path / "empty"
    empty.mkdir()
    backbone.save_pretrained(str(empty))  # an empty folder, and then a previous model directory, are replaced
    backbone.save_pretrained(str(empty))
    assert (empty / "model.safetensors").is_file()


def test_model_directory_files_follow_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        tiny_backbone(num_layers=1).save_pretrained(str(tmp_path / "model"))
    finally:
        os.umask(previous)
    modes = {name: stat.S_IMODE(os.stat(tmp_path / "model" / name).st_mode)
             for name in os.listdir(tmp_path / "model")}
    assert modes == {".keras_bert_impl": 0o644, "config.json": 0o644, "model.safetensors": 0o644}
