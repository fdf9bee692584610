"""First open, no GPU, no captures: what a user sees on opening real kernel files, before and after the automatic
capture of their own launch code (gpu/autocapture.py).

    python bench/first_open.py [--liger] [DIR ...] [--timeout SECONDS] [--cache DIR] [--json FILE]
    python bench/first_open.py --fetch SET_DIR      # rebuild the PyPI part of the measuring set, then measure it

Each DIR is a workspace (its kernel files are every `*.py` that defines a `@triton.jit` kernel, its tests stay tests);
`--liger` adds Liger-Kernel's ops with its own tests (../shared/corpus/liger-kernel, or TRITONLENS_CORPUS), copied
without its `.tritonlens/` captures. `--fetch SET_DIR` downloads the source distributions of SET_PACKAGES (which ship
their tests) with pip into SET_DIR/src, unpacks each as a workspace and measures them with the other DIRs. Every file
is checked for cuda:90 three times, each check with a fresh Checker: "before" (`check --no-auto-capture`: the file's
text alone), "after, cold" (an empty cache: the launch code runs, its specs compile) and "after, warm" (everything
cached). Prints one table per run, counted on the diagnostics a user sees (after the verdict, one per line): kernels
compiled (a kernel with at least one spec compiled, no SRC002), warnings, warnings under an assumed value (a spec
value of origin kind `assumed`: no capture, hint, launch site or default gave it), warnings on test-sized launches
(every spec the warning holds in is from the file's own launch code and its launches are all launch-bound, or it is
a grid/masked-lane finding on a test's launch), errors, SRC008 (launch code that did not run), and the time to diagnostics; then the files whose
launch code failed, with why.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(HERE, "..", "..", "shared", "corpus")


def kernel_files(root: str) -> list[str]:
    out = []
    for p in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(p, root)
        if rel.split(os.sep)[0] in ("test", "tests") or os.path.basename(p).startswith("test_"):
            continue
        try:
            with open(p, encoding="utf-8") as f:
                if "@triton.jit" in f.read():
                    out.append(p)
        except (OSError, UnicodeDecodeError):
            continue
    return out


# PyPI source distributions that ship kernel files with their tests (or __main__ blocks), pinned: the measuring set
SET_PACKAGES = ("adasplash==0.2.2", "conch-triton-kernels==1.3", "crossentropy-triton==0.1.2",
                "flash-attention-triton==0.1.1", "flash-kmeans==0.3.1", "lightning-attn==0.0.5",
                "triton-kernels==0.1.0")


def fetch_set(dest: str) -> list[str]:
    """Download and unpack SET_PACKAGES under dest/src (once); the unpacked folders, one workspace each."""
    import tarfile

    src = os.path.join(dest, "src")
    os.makedirs(src, exist_ok=True)
    downloads = os.path.join(dest, "sdists")
    if not os.path.isdir(downloads):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                        "-d", downloads, *SET_PACKAGES], check=True)
    for name in sorted(os.listdir(downloads)):
        if name.endswith(".tar.gz") and not os.path.isdir(os.path.join(src, name[:-len(".tar.gz")])):
            with tarfile.open(os.path.join(downloads, name)) as tar:
                tar.extractall(src, filter="data")
    return sorted(os.path.join(src, d) for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))


def liger_copy(into: str) -> str:
    src = os.path.join(CORPUS, "liger-kernel")
    root = os.path.join(into, "liger-kernel")
    shutil.copytree(src, root, ignore=shutil.ignore_patterns(".tritonlens"))
    with open(os.path.join(root, "pyproject.toml"), "w") as f:  # the real repository has one: its root
        f.write("[project]\nname = 'liger_kernel'\n")
    return root


def measure(files: list[tuple[str, str]], auto: bool, cache: str, timeout: float = 20.0) -> dict:
    from tritonlens.frontend.specs import origin_kind
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    os.environ["TRITONLENS_CACHE_DIR"] = cache
    row = {"files": len(files), "kernels": 0, "compiled": 0, "warnings": 0, "assumed_warnings": 0, "errors": 0,
           "test_sized_warnings": 0, "src008": 0, "seconds": [], "failed": [], "uncompiled": [],
           "warning_codes": [], "by_file": {}}
    settings = Settings(target="cuda:90", max_workers=2, auto_capture=auto, compile_timeout=120,
                        auto_capture_timeout=timeout)
    with Checker(settings) as checker:
        for path, root in files:
            before = {k: (list(v) if isinstance(v, list) else v) for k, v in row.items() if k != "by_file"}
            t0 = time.monotonic()
            report = checker.check_file(path, workspace_root=root)
            row["seconds"].append(time.monotonic() - t0)
            _count(row, report, path, root, origin_kind)
            row["by_file"][path] = {k: row[k] - before[k] if isinstance(row[k], int) else row[k][len(before[k]):]
                                    for k in before if k != "files"}
    return row


def _count(row: dict, report, path: str, root: str, origin_kind) -> None:
    """Add one file's report to the counts of `row`: its kernels, and its diagnostics as a user sees them (after the
    verdict, one per line)."""
    from tritonlens.checks.registry import cost_cause

    try:
        from tritonlens.frontend.launchers import is_test_label
    except ImportError:  # an older tritonlens (the "before" of a comparison): its labels read the same
        def is_test_label(label: str) -> bool:
            return bool(re.match(r"^launched by (`[^`]+` in |the tests in )", label))

    if report.auto is not None and report.auto.failed and report.auto.outcome != "none":
        row["failed"].append((os.path.relpath(path, root), report.auto.outcome, report.auto.message))
    row["src008"] += sum(1 for f in report.findings if f.code == "SRC008")
    row["errors"] += sum(1 for f in report.findings if f.severity == "error")
    for kr in report.kernels:
        row["kernels"] += 1
        ok = [cs for cs in kr.compiled if cs.artifacts is not None and cs.artifacts.ok]
        if ok and not any(f.code == "SRC002" for f in kr.findings):
            row["compiled"] += 1
        else:
            row["uncompiled"].append(f"{os.path.relpath(path, root)}::{kr.kernel.name}")
        by_key = {cs.spec.key(): cs for cs in kr.compiled}
        for f in kr.findings:
            row["errors"] += f.severity == "error"
            if f.severity != "warning":
                continue
            row["warnings"] += 1
            row["warning_codes"].append(f.code)
            specs = [by_key[k] for k in f.data.get("specs") or () if k in by_key]
            if any(origin_kind(o) == "assumed" for cs in specs for o in cs.spec.origins.values()):
                row["assumed_warnings"] += 1
            def test_sized(cs, f=f) -> bool:
                labels = [o for o in cs.spec.origins.values() if origin_kind(o) == "auto-capture"]
                costs = cs.metrics.get("launch_costs") or []
                bound = bool(costs) and all(c.get("bound") == "launch-bound" for c in costs)
                return bool(labels) and (bound or (any(is_test_label(x.split(": ", 1)[-1]) for x in labels)
                                                   and cost_cause(f.code) in ("grid", "lanes")))

            # on test-sized launches only: every spec it holds in (one launch of real size makes it real)
            if specs and all(test_sized(cs) for cs in specs):
                row["test_sized_warnings"] += 1


def _table(title: str, rows: list, paths: list[str]) -> None:
    print(f"\n{title}:\n")
    print("| run | kernels compiled | warnings | of them under assumed values | on test-sized launches | errors | "
          "SRC008 | median s/file | max s/file | total s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        part = [r["by_file"][p] for p in paths]
        total = {k: sum(x[k] for x in part) for k in ("kernels", "compiled", "warnings", "assumed_warnings",
                                                      "test_sized_warnings", "errors", "src008")}
        secs = sorted(s for x in part for s in x["seconds"]) or [0.0]
        print(f"| {name} | {total['compiled']}/{total['kernels']} "
              f"({100 * total['compiled'] / max(1, total['kernels']):.0f}%) | {total['warnings']} | "
              f"{total['assumed_warnings']} | {total['test_sized_warnings']} | {total['errors']} | {total['src008']} | "
              f"{secs[len(secs) // 2]:.1f} | {secs[-1]:.1f} | {sum(secs):.0f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--liger", action="store_true")
    ap.add_argument("--fetch", metavar="SET_DIR", help="download SET_PACKAGES' sources into SET_DIR and measure them")
    ap.add_argument("--cache", help="keep the copies and the caches here")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds each file's launch code may run (default 20)")
    ap.add_argument("--json", help="also write every run's counts, file by file, to this JSON file")
    args = ap.parse_args()
    work = args.cache or tempfile.mkdtemp(prefix="tritonlens-first-open-")
    roots = [os.path.abspath(d) for d in args.dirs]
    if args.fetch:
        roots += fetch_set(os.path.abspath(args.fetch))
    if args.liger:
        roots.append(liger_copy(work) if not os.path.isdir(os.path.join(work, "liger-kernel"))
                     else os.path.join(work, "liger-kernel"))
    files = [(p, r) for r in roots for p in kernel_files(r)]
    runs = [("before (file text alone)", False, os.path.join(work, "cache-before")),
            ("after, cold cache", True, os.path.join(work, "cache-after")),
            ("after, warm cache", True, os.path.join(work, "cache-after"))]
    rows = []
    for name, auto, cache in runs:
        rows.append((name, measure(files, auto, cache, args.timeout)))
    from tritonlens.frontend.launchers import find_launchers

    launched = []
    for p, r in files:
        with open(p, encoding="utf-8") as f:
            if find_launchers(p, f.read(), r):
                launched.append(p)
    print(f"{len(files)} kernel files from {', '.join(os.path.basename(r) for r in roots)}; cuda:90, no GPU")
    _table(f"all {len(files)} kernel files", rows, [p for p, _ in files])
    _table(f"the {len(launched)} files with launch code of their own (a __main__ block, tests, top-level launches, "
           f"or a workspace test that imports them)", rows, launched)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"run": name, **row} for name, row in rows], f, indent=1, default=str)
    failed = rows[1][1]["failed"]
    if failed:
        print("\nlaunch code that did not run to the end (cold run):")
        for rel, outcome, message in failed:
            print(f"- {rel}: {outcome}: {message[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
