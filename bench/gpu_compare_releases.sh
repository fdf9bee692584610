#!/usr/bin/env bash
# On a GPU machine: time each spec `tritonlens compare` finds changed under the installed Triton and under another
# release, each release in its own process (`tritonlens bench`'s replay of the captured launches), so that a flagged
# regression carries its measured cost.
#
#   bash bench/gpu_compare_releases.sh WHEEL_DIR [CORPUS_SRC] [RESULTS_DIR]
#
# WHEEL_DIR holds the other release's triton wheel (the machine needs no network: `pip download --no-deps
# triton==3.7.1 -d WHEEL_DIR` elsewhere). CORPUS_SRC defaults to Liger-Kernel's src beside the checkout (it must hold
# .tritonlens/captures.jsonl); RESULTS_DIR to bench/results/gpu-compare-<release>. Writes compare.json (what changed),
# bench-<version>.jsonl per release (the replays) and timed.md (each changed spec: regressions, time under each
# release, the ratio).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=$(cd "${1:?usage: gpu_compare_releases.sh WHEEL_DIR [CORPUS_SRC] [RESULTS_DIR]}" && pwd)
SRC=$(cd "${2:-../shared/corpus/liger-kernel/src}" && pwd)
wheel=$(ls "$WHEELS"/triton-*.whl | head -1)
VERSION=$(basename "$wheel" | cut -d- -f2)
RES=$(mkdir -p "${3:-bench/results/gpu-compare-$VERSION}" && cd "${3:-bench/results/gpu-compare-$VERSION}" && pwd)
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TRITONLENS_RELEASES_DIR="${TRITONLENS_RELEASES_DIR:-$RES/releases}"
HERE_VERSION=$(python -c "import triton; print(triton.__version__)")
echo "=== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc

# A private copy: bench appends to .tritonlens/bench.jsonl beside the captures; the corpus may be read-only.
WORK=$(mktemp -d); cp -r "$SRC" "$WORK/src"; SRC="$WORK/src"

echo "=== triton $VERSION from $WHEELS"
OTHER_PY=$(PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELS" UV_NO_INDEX=1 UV_FIND_LINKS="$WHEELS" \
  python -m tritonlens compare --prepare --triton "$VERSION")
echo "$OTHER_PY"

echo "=== compare triton $HERE_VERSION → $VERSION"
start=$(date +%s)
set +e
python -m tritonlens compare "$SRC" --triton "$VERSION" --format json -o "$RES/compare.json"
echo "gate exit code: $?  ($(( $(date +%s) - start )) s)"
set -e

# The changed kernels as PATH::KERNEL (bench replays every captured spec of a kernel; the join below keeps the
# changed ones).
python - "$RES/compare.json" > "$WORK/targets" <<'PY'
import json, os, sys
data = json.load(open(sys.argv[1]))
seen = []
for s in data["specs"]:
    if s["status"] in ("regressed", "improved") and s["capture_id"]:
        t = f"{os.path.abspath(s['path'])}::{s['kernel']}"  # compare's paths are relative to where it ran: here
        if t not in seen:
            seen.append(t)
print("\n".join(seen))
PY
echo "=== $(wc -l < "$WORK/targets") changed kernels, timed under each release"
mapfile -t targets < "$WORK/targets"
for side in here other; do
  py=python; v=$HERE_VERSION
  if [ "$side" = other ]; then py=$OTHER_PY; v=$VERSION; fi
  rm -f "$RES/bench-$v.jsonl"
  for t in "${targets[@]}"; do
    timeout 600 "$py" -m tritonlens bench "$t" --all-captures --format json -o "$RES/bench-$v.jsonl" >/dev/null \
      || echo "bench $t under triton $v failed" >&2
  done
done

python - "$RES" "$HERE_VERSION" "$VERSION" > "$RES/timed.md" <<'PY'
import json, sys
res, a, b = sys.argv[1:4]
def load(v):
    out = {}
    try:
        for line in open(f"{res}/bench-{v}.jsonl"):
            r = json.loads(line)
            if r.get("measured") and r.get("time_us"):
                out[r["identity"]] = r
    except OSError:
        pass
    return out
ta, tb = load(a), load(b)
data = json.load(open(f"{res}/compare.json"))
print(f"# Changed specs timed: triton {a} vs {b}\n")
print(f"| kernel | spec | compare says | triton {a} µs | triton {b} µs | {b}/{a} |")
print("|---|---|---|---|---|---|")
rows = []
for s in data["specs"]:
    if s["status"] not in ("regressed", "improved"):
        continue
    x, y = ta.get(s["capture_id"]), tb.get(s["capture_id"])
    ratio = y["time_us"] / x["time_us"] if x and y else None
    says = "; ".join(("✗ " if r["gated"] else "") + r["text"] for r in s["regressions"]) or "; ".join(s["improvements"])
    rows.append((-(ratio or 0), f"| {s['kernel']} | {s['label']}: {s['spec']} | {says} | "
                 f"{x['time_us']:.2f} | {y['time_us']:.2f} | {ratio:.2f}× |" if ratio else
                 f"| {s['kernel']} | {s['label']}: {s['spec']} | {says} | {x and round(x['time_us'], 2)} | "
                 f"{y and round(y['time_us'], 2)} | not timed |"))
for _, row in sorted(rows):
    print(row)
PY
cat "$RES/timed.md"
