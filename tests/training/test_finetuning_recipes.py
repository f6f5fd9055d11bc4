"""The fine-tuning recipes as a user calls them from Python, without the CLI: typed settings in, one call, the
run's files out, and a second call on the same output directory resumes (here: finds the run finished)."""

import json
import os

import pytest

from keras_bert_impl.training.finetuning import FinetuningSettings, ModelSource
from tests.training.finetuning_test_utils import write_mrpc_tsv, write_squad_json, write_tiny_checkpoint


def settings(directory, **overrides):
    defaults = dict(epochs=1, batch_size=8, eval_batch_size=8, learning_rate=1e-3, jit_compile=False, seed=0,
                    verbose=0)
    return FinetuningSettings(output_dir=str(directory), **{**defaults, **overrides})


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_classifier_recipe_writes_and_resumes(tmp_path, capsys):
    from keras_bert_impl.training.classifier_finetuning import ClassificationFiles, finetune_classifier

    files = ClassificationFiles(train_file=str(write_mrpc_tsv(tmp_path / "train.tsv", 24, seed=0)),
                                dev_file=str(write_mrpc_tsv(tmp_path / "dev.tsv", 8, seed=1)), task="mrpc",
                                sequence_length=32)
    source = ModelSource(init_checkpoint=write_tiny_checkpoint(tmp_path / "checkpoint"))
    results = finetune_classifier(files, source, settings(tmp_path / "run"))
    out = capsys.readouterr().out
    assert "24 training examples, 3 steps per epoch, 3 updates; labels: ['0', '1']" in out
    assert {"accuracy", "f1"} <= set(results)
    assert json.loads((tmp_path / "run" / "eval_results.json").read_text()) == pytest.approx(results)
    assert os.path.isfile(tmp_path / "run" / "best" / "label_vocabulary.json")

    assert finetune_classifier(files, source, settings(tmp_path / "run")) == pytest.approx(results)  # finished
    with pytest.raises(ValueError, match="batch_size"):  # a resume with changed settings is refused
        finetune_classifier(files, source, settings(tmp_path / "run", batch_size=4))


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_squad_recipe_tunes_on_held_out_articles(tmp_path, capsys):
    from keras_bert_impl.training.squad_finetuning import SquadFiles, SquadSettings, finetune_squad

    files = SquadFiles(train_file=str(write_squad_json(tmp_path / "train.json", 12, seed=0)), tune_fraction=0.25,
                       test_file=str(write_squad_json(tmp_path / "test.json", 3, seed=1)))
    squad = SquadSettings(version_2=True, sequence_length=32, doc_stride=8, max_query_length=8)
    source = ModelSource(init_checkpoint=write_tiny_checkpoint(tmp_path / "checkpoint"))
    assert finetune_squad(files, squad, source, settings(tmp_path / "run")) == {}  # no dev file
    out = capsys.readouterr().out
    assert "tune fraction 0.25: 3 of 12 training articles held out" in out and "best epoch 1: held-out f1" in out
    saved = json.loads((tmp_path / "run" / "best" / "preprocessor.json").read_text())["config"]
    assert f"null score threshold: {saved['null_score_diff_threshold']:.4f}" in out
    test_results = json.loads((tmp_path / "run" / "test" / "eval_results.json").read_text())
    assert test_results["null_score_diff_threshold"] == pytest.approx(saved["null_score_diff_threshold"])
