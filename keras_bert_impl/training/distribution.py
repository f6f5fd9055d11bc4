"""Data-parallel training setups by name: tf.distribute strategies and the Keras distribution API on JAX.

TensorFlow appears here only at the edge (strategy objects and a tf.data map), imported when asked for.

| name                | backend    | what                                                                  |
|---------------------|------------|-----------------------------------------------------------------------|
| `none`              | any        | one device                                                            |
| `mirrored`          | tensorflow | `tf.distribute.MirroredStrategy`: every local GPU (or given devices)  |
| `multi_worker`      | tensorflow | `MultiWorkerMirroredStrategy`; each worker's `TF_CONFIG` names the     |
|                     |            | cluster, the same command runs on every worker, the chief writes      |
| `tpu`               | tensorflow | `TPUStrategy` on the TPU named by `tpu` (a name or `grpc://` address) |
| `jax_data_parallel` | jax        | `keras.distribution.DataParallel` over every JAX device               |

In all of them the batch size given to the input pipeline is the global batch, split across replicas.
Under tf.distribute each replica normalises the MLM loss by its own mask weights and the replica gradients
are averaged (as the original's per-TPU-core loss); with JAX `DataParallel` the step is traced over the
global batch, so the normalisation is global. The two agree when the replicas hold equal mask-weight sums
(always so with the original's fixed number of predictions per full-length sequence).
"""

import contextlib
import logging
import os

import keras

logger = logging.getLogger(__name__)

DISTRIBUTIONS = ("none", "mirrored", "multi_worker", "tpu", "jax_data_parallel")
_TENSORFLOW_ONLY = ("mirrored", "multi_worker", "tpu")


def make_distribution(name, tpu="", devices=None):
    """Set up distribution `name`; return `(scope, strategy, is_chief)`. Logs the replicas (tf.distribute)
    or the device mesh (`jax_data_parallel`) at INFO.

    Build and compile the model inside `scope` (a no-op context for `none` and `jax_data_parallel`, whose
    layout is global state set here). `strategy` is the tf.distribute strategy or None; `is_chief` says
    whether this process should write checkpoints and logs.

    Args:
        name: str. One of `DISTRIBUTIONS`.
        tpu: str. TPU name or address for `"tpu"`. Defaults to "" (the local / environment TPU).
        devices: list of str or None. Devices for `"mirrored"` / `"jax_data_parallel"`; None means all.
            Defaults to None.
    """
    if name not in DISTRIBUTIONS:
        raise ValueError(f"Unknown distribution {name!r}; choose one of {DISTRIBUTIONS}.")
    backend = keras.backend.backend()
    if name in _TENSORFLOW_ONLY and backend != "tensorflow":
        raise ValueError(f"Distribution {name!r} needs KERAS_BACKEND=tensorflow (the backend is {backend!r}).")
    if name == "jax_data_parallel" and backend != "jax":
        raise ValueError(f"Distribution 'jax_data_parallel' needs KERAS_BACKEND=jax (the backend is {backend!r}).")
    if name == "none":
        return contextlib.nullcontext(), None, True
    if name == "jax_data_parallel":
        distribution = keras.distribution.DataParallel(devices=devices)
        keras.distribution.set_distribution(distribution)
        mesh = distribution.device_mesh
        logger.info("DataParallel over a %d-device mesh: shape %s, axis names %s (batch axis %r), devices %s",
                    int(mesh.devices.size), tuple(mesh.shape), tuple(mesh.axis_names), distribution.batch_dim_name,
                    ", ".join(str(device) for device in mesh.devices.flat))
        return contextlib.nullcontext(), None, True

    import tensorflow as tf

    if name == "mirrored":
        strategy = tf.distribute.MirroredStrategy(devices)
        is_chief = True
    elif name == "multi_worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        resolver = strategy.cluster_resolver
        is_chief = resolver.task_type in (None, "chief") or (
            resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict()
        )
    else:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or os.environ.get("TPU_NAME", ""))
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
        is_chief = True
    logger.info("%s with %d replicas in sync", type(strategy).__name__, strategy.num_replicas_in_sync)
    return StrategyScope(strategy), strategy, is_chief


def replica_count(strategy=None):
    """Replicas the global batch is split over: the strategy's, the devices of the Keras distribution's mesh
    (JAX `DataParallel`), or 1."""
    if strategy is not None:
        return int(strategy.num_replicas_in_sync)
    distribution = keras.distribution.distribution()
    if isinstance(distribution, keras.distribution.DataParallel):
        return int(distribution.device_mesh.devices.size)
    return 1


class StrategyScope:
    """A `with` block that may be entered any number of times: each entry opens a fresh `strategy.scope()`.

    The object one `strategy.scope()` call returns is a single-use context manager (a second `with` on it
    fails); callers such as `keras-bert pretrain` enter the scope once to build the model and again for each
    phase's optimizer.
    """

    def __init__(self, strategy):
        self.strategy = strategy
        self._entered = []

    def __enter__(self):
        scope = self.strategy.scope()
        self._entered.append(scope)
        return scope.__enter__()

    def __exit__(self, *exception):
        return self._entered.pop().__exit__(*exception)


def for_tf_distribute(dataset):
    """Cast boolean features (`padding_mask`) of `(x, y)` batches to int32 for tf.distribute.

    Keras 3 (`TensorFlowTrainer._maybe_symbolic_build`) averages one distributed batch across replicas to
    build the model, which TensorFlow cannot do for booleans. The model treats an int 0/1 padding mask
    exactly as the boolean one.
    """
    import tensorflow as tf

    def cast_booleans(features):
        return {key: tf.cast(value, tf.int32) if value.dtype == tf.bool else value for key, value in features.items()}

    return dataset.map(lambda x, y: (cast_booleans(x), y), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
