"""Every task's `compile()` without an optimizer fine-tunes as the original recipe does (`BertTask.compile`):
`AdamWeightDecay` at 5e-5 (the pretrainer's 1e-4), constant without a step count, warmup then linear decay
with one; never Keras' "adam" at 1e-3."""

import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from tests.helpers import tiny_backbone

TASKS = {
    "classifier": (lambda backbone: BertClassifier(backbone, num_classes=2), 5e-5),
    "question_answerer": (BertQuestionAnswerer, 5e-5),
    "token_classifier": (lambda backbone: BertTokenClassifier(backbone, num_classes=3), 5e-5),
    "multiple_choice": (BertMultipleChoice, 5e-5),
    "pretrainer": (BertPretrainer, 1e-4),
}


def learning_rate_at(optimizer, step):
    optimizer.iterations.assign(step)
    return float(optimizer.learning_rate)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_default_compile_is_adam_weight_decay_at_a_fine_tuning_rate(task):
    build, expected_rate = TASKS[task]
    model = build(tiny_backbone())
    model.compile()
    optimizer = model.optimizer
    assert type(optimizer).__name__ == "AdamWeightDecay"
    assert optimizer.weight_decay_rate == 0.01 and optimizer.global_clipnorm == 1.0
    # Constant without a step count: the same rate at every update, at most 1e-4.
    assert [learning_rate_at(optimizer, step) for step in (0, 1000)] == pytest.approx([expected_rate] * 2)
    assert learning_rate_at(optimizer, 0) <= 1e-4


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_step_count_gives_warmup_then_linear_decay(task):
    build, peak = TASKS[task]
    model = build(tiny_backbone())
    model.compile(total_steps=1000)
    warmup = int(1000 * model.default_warmup_fraction)
    assert warmup == (10 if task == "pretrainer" else 100)  # run_pretraining.py: 10k of 1M; fine-tuning: 10%
    rates = [learning_rate_at(model.optimizer, step) for step in (0, warmup // 2, warmup, 550, 1000, 1200)]
    # The original schedule: linear warmup to the peak, then decay measured from step 0 to 0 at total_steps.
    expected = [0.0, peak / 2, peak * (1 - warmup / 1000), peak * 0.45, 0.0, 0.0]
    np.testing.assert_allclose(rates, expected, rtol=1e-5, atol=1e-12)
    assert max(rates) <= 1e-4


def test_schedule_settings_are_the_compile_arguments():
    model = BertClassifier(tiny_backbone(), num_classes=2)
    model.compile(learning_rate=2e-5, total_steps=10, warmup_fraction=0.5, weight_decay=0.0)
    assert model.optimizer.weight_decay_rate == 0.0
    rates = [learning_rate_at(model.optimizer, step) for step in (0, 5, 8, 10)]
    np.testing.assert_allclose(rates, [0.0, 1e-5, 4e-6, 0.0], rtol=1e-5, atol=1e-12)


def test_the_question_answerer_compiles_the_same_way():
    model = BertQuestionAnswerer(tiny_backbone())
    model.compile(learning_rate=3e-5, total_steps=20, warmup_fraction=0.1, jit_compile=False)
    optimizer = model.optimizer
    assert type(optimizer).__name__ == "AdamWeightDecay"
    assert [learning_rate_at(optimizer, step) for step in (0, 1, 2, 20)] == pytest.approx([0.0, 1.5e-5, 2.7e-5, 0.0])


def test_an_explicit_optimizer_keeps_its_own_settings():
    model = BertClassifier(tiny_backbone(), num_classes=2)
    model.compile(optimizer="sgd")
    assert type(model.optimizer).__name__ == "SGD"
    with pytest.raises(ValueError, match=r"learning_rate set the default optimizer \(optimizer='auto'\)"):
        model.compile(optimizer="adam", learning_rate=1e-5)


def test_a_warmup_needs_a_step_count():
    model = BertClassifier(tiny_backbone(), num_classes=2)
    with pytest.raises(ValueError, match="A warmup needs `total_steps`"):
        model.compile(warmup_fraction=0.1)
