#!/bin/bash
# On a GPU machine, from the repository root: capture the tutorial matmul's autotuning at a decode and a prefill
# shape, check it with those captures (tuning, LAUNCH002 judged by the measured configs, LAUNCH004), and time the
# configs tritonlens proposes at the real launch (tritonlens tune). Results under $RES (default bench/results/autotune).
set -u
RES=${RES:-bench/results/autotune}; mkdir -p "$RES" .tritonlens
CAP=.tritonlens/captures.jsonl; rm -f "$CAP"  # paths in it are relative to this folder, which holds .tritonlens/
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
echo "=== capture"
time python -m tritonlens.gpu.capture -- python bench/autotune/tutorial_matmul.py
echo "=== check"
python -m tritonlens check bench/autotune/tutorial_matmul.py --target auto --format text | tee "$RES/check.txt"
python -m tritonlens check bench/autotune/tutorial_matmul.py --target auto --format json > "$RES/check.json"
grep -v '"record": "tuning"' "$CAP" > .tritonlens/captures-without-tuning.jsonl
python -m tritonlens check bench/autotune/tutorial_matmul.py --captures .tritonlens/captures-without-tuning.jsonl \
  --target auto --format text > "$RES/check-without-tuning.txt"
echo "=== proposals timed"
python -m tritonlens tune --no-capture --kernels 3 -- python bench/autotune/tutorial_matmul.py | tee "$RES/tune.txt"
cp .tritonlens/proposals.jsonl "$RES/proposals.jsonl"
cp "$CAP" "$RES/captures.jsonl"
