"""A fine-tuning run driven by the library (`training.finetuning.fit_finetuning`), for the kill-and-resume test.

    python -m tests.reliability.finetune_worker OUTPUT_DIR [--slow SECONDS]

Builds a tiny `BertClassifier` on the synthetic token-presence task, compiles it with the fine-tuning optimizer
(warmup + linear decay, so the learning rate depends on the step), trains 3 epochs with length bucketing and
dropout on, and writes `OUTPUT_DIR/final.weights.npz` (every weight, by path) at the end. `--slow` sleeps
after every batch of the second and later epochs, so that the test can kill the process mid-epoch after the
first training state exists. Run the same command again to resume.
"""

import argparse
import logging
import os
import time

import keras
import numpy as np

EPOCHS = 3
BATCH_SIZE = 4
NUM_EXAMPLES = 40
SEED = 7


class SlowBatches(keras.callbacks.Callback):
    """Sleep after each batch from epoch `from_epoch` on (a stand-in for a long epoch)."""

    def __init__(self, seconds, from_epoch=1):
        super().__init__()
        self.seconds, self.from_epoch, self.epoch = seconds, from_epoch, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.epoch >= self.from_epoch:
            time.sleep(self.seconds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir")
    parser.add_argument("--slow", type=float, default=0.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.training import finetuning
    from tests.models.task_test_utils import token_presence_task

    keras.utils.set_random_seed(SEED)
    x, y = token_presence_task(NUM_EXAMPLES, sequence_length=16, vocabulary_size=50, seed=SEED)
    backbone = BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=16, dropout=0.1, attention_dropout=0.1)
    model = BertClassifier(backbone, num_classes=2, labels=["no", "yes"])
    _, steps_per_epoch = finetuning.training_dataset(x, y, BATCH_SIZE, bucket_width=8, seed=SEED)
    finetuning.compile_for_finetuning(model, 1e-2, steps_per_epoch * EPOCHS, warmup_fraction=0.3,
                                      jit_compile=False)

    def evaluate(m):
        logits = m.predict_on_batch(x)
        return {"accuracy": float(np.mean(np.argmax(logits, -1) == y))}

    checkpoint = finetuning.FinetuningCheckpoint(args.output_dir, evaluate=evaluate, monitor="accuracy")
    callbacks = [SlowBatches(args.slow)] if args.slow else []
    start = finetuning.fit_finetuning(model, x, y, checkpoint, EPOCHS, BATCH_SIZE, bucket_width=8, seed=SEED,
                                      callbacks=callbacks, verbose=0)
    np.savez(os.path.join(args.output_dir, "final.weights.npz"),
             **{v.path: keras.ops.convert_to_numpy(v) for v in model.weights})
    print(f"started at epoch {start}; steps {int(keras.ops.convert_to_numpy(model.optimizer.iterations))}; "
          f"best epoch {checkpoint.best_epoch}; history {len(checkpoint.history)}", flush=True)


if __name__ == "__main__":
    main()
