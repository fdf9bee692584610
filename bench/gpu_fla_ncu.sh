#!/usr/bin/env bash
# On a GPU: flash-linear-attention's triangular-solve kernels (the gated delta rule's fused K·Kᵀ solve, the delta
# rule's 16x16-to-64x64 inverse merge) under ncu: what their warps wait on, how often a scheduler issues, occupancy.
# The cost model estimates them at half their time. Usage: FLA_SITE=DIR bash bench/gpu_fla_ncu.sh OUT_DIR
set -uo pipefail
OUT=${1:?results folder}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd); FLA=${FLA_SITE:?the folder holding fla}
REPO=$PWD; RES=$(mktemp -d); NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
export PYTHONPATH="$REPO/server:$FLA${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
S="$S --section ComputeWorkloadAnalysis --section InstructionStats"
for case in "fla_gated_delta_rule_fwd_2x4096:kkt_solve" "fla_delta_rule_fwd_bwd_2x4096:merge_16x16"; do
  (cd "$FLA" && FLA_CASES=${case%%:*} timeout -k 5 200 "$NCU" -k "regex:${case##*:}" -c 2 $S \
    python3 "$REPO/bench/cost_kernels/library_driver.py" "$RES/${case##*:}.json" fla 2>&1 | grep -v "^==PROF==" \
    > "$RES/fla-ncu-${case##*:}.txt")
done
cd "$RES" && tar czf "$OUT/fla-ncu.tgz" ./*.txt; ls -la "$OUT"
