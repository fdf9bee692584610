#!/usr/bin/env bash
# On a GPU: what the cost model is calibrated against. (1) bench/cost_kernels/driver.py under `capture --time` (each
# cause of lost time and its well-written twin, timed by the driver and by the capture), then every captured spec
# replayed L2-cold and L2-warm; (2) Liger-Kernel's tests under `capture --time` (the real run's time of each distinct
# launch), then replayed L2-warm file by file; (3) the proven fixes of the cost kernels and of the corpus's files with
# spill and launch warnings, each titled with the cost model's estimate before and after and timed on its captured
# launch (bench/corpus_fixes.py --time). `bench/cost_calibration.py` then compares, without a GPU, the model's
# estimates with these measurements.
# Usage: bash bench/gpu_cost_calibration.sh CORPUS_DIR RESULTS_DIR      (STEPS=1, 2, 3 or a mix runs those steps)
set -uo pipefail
STEPS=${STEPS:-123}
CORPUS=${1:?corpus folder}; RES=${2:?results folder}
. bench/gpu_common.sh

if [[ $STEPS == *1* ]]; then
step "1. cost kernels under capture --time, replayed L2-cold and L2-warm"
CK=$WORK/cost_kernels; cp -r bench/cost_kernels "$CK"; cd "$CK" && rm -rf .tritonlens
timeout -s TERM 150 python -m tritonlens capture --time -- python driver.py "$RES/cost-measured.json" 2>&1 | tail -25
cp .tritonlens/captures.jsonl "$RES/cost-captures-timed.jsonl"
timeout 120 python -m tritonlens bench kernels.py --all-captures --timeout 20 -o "$RES/cost-bench-cold.jsonl" 2>/dev/null | tail -30
timeout 120 python -m tritonlens bench kernels.py --all-captures --warm-l2 --timeout 20 -o "$RES/cost-bench-warm.jsonl" 2>/dev/null | tail -30
cd "$REPO"
fi

if [[ $STEPS == *2* ]]; then
step "2. Liger-Kernel's tests under capture --time, replayed L2-warm"
TIMED=$WORK/liger-timed; cp -r "$LIGER" "$TIMED"; cd "$TIMED/src" && rm -rf .tritonlens
PYTHONPATH="$TIMED/src:$PYTHONPATH" timeout -s TERM 110 python -m tritonlens capture --time -- \
  python -m pytest -q -x -p no:cacheprovider ../test/transformers 2>&1 | tail -4
cp .tritonlens/captures.jsonl "$RES/liger-captures-timed.jsonl"
end=$((SECONDS + 100))
for f in liger_kernel/ops/*.py; do
  left=$((end - SECONDS)); [ "$left" -gt 5 ] || break
  timeout "$left" python -m tritonlens bench "$f" --warm-l2 --timeout 20 -o "$RES/liger-bench-warm.jsonl" > /dev/null 2>&1
done
python "$REPO/bench/replay_agreement.py" "$RES/liger-bench-warm.jsonl" | head -12
cd "$REPO"
fi

if [[ $STEPS == *3* ]]; then
step "3. fixes: estimated gain in the title, measured gain on the GPU"
CK3=$WORK/cost_kernels_fixes; cp -r bench/cost_kernels "$CK3"; rm -rf "$CK3/.tritonlens"; mkdir -p "$CK3/.tritonlens"
cp bench/results/cost/cost-captures-timed.jsonl "$CK3/.tritonlens/captures.jsonl"
timeout 150 python bench/corpus_fixes.py "$CK3/kernels.py" --target cuda:90 --time --out "$RES/cost-kernels-fixes-timed.md" \
  > /dev/null 2> "$RES/cost-kernels-fixes-timed.err"; echo "exit $?"; tail -6 "$RES/cost-kernels-fixes-timed.md"
PYTHONPATH="$LIGER/src:$PYTHONPATH" timeout 200 python bench/corpus_fixes.py "$LIGER/src/liger_kernel/ops/group_norm.py" \
  "$LIGER/src/liger_kernel/ops/rope.py" "$LIGER/src/liger_kernel/ops/cross_entropy.py" --target cuda:90 --time \
  --out "$RES/corpus-fixes-timed.md" > /dev/null 2> "$RES/corpus-fixes-timed.err"; echo "exit $?"
tail -8 "$RES/corpus-fixes-timed.md"
fi
