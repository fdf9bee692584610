#!/usr/bin/env bash
# On a GPU: the corpus checked with every captured spec on the GPU host's own target, the spill code read from
# its cubins (ir.cubin) compared with nvdisasm, check vs bare triton.compile at the host's core count, GPU tests.
# Usage (repo root, on a machine with an NVIDIA GPU, torch and triton): bench/gpu_cubin_reader.sh CORPUS_DIR RESULTS_DIR
set -u
CORPUS=${1:?corpus folder}; RES=${2:?results folder}
source "$(dirname "$0")/gpu_common.sh"

step "check every captured spec for the local GPU (--target auto), cold cache"
cd "$LIGER/src"
start=$(date +%s%N)
python -m tritonlens.cli check --target auto --all-captures liger_kernel/ops/*.py > "$WORK/check-all.txt" 2>&1
echo "exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms; $(grep 'kernel(s) in' "$WORK/check-all.txt" | tail -1)"
grep -o "SASS001" "$WORK/check-all.txt" | wc -l

step "spill code read from the cubins vs nvdisasm"
python "$REPO/bench/compare_local_accesses.py" "$WORK/cache" > "$RES/h200-cubin-reader.md"; echo "exit $?"
tail -1 "$RES/h200-cubin-reader.md"

step "check vs bare triton.compile, 529 captures, this host's default workers"
cd "$REPO"
TRITONLENS_CORPUS="$CORPUS" python bench/captures_scale.py --sizes 529 --repeat 1 --modes default,all \
  > "$RES/h200-captures-scale.txt" 2>&1; echo "exit $?"
tail -5 "$RES/h200-captures-scale.txt"

step "gpu tests"
python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_capture_profile.py 2>&1 | tail -5
