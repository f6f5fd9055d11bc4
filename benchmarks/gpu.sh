#!/usr/bin/env bash
# BERT-base pretraining throughput and MFU on one NVIDIA GPU: ours on JAX and TensorFlow, XLA (jit_compile),
# bf16 mixed precision (float32 master weights, float32 softmax / LayerNorm / MLM logits), attention through
# keras.ops.dot_product_attention (attention dropout 0, so training takes the fused / flash path; hidden dropout
# stays 0.1), seq 128, 20 masked slots. Prints sequences/s and MFU = model FLOPs/s (keras_bert_impl.utils.flops)
# / the GPU's dense bf16 peak.
#
#   benchmarks/gpu.sh                       # H200 / H100 SXM: dense bf16 spec peak 989 TFLOP/s
#   PEAK_TFLOPS=312 benchmarks/gpu.sh       # A100
#   BATCH_SIZE=128 benchmarks/gpu.sh --repeats 10
#   benchmarks/gpu.sh --smoke               # tiny config, runs on CPU too: checks the script end to end
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
BATCH_SIZE=${BATCH_SIZE:-64}

# Both workers are alive at once: neither framework may grab all GPU memory up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export TF_FORCE_GPU_ALLOW_GROWTH=true

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
else
  echo "nvidia-smi not found: no NVIDIA GPU here, figures are CPU figures"
fi
"$PYTHON" -c "import jax; print('jax devices:', jax.devices())"

exec "$PYTHON" benchmarks/training_throughput.py \
  --size base --batch-size "$BATCH_SIZE" --seq-length 128 --predictions 20 \
  --workloads pretraining --impls ours --backends jax,tensorflow \
  --precision mixed_bfloat16 --attention-dropout 0 --peak-tflops "$PEAK_TFLOPS" \
  --repeats 5 --warmup 3 --chunk-seconds 5 "$@"
