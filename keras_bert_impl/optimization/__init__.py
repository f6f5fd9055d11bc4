"""BERT optimizers (original AdamWeightDecay, LAMB) and warmup + linear decay learning-rate schedules."""

from keras_bert_impl.optimization.adam_weight_decay import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay
from keras_bert_impl.optimization.lamb import Lamb
from keras_bert_impl.optimization.schedules import (OPTIMIZER_NAMES, SCHEDULE_VARIANTS, WarmupLinearDecay,
                                                    create_optimizer, resolve_warmup_steps)

__all__ = ["DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY", "OPTIMIZER_NAMES", "SCHEDULE_VARIANTS", "AdamWeightDecay", "Lamb",
           "WarmupLinearDecay", "create_optimizer", "resolve_warmup_steps"]
