"""The pretraining recipe as a library call: `pretrain(PretrainingSettings(...))` on a tiny model.

The command line's own runs (two phases, TFRecords, devices, processes) are in tests/cli/test_pretrain.py and
tests/cli/test_multi_worker.py; here the library function is called as a JAX, torch or TensorFlow user would.
"""

import dataclasses
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.training.finetuning import load_tokenizer
from keras_bert_impl.training.pretraining import PretrainingSettings, pretrain, training_phases
from tests.cli.cli_test_utils import write_corpus


def tiny_settings(directory, output, **changes):
    corpus = str(directory / "corpus.txt")
    settings = PretrainingSettings(
        input_files=[corpus], eval_files=[corpus], eval_steps=2, vocab_file=str(directory / "vocab.txt"),
        sequence_length=24, max_predictions_per_seq=4, batch_size=4, steps=4, learning_rate=1e-3,
        warmup_fraction=0.25, checkpoint_every=2, output_dir=str(output), verbose=0)
    return dataclasses.replace(settings, **changes)


@pytest.mark.backend_independent
@pytest.mark.parametrize("changes, message", [
    (dict(input_files=None), "give exactly one of --input-files and --input-tfrecords"),
    (dict(input_tfrecords=["data/train-*"]), "give exactly one of --input-files and --input-tfrecords"),
    (dict(vocab_file=None), "give --vocab-file (or --init-checkpoint, whose vocab.txt is used)"),
    (dict(steps=5), "--steps (5) must be a multiple of --checkpoint-every (2)"),
    (dict(max_steps_this_run=3), "--max-steps-this-run (3) must be a multiple of --checkpoint-every (2)"),
])
def test_settings_that_do_not_fit_together_are_refused_in_one_line(tmp_path, changes, message):
    with pytest.raises(ValueError) as caught:
        tiny_settings(tmp_path, tmp_path / "out", **changes)
    assert str(caught.value) == message


@pytest.mark.backend_independent
def test_phases_carry_their_lengths_seeds_and_fallbacks(tmp_path):
    write_corpus(tmp_path)
    settings = tiny_settings(tmp_path, tmp_path / "out", phase2_steps=2, phase2_sequence_length=32,
                             phase2_max_predictions_per_seq=5, mask_rate=0.2)
    first, second = training_phases(settings, load_tokenizer(settings.vocab_file))
    assert (first.index, first.preprocessor.sequence_length, first.preprocessor.max_predictions_per_seq) == (1, 24, 4)
    assert (second.index, second.preprocessor.sequence_length, second.preprocessor.max_predictions_per_seq) == (
        2, 32, 5)
    assert first.preprocessor.mask_rate == second.preprocessor.mask_rate == 0.2
    assert (first.preprocessor.seed, second.preprocessor.seed) == (settings.seed + 1, settings.seed + 2)
    assert (second.batch_size, second.learning_rate, second.steps, second.masking) == (4, 1e-3, 2, "dynamic")


@pytest.mark.slow
def test_pretrain_stopped_and_called_again_equals_an_uninterrupted_run_and_refuses_other_settings(tmp_path):
    write_corpus(tmp_path)
    # Torch draws dropout from its global generator, which no checkpoint holds: there the run is exact without it.
    dropout = 0.0 if keras.backend.backend() == "torch" else None
    straight = pretrain(tiny_settings(tmp_path, tmp_path / "straight", dropout=dropout))
    assert straight.finished and straight.final_step == 4
    assert straight.final_directory == str(tmp_path / "straight" / "final")
    assert os.path.isfile(os.path.join(straight.final_directory, "vocab.txt"))
    assert 0.0 <= straight.evaluation["mlm_accuracy"] <= 1.0 and 0.0 <= straight.evaluation["nsp_accuracy"] <= 1.0
    # Finished: the checkpoints are removed, the record stays; the same call again reloads final/ and trains nothing.
    assert os.listdir(tmp_path / "straight" / "checkpoints" / "phase1") == ["finished.json"]
    again = pretrain(tiny_settings(tmp_path, tmp_path / "straight", dropout=dropout))
    assert again.finished and again.final_step == 4 and again.evaluation == pytest.approx(straight.evaluation)
    with pytest.raises(ValueError, match="the run finished with steps=4, this run asks for steps=6, and its training "
                                         "state was removed"):
        pretrain(tiny_settings(tmp_path, tmp_path / "straight", dropout=dropout, steps=6, allow_changed_settings=True))

    stopped = pretrain(tiny_settings(tmp_path, tmp_path / "resumed", dropout=dropout, max_steps_this_run=2))
    assert (stopped.finished, stopped.final_step, stopped.final_directory) == (False, 2, None)
    assert not (tmp_path / "resumed" / "final").exists()
    resumed = pretrain(tiny_settings(tmp_path, tmp_path / "resumed", dropout=dropout, keep_training_state=True))
    assert resumed.finished and resumed.final_step == 4
    for mine, theirs in zip(resumed.model.get_weights(), straight.model.get_weights()):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), atol=1e-6)
    assert resumed.evaluation == pytest.approx(straight.evaluation, abs=1e-5)

    with pytest.raises(ValueError, match="it was trained with batch_size=4, this run asks for batch_size=8"):
        pretrain(tiny_settings(tmp_path, tmp_path / "resumed", dropout=dropout, batch_size=8))
    longer = pretrain(tiny_settings(tmp_path, tmp_path / "resumed", dropout=dropout, steps=6,
                                    allow_changed_settings=True))  # kept state: a finished run is extended
    assert longer.finished and longer.final_step == 6
    assert os.listdir(tmp_path / "resumed" / "checkpoints" / "phase1") == ["finished.json"]
