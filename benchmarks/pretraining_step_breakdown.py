"""Where the time of our BERT pretraining step goes, on JAX (XLA): timed parts of one jitted step.

Parts, each its own `jax.jit` function over the same variables and batch (mini, seq 128, batch 32, 20 masked
slots, as `training_throughput.py`): the forward pass in training mode with the losses; forward + backward
(`jax.value_and_grad`); the optimizer update alone (Adam or our `AdamWeightDecay`); the whole step as
`BertPretrainer.train_on_batch` runs it. Each is also timed with dropout off (hidden and attention
separately), which isolates the cost of the dropout masks (random bits: `jax.random`'s threefry, written out
in `jax.numpy` by `keras_bert_impl.backend.random_bits` so XLA fuses it, the same bits; `--keras-dropout` sets
`KERAS_BERT_IMPL_FAST_DROPOUT=0` for Keras' dropout, i.e. `jax.random`, which XLA:CPU runs as a rolled loop).
A part's cost is the difference of two rows; the rows are timed interleaved, medians over
`--repeats`, in process CPU time (all threads), which a shared, loaded machine disturbs far less than wall time.

Run: `KERAS_BACKEND=jax python benchmarks/pretraining_step_breakdown.py --repeats 5 [--keras-dropout]`
(`--smoke`: the tiny preset, batch 4, seq 32, one call each, the dropout 0.1/0.1 row only: checks that it runs.)
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Defaults (visible here, overridable on the command line).
SIZE = "mini"
BATCH_SIZE = 32
SEQ_LENGTH = 128
PREDICTIONS = 20
REPEATS = 5
STEPS = 2
SMOKE = dict(size="tiny", batch_size=4, seq_length=32, predictions=4, repeats=1, steps=1)
SMOKE_VARIANTS = ("dropout 0.1/0.1",)  # each variant compiles its own model and parts


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default=SIZE)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--seq-length", type=int, default=SEQ_LENGTH)
    parser.add_argument("--predictions", type=int, default=PREDICTIONS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--optimizer", default="adam", choices=("adam", "adam_weight_decay"))
    parser.add_argument("--keras-dropout", action="store_true",
                        help="KERAS_BERT_IMPL_FAST_DROPOUT=0: Keras' dropout (jax.random, a rolled loop on CPU)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one variant: checks that it runs")
    args = parser.parse_args()
    if args.smoke:  # smaller defaults; flags given on the command line still win
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    if args.keras_dropout:
        os.environ["KERAS_BERT_IMPL_FAST_DROPOUT"] = "0"
    return args


def build(args, dropout, attention_dropout):
    import keras

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.optimization import AdamWeightDecay

    keras.utils.set_random_seed(0)
    backbone = BertBackbone.from_scratch(args.size, dropout=dropout, attention_dropout=attention_dropout)
    model = BertPretrainer(backbone)
    optimizer = keras.optimizers.Adam(1e-4) if args.optimizer == "adam" else AdamWeightDecay(1e-4)
    model.compile(optimizer=optimizer, jit_compile=True)
    return model


def parts(model, batch):
    """name -> zero-argument callable that runs that part once and blocks."""
    import jax

    x = {k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    y = {k: batch[k] for k in ("mask_ids", "mask_weights", "next_sentence_labels")}
    model.train_on_batch(x, y)  # builds the optimizer and the compiled step
    # Copies: train_on_batch donates the variables' own buffers to its compiled step.
    trainable = [jax.numpy.array(v.value, copy=True) for v in model.trainable_variables]
    non_trainable = [jax.numpy.array(v.value, copy=True) for v in model.non_trainable_variables]
    optimizer_values = [jax.numpy.array(v.value, copy=True) for v in model.optimizer.variables]
    metrics_values = [jax.numpy.array(v.value, copy=True) for v in model.metrics_variables]

    def losses(t, n, o, x, y):  # Keras' JAX trainer: stateless forward + compute_loss (+ loss scaling)
        return model.compute_loss_and_updates(t, n, metrics_values, x, y, None, training=True,
                                              optimizer_variables=o)

    forward = jax.jit(lambda t, n, o, x, y: losses(t, n, o, x, y)[0])
    value_and_grad = jax.jit(jax.value_and_grad(losses, argnums=0, has_aux=True))
    gradients = value_and_grad(trainable, non_trainable, optimizer_values, x, y)[1]
    update = jax.jit(lambda o, g, t: model.optimizer.stateless_apply(o, g, t))

    def run(fn, *fn_args):
        return lambda: jax.block_until_ready(fn(*fn_args))

    return {
        "forward + losses": run(forward, trainable, non_trainable, optimizer_values, x, y),
        "forward + backward": run(value_and_grad, trainable, non_trainable, optimizer_values, x, y),
        "optimizer update": run(update, optimizer_values, gradients, trainable),
        "train_on_batch": lambda: model.train_on_batch(x, y),
    }


def main():
    args = parse_args()
    from benchmarks.training_throughput import random_batch

    import keras

    from keras_bert_impl.models.presets import PRESETS

    assert keras.backend.backend() == "jax", "run with KERAS_BACKEND=jax"
    args.model, args.vocabulary_size = PRESETS[args.size], 30522
    batch = random_batch(args)
    variants = {"dropout 0.1/0.1": (0.1, 0.1), "hidden 0.1, attention 0": (0.1, 0.0),
                "hidden 0, attention 0.1": (0.0, 0.1), "no dropout": (0.0, 0.0)}
    if args.smoke:
        variants = {name: variants[name] for name in SMOKE_VARIANTS}
    timers = {}
    for variant, rates in variants.items():
        for name, fn in parts(build(args, *rates), batch).items():
            fn()
            timers[(variant, name)] = (fn, [])
    for _ in range(args.repeats):
        for fn, times in timers.values():
            start = time.process_time()
            for _ in range(args.steps):
                fn()
            times.append((time.process_time() - start) / args.steps)
    print(f"{args.size}, batch {args.batch_size}, seq {args.seq_length}, {args.predictions} predictions, "
          f"optimizer {args.optimizer}, {'Keras' if args.keras_dropout else 'fast'} dropout; "
          f"median CPU ms per call (all threads) over {args.repeats} x {args.steps}")
    names = list(dict.fromkeys(name for _, name in timers))
    print(f"{'':<26}" + "".join(f"{name:>20}" for name in names))
    for variant in variants:
        print(f"{variant:<26}" + "".join(
            f"{1000 * statistics.median(timers[(variant, name)][1]):>20.0f}" for name in names))


if __name__ == "__main__":
    main()
