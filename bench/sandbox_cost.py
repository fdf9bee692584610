"""What the compile workers' sandbox costs: a worker's start (Python, the sandbox, `import triton`, the hello) and
its first compile, with and without the sandbox, interleaved in one run so that the machine's load hits both alike.

    python bench/sandbox_cost.py [--rounds 8]

Prints a table (median and spread of each), and the sandbox's own step (`confine`) timed alone in a bare
process. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))

from tritonlens.compiler import sandbox  # noqa: E402
from tritonlens.compiler.pool import CompileJob, CompileService  # noqa: E402
from tritonlens.model import Spec  # noqa: E402

KERNEL = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 128)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
"""


def one_worker(path: str, confined: bool) -> tuple[float, float]:
    """(seconds until a fresh worker answered its first job, of which the compile itself)."""
    if confined:
        os.environ.pop(sandbox.DISABLE_VAR, None)
    else:
        os.environ[sandbox.DISABLE_VAR] = "1"
    spec = Spec(signature={"x_ptr": "*fp32"}, constants={}, attrs={"x_ptr": {"divisibility": 16}},
                options={"num_warps": 4}, target="cuda:90")
    start = time.perf_counter()
    with CompileService(1) as service:
        art = service.submit(CompileJob(path=path, text=KERNEL, qualname="k", spec=spec.to_json())).result(300)
    total = time.perf_counter() - start
    assert art.ok, art.error
    return total, art.compile_time


def confine_alone() -> float:
    with tempfile.TemporaryDirectory() as folder:
        code = ("import sys, time; from tritonlens.compiler import sandbox; t = time.perf_counter(); "
                "sandbox.confine(sys.argv[1], sandbox.programs(None, False)); print(time.perf_counter() - t)")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
        env.pop(sandbox.DISABLE_VAR, None)
        out = subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True, env=env)
        return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    os.environ["TRITONLENS_CACHE_DIR"] = tempfile.mkdtemp()
    print(f"sandbox here: {sandbox.describe(sandbox.status())}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.py")
        with open(path, "w") as f:
            f.write(KERNEL)
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        one_worker(path, True)  # warm the file system caches once
        for i in range(args.rounds):
            for confined in ((True, False) if i % 2 == 0 else (False, True)):
                runs[confined].append(one_worker(path, confined))
    confine = [confine_alone() for _ in range(args.rounds)]
    print(f"\n{args.rounds} rounds, interleaved; seconds, median (min-max)\n")
    print("| worker | start to first answer | of which the compile | start without the compile |")
    print("|---|---|---|---|")
    for confined in (False, True):
        total = [t for t, _ in runs[confined]]
        comp = [c for _, c in runs[confined]]
        start = [t - c for t, c in runs[confined]]
        print(f"| {'sandboxed' if confined else 'unconfined'} | {_fmt(total)} | {_fmt(comp)} | {_fmt(start)} |")
    diff = statistics.median(t - c for t, c in runs[True]) - statistics.median(t - c for t, c in runs[False])
    print(f"\nsandbox cost per worker start (difference of medians): {diff * 1000:+.0f} ms")
    print(f"sandbox.confine() alone (Landlock ruleset + seccomp filter, stand-ins not counted): "
          f"{_fmt([c * 1000 for c in confine], 1)} ms")
    print(json.dumps({"rounds": args.rounds, "confine_ms_median": statistics.median(confine) * 1000,
                      "start_cost_ms": diff * 1000}))


def _fmt(values: list[float], digits: int = 3) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


if __name__ == "__main__":
    main()
