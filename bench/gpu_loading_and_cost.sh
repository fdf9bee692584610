#!/usr/bin/env bash
# On a GPU: (1) libraries that initialise CUDA, or import torch and transformers, when imported, checked with
# `--target auto` under the compile workers' default memory bound; (2) the corpus checked with its captures for the
# local GPU; (3) its captured launches timed with `tritonlens bench`, then `check` showing those times on its spec
# lines and findings; (4) the launch-site fix of the group-norm spill timed: the captured launches replayed with
# num_warps=16 instead of Triton's default 4; (5) the GPU-only tests.
# Usage: bash bench/gpu_loading_and_cost.sh CORPUS_DIR RESULTS_DIR
set -uo pipefail
CORPUS=${1:?corpus folder}; RES=${2:?results folder}
. bench/gpu_common.sh

step "1. libraries that ask the GPU at import, --target auto, default memory bound"
LIBS=$WORK/libs; mkdir -p "$LIBS"; cp bench/gpu_libs/*.py "$LIBS/"
( cd "$LIBS" && /usr/bin/time -v python -m tritonlens check --target auto cuda_init_lib.py transformers_lib.py \
    2> "$RES/libs-time.txt"; echo "exit $?" ) | tee "$RES/libs-check.txt"
grep -E "Maximum resident|Elapsed" "$RES/libs-time.txt"
( cd "$LIBS" && python -m tritonlens check --target auto --module-execution full cuda_init_lib.py -q; echo "full: exit $?" ) \
  | tee -a "$RES/libs-check.txt"

step "2. the corpus with its captures, --target auto"
cd "$LIGER/src"
/usr/bin/time -f "%e s, %M KB peak" python -m tritonlens check --target auto --format json liger_kernel/ops/*.py \
  > "$RES/corpus-auto.json" 2> "$RES/corpus-auto.err"; echo "exit $?"; tail -2 "$RES/corpus-auto.err"
python - "$RES/corpus-auto.json" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
print(sorted(collections.Counter((f["code"], f["severity"]) for f in d).items()))
for f in d:
    if f["code"] in ("SRC006", "SRC007", "SRC001"):
        print(f["code"], f["path"].rsplit("/", 1)[-1], f["line"], f["message"][:200])
PY

step "3. the captured launches timed, then check with the times"
python -m tritonlens bench liger_kernel/ops/*.py > "$RES/corpus-bench.txt" 2> "$RES/corpus-bench.err"; echo "exit $?"
tail -2 "$RES/corpus-bench.txt"; cp .tritonlens/bench.jsonl "$RES/corpus-bench.jsonl"
python -m tritonlens check --target auto liger_kernel/ops/*.py > "$RES/corpus-check-timed.txt" 2>&1; echo "exit $?"
grep -c "measured, L2 cold" "$RES/corpus-check-timed.txt"; grep -m5 "measured on" "$RES/corpus-check-timed.txt" | cut -c1-300

step "4. the group-norm spill fix timed: captured launches with num_warps=16 instead of 4"
python - <<'PY' > "$WORK/gn16.jsonl"
import json
for line in open(".tritonlens/captures.jsonl"):
    rec = json.loads(line)
    if rec.get("kernel") == "_group_norm_forward_kernel" and rec.get("launch"):
        rec["options"]["num_warps"] = 16
        print(json.dumps(rec))
PY
mkdir -p "$WORK/gn16/.tritonlens" && cp "$WORK/gn16.jsonl" "$WORK/gn16/.tritonlens/captures.jsonl"
cp -r liger_kernel "$WORK/gn16/"
( cd "$WORK/gn16" && python -m tritonlens bench liger_kernel/ops/group_norm.py::_group_norm_forward_kernel \
    2>/dev/null ) | tee "$RES/group-norm-warps16.txt"
grep _group_norm_forward_kernel "$RES/corpus-bench.txt" | tee "$RES/group-norm-warps4.txt"
cd "$REPO"

step "5. GPU tests"
python -m pytest -q -m gpu -p no:cacheprovider $(grep -l "mark.gpu" tests/*.py) 2>&1 | tail -5 | tee "$RES/gpu-tests.txt"
