"""Where does the analysis run, and what does the checking process spend? The corpus checked three times with one
artefact cache: cold (every spec compiled and analysed in the workers), again with the same inputs (the analysis
kept with each compile: no job at all), and again with another setting (each cached compile analysed again, in the
workers only).

    python bench/analysis_placement.py [--files N] [--cache DIR]

Prints one table: wall time, the checking process's own CPU time, and the jobs sent to the workers (compiles and
analysis-only jobs), with every ratio from this one run. Needs the corpus beside the checkout (../shared/corpus or
TRITONLENS_CORPUS) and torch; no GPU. `--cache DIR` keeps the corpus copy and the cache there (another checkout's
code can then be timed on the same entries: `--warm-only`, with that checkout's `server/` first on PYTHONPATH).
"""
from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(HERE, "..", "..", "shared", "corpus")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def check(files: list[str], cache_dir: str, **settings) -> dict:
    from tritonlens.compiler.cache import ArtifactCache
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    s = Settings(target="cuda:90", compile_timeout=300, all_captures=True, **settings)
    jobs = {"compile": 0, "analysis only": 0}
    t0, c0 = time.perf_counter(), cpu_s()
    with Checker(s, cache=ArtifactCache(cache_dir)) as checker:
        submit = checker.service.submit

        def counted(job):
            jobs["analysis only" if getattr(job, "artifacts", None) is not None else "compile"] += 1
            return submit(job)

        checker.service.submit = counted
        reports = list(checker.check_files(files))
    specs = sum(len(kr.compiled) for r in reports for kr in r.kernels)
    findings = sorted((f.path, f.line, f.code, f.severity, f.message) for r in reports for f in r.all_findings())
    return {"wall": time.perf_counter() - t0, "cpu": cpu_s() - c0, "specs": specs, "findings": findings, **jobs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=0, help="the first N files of liger_kernel/ops only")
    ap.add_argument("--cache", help="a folder for the corpus copy and the artefact cache, kept after (default: a fresh "
                                    "temporary one, removed after)")
    ap.add_argument("--warm-only", action="store_true", help="skip the cold run (the cache is filled already)")
    args = ap.parse_args()
    src = os.path.join(CORPUS, "liger-kernel", "src")
    if not os.path.isdir(src):
        print(f"no corpus at {os.path.normpath(src)} (set TRITONLENS_CORPUS)", file=sys.stderr)
        return 2
    work = args.cache or tempfile.mkdtemp(prefix="tritonlens-placement-")
    try:
        root = os.path.join(work, "liger-kernel")
        if not os.path.isdir(root):  # a private copy: the check reads .tritonlens/; kept with --cache (same paths)
            shutil.copytree(os.path.join(CORPUS, "liger-kernel"), root)
        files = sorted(glob.glob(os.path.join(root, "src", "liger_kernel", "ops", "*.py")))
        files = files[:args.files] if args.files else files
        cache = os.path.join(work, "cache")
        rows = []
        if not args.warm_only:
            rows.append(("cold: compiled and analysed", check(files, cache)))
        rows.append(("warm, same inputs", check(files, cache)))
        rows.append(("warm, another setting", check(files, cache, storm_threshold=4)))
        print(f"{len(files)} files of liger_kernel/ops, {rows[0][1]['specs']} compiled specs, every capture\n")
        print("| run | wall s | checking process CPU s | compile jobs | analysis-only jobs | findings |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, r in rows:
            print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['compile']} | {r['analysis only']} | "
                  f"{len(r['findings'])} |")
        same = rows[-2][1]["findings"] == (rows[0][1]["findings"] if not args.warm_only else rows[-2][1]["findings"])
        print(f"\nthe warm run's findings equal the cold run's: {same}")
    finally:
        if not args.cache:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
