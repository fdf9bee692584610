#!/usr/bin/env bash
# On a GPU: what it costs, measured. (1) Liger-Kernel's tests run under `capture --time` (the real run's GPU time of
# each distinct launch), then `bench` replays every captured spec standalone: replay against the real run
# (agreement), the kernels with the most captured GPU time; (2) the fixes of the corpus's files whose warnings have
# launch fixes, timed before and after on their captured launches (bench/corpus_fixes.py --time); (3) the GPU tests; (4) Triton's fused-attention tutorial driven at
# its benchmark's shapes under `capture --time`, checked (warnings by code) and replayed. Each step has a time bound;
# what a step finished is kept when the next one runs out of time.
# Usage: bash bench/gpu_measured_cost.sh CORPUS_DIR TUTORIAL_FILE RESULTS_DIR
#   CORPUS_DIR holds liger-kernel/ (src/, test/); TUTORIAL_FILE is python/tutorials/06-fused-attention.py of Triton.
# STEPS=13 runs steps 1 and 3 only.
set -uo pipefail
STEPS=${STEPS:-1234}
CORPUS=${1:?corpus folder}; TUTORIAL=${2:?the fused-attention tutorial file}; RES=${3:?results folder}
. bench/gpu_common.sh

if [[ $STEPS == *1* ]]; then
step "1. Liger-Kernel's tests under capture --time, then every captured spec replayed"
TIMED=$WORK/liger-timed; cp -r "$LIGER" "$TIMED"  # its own workspace: the corpus's captures stay for step 2
cd "$TIMED/src" && rm -rf .tritonlens
PYTHONPATH="$TIMED/src:$PYTHONPATH" /usr/bin/time -f "%e s" timeout -s TERM 100 python -m tritonlens capture --time -- \
  python -m pytest -q -x -p no:cacheprovider ../test/transformers 2>&1 | tail -4
cp .tritonlens/captures.jsonl "$RES/liger-captures-timed.jsonl"
end=$((SECONDS + 90))  # every file replayed in its own call (results appended as each ends), within 90 s
for f in liger_kernel/ops/*.py; do
  left=$((end - SECONDS)); [ "$left" -gt 5 ] || break
  timeout "$left" python -m tritonlens bench "$f" --timeout 20 > /dev/null 2>> "$RES/liger-bench.err"
done
cp .tritonlens/bench.jsonl "$RES/liger-bench.jsonl"
python "$REPO/bench/replay_agreement.py" .tritonlens/bench.jsonl | tee "$RES/liger-replay-agreement.md"
cd "$REPO"
fi

if [[ $STEPS == *2* ]]; then
step "2. the corpus's fixes, timed on their captured launches"
PYTHONPATH="$LIGER/src:$PYTHONPATH" timeout 120 python bench/corpus_fixes.py "$LIGER/src/liger_kernel/ops/group_norm.py" \
  "$LIGER/src/liger_kernel/ops/rope.py" --target cuda:90 --time \
  --out "$RES/corpus-fixes-timed.md" > /dev/null 2> "$RES/corpus-fixes-timed.err"; echo "exit $?"
tail -8 "$RES/corpus-fixes-timed.md"
fi

if [[ $STEPS == *3* ]]; then
step "3. GPU tests"
timeout 70 python -m pytest -q -m gpu -p no:cacheprovider $(grep -l "mark.gpu" tests/*.py) 2>&1 | tail -15 \
  | tee "$RES/gpu-tests.txt"
fi

if [[ $STEPS == *4* ]]; then
step "4. the fused-attention tutorial at its benchmark's shapes"
TUT=$WORK/tutorial; mkdir -p "$TUT"; cp "$TUTORIAL" "$TUT/06-fused-attention.py"; cd "$TUT"
timeout -s TERM 80 python -m tritonlens capture --time -- python "$REPO/bench/tutorial_attention_driver.py" \
  06-fused-attention.py 13 2>&1 | grep -v "^\s" | tail -12 | tee "$RES/tutorial-run.txt"
cp .tritonlens/captures.jsonl "$RES/tutorial-captures-timed.jsonl"
timeout 30 python -m tritonlens bench 06-fused-attention.py --timeout 10 > "$RES/tutorial-bench.txt" 2>&1
timeout 45 python -m tritonlens check --target auto 06-fused-attention.py > "$RES/tutorial-check.txt" 2>&1
grep -oE "[A-Z]+[0-9]+ \[(warning|error)\]" "$RES/tutorial-check.txt" | sort | uniq -c; tail -1 "$RES/tutorial-check.txt"
cp .tritonlens/bench.jsonl "$RES/tutorial-bench.jsonl" 2>/dev/null
cd "$REPO"
fi
