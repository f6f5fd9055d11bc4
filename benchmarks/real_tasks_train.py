"""Stage `train` of benchmarks/real_tasks.py: one fine-tuning job (task, implementation, seed) on prepared features.

Runs without TensorFlow (the result records whether it was imported). "ours" is the repository's task model
(`BertClassifier` / `BertQuestionAnswerer` / `BertTokenClassifier.from_pretrained` on the Hugging Face
checkpoint, no preprocessor) trained by Keras' own `fit` with `optimization.create_optimizer`
(by default our AdamWeightDecay: no bias correction, epsilon 1e-6; the Hugging Face schedule variant), under
`KERAS_BACKEND` (the driver sets jax). "hf" is a plain `transformers` + torch loop: `BertForSequenceClassification`
/ `BertForQuestionAnswering` / `BertForTokenClassification` (labels -100 ignored, as ours), `torch.optim.AdamW`
(epsilon 1e-6, the same weight-decay exclusions), `get_linear_schedule_with_warmup`, `clip_grad_norm_(1.0)`.
Both: the same features, batch size, epochs, learning rate, 10% warmup then linear decay to 0, decay 0.01 (not on
LayerNorm and biases), dropout 0.1 (the checkpoint's), float32 weights, the last partial batch kept, reshuffled
every epoch.

Batches: by default every batch is padded to the packed length `T` (as `run_qa.py`'s default `pad_to_max_length`).
`recipe["length_bucketing"]` = "ours" or "both" trains that implementation on the length-bucketed batches of the
library's `finetune-*` commands instead (`data.length_bucketing.packed_batches`, bucket width 32: rows
cut to their length, batched by length bucket, each batch padded to its bucket): "ours" times each as it runs by
default, "both" gives Hugging Face's loop exactly ours' batches. The batches come from `tf.data`, so this mode
needs TensorFlow; the learning-rate schedule counts the bucketed batches.

After every epoch the job predicts the evaluation rows (a learning curve) and writes
`<task>_<impl>_seed<seed>.npz` (the logits per epoch; per-token ones only where the decoder reads them, in
float16, to keep the files small) and `.json` (per-epoch training loss, updates, CPU-seconds, wall seconds, prediction
time, peak host memory, peak accelerator memory, versions). The training clock covers the updates only
(compilation included in the first epoch), not the predictions.
"""

import json
import os
import resource
import sys
import tempfile
import time

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_write, atomic_write_json

IMPLEMENTATIONS = ("ours", "hf")
EVAL_BATCH_SIZE = 128
# Ours: the original BERT AdamWeightDecay (no bias correction; the library's default), or "keras_adamw" (Keras'
# AdamW: bias correction, as torch's) to measure what the bias correction changes.
OURS_OPTIMIZERS = ("adamw_original", "keras_adamw")
OURS_OPTIMIZER = "adamw_original"
# Which implementations train on length-bucketed batches instead of batches padded to T.
LENGTH_BUCKETING = ("none", "ours", "both")
BUCKET_WIDTH = 32  # the `finetune-*` commands' default
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01
# Parameters without weight decay, as google-research/bert and the Hugging Face examples (our optimizer's
# DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY matches the same variables by path).
HF_NO_DECAY = ("bias", "LayerNorm.weight")
# Which splits each task predicts after every epoch, and its model's outputs.
EVAL_SPLITS = {"mrpc": ("test",), "squad": ("tune", "test"), "conll": ("test",)}
OUTPUTS = {"mrpc": ("logits",), "squad": ("start_logits", "end_logits"), "conll": ("logits",)}
# Per-token logits are stored only where the decoder reads them (SQuAD: real tokens; CoNLL: each word's first
# token), flattened, in float16: `kept_positions` says where, the score stage puts them back.
KEPT_POSITIONS = {"squad": "padding_mask", "conll": "word_mask"}


def job_name(task, implementation, seed):
    return f"{task}_{implementation}_seed{seed}"


def load_rows(features_dir, task, max_train_examples=None):
    """`(train_inputs, train_labels, {split: eval_inputs}, {split: kept positions or None})`, NumPy arrays at
    the models' dtypes."""
    with np.load(os.path.join(features_dir, f"{task}.npz")) as stored:
        arrays = dict(stored)

    def inputs(prefix, limit=None):
        rows = slice(None, limit)
        return {"token_ids": arrays[f"{prefix}_token_ids"][rows].astype(np.int32),
                "segment_ids": arrays[f"{prefix}_segment_ids"][rows].astype(np.int32),
                "padding_mask": arrays[f"{prefix}_padding_mask"][rows]}

    rows = slice(None, max_train_examples)
    if task == "squad":
        labels = {"start_positions": arrays["train_start_positions"][rows].astype(np.int32),
                  "end_positions": arrays["train_end_positions"][rows].astype(np.int32)}
    else:
        labels = arrays["train_labels"][rows].astype(np.int32)
    kept = {split: kept_positions(arrays, task, split) for split in EVAL_SPLITS[task]}
    return (inputs("train", max_train_examples), labels, {split: inputs(split) for split in EVAL_SPLITS[task]},
            kept)


def kept_positions(arrays, task, split):
    """Bool `(N, T)`: the positions whose logits are stored, or None when whole rows are (classification)."""
    return arrays[f"{split}_{KEPT_POSITIONS[task]}"] if task in KEPT_POSITIONS else None


def float32_checkpoint(features_dir, scratch_dir):
    """The prepared checkpoint with float32 weights (upcast into `scratch_dir` when it was stored as float16)."""
    import shutil

    from safetensors.numpy import load_file, save_file

    source = os.path.join(features_dir, "checkpoint")
    tensors = load_file(os.path.join(source, "model.safetensors"))
    if all(value.dtype != np.float16 for value in tensors.values()):
        return source
    target = os.path.join(scratch_dir, "checkpoint_float32")
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        if name != "model.safetensors":
            shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
    save_file({name: value.astype(np.float32) if value.dtype == np.float16 else value
               for name, value in tensors.items()}, os.path.join(target, "model.safetensors"))
    return target


def uses_length_buckets(recipe, implementation):
    return recipe.get("length_bucketing", "none") in ("both", implementation)


def batches_per_epoch(train_x, recipe, implementation):
    """Updates per epoch (`finetune-*`'s count): `ceil(N / B)` padded to T; length-bucketed, each bucket ends with
    its own partial batch."""
    from keras_bert_impl.data.length_bucketing import batch_count

    bucket_width = recipe.get("bucket_width", BUCKET_WIDTH) if uses_length_buckets(recipe, implementation) else None
    return batch_count(train_x["padding_mask"], recipe["batch_size"], bucket_width)


def length_bucketed_epoch(train_x, train_y, recipe, seed, epoch):
    """Epoch `epoch`'s length-bucketed `(x, y)` batches as `finetune-*` trains on them: `(tf.data.Dataset, steps)`.

    Fixed by `(seed, epoch)` alone, so ours and Hugging Face's loop get the same batches."""
    from keras_bert_impl.data.length_bucketing import batch_count, packed_batches

    steps = batch_count(train_x["padding_mask"], recipe["batch_size"], recipe["bucket_width"])
    dataset = packed_batches(train_x, train_y, batch_size=recipe["batch_size"], bucket_width=recipe["bucket_width"],
                             shuffle=True, seed=seed, epochs=epoch + 1)
    return dataset.skip(epoch * steps), steps


class EpochClock:
    """CPU-seconds (all threads of this process) and wall seconds of the blocks it times."""

    def __enter__(self):
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc_info):
        self.cpu, self.wall = time.process_time() - self.cpu, time.perf_counter() - self.wall


def peak_host_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


# -- ours: the repository's task models on Keras' trainer --------------------------------------------------

def _ours_device_peak_bytes():
    import keras

    if keras.backend.backend() == "jax":
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        return stats.get("peak_bytes_in_use")
    if keras.backend.backend() == "torch":
        import torch

        return torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    return None


def _ours_device():
    import keras

    if keras.backend.backend() == "jax":
        import jax

        return f"jax {jax.devices()[0].platform}"
    return keras.backend.backend()


def epochs_to_run(recipe):
    """The recipe's epochs, or its first `stop_after_epochs` (the schedule stays the whole recipe's)."""
    return min(recipe["epochs"], recipe.get("stop_after_epochs") or recipe["epochs"])


def train_ours(task, checkpoint, recipe, train_x, train_y, eval_x, seed, on_epoch, optimizer_name=OURS_OPTIMIZER):
    import keras

    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.optimization import create_optimizer
    from keras_bert_impl.training.finetuning import xla_jit_compile

    keras.utils.set_random_seed(seed)
    if task == "squad":
        model = BertQuestionAnswerer.from_pretrained(checkpoint, preprocessor=None)
    elif task == "conll":
        model = BertTokenClassifier.from_pretrained(checkpoint, num_classes=recipe["num_labels"], preprocessor=None)
    else:
        model = BertClassifier.from_pretrained(checkpoint, num_classes=recipe["num_labels"], preprocessor=None)
    optimizer = create_optimizer(name=optimizer_name, learning_rate=recipe["learning_rate"],
                                 total_steps=batches_per_epoch(train_x, recipe, "ours") * recipe["epochs"],
                                 warmup_fraction=WARMUP_FRACTION, weight_decay=WEIGHT_DECAY,
                                 schedule_variant="huggingface")
    model.compile(optimizer=optimizer, jit_compile=xla_jit_compile())
    updates = []
    count_updates = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: updates.append(batch))
    for epoch in range(epochs_to_run(recipe)):
        updates.clear()
        with EpochClock() as clock:
            if uses_length_buckets(recipe, "ours"):
                batches, steps = length_bucketed_epoch(train_x, train_y, recipe, seed, epoch)
                history = model.fit(batches, steps_per_epoch=steps, epochs=epoch + 1, initial_epoch=epoch,
                                    shuffle=False, callbacks=[count_updates], verbose=0)  # ordered by (seed, epoch)
            else:
                history = model.fit(train_x, train_y, batch_size=recipe["batch_size"], epochs=epoch + 1,
                                    initial_epoch=epoch, shuffle=True, callbacks=[count_updates], verbose=0)
        started = time.perf_counter()
        predictions = {}
        for split, x in eval_x.items():
            outputs = model.predict(x, batch_size=EVAL_BATCH_SIZE, verbose=0)
            outputs = outputs if isinstance(outputs, dict) else {"logits": outputs}
            predictions[split] = {name: np.asarray(value) for name, value in outputs.items()}
        on_epoch(epoch, float(history.history["loss"][-1]), len(updates), clock, time.perf_counter() - started,
                 predictions, _ours_device_peak_bytes())
    return {"backend": keras.backend.backend(), "device": _ours_device(), "keras": keras.__version__,
            "optimizer": optimizer_name}


# -- the reference: a plain transformers + torch loop ------------------------------------------------------

def train_huggingface(task, checkpoint, recipe, train_x, train_y, eval_x, seed, on_epoch, optimizer_name=None):
    import torch
    import transformers
    from transformers import (BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification,
                              get_linear_schedule_with_warmup)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 matrix products, as XLA's default on the GPU
        torch.cuda.reset_peak_memory_stats()
    transformers.set_seed(seed)
    if task == "squad":
        model = BertForQuestionAnswering.from_pretrained(checkpoint)
    elif task == "conll":
        model = BertForTokenClassification.from_pretrained(checkpoint, num_labels=recipe["num_labels"])
    else:
        model = BertForSequenceClassification.from_pretrained(checkpoint, num_labels=recipe["num_labels"])
    model.to(device)
    parameters = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in parameters if not any(part in n for part in HF_NO_DECAY)],
         "weight_decay": WEIGHT_DECAY},
        {"params": [p for n, p in parameters if any(part in n for part in HF_NO_DECAY)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=recipe["learning_rate"], eps=1e-6)
    num_rows, batch_size = len(train_x["token_ids"]), recipe["batch_size"]
    updates = batches_per_epoch(train_x, recipe, "hf") * recipe["epochs"]
    schedule = get_linear_schedule_with_warmup(optimizer, int(updates * WARMUP_FRACTION), updates)
    generator = torch.Generator().manual_seed(seed)

    def model_inputs(x, rows=slice(None)):
        return {"input_ids": torch.as_tensor(x["token_ids"][rows], dtype=torch.long, device=device),
                "token_type_ids": torch.as_tensor(x["segment_ids"][rows], dtype=torch.long, device=device),
                "attention_mask": torch.as_tensor(x["padding_mask"][rows], dtype=torch.long, device=device)}

    def labels(y):
        if task == "squad":
            return {name: torch.as_tensor(value, dtype=torch.long, device=device) for name, value in y.items()}
        return {"labels": torch.as_tensor(y, dtype=torch.long, device=device)}

    def epoch_batches(epoch):
        """`(x, y)` NumPy batches: ours' length-bucketed ones, or rows in a torch permutation padded to T."""
        if uses_length_buckets(recipe, "hf"):
            for x, y in length_bucketed_epoch(train_x, train_y, recipe, seed, epoch)[0].as_numpy_iterator():
                # Per-token targets stay (B, T); past the cut they are all ignored (-100): cut them as ours' loss does.
                yield x, (y[:, :x["token_ids"].shape[1]] if task == "conll" else y)
            return
        order = torch.randperm(num_rows, generator=generator).numpy()
        for start in range(0, num_rows, batch_size):
            rows = order[start:start + batch_size]
            yield ({name: value[rows] for name, value in train_x.items()},
                   {name: value[rows] for name, value in train_y.items()} if task == "squad" else train_y[rows])

    for epoch in range(epochs_to_run(recipe)):
        model.train()
        losses = []
        with EpochClock() as clock:
            for x, y in epoch_batches(epoch):
                loss = model(**model_inputs(x), **labels(y)).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
                losses.append(loss.detach())
            epoch_loss = float(torch.stack(losses).mean())  # waits for the device, inside the clock
        started = time.perf_counter()
        model.eval()
        predictions = {}
        with torch.no_grad():
            for split, x in eval_x.items():
                chunks = {name: [] for name in OUTPUTS[task]}
                for start in range(0, len(x["token_ids"]), EVAL_BATCH_SIZE):
                    outputs = model(**model_inputs(x, slice(start, start + EVAL_BATCH_SIZE)))
                    for name in OUTPUTS[task]:
                        chunks[name].append(getattr(outputs, name).float().cpu().numpy())
                predictions[split] = {name: np.concatenate(value) for name, value in chunks.items()}
        peak = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
        on_epoch(epoch, epoch_loss, len(losses), clock, time.perf_counter() - started, predictions, peak)
    return {"device": f"torch {device.type}", "torch": torch.__version__, "transformers": transformers.__version__,
            "optimizer": "torch AdamW"}


TRAINERS = {"ours": train_ours, "hf": train_huggingface}


def _stored_predictions(value, kept):
    """Class logits as they are; per-token logits at the kept positions, flattened, in float16."""
    if kept is None:
        return value.astype(np.float32)
    return value[kept].astype(np.float16)


def run_job(features_dir, out_dir, task, implementation, seed, recipe, max_train_examples=None,
            ours_optimizer=OURS_OPTIMIZER):
    """Train one job and write its `.npz` predictions and `.json` record into `out_dir`; returns the record."""
    train_x, train_y, eval_x, kept = load_rows(features_dir, task, max_train_examples)
    with tempfile.TemporaryDirectory(prefix="real_tasks_checkpoint_") as scratch_dir:
        return _run_job(out_dir, task, implementation, seed, recipe, train_x, train_y, eval_x, kept,
                        float32_checkpoint(features_dir, scratch_dir), ours_optimizer)


def _run_job(out_dir, task, implementation, seed, recipe, train_x, train_y, eval_x, kept, checkpoint,
             ours_optimizer):
    name = job_name(task, implementation, seed)
    epochs, curves = [], {f"{split}/{output}": [] for split in EVAL_SPLITS[task] for output in OUTPUTS[task]}

    def on_epoch(epoch, loss, updates, clock, predict_seconds, predictions, device_peak_bytes):
        epochs.append({"epoch": epoch + 1, "loss": loss, "updates": updates, "train_cpu_seconds": clock.cpu,
                       "train_wall_seconds": clock.wall, "predict_wall_seconds": predict_seconds,
                       "peak_host_bytes": peak_host_bytes(), "peak_device_bytes": device_peak_bytes})
        for split, outputs in predictions.items():
            for output, value in outputs.items():
                curves[f"{split}/{output}"].append(_stored_predictions(value, kept[split]))
        print(f"{name} epoch {epoch + 1}: loss {loss:.4f}, train {clock.cpu:.1f} CPU-s / {clock.wall:.1f} s, "
              f"predict {predict_seconds:.1f} s", flush=True)

    versions = TRAINERS[implementation](task, checkpoint, recipe, train_x, train_y, eval_x, seed, on_epoch,
                                        ours_optimizer)
    with atomic_write(os.path.join(out_dir, f"{name}.npz"), "wb") as handle:
        np.savez_compressed(handle, **{key: np.stack(value) for key, value in curves.items()})
    record = {
        "task": task, "implementation": implementation, "seed": seed, "recipe": recipe,
        "train_rows": int(len(train_x["token_ids"])), "epochs": epochs, **versions,
        "python": sys.version.split()[0], "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
        "tensorflow_imported": "tensorflow" in sys.modules,
    }
    atomic_write_json(os.path.join(out_dir, f"{name}.json"), record)
    return record


def load_record(out_dir, task, implementation, seed):
    path = os.path.join(out_dir, f"{job_name(task, implementation, seed)}.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
