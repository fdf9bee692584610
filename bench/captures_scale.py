"""`check` at the scale of a test suite's captures, next to bare `triton.compile` of the same specs.

    python bench/captures_scale.py [--sizes 1,10,100,500,529] [--repeat 2] [--corpus DIR] [--workers N]

On a private copy of the real corpus (Liger-Kernel with the 529 compiles its own test suite made on an H200), for each
N the first N lines of its `captures.jsonl` are the workspace's captures, and

- `tritonlens check liger_kernel/ops/*.py` runs as a CLI process, by default (a representative set of captured
  specs per kernel) and with `--all-captures`, each with an empty artefact cache (a fresh TRITONLENS_CACHE_DIR);
- an unchanged re-check runs on the warm cache (CLI time), and an in-process `Checker` on the same cache counts the
  compile jobs it submits (must be 0) and lists the specs that were compiled;
- those very specs (the check's own `Spec`s, the same definitions slice of each module) are compiled by bare
  `triton.compile(ASTSource(fn, *spec_to_compile_args(spec, ...)), target=GPUTarget("cuda", 90, 32))` in a
  multiprocessing pool of as many processes as check has workers (each importing triton and the modules once;
  fresh TRITON_CACHE_DIR): no remarks, no ptxas log, no SASS, no analysis.

Every timing is the wall time of a process (worker start and triton import included), the minimum over --repeat runs,
with the CPU time of its whole process tree (user + system, ptxas included) beside it: on a shared machine the CPU
ratio moves less than the wall ratio;
peak memory is `ru_maxrss` of the largest process of the run (getrusage of children). Prints a markdown table. Not a
test: the machine may be shared, so compare rows of one run.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(REPO, "..", "shared", "corpus")


# ---------------------------------------------------------------- one measured process
def measured(cmd: list[str], env: dict[str, str], cwd: str) -> dict:
    """Run `cmd` through a fresh Python that waits for it, so getrusage(children) is this command's alone."""
    probe = ("import json, resource, subprocess, sys, time\n"
             "t = time.perf_counter()\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
             "wall = time.perf_counter() - t\n"
             "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(json.dumps({'wall': wall, 'rc': p.returncode, 'maxrss_kb': ru.ru_maxrss,\n"
             "                  'cpu': ru.ru_utime + ru.ru_stime, 'stdout': p.stdout[-4000:],\n"
             "                  'stderr': p.stderr[-4000:]}))\n")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the bare road
_modules: dict = {}


def _bare_init(cache_dir: str) -> None:
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    import triton  # noqa: F401 — once per process, as a check worker does


def _bare_compile(job: dict) -> tuple[float, str | None]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonlens.compiler.worker import _constexpr_value, find_jit_function, load_module
    from tritonlens.model import Spec
    from tritonlens.frontend.specs import spec_to_compile_args

    start = time.perf_counter()
    module = load_module(job["path"], job["text"], job["root"])  # cached per (path, text), as in the worker
    fn = find_jit_function(module, job["qualname"])
    spec = Spec.from_json(job["spec"])
    signature, constexprs, attrs = spec_to_compile_args(spec, list(fn.arg_names))
    constexprs = {k: _constexpr_value(v) for k, v in constexprs.items()}
    error = None
    try:
        triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32),
                       options=dict(spec.options))
    except Exception as exc:  # noqa: BLE001 — a spec that fails fails in check too; its time still counts
        error = f"{job['qualname']}: {type(exc).__name__}: {str(exc)[:200]}"
    return time.perf_counter() - start, error


def bare_main(jobs_file: str, procs: int) -> int:
    import multiprocessing as mp

    with open(jobs_file) as f:
        jobs = json.load(f)
    cache = tempfile.mkdtemp(prefix="bare-triton-cache-")
    ctx = mp.get_context("spawn")  # a fresh interpreter per process, like the check's workers
    with ctx.Pool(procs, initializer=_bare_init, initargs=(cache,)) as pool:
        times = list(pool.imap_unordered(_bare_compile, jobs, chunksize=1))
    shutil.rmtree(cache, ignore_errors=True)
    errors = [e for _, e in times if e]
    print(json.dumps({"compiled": len(times), "compile_s": sum(t for t, _ in times), "errors": errors[:5],
                      "n_errors": len(errors)}))
    return 0


# ---------------------------------------------------------------- the check road
def workspace(corpus: str) -> str:
    src = os.path.join(corpus, "liger-kernel")
    if not os.path.isdir(os.path.join(src, "src", "liger_kernel")):
        sys.exit(f"no corpus at {os.path.normpath(src)} (set TRITONLENS_CORPUS or --corpus)")
    dst = os.path.join(tempfile.mkdtemp(prefix="captures-scale-"), "liger-kernel")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, dirs, files in os.walk(dst):  # the corpus is read-only; its copy must take new captures
        os.chmod(folder, os.stat(folder).st_mode | stat.S_IWUSR)
        for name in files:
            p = os.path.join(folder, name)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    return os.path.join(dst, "src")


def compiled_jobs(src: str, files: list[str], cache_dir: str, all_captures: bool, workers: int) -> tuple[list, int]:
    """The specs a check on this (warm) cache compiled, as bare jobs, and how many compile jobs it submitted."""
    from tritonlens.compiler.cache import ArtifactCache
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    settings = Settings(target="cuda:90", compile_timeout=300, max_workers=workers)
    settings.all_captures = all_captures
    jobs = []
    with Checker(settings, cache=ArtifactCache(cache_dir)) as checker:
        submitted = []
        real_submit = checker.service.submit
        checker.service.submit = lambda job: (submitted.append(job), real_submit(job))[1]
        for report in checker.check_files(files):
            with open(report.path, encoding="utf-8") as f:
                text = f.read()
            for kr in report.kernels:
                module = checker._module_slice(text, kr.kernel)
                for cs in kr.compiled:
                    jobs.append({"path": report.path, "text": module.text, "root": src,
                                 "qualname": kr.kernel.qualname or kr.kernel.name, "spec": cs.spec.to_json()})
    return jobs, len(submitted)


def check_cmd(files: list[str], all_captures: bool, workers: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "tritonlens", "check", *files, "--target", "cuda:90", "--format", "json",
           "--timeout", "300"]
    if all_captures:
        cmd.append("--all-captures")
    if workers:
        cmd += ["--workers", str(workers)]
    return cmd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,10,100,500,529")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--repeat-big", type=int, default=1, help="runs for 500 captures and more (minutes each)")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--workers", type=int, default=None, help="default: what check picks (settings.default_workers)")
    ap.add_argument("--modes", default="default,all")
    ap.add_argument("--bare", nargs=2, metavar=("JOBS_JSON", "PROCS"), help=argparse.SUPPRESS)
    ap.add_argument("--recheck", nargs=5, metavar=("SRC", "CACHE", "MODE", "WORKERS", "JOBS_JSON"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bare:
        return bare_main(args.bare[0], int(args.bare[1]))
    if args.recheck:  # in a fresh process, so it runs the same tritonlens as the CLI it follows
        src, cache, mode, workers, out = args.recheck
        src_files = sorted(glob.glob(os.path.join(src, "liger_kernel", "ops", "*.py")))
        jobs, submitted = compiled_jobs(src, src_files, cache, mode == "all", int(workers))
        with open(out, "w") as f:
            json.dump(jobs, f)
        print(json.dumps({"submitted": submitted}))
        return 0

    from tritonlens.settings import default_workers

    workers = args.workers or default_workers(editor=False)
    src = workspace(args.corpus)
    files = sorted(glob.glob(os.path.join(src, "liger_kernel", "ops", "*.py")))
    with open(os.path.join(src, ".tritonlens", "captures.jsonl"), encoding="utf-8") as f:
        lines = [ln for ln in f if ln.strip()]
    scratch = tempfile.mkdtemp(prefix="captures-scale-run-")
    env = dict(os.environ)
    rows = []
    print(f"{len(files)} files, {len(lines)} captures, {workers} workers, {os.cpu_count()} cores", flush=True)
    repeat_big = max(1, min(args.repeat, args.repeat_big))
    for n in [int(s) for s in args.sizes.split(",")]:
        with open(os.path.join(src, ".tritonlens", "captures.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(lines[:n])
        for mode in args.modes.split(","):
            all_caps = mode == "all"
            repeat = args.repeat if n < 500 else repeat_big

            def cold_check() -> tuple[dict, str]:
                cache = tempfile.mkdtemp(prefix="cache-", dir=scratch)
                r = measured(check_cmd(files, all_caps, args.workers), {**env, "TRITONLENS_CACHE_DIR": cache}, src)
                if r["rc"] not in (0, 1):
                    raise RuntimeError(f"check failed (rc {r['rc']}): {r['stderr']}")
                return r, cache

            cold = [cold_check()]
            first_cache = cold[0][1]
            warm = min((measured(check_cmd(files, all_caps, args.workers),
                                 {**env, "TRITONLENS_CACHE_DIR": first_cache}, src) for _ in range(repeat)),
                       key=lambda r: r["wall"])
            jobs_file = os.path.join(scratch, f"jobs-{n}-{mode}.json")
            recheck = subprocess.run([sys.executable, os.path.abspath(__file__), "--recheck", src, first_cache, mode,
                                 str(workers), jobs_file], capture_output=True, text=True, env=env)
            if recheck.returncode != 0:
                raise RuntimeError(f"re-check failed: {recheck.stderr[-2000:]}")
            resubmitted = json.loads(recheck.stdout.strip().splitlines()[-1])["submitted"]
            with open(jobs_file) as f:
                jobs = json.load(f)
            bares = []
            for k in range(repeat):  # bare and check runs alternate, so a busy spell of the machine hits both
                b = measured([sys.executable, os.path.abspath(__file__), "--bare", jobs_file, str(workers)], env, src)
                result = json.loads(b["stdout"].strip().splitlines()[-1]) if b["rc"] == 0 else None
                if result is None or result["compiled"] != len(jobs):
                    raise RuntimeError(f"bare compile failed (rc {b['rc']}): {b['stderr'][-2000:]}")
                b["errors"] = result["n_errors"]
                bares.append(b)
                if k + 1 < repeat:
                    cold.append(cold_check())
            best, cache = min(cold, key=lambda x: x[0]["wall"])
            bare = min(bares, key=lambda r: r["wall"])
            captured_compiled = sum(1 for j in jobs if j["spec"].get("label", "").startswith("capture"))
            row = {"captures": n, "mode": "--all-captures" if all_caps else "default", "specs": len(jobs),
                   "captured_specs": captured_compiled, "check_s": best["wall"], "bare_s": bare["wall"],
                   "ratio": best["wall"] / bare["wall"], "check_cpu_s": best["cpu"], "bare_cpu_s": bare["cpu"],
                   "cpu_ratio": best["cpu"] / bare["cpu"], "warm_s": warm["wall"], "warm_compiles": resubmitted,
                   "check_rss_mb": best["maxrss_kb"] / 1024, "bare_rss_mb": bare["maxrss_kb"] / 1024,
                   "check_runs": [round(r["wall"], 1) for r, _ in cold],
                   "bare_runs": [round(b["wall"], 1) for b in bares], "bare_errors": bare["errors"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            for _, c in cold:
                shutil.rmtree(c, ignore_errors=True)
    print()
    print(f"| captures | mode | specs compiled (captured) | check | bare triton.compile ×{workers} | check / bare "
          f"| CPU check / bare | unchanged re-check | compiles on re-check | peak RSS check / bare |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['captures']} | {r['mode']} | {r['specs']} ({r['captured_specs']}) | {r['check_s']:.1f} s "
              f"| {r['bare_s']:.1f} s | {r['ratio']:.2f}× | {r['check_cpu_s']:.0f} / {r['bare_cpu_s']:.0f} s "
              f"({r['cpu_ratio']:.2f}×) | {r['warm_s']:.1f} s | {r['warm_compiles']} "
              f"| {r['check_rss_mb']:.0f} / {r['bare_rss_mb']:.0f} MB |")
    shutil.rmtree(os.path.dirname(src), ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
