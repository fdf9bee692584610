#!/bin/bash
# On a GPU machine, from the repository root, with FlagGems and its wheels in $WHL (flag_gems, PyYAML, SQLAlchemy;
# torch and triton are the machine's): capture FlagGems' own autotuning (tritonlens capture --time) at decode and
# prefill shapes (bench/autotune/flag_gems_run.py), with the installed package as the workspace (paths in the
# capture are then flag_gems/...), and time the configs tritonlens proposes for addmm's decode launch
# (tritonlens tune, at the real launch). Results under $RES. The CPU side (check with and without the tuning lines)
# runs anywhere from the captures.
set -u
REPO=$PWD
RES=${RES:-$REPO/bench/results/autotune/flag-gems}; mkdir -p "$RES"
SITE=${SITE:-/tmp/site}
python3 -m pip install -q --no-index --no-deps --target "$SITE" "$WHL"/*.whl
export PYTHONPATH="$SITE:$REPO/server" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$RES/gpu.txt"
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" | tee -a "$RES/gpu.txt"
ls "$WHL" | tee -a "$RES/gpu.txt"
cd "$SITE"
rm -rf .tritonlens
echo "=== capture"
CASES=${CASES:-addmm-decode-fp16 mm-decode-fp16 addmm-prefill-fp16 mm-prefill-fp16 bmm-decode-fp16 bmm-prefill-fp16 softmax-fp16 addmm-decode-bf16 addmm-prefill-bf16}
SECONDS=0
timeout -k 10 "${CAPTURE_S:-170}" python3 -m tritonlens capture --time -- \
  python3 "$REPO/bench/autotune/flag_gems_run.py" $CASES 2>&1 | tee "$RES/capture-log.txt"
echo "capture wall ${SECONDS} s" | tee -a "$RES/capture-log.txt"
cp .tritonlens/captures.jsonl "$RES/captures.jsonl"
echo "=== proposals timed"
timeout -k 5 "${PROPOSALS_S:-240}" python3 -m tritonlens tune --no-capture --budget "${TUNE_S:-180}" -- \
  python3 "$REPO/bench/autotune/flag_gems_run.py" $CASES 2>&1 | tee "$RES/tune-log.txt"
cp .tritonlens/proposals.jsonl "$RES/proposals.jsonl" 2>/dev/null
cd "$REPO"
