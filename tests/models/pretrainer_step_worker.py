"""Runs BertPretrainer training steps in a fresh process and saves what they produced (test helper).

Tests need a fresh process when the setting must exist before the framework initialises: another Keras
backend, two logical TensorFlow CPU devices (MirroredStrategy), or two JAX host devices (DataParallel).

    KERAS_BACKEND=jax python tests/models/pretrainer_step_worker.py MODEL_DIR BATCH.npz OUT.npz \
        [--distribution none|mirrored|jax_data_parallel] [--steps N] [--learning-rate LR]

MODEL_DIR is a `BertPretrainer.save_pretrained` directory, BATCH.npz holds `x_<key>` and `y_<key>` arrays.
OUT.npz gets `logits_mlm`, `logits_nsp` (before training), `loss_<name>` (the first step's logs, i.e.
computed from the initial weights) and `weight_<variable path with / as |>` after the steps.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("batch")
    parser.add_argument("out")
    parser.add_argument("--distribution", default="none", choices=("none", "mirrored", "jax_data_parallel"))
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--optimizer", default="sgd", choices=("sgd", "default"))
    return parser.parse_args()


def configure_devices(distribution):
    """Device setup that must happen before the framework initialises (fresh processes only)."""
    if distribution == "jax_data_parallel":
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    if distribution == "mirrored":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def run_steps(model_dir, batch_path, distribution="none", steps=1, learning_rate=0.5, optimizer="sgd"):
    """Load the model, predict, run `steps` steps on the batch; return the arrays OUT.npz holds.

    `optimizer`: "sgd" (plain SGD at `learning_rate`) or "default" (`create_optimizer`'s default,
    `AdamWeightDecay` with `global_clipnorm=1.0`, no warmup, peak `learning_rate`, as `keras-bert pretrain`).
    """
    import keras
    import numpy as np

    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.training.distribution import for_tf_distribute, make_distribution

    batch = np.load(batch_path)
    x = {key[2:]: batch[key] for key in batch.files if key.startswith("x_")}
    y = {key[2:]: batch[key] for key in batch.files if key.startswith("y_")}
    batch_size = len(x["token_ids"])

    if distribution == "mirrored":
        scope, strategy, _ = make_distribution("mirrored", devices=["/cpu:0", "/cpu:1"])
        assert strategy.num_replicas_in_sync == 2
    elif distribution == "jax_data_parallel":
        import jax

        assert len(jax.devices()) == 2, jax.devices()
        scope, _, _ = make_distribution("jax_data_parallel")
    else:
        scope, _, _ = make_distribution("none")

    with scope:
        model = BertPretrainer.from_pretrained(model_dir, dropout=0.0, attention_dropout=0.0)
        if optimizer == "sgd":
            model.compile(optimizer=keras.optimizers.SGD(learning_rate))
        else:
            from keras_bert_impl.optimization import create_optimizer

            model.compile(optimizer=create_optimizer(learning_rate=learning_rate, total_steps=steps,
                                                     warmup_fraction=0.0))
    # tf.distribute cannot average a boolean sample batch when Keras builds the model (see for_tf_distribute).
    predict_x = dict(x, padding_mask=x["padding_mask"].astype("int32")) if distribution == "mirrored" else x
    logits = model.predict(predict_x, batch_size=batch_size, verbose=0)

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat(steps)
        if distribution == "mirrored":
            data = for_tf_distribute(data)
        history = model.fit(data, epochs=steps, steps_per_epoch=1, verbose=0)
    else:
        history = model.fit(x, y, batch_size=batch_size, epochs=steps, shuffle=False, verbose=0)
    if distribution == "jax_data_parallel":
        keras.distribution.set_distribution(None)
    results = {"logits_mlm": logits["mlm_logits"], "logits_nsp": logits["nsp_logits"]}
    results.update({f"loss_{name}": np.float32(values[0]) for name, values in history.history.items()})
    results.update(
        {f"weight_{v.path.replace('/', '|')}": keras.ops.convert_to_numpy(v.value) for v in model.weights}
    )
    return results


def main():
    args = parse_args()
    configure_devices(args.distribution)
    import numpy as np

    results = run_steps(args.model_dir, args.batch, args.distribution, args.steps, args.learning_rate,
                        args.optimizer)
    np.savez(args.out, **results)


if __name__ == "__main__":
    main()
