"""`keras-bert pretrain` in a fresh process with N logical CPU devices (test helper for `--distribution`).

    KERAS_BACKEND=tensorflow python tests/cli/pretrain_worker.py N pretrain ARGS...
    KERAS_BACKEND=jax python tests/cli/pretrain_worker.py N pretrain ARGS...   # N JAX host devices

Logical devices (and JAX's host device count) must be configured before TensorFlow (JAX) initialises, which
the pytest process has long done.
"""

import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main():
    devices, argv = int(sys.argv[1]), sys.argv[2:]
    if os.environ.get("KERAS_BACKEND") == "jax":  # N host devices for the Keras distribution API
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
        import jax

        assert len(jax.devices()) == devices, jax.devices()
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from keras_bert_impl.cli import main as keras_bert

    return keras_bert(argv)


if __name__ == "__main__":
    sys.exit(main())
