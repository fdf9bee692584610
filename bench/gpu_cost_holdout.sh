#!/usr/bin/env bash
# On a GPU: hold-out launches of FlagGems and Liger-Kernel (library_driver.py flaggems-holdout / liger-holdout: ops
# and shapes run only after the cost model's mechanisms were settled) under `capture --time`, each step bounded,
# everything in one archive. Usage: bash bench/gpu_cost_holdout.sh LIGER_SRC FLAGGEMS_SITE OUT_DIR
# WHICH="fla" FLA_SITE=DIR (the folder holding fla, fla-core's package) runs flash-linear-attention instead, a library
# the model was never fitted on (library_driver.py fla); WHICH's default is "flaggems liger".
set -uo pipefail
LIGER=$(cd "${1:?Liger-Kernel src folder}" && pwd); SITE=$(cd "${2:?folder holding flag_gems}" && pwd)
OUT_DIR=${3:?results folder}; mkdir -p "$OUT_DIR"
REPO=$PWD; RES=$(mktemp -d)
WHICH=" ${WHICH:-flaggems liger} "; FLA=${FLA_SITE:-$SITE}
export PYTHONPATH="$REPO/server:$SITE:$FLA${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$RES/cache"
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
step() {  # step NAME SECONDS WORKSPACE CMD...: one bounded capture, its captures and log kept
  local name=$1 limit=$2 ws=$3; shift 3
  (cd "$ws" && rm -rf .tritonlens && timeout -k 5 -s TERM "$limit" python3 -m tritonlens.gpu.capture --time \
    --workspace "$ws" -- "$@" 2>&1 | grep -v "UserWarning\|tracemalloc\|_mask = " | tee "$RES/$name.log"
   cp .tritonlens/captures.jsonl "$RES/$name-captures-timed.jsonl"; rm -rf .tritonlens)
  echo "== $name done ($SECONDS s)"
}
DRV=$REPO/bench/cost_kernels
[[ $WHICH == *" flaggems "* ]] && step flaggems-holdout 150 "$SITE" python3 "$DRV/library_driver.py" "$RES/flaggems-holdout-measured.json" flaggems-holdout
[[ $WHICH == *" liger "* ]] && step liger-holdout 70 "$LIGER" python3 "$DRV/library_driver.py" "$RES/liger-holdout-measured.json" liger-holdout "$LIGER"
[[ $WHICH == *" fla "* ]] && step fla 420 "$FLA" python3 "$DRV/library_driver.py" "$RES/fla-measured.json" fla
cd "$RES" && tar czf "$OUT_DIR/cost-holdout.tgz" ./*.json ./*.jsonl ./*.log; ls -la "$OUT_DIR"
