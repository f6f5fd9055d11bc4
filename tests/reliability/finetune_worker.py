"""A fine-tuning run driven by the library (`training.finetuning.finetune`), for the kill-and-resume test.

    python -m tests.reliability.finetune_worker OUTPUT_DIR [--slow SECONDS]

Builds a tiny `BertClassifier` on the synthetic token-presence task, compiles it with the fine-tuning optimizer
(warmup + linear decay, so the learning rate depends on the step), trains 3 epochs with length bucketing and
dropout on, and writes `OUTPUT_DIR/final.weights.npz` (every weight, by path) at the end. `--slow` sleeps
that many seconds per batch in the evaluation that ends the second and later epochs (before their state is
saved), so that the test can kill the process in epoch 2 after the first training state exists. Run the same
command again, or `main([OUTPUT_DIR])` in a process, to resume.
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


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir")
    parser.add_argument("--slow", type=float, default=0.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training import finetuning
    from tests.models.task_test_utils import token_presence_task
    from tests.training.finetuning_test_utils import tokenizer

    keras.utils.set_random_seed(SEED)
    x, y = token_presence_task(NUM_EXAMPLES, sequence_length=16, vocabulary_size=50, seed=SEED)
    backbone = BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=16, dropout=0.1, attention_dropout=0.1)
    model = BertClassifier(backbone, num_classes=2, labels=["no", "yes"],
                           preprocessor=BertPreprocessor(tokenizer(), sequence_length=16))
    epoch_ends = []

    def evaluate(m):
        epoch_ends.append(None)
        if len(epoch_ends) > 1:
            time.sleep(args.slow * NUM_EXAMPLES / BATCH_SIZE)
        logits = m.predict_on_batch(x)
        return {"accuracy": float(np.mean(np.argmax(logits, -1) == y))}

    settings = finetuning.FinetuningSettings(args.output_dir, epochs=EPOCHS, batch_size=BATCH_SIZE, learning_rate=1e-2,
                                             warmup_fraction=0.3, bucket_width=8, jit_compile=False, seed=SEED,
                                             verbose=0)
    checkpoint = finetuning.finetune(model, x, y, settings, counts=f"{NUM_EXAMPLES} examples", evaluate=evaluate,
                                     monitor="accuracy")
    start = checkpoint.trained_from
    np.savez(os.path.join(args.output_dir, "final.weights.npz"),
             **{v.path: keras.ops.convert_to_numpy(v) for v in model.weights})
    print(f"started at epoch {start}; steps {int(keras.ops.convert_to_numpy(model.optimizer.iterations))}; "
          f"best epoch {checkpoint.best_epoch}; history {len(checkpoint.history)}", flush=True)


if __name__ == "__main__":
    main()
