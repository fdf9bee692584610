#!/usr/bin/env bash
# On a GPU: the calibration suite (bench/cost_kernels/suite.py) at production shapes under `capture --time`, and two
# libraries the cost model is not fitted on — FlagGems (installed, its package's folder as the workspace) and
# Liger-Kernel (its src folder) — through bench/cost_kernels/library_driver.py; each step bounded, everything in one
# archive. `bench/cost_by_class.py` then compares, without a GPU, the model's estimates with these measurements.
# Usage: bash bench/gpu_cost_suite.sh LIGER_SRC FLAGGEMS_SITE OUT_DIR [SUITE_PARTS]
#   SUITE_PARTS: e.g. split_k,moe,attention_bwd (suite_driver.PARTS; default all)
set -uo pipefail
LIGER=$(cd "${1:?Liger-Kernel src folder}" && pwd); SITE=$(cd "${2:?folder holding flag_gems}" && pwd)
OUT_DIR=${3:?results folder}; PARTS=${4:-}; mkdir -p "$OUT_DIR"
REPO=$PWD; RES=$(mktemp -d)
export PYTHONPATH="$REPO/server:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$RES/cache"
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
step() {  # step NAME SECONDS WORKSPACE CMD...: one bounded capture, its captures and log kept
  local name=$1 limit=$2 ws=$3; shift 3
  (cd "$ws" && rm -rf .tritonlens && timeout -k 5 -s TERM "$limit" python3 -m tritonlens.gpu.capture --time \
    --workspace "$ws" -- "$@" 2>&1 | tee "$RES/$name.log"
   cp .tritonlens/captures.jsonl "$RES/$name-captures-timed.jsonl"; rm -rf .tritonlens)
  echo "== $name done ($SECONDS s)"
}
DRV=$REPO/bench/cost_kernels
step suite 100 "$DRV" python3 suite_driver.py "$RES/suite-measured.json" ${PARTS:+--parts "$PARTS"}
step flaggems 150 "$SITE" python3 "$DRV/library_driver.py" "$RES/flaggems-measured.json" flaggems
step liger 60 "$LIGER" python3 "$DRV/library_driver.py" "$RES/liger-measured.json" liger "$LIGER"
cd "$RES" && tar czf "$OUT_DIR/cost-suite.tgz" ./*.json ./*.jsonl ./*.log; ls -la "$OUT_DIR"
