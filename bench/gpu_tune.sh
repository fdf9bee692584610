#!/bin/bash
# On a GPU machine, from the repository root: for each library, the op table before (a plain run of
# bench/tune/ops.py), `tritonlens tune -- python bench/tune/ops.py LIB`, `tritonlens check --fix` on the kernel files
# it captured, every autotuner cache cleared, the op table after, and the two compared (outputs too).
#   bash bench/gpu_tune.sh OUT [LIB...]        (LIB: tutorial liger flaggems; wheels of the libraries in .whl/)
set -u
OUT=${1:?OUT}; shift; LIBS=${*:-tutorial liger}
REPO=$PWD; mkdir -p "$OUT"
SITE=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
  .whl/pygls*.whl .whl/lsprotocol*.whl .whl/cattrs*.whl .whl/watchdog*.whl .whl/sqlalchemy*.whl .whl/greenlet*.whl 2>&1 | tail -2
export PYTHONPATH="$REPO/server:$SITE" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
for LIB in $LIBS; do
  echo; echo "=============== $LIB"
  WS=$(mktemp -d)/$LIB; mkdir -p "$WS"
  case $LIB in
    tutorial) cp bench/autotune/tutorial_matmul.py "$WS/"; export TUTORIAL_DIR=$WS;;
    liger) python3 -m pip install -q --no-index --no-deps --target "$WS" .whl/liger_kernel*.whl;;
    flaggems) python3 -m pip install -q --no-index --no-deps --target "$WS" .whl/flag_gems*.whl
              export FLAGGEMS_CACHE_DIR=$(mktemp -d);;
  esac
  cp -r "$WS" "$WS.orig"
  export TRITON_CACHE_DIR=$(mktemp -d)
  run() { (cd "$WS" && PYTHONPATH="$WS:$PYTHONPATH" timeout -k 5 "$@"); }
  echo "--- before"; run 300 python "$REPO/bench/tune/ops.py" $LIB "$OUT/$LIB-before.json"
  echo "--- tune"; run 420 python -m tritonlens tune --budget 240 --kernels 4 -- python "$REPO/bench/tune/ops.py" $LIB \
    2>&1 | tee "$OUT/$LIB-tune.txt"
  cp "$WS/.tritonlens/proposals.jsonl" "$OUT/$LIB-proposals.jsonl" 2>/dev/null
  cp "$WS/.tritonlens/captures.jsonl" "$OUT/$LIB-captures.jsonl" 2>/dev/null
  FILES=$(cd "$WS" && python -c "
import json
seen = []
for line in open('.tritonlens/captures.jsonl'):
    try: p = json.loads(line).get('path')
    except ValueError: continue
    if isinstance(p, str) and p not in seen: seen.append(p)
print(' '.join(seen))")
  echo "--- check --fix on: $FILES"
  run 300 python -m tritonlens check --fix --target auto $FILES > "$OUT/$LIB-fix.txt" 2>&1; tail -5 "$OUT/$LIB-fix.txt"
  diff -ru "$WS.orig" "$WS" -x .tritonlens -x __pycache__ > "$OUT/$LIB-fix.diff"; cat "$OUT/$LIB-fix.diff" | head -40
  export TRITON_CACHE_DIR=$(mktemp -d) FLAGGEMS_CACHE_DIR=$(mktemp -d)
  echo "--- after"; run 300 python "$REPO/bench/tune/ops.py" $LIB "$OUT/$LIB-after.json"
  python bench/tune/compare_ops.py "$OUT/$LIB-before.json" "$OUT/$LIB-after.json" | tee "$OUT/$LIB-table.md"
done
