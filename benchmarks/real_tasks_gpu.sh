#!/usr/bin/env bash
# The train stage of benchmarks/real_tasks.py on a GPU machine with JAX, torch and transformers but no Keras and
# no TensorFlow (the CUDA image of this project's device machines): MiniLM fine-tuned on MRPC and SQuAD 2.0 by
# ours (KERAS_BACKEND=jax, Keras fit) and by a plain transformers + torch loop, seeds 0 and 1, interleaved, each
# job in its own process, no job started past --budget-seconds.
#
# Before, here (TensorFlow): prepare the features and a float16 copy of the checkpoint into .real_tasks/features
#   python benchmarks/real_tasks.py prepare --features-dir .real_tasks/features --checkpoint-dtype float16
# and the wheels of Keras and its small dependencies into $WHEELS (default .whl/; benchmarks/RESULTS.md says
# how). There: OUT=/tmp/out benchmarks/real_tasks_gpu.sh --budget-seconds 400 --job-timeout 160
# The runs (per-epoch logits and one JSON record per job) come back as $OUT/runs.tar.partNN (15 MiB pieces);
# here: cat OUT/runs.tar.part* | tar -x -C RUNS_DIR, then
#   python benchmarks/real_tasks.py score --features-dir .real_tasks/features --runs-dir RUNS_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-runs/real_tasks_gpu}
FEATURES=${FEATURES:-.real_tasks/features}
RUNS=${RUNS:-/tmp/real_tasks_runs}
mkdir -p "$OUT" "$RUNS"

# Seed 1 reuses seed 0's compiled XLA programs (its first epoch then holds no compilation).
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/jax_cache}
# Keras defaults to TensorFlow, which such a machine lacks; our jobs run on JAX.
export KERAS_BACKEND=jax
source benchmarks/gpu_machine.sh

status=0
"$PYTHON" benchmarks/real_tasks.py train --features-dir "$FEATURES" --runs-dir "$RUNS" --ours-backend jax "$@" \
  2>&1 | tee "$OUT/train.log" || status=$?
# Few, flat files come back from such a machine: the runs travel as one tar cut into 15 MiB pieces.
tar -C "$RUNS" -cf - . | split -b 15M -d - "$OUT/runs.tar.part"
ls -l "$OUT"
exit "$status"
