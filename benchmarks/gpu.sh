#!/usr/bin/env bash
# BERT-base on one NVIDIA GPU, as MFU: ours (JAX + XLA; torch) vs keras-hub (JAX) and Hugging Face transformers
# (torch), bf16 mixed precision, seq 128 and 512 pretraining and seq 128 inference. The workloads, the timing and
# the attention-kernel check are described in benchmarks/gpu_benchmark.py, which this runs.
#
# Made for a machine with JAX, torch and transformers but no Keras (such as the CUDA image of this project's
# device machines): benchmarks/gpu_machine.sh installs the wheels in $WHEELS first, without network.
#
#   OUT=/tmp/gpu benchmarks/gpu.sh                  # everything lands in $OUT (default runs/gpu)
#   benchmarks/gpu.sh --budget-seconds 300          # start no job after 300 s
#   benchmarks/gpu.sh --smoke                       # tiny config, runs on CPU too: checks it end to end
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"

# Keras defaults to TensorFlow, which such a machine lacks; each job sets its own backend.
export KERAS_BACKEND=${KERAS_BACKEND:-jax}
source benchmarks/gpu_machine.sh

exec "$PYTHON" benchmarks/gpu_benchmark.py --out "$OUT" "$@"
