"""`keras-bert pretrain` in a fresh process with N logical CPU devices (test helper for `--distribution`).

    KERAS_BACKEND=tensorflow python tests/cli/pretrain_worker.py N pretrain ARGS...
    KERAS_BACKEND=jax python tests/cli/pretrain_worker.py N pretrain ARGS...   # N JAX host devices

Logical devices (and JAX's host device count) must be configured before TensorFlow (JAX) initialises, which
the pytest process has long done. With `KILL_AFTER_STEP=S` in the environment the process kills itself
(SIGKILL, as a lost machine) right after the checkpoint step S of its run: an interruption at a known step.
"""

import logging
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main():
    devices, argv = int(sys.argv[1]), sys.argv[2:]
    if os.environ.get("KERAS_BACKEND") == "jax":  # N host devices for the Keras distribution API
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
        if "KERAS_DISTRIBUTION_NUM_PROCESSES" not in os.environ:  # JAX's devices wait for the other processes
            import jax

            assert len(jax.devices()) == devices, jax.devices()
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if "KILL_AFTER_STEP" in os.environ:
        kill_after_step(int(os.environ["KILL_AFTER_STEP"]))
    from keras_bert_impl.cli import main as keras_bert

    return keras_bert(argv)


def kill_after_step(step):
    """SIGKILL this process at the end of the checkpoint interval that ends at `step`."""
    from keras_bert_impl.training.callbacks import TrainingCheckpoint

    checkpoint_interval_end = TrainingCheckpoint.on_epoch_end

    def on_epoch_end(self, epoch, logs=None):
        checkpoint_interval_end(self, epoch, logs)
        if (epoch + 1) * self.steps_per_epoch >= step:
            logging.getLogger(__name__).info("Killing this process (KILL_AFTER_STEP=%d)", step)
            os.kill(os.getpid(), signal.SIGKILL)

    TrainingCheckpoint.on_epoch_end = on_epoch_end


if __name__ == "__main__":
    sys.exit(main())
