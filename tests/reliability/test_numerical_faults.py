"""Numerical faults: a NaN / infinite loss stops training and names the step and the last good checkpoint;
fp16 overflow is absorbed by dynamic loss scaling (the step is skipped and the scale halved)."""

import keras
import numpy as np
import pytest

from keras_bert_impl.training.callbacks import NonFiniteLossError, TrainingCheckpoint
from tests.helpers import TINY_JIT_COMPILE, tiny_backbone, to_numpy
from tests.models.test_pretrainer import pretraining_batch
from tests.training.test_callbacks import small_pretrainer


def poison(model):
    """Make the next forward pass produce NaN (a diverged run)."""
    variable = model.backbone.get_layer("embeddings").weights[0]
    variable.assign(np.full(variable.shape, np.nan, "float32"))


@pytest.mark.slow
def test_nan_loss_names_the_step_and_the_last_good_checkpoint(tmp_path):
    x, y = pretraining_batch()
    model = small_pretrainer()
    checkpoints = tmp_path / "checkpoints"
    callbacks = [TrainingCheckpoint(checkpoints, 1, keep=2)]
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=callbacks)
    poison(model)
    with pytest.raises(NonFiniteLossError) as raised:
        model.fit(x, y, batch_size=4, epochs=3, initial_epoch=2, shuffle=False, verbose=0, callbacks=callbacks)
    message = str(raised.value)
    assert "Loss became nan at batch 0" in message and "optimizer step 3" in message
    assert f"last good checkpoint is {checkpoints / 'step_00000002'} (step 2)" in message
    assert sorted(p.name for p in checkpoints.iterdir()) == ["latest", "step_00000001", "step_00000002"]


@pytest.mark.slow
def test_nan_loss_before_any_checkpoint_says_so(tmp_path):
    x, y = pretraining_batch()
    model = small_pretrainer()
    poison(model)
    with pytest.raises(NonFiniteLossError, match="last good checkpoint is none yet"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[TrainingCheckpoint(tmp_path / "none", 1)])


def test_nan_loss_in_finetuning_stops_before_saving_diverged_weights(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training import finetuning
    from tests.models.task_test_utils import token_presence_task
    from tests.training.finetuning_test_utils import tokenizer

    x, y = token_presence_task(16, sequence_length=12)
    model = BertClassifier(tiny_backbone(num_layers=1), 2,
                           preprocessor=BertPreprocessor(tokenizer(), sequence_length=12))
    poison(model)
    settings = finetuning.FinetuningSettings(str(tmp_path), epochs=2, batch_size=4, learning_rate=1e-3,
                                             jit_compile=TINY_JIT_COMPILE, verbose=0)
    with pytest.raises(NonFiniteLossError, match=r"optimizer step \d.*training_state \(the run restarts"):
        finetuning.finetune(model, x, y, settings, counts="16 rows")
    assert not (tmp_path / "last").exists() and not (tmp_path / "training_state").exists()


def test_fp16_overflow_skips_the_step_and_lowers_the_loss_scale():
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.optimization import create_optimizer

    x, y = pretraining_batch()
    model = BertPretrainer(tiny_backbone(num_layers=1, dtype="mixed_float16"))
    optimizer = create_optimizer(learning_rate=1e-3, total_steps=10, warmup_steps=0, loss_scale=True)
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    model.compile(optimizer=optimizer)
    model.optimizer.build(model.trainable_variables)
    model.optimizer.dynamic_scale.assign(2.0 ** 40)  # any fp16 gradient times this overflows
    before = [to_numpy(w).copy() for w in model.trainable_weights]

    logs = model.train_on_batch(x, y, return_dict=True)

    assert np.isfinite(logs["loss"])  # the logged loss is unscaled and finite
    assert float(to_numpy(model.optimizer.dynamic_scale)) == 2.0 ** 39
    assert int(to_numpy(model.optimizer.iterations)) == 0  # the update was skipped ...
    for a, b in zip(before, model.trainable_weights):
        np.testing.assert_array_equal(a, to_numpy(b))  # ... and no weight moved
    for _ in range(60):  # the scale keeps halving until the gradients fit, then training proceeds
        model.train_on_batch(x, y)
        if int(to_numpy(model.optimizer.iterations)):
            break
    assert int(to_numpy(model.optimizer.iterations)) >= 1
    assert all(np.isfinite(to_numpy(w)).all() for w in model.trainable_weights)
