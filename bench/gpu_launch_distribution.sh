#!/usr/bin/env bash
# On a GPU: launch distributions and the real run's time. (1) the GPU tests of captures, bench and distributions;
# (2) what capture and capture --time add per launch (bare program / capture / capture --time, and the distribution's
# bookkeeping on/off); (3) a program that launches one kernel once at a small edge shape and 200 times at a big one
# (and another kernel the other way round), captured with --time, then `check` (the rare launch's findings are
# milder and say so) and `bench` (the most launched launch replayed, "real µs", "replay/real", agreement).
# Usage: bash bench/gpu_launch_distribution.sh RESULTS_DIR
set -uo pipefail
RES=${1:?results folder}; mkdir -p "$RES"
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
step() { echo; echo "=== $*"; }
step machine; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nproc
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"

step "1. GPU tests"
python -m pytest -q -m gpu tests/test_launch_distribution.py tests/test_bench.py tests/test_capture.py 2>&1 \
  | tail -15 | tee "$RES/launch-distribution-tests.txt"

step "2. per-launch cost of capture and capture --time"
( cd server && python ../bench/capture_overhead.py --gpu --launches 20000 --repeat 3 ) | tee "$RES/capture-overhead.txt"

step "3. a distribution captured with --time, checked and replayed"
WS=$(mktemp -d)
python - "$WS" <<'PY'
import sys
sys.path.insert(0, "tests")
from test_launch_distribution import ROWS
open(sys.argv[1] + "/rows.py", "w").write(ROWS)
PY
cat > "$WS/driver.py" <<'PY'
import torch, rows
rows.scale(torch.rand(1, 160, device="cuda"), 256)          # one validation launch: 1 program, 37% lanes idle
big = torch.rand(2112 * 8, 256, device="cuda")
for _ in range(200):
    rows.scale(big, 256)                                      # what runs: 16,896 programs, every lane used
small = torch.rand(1040, device="cuda")
for _ in range(200):
    rows.add_one(small, 1024)                                 # the common launch is the wasteful one
rows.add_one(torch.rand(2112 * 1024, device="cuda"), 1024)
torch.cuda.synchronize()
PY
( cd "$WS" && python -m tritonlens capture --time -- python driver.py && \
  python - <<'PY'
import json
for line in open(".tritonlens/captures.jsonl"):
    rec = json.loads(line)
    for c in rec.get("launch_counts", []):
        print(rec["kernel"], rec["launches"], c["launch"]["grid"], c["count"], c.get("time_us"), c.get("timed"))
PY
  python -m tritonlens check --target auto rows.py; \
  python -m tritonlens bench rows.py ) 2>&1 | tee "$RES/launch-distribution-run.txt"
rm -rf "$WS"
