#!/usr/bin/env bash
# On a GPU, the real-code corpus: capture Liger-Kernel's own tests on the GPU with the JIT's PTX dumped,
# replay every captured compile on the CPU road `check` takes and compare the PTX, then check the corpus with the new
# captures (timed) and run the GPU-marked tests.
# Usage (repo root, on a machine with an NVIDIA GPU, torch and triton): bench/gpu_corpus.sh CORPUS_DIR RESULTS_DIR
#   CORPUS_DIR holds liger-kernel/ (src/ and test/); it is copied, not modified.
set -u
CORPUS=${1:?corpus folder}; RES=${2:?results folder}
SECONDS_PER_TEST=${SECONDS_PER_TEST:-30}
source "$(dirname "$0")/gpu_common.sh"
rm -f "$LIGER/src/.tritonlens/captures.jsonl"

step "capture Liger-Kernel's tests on the GPU (each cut at ${SECONDS_PER_TEST}s), dumping the JIT's PTX"
cd "$LIGER"
for op in rms_norm swiglu geglu cross_entropy layer_norm rope softmax group_norm; do
  start=$(date +%s)
  # SIGINT: pytest stops like a Ctrl-C, so the capture's exit-time count records are still written
  PYTHONPATH="src:.:$PYTHONPATH" python -m tritonlens.gpu.capture --workspace src --dump "$WORK/dump" -- \
    timeout -s INT -k 10 "$SECONDS_PER_TEST" python -m pytest -q -x -p no:cacheprovider \
    "test/transformers/test_$op.py" > "$WORK/pytest_$op.log" 2>&1
  echo "$op: exit $? in $(( $(date +%s) - start ))s; $(tail -1 "$WORK/pytest_$op.log" | cut -c1-100)"
done
wc -l src/.tritonlens/captures.jsonl
cp src/.tritonlens/captures.jsonl "$RES/h200-liger-captures-v2.jsonl"
python - <<'PY'
import json, collections
recs = [json.loads(l) for l in open("src/.tritonlens/captures.jsonl")]
kinds = collections.Counter(r.get("record", "compile") for r in recs)
print("records:", dict(kinds), "| kernels:", len({r["kernel"] for r in recs}),
      "| autotune roles:", dict(collections.Counter(r.get("autotune") for r in recs if r.get("record") != "summary")))
PY

step "replay each captured compile on the CPU road (cuda:90) and compare the PTX with the GPU JIT's"
python "$REPO/bench/compare_replay_ptx.py" "$WORK/dump" --root "$LIGER/src" > "$RES/liger-replay-ptx.md" 2>&1
echo "exit $?"; tail -3 "$RES/liger-replay-ptx.md"; grep -c DIFFERENT "$RES/liger-replay-ptx.md"

step "check the corpus with the new captures on this host (default representative set, then --all-captures)"
cd "$LIGER/src"
for mode in "" "--all-captures"; do
  start=$(date +%s%N)
  python -m tritonlens.cli check --target cuda:90 $mode liger_kernel/ops/*.py > "$WORK/check$mode.txt" 2>&1
  echo "check $mode: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms; $(grep 'kernel(s) in' "$WORK/check$mode.txt" | tail -1)"
done
cp "$WORK/check.txt" "$RES/h200-liger-check.txt"
python -m tritonlens.cli check --target auto liger_kernel/ops/*.py 2>&1 | tail -1

step "gpu tests"
cd "$REPO"
python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_capture_profile.py 2>&1 | tail -5
