"""How fast is `check`? Cold compiles vs. cache hits, worker counts, and the parsers on a huge PTX.

    python bench/pipeline_speed.py

Prints one table; every ratio in it comes from this one run (the machine is shared and noisy: compare rows, not
runs). Needs no GPU.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")

BIG = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: n=i32%16, BLOCK=8192, num_warps=1
    @triton.jit
    def big(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, tl.sin(x) * tl.cos(x), mask=offs < n)
    ''')


def examples() -> list[str]:
    return sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".py"))


def run_check(files: list[str], workers: int) -> tuple[float, int, int]:
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    start = time.perf_counter()
    n_specs = cached = 0
    with Checker(Settings(target="cuda:90", max_workers=workers)) as checker:
        for f in files:
            for kr in checker.check_file(f).kernels:
                for cs in kr.compiled:
                    n_specs += 1
                    cached += bool(cs.artifacts and cs.artifacts.cached)
    return time.perf_counter() - start, n_specs, cached


def main() -> None:
    rows = []
    files = examples()
    for workers in (1, 2):
        os.environ["TRITONLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="tl-bench-")
        cold, n, _ = run_check(files, workers)
        warm, _, hits = run_check(files, workers)
        rows.append((f"check examples/ cold, {workers} worker(s)", f"{cold:.2f} s", f"{n} specs"))
        rows.append((f"check examples/ cached, {workers} worker(s)", f"{warm:.2f} s",
                     f"{hits}/{n} hits, {cold / warm:.1f}x faster"))
        shutil.rmtree(os.environ["TRITONLENS_CACHE_DIR"], ignore_errors=True)

    # The parsers on the 1-warp 8192-element kernel: megabytes of PTX, must stay linear.
    os.environ["TRITONLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="tl-bench-")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.py")
        with open(path, "w") as f:
            f.write(BIG)
        from tritonlens.checks import CheckContext
        from tritonlens.pipeline import Checker
        from tritonlens.settings import Settings

        with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
            t0 = time.perf_counter()
            report = checker.check_file(path)
            total = time.perf_counter() - t0
            kr = report.kernels[0]
            cs = kr.compiled[0]
            art = cs.artifacts
            sizes = {k: len(v) for k, v in art.asm.items()}
            ctx = CheckContext(kr.kernel, cs.spec, art, checker.settings)
            timings = {}
            for stage in ("ttgir", "ptx", "sass"):
                t0 = time.perf_counter()
                getattr(ctx, stage)
                timings[stage] = time.perf_counter() - t0
        rows.append(("big kernel (8192 elems, 1 warp): compile+check", f"{total:.2f} s",
                     f"compile {art.compile_time:.2f} s"))
        for stage, secs in timings.items():
            mb = sizes.get(stage, 0) / 1e6
            rows.append((f"  parse {stage} ({mb:.1f} MB)", f"{secs:.3f} s",
                         f"{mb / secs:.1f} MB/s" if secs else ""))
    shutil.rmtree(os.environ["TRITONLENS_CACHE_DIR"], ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows.append(("peak RSS: this process / largest worker", f"{peak:.0f} MB", f"{child:.0f} MB"))

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'time':>9}  note")
    print("-" * (width + 40))
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>9}  {note}")


if __name__ == "__main__":
    sys.exit(main())
