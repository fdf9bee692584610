#!/usr/bin/env bash
# On a GPU: the cost model's second round under `capture --time` (bench/cost_kernels/round2_driver.py): Triton's
# persistent-matmul tutorial in its flattened form at 8192^3 fp8/fp16, 2048x28672x8192 and a decode shape, and the
# few-program sweep (the suite's GEMM on 2-16 programs, K 8192-32768, 2-4 stages) with its hold-out, and the suite's
# grouped GEMM with 8 and 64 experts over the same tokens; everything in
# one archive. Then, without a GPU, the model against these times:
#   python3 bench/cost_by_class.py --set round2 bench/cost_kernels round2-captures-timed.jsonl --out OUT.md
# Usage: bash bench/gpu_cost_round2.sh OUT_DIR [PARTS]   (PARTS: e.g. persistent or few,few_holdout; default all)
set -uo pipefail
OUT_DIR=${1:?results folder}; PARTS=${2:-}; mkdir -p "$OUT_DIR"; OUT_DIR=$(cd "$OUT_DIR" && pwd)
REPO=$PWD; RES=$(mktemp -d); DRV=$REPO/bench/cost_kernels
export PYTHONPATH="$REPO/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$RES/cache"
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
(cd "$DRV" && rm -rf .tritonlens && timeout -k 5 -s TERM 400 python3 -m tritonlens.gpu.capture --time \
  --workspace "$DRV" -- python3 round2_driver.py "$RES/round2-measured.json" ${PARTS:+--parts "$PARTS"} 2>&1 \
  | tee "$RES/round2.log"; cp .tritonlens/captures.jsonl "$RES/round2-captures-timed.jsonl"; rm -rf .tritonlens)
cd "$RES" && tar czf "$OUT_DIR/cost-round2.tgz" ./*.json ./*.jsonl ./*.log; ls -la "$OUT_DIR"
