#!/usr/bin/env bash
# On a GPU: Liger-Kernel's MoE token gather-sum timed, then one launch of each shape under ncu — its throughput,
# occupancy and stall sections, and the shared-memory wavefronts and bank conflicts behind its L1/TEX time.
# Usage: bash bench/gpu_gather_ncu.sh LIGER_SRC OUT_DIR (bench/results/cost/liger-gather-*.txt came from it)
set -uo pipefail
LIGER=$(cd "${1:?Liger-Kernel src folder}" && pwd); OUT=${2:?results folder}; mkdir -p "$OUT"
DRV=$(dirname "$0")/cost_kernels/liger_gather.py; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout -k 5 60 python3 "$DRV" "$LIGER" > "$OUT/liger-gather-times.txt" 2>&1
timeout -k 5 240 "$NCU" --target-processes all -k regex:_token_gather --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis \
  --section InstructionStats python3 "$DRV" "$LIGER" once 2>&1 | grep -v "^==PROF==" > "$OUT/liger-gather-ncu-sections.txt"
M=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum
M=$M,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,sm__cycles_elapsed.max
timeout -k 5 200 "$NCU" --target-processes all -k regex:_token_gather --metrics "$M" python3 "$DRV" "$LIGER" once 2>&1 \
  | grep -v "^==PROF==" > "$OUT/liger-gather-ncu-metrics.txt"
tail -n 3 "$OUT"/liger-gather-*.txt
