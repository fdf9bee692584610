#!/usr/bin/env bash
# On a GPU: the strided sweep (bench/cost_kernels/strided_sweep.py) under `capture --time` (estimates can then be made
# on the CPU from its captures), then each launch once under ncu: DRAM bytes and throughput, L2 and L1 sectors and
# hit rates, requests, warps resident and what they wait on. Everything goes into one archive. MODE `holdout` runs the
# sweep's hold-out launches instead (other shapes, element types and tiles), then the GPU tests.
# Usage: bash bench/gpu_strided_ncu.sh OUT_DIR [holdout]
set -uo pipefail
OUT=${1:?results folder}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd); MODE=${2:-}; TAG=strided${MODE:+-$MODE}
REPO=$PWD; RES=$(mktemp -d); DRV=$REPO/bench/cost_kernels; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
export PYTHONPATH="$REPO/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$RES/cache"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$RES/gpu.txt"
(cd "$DRV" && rm -rf .tritonlens && timeout -k 5 120 python3 -m tritonlens.gpu.capture --time --workspace "$DRV" -- \
  python3 strided_sweep.py "$RES/$TAG-sweep.json" $MODE 2>&1 | tee "$RES/$TAG-sweep.log"
 cp .tritonlens/captures.jsonl "$RES/$TAG-sweep-captures-timed.jsonl"; rm -rf .tritonlens)
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
M=$M,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__inst_executed_op_global_ld.sum
(cd "$DRV" && timeout -k 5 240 "$NCU" --csv --metrics "$M" python3 strided_sweep.py once $MODE 2>&1 | grep -v "^==PROF==" \
  > "$RES/$TAG-ncu-metrics.csv")
[ -n "$MODE" ] || (cd "$DRV" && timeout -k 5 120 "$NCU" -k regex:row_walk_tiles -c 2 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy python3 strided_sweep.py once 2>&1 \
  | grep -v "^==PROF==" > "$RES/strided-ncu-sections.txt")
if [ "$MODE" = holdout ]; then  # the GPU tests, on this checkout (wheels for the server's dependencies in .whl/)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$RES/site" "$REPO"/.whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:$RES/site"
  (cd "$REPO" && timeout -k 5 300 python3 -m pytest -q -m gpu -p no:cacheprovider $(grep -l "mark.gpu" tests/*.py) \
    2>&1 | tail -25 > "$RES/gpu-tests.txt")
fi
cd "$RES" && tar czf "$OUT/$TAG.tgz" ./*.json ./*.jsonl ./*.log ./*.csv ./*.txt; ls -la "$OUT"
