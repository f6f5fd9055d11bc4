"""Data-parallel training setups by name: tf.distribute strategies and the Keras distribution API on JAX.

TensorFlow appears here only at the edge (strategy objects and a tf.data map), imported when asked for.

- `none` (any backend): one device;
- `mirrored` (tensorflow): `MirroredStrategy` over every local GPU (or given devices);
- `multi_worker` (tensorflow): `MultiWorkerMirroredStrategy`; the same command on every worker (`TF_CONFIG`);
- `tpu` (tensorflow): `TPUStrategy` on `tpu` or `TPU_NAME` (a name, `grpc://` address, or `local` on a TPU VM);
- `jax_data_parallel` (jax): `keras.distribution.DataParallel` over every device; on several hosts, the same
  command on each with `JAX_PROCESS_VARIABLES` set.

The batch size is the global batch. Under tf.distribute each replica normalises the MLM loss by its own mask
weights (as the original's per-TPU-core loss); JAX traces the step over the global batch.
"""

import contextlib
import logging
import os

import keras

logger = logging.getLogger(__name__)

DISTRIBUTIONS = ("none", "mirrored", "multi_worker", "tpu", "jax_data_parallel")
_BACKEND_OF = {"mirrored": "tensorflow", "multi_worker": "tensorflow", "tpu": "tensorflow", "jax_data_parallel": "jax"}


def make_distribution(name, tpu="", devices=None):
    """Set up distribution `name`; return `(scope, strategy, is_chief)`: build and compile the model inside the
    re-enterable `scope` (a no-op where the layout is global state); `strategy` is the tf.distribute one or None;
    `is_chief`: this process writes checkpoints and logs.

    Args:
        name: str. One of `DISTRIBUTIONS`.
        tpu: str. TPU name or address for `"tpu"`. Defaults to "" (the local / environment TPU).
        devices: list of str or None. Devices for `"mirrored"` / `"jax_data_parallel"` (None: all). Defaults to None.
    """
    if name not in DISTRIBUTIONS:
        raise ValueError(f"Unknown distribution {name!r}; choose one of {DISTRIBUTIONS}.")
    backend = keras.backend.backend()
    if _BACKEND_OF.get(name, backend) != backend:
        raise ValueError(f"Distribution {name!r} needs KERAS_BACKEND={_BACKEND_OF[name]} (the backend is {backend!r}).")
    if name == "none":
        return contextlib.nullcontext(), None, True
    if name == "jax_data_parallel":
        _initialize_jax_processes()
        distribution = keras.distribution.DataParallel(devices=devices)
        keras.distribution.set_distribution(distribution)
        mesh = distribution.device_mesh
        logger.info("DataParallel over a %d-device mesh: shape %s, axis names %s (batch axis %r), devices %s",
                    int(mesh.devices.size), tuple(mesh.shape), tuple(mesh.axis_names), distribution.batch_dim_name,
                    ", ".join(str(device) for device in mesh.devices.flat))
        return contextlib.nullcontext(), None, True  # every process writes, see `process_directory`

    import tensorflow as tf

    is_chief = True
    if name == "mirrored":
        strategy = tf.distribute.MirroredStrategy(devices)
    elif name == "multi_worker":
        strategy = _multi_worker_strategy()
        resolver = strategy.cluster_resolver
        is_chief = resolver.task_type in (None, "chief") or (
            resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())
    else:
        tpu = tpu or os.environ.get("TPU_NAME", "")
        if not tpu:  # TensorFlow would look for a Cloud TPU for minutes, then say "Please provide a TPU Name"
            raise ValueError("--distribution tpu needs a TPU: give --tpu NAME (or grpc://HOST:PORT), or set TPU_NAME; "
                             "on a Cloud TPU VM, --tpu local.")
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    logger.info("%s with %d replicas in sync", type(strategy).__name__, strategy.num_replicas_in_sync)
    return StrategyScope(strategy), strategy, is_chief


# What keras.distribution.initialize reads on each host of a multi-host JAX run: the coordinator's address
# (host:port, or every process's, comma-separated), the number of processes and this process's id.
JAX_PROCESS_VARIABLES = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                         "KERAS_DISTRIBUTION_PROCESS_ID")


def _initialize_jax_processes():
    """Join the processes of a multi-host JAX run (`keras.distribution.initialize`, before JAX initialises its
    devices) when `JAX_PROCESS_VARIABLES` are set; a variable missing or not a number is one clear line."""
    given = {variable: os.environ[variable] for variable in JAX_PROCESS_VARIABLES if os.environ.get(variable)}
    if not given:
        return
    missing = [variable for variable in JAX_PROCESS_VARIABLES if variable not in given]
    if missing:
        raise ValueError(f"A multi-host JAX run needs all of {', '.join(JAX_PROCESS_VARIABLES)}; "
                         f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set.")
    for variable in JAX_PROCESS_VARIABLES[1:]:
        if not given[variable].isdigit():
            raise ValueError(f"{variable}={given[variable]!r} is not a non-negative integer.")
    processes, process = int(given["KERAS_DISTRIBUTION_NUM_PROCESSES"]), int(given["KERAS_DISTRIBUTION_PROCESS_ID"])
    if not process < processes:
        raise ValueError(f"KERAS_DISTRIBUTION_PROCESS_ID={process} must be below "
                         f"KERAS_DISTRIBUTION_NUM_PROCESSES={processes} (ids count from 0).")
    keras.distribution.initialize()
    import jax

    logger.info("JAX process %d of %d (coordinator %s), %d of the %d devices local", jax.process_index(),
                jax.process_count(), given["KERAS_DISTRIBUTION_JOB_ADDRESSES"].split(",")[0],
                jax.local_device_count(), jax.device_count())


def _multi_worker_strategy():
    """A `MultiWorkerMirroredStrategy` whose `reduce` takes what Keras 3's trainer gives it: a nested structure
    (keras-team/keras#20329), and scalars with `axis=0` (their mean over the replicas)."""
    import tensorflow as tf

    class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
        def reduce(self, reduce_op, value, axis):
            reduce = super().reduce

            def reduce_one(one):
                scalar = self.experimental_local_results(one)[0].shape.rank == 0
                return reduce(reduce_op, one, None if scalar else axis)

            return tf.nest.map_structure(reduce_one, value)

    return MultiWorkerMirroredStrategy()


def process_directory(directory, name):
    """Where this process writes: `directory`, or `directory/process<i>` for process i > 0 of a multi-host JAX run
    (reading a weight is a collective every process joins, so each writes the same checkpoints)."""
    if name != "jax_data_parallel":
        return directory
    import jax

    return directory if jax.process_index() == 0 else os.path.join(directory, f"process{jax.process_index()}")


def replica_count(strategy=None):
    """Replicas the global batch is split over: the strategy's, the devices of the Keras distribution's mesh
    (JAX `DataParallel`), or 1."""
    if strategy is not None:
        return int(strategy.num_replicas_in_sync)
    distribution = keras.distribution.distribution()
    data_parallel = isinstance(distribution, keras.distribution.DataParallel)
    return int(distribution.device_mesh.devices.size) if data_parallel else 1


class StrategyScope:
    """A `with` block that may be entered any number of times, each entry a fresh `strategy.scope()` (one
    `strategy.scope()` object is single-use)."""

    def __init__(self, strategy):
        self.strategy, self._entered = strategy, []

    def __enter__(self):
        self._entered.append(self.strategy.scope())
        return self._entered[-1].__enter__()

    def __exit__(self, *exception):
        return self._entered.pop().__exit__(*exception)


def for_tf_distribute(dataset):
    """`(x, y)` batches for tf.distribute: boolean features cast to int32 (Keras 3 averages a distributed batch to
    build the model), sharded by data, so a multi-worker run trains on the batches of a one-device run."""
    import tensorflow as tf

    def cast_booleans(features):
        return {key: tf.cast(value, tf.int32) if value.dtype == tf.bool else value for key, value in features.items()}

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = dataset.map(lambda x, y: (cast_booleans(x), y), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.with_options(options)
