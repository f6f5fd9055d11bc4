# Sourced by the benchmarks' GPU drivers (gpu.sh, real_tasks_gpu.sh) on a machine with JAX, torch and transformers
# but no Keras and no TensorFlow (the CUDA image of this project's device machines), from the repository root:
# installs the Python wheels found in $WHEELS (default .whl/: keras, keras-hub and their small dependencies; see
# benchmarks/RESULTS.md for the download command) into /tmp/site without network, makes JAX allocate on demand,
# and writes what the machine is into $OUT/machine.txt.
WHEELS=${WHEELS:-.whl}
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# Jobs run one after another in their own processes; the JAX high-water mark should be what a job used.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONUNBUFFERED=1

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
