"""The fine-tuning optimizer of `run_classifier.py` / `run_squad.py`, compiled into a task model."""


def compile_for_finetuning(model, learning_rate, total_steps, warmup_fraction=0.1, weight_decay=0.01,
                           optimizer_name="adamw_original", schedule_variant="original", jit_compile=True):
    """Compile `model` with the BERT fine-tuning optimizer and its default task loss.

    `AdamWeightDecay` (no bias correction, epsilon 1e-6, decay 0.01 except LayerNorm and biases, clip 1.0)
    with `WarmupLinearDecay` (linear warmup over `warmup_fraction` of the updates, then linear decay to 0),
    as `run_classifier.py` / `run_squad.py`.

    Args:
        model: `BertClassifier` or `BertQuestionAnswerer`.
        learning_rate: float. Peak learning rate (the paper: 5e-5, 3e-5 or 2e-5).
        total_steps: int. Optimizer updates of the whole run.
        warmup_fraction: float. Defaults to 0.1.
        weight_decay: float. Defaults to 0.01.
        optimizer_name: str. See `optimization.create_optimizer`. Defaults to "adamw_original".
        schedule_variant: str. "original" or "huggingface". Defaults to "original".
        jit_compile: bool. XLA on TensorFlow and JAX; torch runs eagerly either way
            (`jit_compile.xla_jit_compile`). Defaults to True.

    Returns:
        The optimizer.
    """
    from keras_bert_impl.optimization import create_optimizer
    from keras_bert_impl.training.jit_compile import xla_jit_compile

    optimizer = create_optimizer(name=optimizer_name, learning_rate=learning_rate, total_steps=total_steps,
                                 warmup_fraction=warmup_fraction, weight_decay=weight_decay,
                                 schedule_variant=schedule_variant)
    model.compile(optimizer=optimizer, jit_compile=xla_jit_compile(jit_compile))
    return optimizer
