"""What `tritonlens capture` adds to each launch of the user's program: the time per launch of a loop of launches.

    python bench/capture_overhead.py [--launches 20000] [--repeat 3] [--gpu]

A small program launches the vector-add example's kernel in two loops — one launch shape over and over (the common
case: a training step), and 8 shapes in turn (8 distinct launches, each counted on its own) — and prints the wall
time per launch of each loop, measured inside the program (the interpreter's start, the compile and the capture
file's writes at exit are outside the loop). Rows:

- `--no-gpu` capture (always): Triton's launch path replaced by the recording (capture_nogpu), nothing launched —
  the capture's own bookkeeping is most of what is measured;
- with `--gpu`, on a GPU machine: the bare program (no capture), `capture`, and `capture --time` (CUDA events
  around a few launches of each distinct launch); the difference to the bare row is the capture's cost per launch.

Under capture the program also times the one-shape loop with the launch distribution's bookkeeping (a key per launch,
capture.launch_key, and its count) on and off, in 20 interleaved rounds (the "A/B" column, min of the rounds): on a
shared machine this difference is steadier than two separate runs.

Tensors are small (1024 elements) so that the launch path, not the kernel, is what is timed. Not a test: on a shared
machine times vary by 10-20 %; compare rows of one run (the minimum over --repeat runs is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

DRIVER = '''
import json, sys, time, torch
sys.path.insert(0, {examples!r})
import vector_add
N = {launches}
device = "cuda" if torch.cuda.is_available() else "cpu"
same = [torch.rand(1024, device=device) for _ in range(3)]
shapes = [[torch.rand(1024 + 16 * k, device=device) for _ in range(3)] for k in range(8)]

def launch(x, y, out):
    n = out.numel()
    vector_add.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)

import triton
for x, y, out in [same] + shapes:  # compile (or record) every spec before timing
    launch(x, y, out)
if device == "cuda":
    torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(N):
    launch(*same)
if device == "cuda":
    torch.cuda.synchronize()
one = (time.perf_counter() - t) / N * 1e6
t = time.perf_counter()
for i in range(N):
    launch(*shapes[i % 8])
if device == "cuda":
    torch.cuda.synchronize()
eight = (time.perf_counter() - t) / N * 1e6
result = {{"one_shape_us": one, "eight_shapes_us": eight}}
try:
    from tritonlens.gpu import capture
    hook = capture._installed
except ImportError:  # the bare program, without tritonlens on its path
    hook = None
if hook is not None:  # the same loop with the distribution's bookkeeping on and off, rounds interleaved
    counting = hook.count_launch
    def count_only(ident, launch=None, key=None):
        return counting(ident)
    best = {{"on": [], "off": []}}
    for _ in range(20):
        for mode in ("on", "off"):
            hook.count_launch = counting if mode == "on" else count_only
            if device == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(max(N // 20, 1)):
                launch(*same)
            if device == "cuda":
                torch.cuda.synchronize()
            best[mode].append((time.perf_counter() - t) / max(N // 20, 1) * 1e6)
    hook.count_launch = counting
    result["dist_on_us"], result["dist_off_us"] = min(best["on"]), min(best["off"])
print("RESULT " + json.dumps(result))
'''


def run(cmd: list[str], cwd: str) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu", action="store_true", help="also the bare program, capture and capture --time on a GPU")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tritonlens-overhead-") as tmp:
        prog = os.path.join(tmp, "driver.py")
        with open(prog, "w", encoding="utf-8") as f:
            f.write(DRIVER.format(examples=os.path.join(REPO, "examples"), launches=args.launches))
        capture = [sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", tmp]
        rows = [("capture --no-gpu", capture + ["--no-gpu", "--output", os.path.join(tmp, "a.jsonl"), "--"])]
        if args.gpu:
            rows += [("bare program (no capture)", []),
                     ("capture", capture + ["--output", os.path.join(tmp, "b.jsonl"), "--"]),
                     ("capture --time", capture + ["--time", "--output", os.path.join(tmp, "c.jsonl"), "--"])]
        print(f"| run | µs per launch, one shape | µs per launch, 8 shapes in turn | distribution on / off (A/B) |"
              f"  ({args.launches} launches, min of {args.repeat})")
        print("|---|---|---|---|")
        for name, prefix in rows:
            results = [run(prefix + [sys.executable, prog], tmp) for _ in range(args.repeat)]
            one = min(r["one_shape_us"] for r in results)
            eight = min(r["eight_shapes_us"] for r in results)
            ab = "-"
            if "dist_on_us" in results[0]:
                on, off = min(r["dist_on_us"] for r in results), min(r["dist_off_us"] for r in results)
                ab = f"{on:.2f} / {off:.2f} (+{on - off:.2f})"
            print(f"| {name} | {one:.2f} | {eight:.2f} | {ab} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
