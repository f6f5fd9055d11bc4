"""Pretraining steps/s on 1 vs 2 logical CPU devices, and the distance of the 2-device weights from 1 device.

Data parallelism as `keras-bert pretrain --distribution` runs it: `mirrored` (`tf.distribute.MirroredStrategy`)
on TensorFlow, `jax_data_parallel` (`keras.distribution.DataParallel`) on JAX. Each measurement is a fresh
process (the devices must exist before the framework initialises): the same seeded tiny `BertPretrainer`
(no dropout), the package's default optimizer (`AdamWeightDecay`, `global_clipnorm=1.0`) and the same fixed
global batches; `--warmup-steps` steps (compilation) are not timed, then `--steps` are. Each row is the
median of `--repeats` processes, 1 and 2 devices interleaved (1, 2, 1, 2, ...) so that load changes hit
both alike; CPU time is the process's user + system time of the timed steps; the weight difference is the
largest absolute difference of any weight after all steps, 2 devices vs 1 device of the same repeat.
Every replica holds the same number of masked tokens (all slots real), so the per-replica MLM loss
normalisation of tf.distribute equals one device's.

Two logical devices share the host's cores: this measures the cost of splitting the batch and combining
the gradients, not the speedup of two real accelerators. The load average is printed because the figures
depend on what else runs.

    python benchmarks/distribution_scaling.py                     # TensorFlow and JAX, 5 repeats
    python benchmarks/distribution_scaling.py --smoke             # tiny sizes, 1 repeat (CI)
    python benchmarks/distribution_scaling.py --backends jax      # one backend
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DISTRIBUTIONS = {"tensorflow": "mirrored", "jax": "jax_data_parallel"}
VOCABULARY_SIZE = 1000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="tensorflow,jax", help="comma-separated (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="processes per (backend, devices) (default: 5)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps (default: 20)")
    parser.add_argument("--warmup-steps", type=int, default=2, help="untimed steps first (default: 2)")
    parser.add_argument("--batch-size", type=int, default=16, help="global batch (default: 16)")
    parser.add_argument("--sequence-length", type=int, default=128, help="(default: 128)")
    parser.add_argument("--predictions", type=int, default=20, help="masked slots per row (default: 20)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and 1 repeat (CI)")
    parser.add_argument("--worker", nargs=2, metavar=("DEVICES", "WEIGHTS_NPZ"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.steps, args.warmup_steps = 1, 2, 1
        args.batch_size, args.sequence_length, args.predictions = 4, 32, 4
    return args


def fixed_batch(batch_size, sequence_length, predictions, seed=0):
    """One pretraining batch `(x, y)` with every mask slot real (equal mask weights on every replica)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = {
        "token_ids": rng.integers(5, VOCABULARY_SIZE, (batch_size, sequence_length)).astype("int32"),
        "segment_ids": (np.arange(sequence_length) >= sequence_length // 2).astype("int32")[None].repeat(batch_size, 0),
        "padding_mask": np.ones((batch_size, sequence_length), "int32"),
        "mask_positions": np.sort(np.stack([rng.choice(np.arange(1, sequence_length - 1), predictions, replace=False)
                                            for _ in range(batch_size)]), axis=1).astype("int32"),
    }
    y = {
        "mask_ids": rng.integers(5, VOCABULARY_SIZE, (batch_size, predictions)).astype("int32"),
        "mask_weights": np.ones((batch_size, predictions), "float32"),
        "next_sentence_labels": (np.arange(batch_size) % 2).astype("int32"),
    }
    return x, y


def run_worker(args, devices, weights_path):
    """In a fresh process: train on `devices` logical CPU devices; print a JSON line of the timing and save
    the final weights to `weights_path`."""
    backend = os.environ["KERAS_BACKEND"]
    if backend == "jax":
        # Appended, so flags the caller set (the test suite's fast-compile ones) still apply.
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    import keras
    import numpy as np

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.pretrainer import BertPretrainer
    from keras_bert_impl.optimization import create_optimizer
    from keras_bert_impl.training.distribution import for_tf_distribute, make_distribution, replica_count

    distribution = DISTRIBUTIONS[backend] if devices > 1 else "none"
    scope, strategy, _ = make_distribution(distribution)
    assert replica_count(strategy) == devices, (distribution, replica_count(strategy))
    keras.utils.set_random_seed(0)
    with scope:
        backbone = BertBackbone.from_scratch("tiny", vocabulary_size=VOCABULARY_SIZE,
                                             max_sequence_length=args.sequence_length, dropout=0.0,
                                             attention_dropout=0.0)
        model = BertPretrainer(backbone)
        total_steps = args.warmup_steps + args.steps
        model.compile(optimizer=create_optimizer(learning_rate=1e-3, total_steps=total_steps, warmup_fraction=0.0))
    x, y = fixed_batch(args.batch_size, args.sequence_length, args.predictions)
    data = tf.data.Dataset.from_tensors((x, y)).repeat()
    if strategy is not None:
        data = for_tf_distribute(data)
    model.fit(data, steps_per_epoch=args.warmup_steps, epochs=1, verbose=0)
    usage, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    model.fit(data, steps_per_epoch=args.steps, epochs=1, verbose=0)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_seconds = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    np.savez(weights_path, *[keras.ops.convert_to_numpy(weight.value) for weight in model.weights])
    print(json.dumps({"steps_per_second": args.steps / seconds, "cpu_seconds_per_step": cpu_seconds / args.steps}))


def measure(args, backend, devices, weights_path):
    """One worker process: its JSON result."""
    command = [sys.executable, os.path.abspath(__file__), "--worker", str(devices), weights_path,
               "--steps", str(args.steps), "--warmup-steps", str(args.warmup_steps), "--batch-size",
               str(args.batch_size), "--sequence-length", str(args.sequence_length), "--predictions",
               str(args.predictions)]
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join([REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{backend} on {devices} devices exited {result.returncode}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def max_difference(path, reference_path):
    import numpy as np

    with np.load(path) as one, np.load(reference_path) as reference:
        return max(float(np.abs(one[name] - reference[name]).max()) for name in reference.files)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args, int(args.worker[0]), args.worker[1])
    print(f"tiny BertPretrainer, global batch {args.batch_size} x {args.sequence_length} tokens, "
          f"{args.predictions} masked slots per row, default optimizer (AdamWeightDecay, global_clipnorm=1.0); "
          f"{args.warmup_steps} untimed + {args.steps} timed steps per process, median of {args.repeats} "
          f"interleaved processes")
    print("load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"{'backend':<11} {'distribution':<18} {'devices':>7} {'steps/s':>9} {'CPU s/step':>11} "
          f"{'max |w - 1 device|':>19}")
    for backend in args.backends.split(","):
        results = {1: [], 2: []}
        differences = []
        with tempfile.TemporaryDirectory() as scratch:
            for repeat in range(args.repeats):
                paths = {devices: os.path.join(scratch, f"{repeat}_{devices}.npz") for devices in (1, 2)}
                for devices in (1, 2):
                    results[devices].append(measure(args, backend, devices, paths[devices]))
                differences.append(max_difference(paths[2], paths[1]))
        rates = {devices: statistics.median(r["steps_per_second"] for r in runs) for devices, runs in results.items()}
        for devices, runs in results.items():
            cpu = statistics.median(r["cpu_seconds_per_step"] for r in runs)
            difference = f"{max(differences):.2e}" if devices == 2 else "(reference)"
            distribution = DISTRIBUTIONS[backend] if devices == 2 else "none"
            print(f"{backend:<11} {distribution:<18} {devices:>7} {rates[devices]:>9.2f} {cpu:>11.3f} {difference:>19}")
        print(f"{backend}: 2 devices / 1 device steps/s: {rates[2] / rates[1]:.2f}")
    print("load average (1, 5, 15 min) at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
