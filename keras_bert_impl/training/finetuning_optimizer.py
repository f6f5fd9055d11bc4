"""The fine-tuning optimizer of `run_classifier.py` / `run_squad.py`, compiled into a task model."""


def compile_for_finetuning(model, learning_rate, total_steps, warmup_fraction=0.1, weight_decay=0.01,
                           jit_compile=True):
    """Compile `model` with the BERT fine-tuning optimizer and its default task loss: `model.compile`'s default
    (`BertTask.compile`) with this run's length, and XLA where the backend has it.

    `AdamWeightDecay` (no bias correction, epsilon 1e-6, decay 0.01 except LayerNorm and biases, clip 1.0)
    with `WarmupLinearDecay` (linear warmup over `warmup_fraction` of the updates, then linear decay to 0),
    as `run_classifier.py` / `run_squad.py`.

    Args:
        model: a `BertTask` (`BertClassifier`, `BertQuestionAnswerer`, ...).
        learning_rate: float. Peak learning rate (the paper: 5e-5, 3e-5 or 2e-5).
        total_steps: int. Optimizer updates of the whole run.
        warmup_fraction: float. Defaults to 0.1.
        weight_decay: float. Defaults to 0.01.
        jit_compile: bool. XLA on TensorFlow and JAX; torch runs eagerly either way
            (`jit_compile.xla_jit_compile`). Defaults to True.

    Returns:
        The optimizer.
    """
    from keras_bert_impl.training.jit_compile import xla_jit_compile

    model.compile(learning_rate=learning_rate, total_steps=total_steps, warmup_fraction=warmup_fraction,
                  weight_decay=weight_decay, jit_compile=xla_jit_compile(jit_compile))
    return model.optimizer
