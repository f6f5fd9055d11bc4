#!/usr/bin/env bash
# BERT-base on one NVIDIA GPU, as MFU: ours (JAX + XLA; torch) vs keras-hub (JAX) and Hugging Face transformers
# (torch), bf16 mixed precision, seq 128 and 512 pretraining and seq 128 inference. The workloads, the timing and
# the attention-kernel check are described in benchmarks/gpu_benchmark.py, which this runs.
#
# Made for a machine with JAX, torch and transformers but no Keras (such as the CUDA image of this project's
# device machines): Python wheels found in $WHEELS (default .whl/: keras, keras-hub and their small dependencies; see
# benchmarks/RESULTS.md for the download command) are installed into /tmp/site first, without network.
#
#   OUT=/tmp/gpu benchmarks/gpu.sh                  # everything lands in $OUT (default runs/gpu)
#   benchmarks/gpu.sh --budget-seconds 300          # start no job after 300 s
#   benchmarks/gpu.sh --smoke                       # tiny config, runs on CPU too: checks it end to end
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"

WHEELS=${WHEELS:-.whl}
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# Jobs run one after another in their own processes; the JAX high-water mark should be what a job used.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
# Keras defaults to TensorFlow, which such a machine lacks; each job sets its own backend.
export KERAS_BACKEND=${KERAS_BACKEND:-jax}

{
  date -u
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  else
    echo "nvidia-smi not found: no NVIDIA GPU here, figures are CPU figures"
  fi
  "$PYTHON" -c "import sys, jax, torch, transformers, keras; print(sys.version.split()[0], 'jax', jax.__version__, jax.devices(), 'torch', torch.__version__, 'transformers', transformers.__version__, 'keras', keras.__version__)"
  "$PYTHON" -c "import importlib.util as u; print('tensorflow installed:', u.find_spec('tensorflow') is not None)"
} 2>&1 | tee "$OUT/machine.txt"

exec "$PYTHON" benchmarks/gpu_benchmark.py --out "$OUT" "$@"
