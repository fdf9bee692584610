#!/usr/bin/env bash
# The whole test suite on a GPU machine (GPU tests included), then capture + profile of the
# spilling matmul so PROF001 lands on the SASS001 lines. Usage: bench/gpu_verify.sh RESULTS_DIR
set -u
RES=${1:?results folder}
mkdir -p "$RES"
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR=$(mktemp -d)
step() { echo; echo "=== $*"; }
step machine; nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader
step "test suite (all of it, GPU tests included)"
python -m pytest -q -p no:cacheprovider -x tests 2>&1 | tail -15 | tee "$RES/pytest.txt"
step "capture the bad examples, check with --target auto"
rm -f .tritonlens/captures.jsonl
python -m tritonlens.gpu.capture -- python bench/gpu_run_bad.py; echo "exit $?"
python -m tritonlens.cli check examples/bad/matmul_spill.py --target auto | tee "$RES/check_matmul_spill.txt"
step "profile the captured launches (replay), spilling and not"
for i in 1 2; do
  python -m tritonlens.gpu.profile examples/bad/matmul_spill.py::matmul_spill --capture $i | tee "$RES/profile_matmul_spill_$i.txt"
done
