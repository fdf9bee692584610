#!/usr/bin/env bash
# On a GPU: the calibration suite (bench/cost_kernels/suite.py) at production shapes under `capture --time`, and
# Liger-Kernel's forward ops at production shapes (a library the cost model is not fitted on), each timed by the
# capture and by the driver; everything lands in one archive. `bench/cost_by_class.py` then compares, without a
# GPU, the model's estimates with these measurements.
# Usage: bash bench/gpu_cost_suite.sh LIGER_SRC OUT_DIR
set -uo pipefail
LIGER=$(cd "${1:?Liger-Kernel src folder}" && pwd); OUT_DIR=${2:?results folder}; mkdir -p "$OUT_DIR"
REPO=$PWD; RES=$(mktemp -d)
export PYTHONPATH="$REPO/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$RES/cache"
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
cd "$REPO/bench/cost_kernels" && rm -rf .tritonlens
timeout -s TERM 330 python -m tritonlens.gpu.capture --time -- python suite_driver.py "$RES/suite-measured.json" \
  2>&1 | tee "$RES/suite.log"
cp .tritonlens/captures.jsonl "$RES/suite-captures-timed.jsonl"; rm -rf .tritonlens
cd "$LIGER" && rm -rf .tritonlens
timeout -s TERM 150 python -m tritonlens.gpu.capture --time -- python "$REPO/bench/cost_kernels/suite_driver.py" \
  "$RES/liger-measured.json" --liger "$LIGER" 2>&1 | tee "$RES/liger.log"
cp .tritonlens/captures.jsonl "$RES/liger-captures-timed.jsonl"; rm -rf .tritonlens
cd "$RES" && tar czf "$OUT_DIR/cost-suite.tgz" ./*.json ./*.jsonl ./*.log && ls -la "$OUT_DIR"
