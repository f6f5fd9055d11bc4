"""Stage `score` of benchmarks/real_tasks.py: decode the saved logits with the repository's decoders, score them
with the official metrics and print ours next to Hugging Face's, per task and per epoch.

- MRPC: accuracy and F1 of the paraphrase class on the test file (`metrics.glue_metrics`).
- CoNLL-2003: `BertTokenClassificationPreprocessor.decode` (each word's tag from its first token), then
  entity-level precision / recall / F1 on test.txt (`metrics.entity_metrics`, the conlleval convention).
- SQuAD 2.0: `squad.decode_squad_predictions` (run_squad.py's decoding, n-best 20, answers <= 30 tokens), the
  null-score threshold tuned by `squad.tune_null_threshold` on the held-out training article (never on the
  test articles), then `squad.evaluate_v2` (the official evaluate-v2.0.py) on the test articles: EM, F1,
  HasAns F1, NoAns accuracy.
"""

import json
import os
import statistics

import numpy as np

from real_tasks_prepare import load_meta, squad_split
from real_tasks_train import IMPLEMENTATIONS, job_name, kept_positions, load_record, uses_length_buckets

SQUAD_DECODING = dict(n_best_size=20, max_answer_length=30)
# Diagnostics beside the official scores: forced_HasAns_f1, F1 on the answerable questions when every question is
# answered (no null threshold), the span quality apart from the no-answer decision; answered, the percentage of
# test questions answered at the tuned threshold; oracle_f1, the F1 of the threshold that is best on the test
# articles themselves (never used to pick anything): how much of an F1 gap the held-out threshold explains.
SQUAD_METRICS = ("exact", "f1", "HasAns_f1", "NoAns_f1", "forced_HasAns_f1", "answered", "oracle_f1")
CONLL_METRICS = ("f1", "precision", "recall")


def mrpc_scores(features_dir, predictions):
    """Per-epoch `{"accuracy", "f1"}` (percent) of the test logits `(E, N, 2)`."""
    from keras_bert_impl.metrics.glue_metrics import accuracy, f1

    with np.load(os.path.join(features_dir, "mrpc.npz")) as stored:
        labels = stored["test_labels"].astype(np.int64)
    curve = []
    for logits in predictions["test/logits"]:
        predicted = np.argmax(logits, axis=-1)
        curve.append({"accuracy": 100.0 * accuracy(labels, predicted), "f1": 100.0 * f1(labels, predicted)})
    return curve


def unflatten(stored, kept):
    """Stored per-token logits `(P, ...)` back at their positions of a zero-filled `(N, T, ...)` array."""
    logits = np.zeros(kept.shape + stored.shape[1:], np.float32)
    logits[kept] = stored
    return logits


class ConllScorer:
    """The test sentences, re-windowed as the prepare stage did (same preprocessor, same settings)."""

    def __init__(self, data_dir, features_dir, meta):
        from keras_bert_impl.tokenization import BertTokenizer
        from real_tasks_prepare import CONLL_TEST_FILE, conll_features, conll_tag_vocabulary

        task = meta["tasks"]["conll"]
        tokenizer = BertTokenizer.from_pretrained(os.path.join(features_dir, "checkpoint"))
        vocabulary = conll_tag_vocabulary(data_dir)
        self.sentences, self.preprocessor, self.features = conll_features(
            data_dir, CONLL_TEST_FILE, tokenizer, task["recipe"], vocabulary, meta["max_eval_examples"])
        self.labels = task["labels"]
        with np.load(os.path.join(features_dir, "conll.npz")) as stored:
            self.kept = kept_positions(stored, "conll", "test")
        if not np.array_equal(self.kept, self.features["word_index"] >= 0):
            raise ValueError(f"{features_dir}/conll.npz was prepared from other data or settings; prepare again.")

    def scores(self, predictions):
        from keras_bert_impl.metrics.entity_metrics import entity_scores

        gold = [list(sentence.tags) for sentence in self.sentences]
        curve = []
        for logits in predictions["test/logits"]:
            decoded = self.preprocessor.decode(self.features, unflatten(logits, self.kept), self.labels)
            scores = entity_scores(gold, [[word["tag"] for word in result["words"]] for result in decoded])
            curve.append({key: 100.0 * scores[key] for key in CONLL_METRICS})
        return curve


class SquadScorer:
    """The tune and test examples and features of the prepared SQuAD split, to decode logits against."""

    def __init__(self, data_dir, features_dir, meta):
        from keras_bert_impl.squad import SquadFeatures
        from keras_bert_impl.squad.squad_reader import parse_squad_examples

        self.split = squad_split(data_dir, meta["max_train_examples"], meta["max_eval_examples"])
        self.examples, self.features, self.kept = {}, {}, {}
        with np.load(os.path.join(features_dir, "squad.npz")) as stored, \
                np.load(os.path.join(features_dir, "squad_decoding.npz")) as decoding:
            for name in ("tune", "test"):
                self.examples[name] = parse_squad_examples(self.split[name], source=f"SQuAD {name} articles")
                self.kept[name] = kept_positions(stored, "squad", name)
                rows = len(stored[f"{name}_token_ids"])
                self.features[name] = SquadFeatures(
                    token_ids=stored[f"{name}_token_ids"].astype(np.int32),
                    segment_ids=stored[f"{name}_segment_ids"].astype(np.int32),
                    padding_mask=stored[f"{name}_padding_mask"],
                    start_positions=np.zeros(rows, np.int32),
                    end_positions=np.zeros(rows, np.int32),
                    **{field: decoding[f"{name}_{field}"] for field in (
                        "example_index", "window_start", "token_char_starts", "token_char_ends",
                        "token_is_max_context")},
                )

    def decode(self, name, start_logits, end_logits):
        from keras_bert_impl.squad.squad_decoding import decode_squad_predictions

        kept = self.kept[name]
        return decode_squad_predictions(self.examples[name], self.features[name], unflatten(start_logits, kept),
                                        unflatten(end_logits, kept), version_2_with_negative=True,
                                        **SQUAD_DECODING)

    def scores(self, predictions):
        """Per-epoch official v2.0 scores on the test articles, the threshold tuned on the held-out article."""
        from keras_bert_impl.squad.null_threshold import tune_null_threshold
        from keras_bert_impl.squad.squad_evaluation import evaluate_v2

        curve = []
        for epoch in range(len(predictions["test/start_logits"])):
            tune = self.decode("tune", predictions["tune/start_logits"][epoch], predictions["tune/end_logits"][epoch])
            tuned = tune_null_threshold(self.split["tune"], tune.best_non_null, tune.null_odds)
            test = self.decode("test", predictions["test/start_logits"][epoch], predictions["test/end_logits"][epoch])
            answers = test.with_null_threshold(tuned.threshold).predictions
            result = evaluate_v2(self.split["test"], answers)
            forced = evaluate_v2(self.split["test"], test.best_non_null)
            oracle = tune_null_threshold(self.split["test"], test.best_non_null, test.null_odds)
            curve.append({**{key: result[key] for key in SQUAD_METRICS if key in result},
                          "forced_HasAns_f1": forced["HasAns_f1"], "threshold": tuned.threshold,
                          "answered": 100.0 * sum(bool(text) for text in answers.values()) / len(answers),
                          "oracle_f1": oracle.f1, "tune_f1": tuned.f1})
        return curve


def _median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def _mean(values):
    values = [value for value in values if value is not None]
    return statistics.fmean(values) if values else None


def _format(value, digits=1):
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def nominal_training_flops_per_epoch(features_dir, record):
    """Nominal FLOPs of one training epoch of `record`'s job on the shapes it trained on (`flops.py`; every row at
    the packed length T, or at its length bucket's), so CPU runs can be read against the core's peak rate.

    Counted as a classifier training step (encoder + attention, 3x forward; the task heads differ by < 0.1%)."""
    from flops import bert_flops_per_sequence

    with open(os.path.join(features_dir, "checkpoint", "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    with np.load(os.path.join(features_dir, f"{record['task']}.npz")) as stored:
        padding_mask = stored["train_padding_mask"][:record["train_rows"]]
    recipe, max_length = record["recipe"], padding_mask.shape[1]
    lengths = np.full(len(padding_mask), max_length)
    if uses_length_buckets(recipe, record["implementation"]):
        from keras_bert_impl.data.length_bucketing import bucket_padded_lengths, sequence_lengths

        lengths = bucket_padded_lengths(sequence_lengths(padding_mask), max_length, recipe["bucket_width"])
    shapes, counts = np.unique(lengths, return_counts=True)
    return sum(int(count) * bert_flops_per_sequence(
        "classifier_training", config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"],
        int(length)) for length, count in zip(shapes, counts))


def job_summary(record):
    """Training time and memory of one job: totals, the median epoch after the first (compilation), peaks."""
    epochs = record["epochs"]
    steady = epochs[1:] or epochs
    device_peaks = [epoch["peak_device_bytes"] for epoch in epochs if epoch["peak_device_bytes"] is not None]
    return {
        "train_cpu_seconds": sum(epoch["train_cpu_seconds"] for epoch in epochs),
        "train_wall_seconds": sum(epoch["train_wall_seconds"] for epoch in epochs),
        "cpu_seconds_per_epoch": _median([epoch["train_cpu_seconds"] for epoch in steady]),
        "wall_seconds_per_epoch": _median([epoch["train_wall_seconds"] for epoch in steady]),
        "peak_host_mib": max(epoch["peak_host_bytes"] for epoch in epochs) / 2**20,
        "peak_device_mib": max(device_peaks) / 2**20 if device_peaks else None,
    }


def score(data_dir, features_dir, runs_dir, seeds, tasks=None, print_fn=print):
    """Score the finished jobs of `tasks` (default: all prepared) in `runs_dir`; print the side-by-side tables;
    return `{task: {impl: [run, ...]}}`."""
    meta = load_meta(features_dir)
    scorer_classes, scorers = {"squad": SquadScorer, "conll": ConllScorer}, {}
    results = {}
    print_fn(f"Features: {features_dir} ({meta['note']}); checkpoint weights as prepared: "
             f"{meta['checkpoint_dtype']}, trained in float32.")
    for task, task_meta in meta["tasks"].items():
        if tasks is not None and task not in tasks:
            continue
        results[task] = {}
        for implementation in IMPLEMENTATIONS:
            runs = []
            for seed in seeds:
                record = load_record(runs_dir, task, implementation, seed)
                if record is None:
                    continue
                with np.load(os.path.join(runs_dir, f"{job_name(task, implementation, seed)}.npz")) as stored:
                    predictions = dict(stored)
                if task in scorer_classes:
                    if task not in scorers:  # built once per task: decoding needs the examples and windows
                        scorers[task] = scorer_classes[task](data_dir, features_dir, meta)
                    curve = scorers[task].scores(predictions)
                else:
                    curve = mrpc_scores(features_dir, predictions)
                summary = job_summary(record)
                if record.get("device", "").endswith("cpu"):  # host CPU-seconds measure the work only on a CPU
                    summary["gflop_per_cpu_second"] = (nominal_training_flops_per_epoch(features_dir, record) / 1e9
                                                       / summary["cpu_seconds_per_epoch"])
                runs.append({"seed": seed, "curve": curve, "record": record, **summary})
            if runs:
                results[task][implementation] = runs
        print_task(task, task_meta, results[task], print_fn)
    return results


METRIC_NAMES = {"mrpc": ("accuracy", "f1"), "squad": SQUAD_METRICS, "conll": CONLL_METRICS}


def _batches(record, implementation):
    recipe = record["recipe"]
    if uses_length_buckets(recipe, implementation):
        return f"length-bucketed (width {recipe['bucket_width']})"
    return f"padded to {recipe['sequence_length']}"


def print_task(task, task_meta, runs_by_implementation, print_fn=print):
    recipe = task_meta["recipe"]
    print_fn(f"\n== {task}: " + ", ".join(f"{key} {value}" for key, value in recipe.items()) + "; " +
             ", ".join(f"{key} {value}" for key, value in task_meta.items()
                       if key.endswith(("rows", "questions", "sentences"))))
    if not runs_by_implementation:
        print_fn("  no finished runs")
        return
    metrics = METRIC_NAMES[task]
    header = (f"  {'impl':<5} {'seeds':<6}" + "".join(f" {name:>10}" for name in metrics) +
              f" {'train CPU-s':>12} {'train wall s':>13} {'CPU-s/epoch':>12} {'GFLOP/CPU-s':>12} {'peak host MiB':>14}"
              f" {'peak dev MiB':>13}  device")
    print_fn(header)
    for implementation, runs in runs_by_implementation.items():
        final = [run["curve"][-1] for run in runs]
        row = f"  {implementation:<5} {','.join(str(run['seed']) for run in runs):<6}"
        row += "".join(f" {_format(_mean([scores[name] for scores in final]), 2):>10}" for name in metrics)
        row += (f" {_format(_median([run['train_cpu_seconds'] for run in runs])):>12}"
                f" {_format(_median([run['train_wall_seconds'] for run in runs])):>13}"
                f" {_format(_median([run['cpu_seconds_per_epoch'] for run in runs])):>12}"
                f" {_format(_median([run.get('gflop_per_cpu_second') for run in runs])):>12}"
                f" {_format(_median([run['peak_host_mib'] for run in runs]), 0):>14}"
                f" {_format(_median([run['peak_device_mib'] for run in runs]), 0):>13}"
                f"  {runs[0]['record'].get('device', '?')}")
        print_fn(row)
    if {"ours", "hf"} <= set(runs_by_implementation):
        ours, hf = (runs_by_implementation[name] for name in ("ours", "hf"))
        for key, label in (("cpu_seconds_per_epoch", "CPU-s per epoch"),
                           ("wall_seconds_per_epoch", "wall s per epoch")):
            ours_value, hf_value = _median([run[key] for run in ours]), _median([run[key] for run in hf])
            if ours_value and hf_value:
                print_fn(f"  ours/hf {label} (median, epochs after the first): {ours_value / hf_value:.2f}x")
    print_fn("  learning curve (test metrics after each epoch, mean over seeds; SQuAD: threshold tuned per epoch"
             " on the held-out article):")
    for implementation, runs in runs_by_implementation.items():
        for name in metrics:
            epochs = min(len(run["curve"]) for run in runs)
            points = [_mean([run["curve"][epoch][name] for run in runs]) for epoch in range(epochs)]
            print_fn(f"    {implementation:<5} {name:<10} " + " ".join(f"{_format(point, 2):>6}" for point in points))
        for run in runs:
            print_fn(f"    {implementation:<5} seed {run['seed']} loss " +
                     " ".join(f"{epoch['loss']:.3f}" for epoch in run["record"]["epochs"]) +
                     f"; batches {_batches(run['record'], implementation)}"
                     f"; load average at the end {', '.join(f'{x:.1f}' for x in run['record']['load_average'])}"
                     f"; tensorflow imported: {run['record']['tensorflow_imported']}")
