#!/usr/bin/env bash
# On a GPU: capture the examples with the JIT's PTX dumped (for compare_replay_ptx.py), check them with --target auto,
# profile a spilling and a non-spilling kernel under ncu, run the GPU tests.
# Usage (repo root, on a machine with an NVIDIA GPU, torch, triton and ncu): bench/gpu_examples.sh RESULTS_DIR
set -u
RES=${1:?results folder}
mkdir -p "$RES/dump"
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
step() { echo; echo "=== $*"; }
step machine; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv; ncu --version | tail -1
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
step "tritonlens imports without the LSP packages"
python - <<'PY'
import importlib.util
print({m: importlib.util.find_spec(m) is not None for m in ("pygls", "lsprotocol", "watchdog")})
import tritonlens.cli, tritonlens.gpu.capture, tritonlens.gpu.profile, tritonlens.pipeline, tritonlens.device.targets
print("target auto ->", tritonlens.device.targets.resolve_target("auto"), "| has_local_gpu:", tritonlens.device.targets.has_local_gpu())
PY
step "capture the examples (dump the JIT's PTX/cubin)"
rm -f .tritonlens/captures.jsonl
python -m tritonlens.gpu.capture --dump "$RES/dump" -- python bench/gpu_run_examples.py; echo "exit $?"
python -m tritonlens.gpu.capture -- python bench/spill_kernels.py; echo "exit $?"
python -m tritonlens.gpu.capture -- python -c "import sys; sys.exit(7)"; echo "exit passed through: $?"
cp .tritonlens/captures.jsonl "$RES/captures.jsonl"; wc -l "$RES/captures.jsonl"
step "check --target auto with the captures"
python -m tritonlens.cli check examples bench/spill_kernels.py --target auto --format json > "$RES/check_auto.json"; echo "exit $?"
python -m tritonlens.cli check bench/spill_kernels.py --target auto | tail -4
step "ncu metric names"
ncu --query-metrics > "$RES/ncu_query_metrics.txt" 2>&1
grep -E "^(smsp__sass_inst_executed_op_local|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__average_warp|smsp__pcsamp_warps_issue_stalled_barrier|sm__warps_active|dram__throughput|gpu__time_duration|launch__registers)" "$RES/ncu_query_metrics.txt" | cut -c1-110
step "profile: the user's command filtered to one kernel"
for k in tile_spill tile_ok; do
  python -m tritonlens.gpu.profile --kernel $k --file bench/spill_kernels.py -- python bench/spill_kernels.py; echo "exit $?"
  python -m tritonlens.gpu.profile --kernel $k --file bench/spill_kernels.py --format json -- python bench/spill_kernels.py > "$RES/profile_cmd_$k.json"
done
step "profile: replay of captured launches (synthesized inputs)"
python -m tritonlens.gpu.profile bench/spill_kernels.py::tile_spill; echo "exit $?"
python -m tritonlens.gpu.profile examples/vector_add.py::add_kernel --capture 2; echo "exit $?"
python -m tritonlens.gpu.profile examples/matmul.py::matmul_kernel --format json > "$RES/profile_replay_matmul.json"; echo "exit $?"
step "gpu tests"
python -m pytest -q tests/test_gpu_capture_profile.py -p no:cacheprovider 2>&1 | tail -5
