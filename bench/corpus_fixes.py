"""The quick fixes tritonlens offers for every warning of a corpus check, each proven as the editor proves it.

For each warning or error of `tritonlens check CORPUS` (the same Checker, captures included), the candidates the
editor would try (fixes.search.fix_candidates), each re-compiled as the editor does (fixes.search.prove), in the same
order and up to the same number per finding. Printed as a Markdown table: where the fix edits (launch / config /
heuristics / constant / kernel / assumption / pointer-only), what changed, whether anything got worse. Candidates the
re-compile did not prove are listed as "not proven", with why (the finding still there, and what did change).

With `--time`, on a machine with an NVIDIA GPU, each proven launch, constant, heuristics and config fix that changes a
launch option (num_warps, num_stages) is timed on the captured launch of the spec it was proven on, before and after
its one change (the replay of `tritonlens bench`), and the geometric-mean speedup and the number of fixes measured
slower are printed. A changed block is not timed: the captured grid was sized for the old one.

    PYTHONPATH=server python3 bench/corpus_fixes.py CORPUS [--target cuda:90] [--time] [--all-captures] [--out FILE]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))

from tritonlens.source import python_files  # noqa: E402
from tritonlens.fixes import configs as fix_configs, hints, launch as fix_launch, search  # noqa: E402
from tritonlens.pipeline import Checker, find_workspace_root  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402

TIMED = ("launch", "constant", "heuristics", "config", "launch (conditional)", "heuristics (conditional)")


@dataclass
class Row:
    where: str  # file:line of the finding
    code: str
    kernel: str
    edits: str  # launch / config / heuristics / constant / kernel / assumption / pointer-only / none
    title: str
    worse: bool
    seconds: float
    before_us: float | None = None
    after_us: float | None = None


def edit_place(cand) -> str:
    if isinstance(cand, fix_launch.LaunchCandidate):
        if cand.where == "conditional":
            return f"{cand.source.kind if cand.source and cand.source.kind == 'heuristics' else 'launch'} (conditional)"
        return "pointer-only" if cand.is_pointer else cand.where
    if isinstance(cand, fix_configs.ConfigCandidate):
        return "config"
    if isinstance(cand, hints.Candidate):
        return "assumption"
    return getattr(cand, "where", "kernel")


def _timing(cand, path: str, root: str, kr) -> tuple[float, float, str] | None:
    if isinstance(cand, fix_launch.LaunchCandidate) and not cand.is_pointer:
        return fix_launch.time_on_gpu(path, root, kr, cand)
    if isinstance(cand, fix_configs.ConfigCandidate) and cand.change:
        at = next((i for i, cs in enumerate(kr.compiled) if fix_configs.config_index(cs) == cand.config), None)
        if at is None:
            return None
        (name, _), = cand.change.items()
        kind = "option" if name.startswith("num_") else "constant"
        return fix_launch.time_change_on_gpu(path, root, kr, at, cand.change, kind, cand.label)
    return None


def fixes_for(checker: Checker, settings: Settings, path: str, text: str, kr, f, timed: bool,
              counts: dict[str, int]) -> list[Row]:
    """The fixes the editor would offer for finding `f`, as rows (one "none" row when nothing is proven)."""
    root = find_workspace_root(path)
    cands, limit = search.fix_candidates(kr, f, text, f.code, root)
    rows: list[Row] = []
    groups: set = set()
    where = f"{os.path.relpath(path, root)}:{f.line}"
    for cand in cands:
        group = getattr(cand, "group", None)
        if sum(1 for r in rows if "not proven" not in r.edits) >= limit:
            break
        if group is not None and group in groups:
            continue
        counts["tried"] += 1
        t0 = time.perf_counter()
        said, traded = search.prove(checker, settings, path, text, kr, f, cand)
        took = time.perf_counter() - t0
        if said is None:
            counts["not proven"] += 1
            why = getattr(cand, "why", "") or f"{f.code} still there, or the edit broke the compile"
            rows.append(Row(where, f.code, kr.name, f"{edit_place(cand)}, not proven", f"{cand.label} — {why}",
                            False, took))
            continue
        if group is not None and not getattr(cand, "partial", False):  # as the editor: a partial fix lets the next try
            groups.add(group)
        row = Row(where, f.code, kr.name, edit_place(cand), f"{cand.label} — {said}", traded, took)
        if timed and row.edits in TIMED:
            got = _timing(cand, path, root, kr)
            if got is not None:
                row.before_us, row.after_us = got[0], got[1]
        rows.append(row)
    return rows or [Row(where, f.code, kr.name, "none", "(no candidate)", False, 0.0)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[Row], counts: dict[str, int], timed: bool, total_s: float, warnings: int) -> str:
    head = "| finding | kernel | edits | fix (title as offered) | worse | proof s"
    out = [head + (" | before µs | after µs |" if timed else " |"),
           "|---|---|---|---|---|---" + ("|---|---|" if timed else "|")]
    for r in rows:
        cells = [f"{r.where} {r.code}", r.kernel, r.edits, _cell(r.title), "yes" if r.worse else "",
                 f"{r.seconds:.1f}" if r.edits != "none" else ""]
        if timed:
            cells += [f"{r.before_us:.1f}" if r.before_us is not None else "",
                      f"{r.after_us:.1f}" if r.after_us is not None else ""]
        out.append("| " + " | ".join(cells) + " |")
    offered = [r for r in rows if r.edits != "none" and "not proven" not in r.edits]
    by_place: dict[str, int] = {}
    for r in offered:
        by_place[r.edits] = by_place.get(r.edits, 0) + 1
    findings_fixed = len({(r.where, r.code) for r in offered})
    out += ["", f"{warnings} warnings/errors; {findings_fixed} with at least one proven fix; {len(offered)} fixes "
            f"offered ({', '.join(f'{k}: {v}' for k, v in sorted(by_place.items())) or 'none'}); "
            f"{sum(r.worse for r in offered)} with a trade in the title; {counts['tried']} candidates re-compiled, "
            f"{counts['not proven']} not proven (listed as such, with why); {total_s:.0f} s"]
    if timed:
        measured = [r for r in offered if r.before_us and r.after_us]
        if measured:
            gm = math.exp(sum(math.log(r.before_us / r.after_us) for r in measured) / len(measured))
            slower = sum(1 for r in measured if r.after_us >= r.before_us)
            out.append(f"timed {len(measured)} fixes on their captured launches: geometric-mean speedup {gm:.2f}x; "
                       f"{slower} measured slower")
        else:
            out.append("timed 0 fixes (no proven launch/config fix has a replayable captured launch, or no GPU)")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", nargs="+", help="files or folders to check (the workspace with .tritonlens/ captures)")
    p.add_argument("--target", default="cuda:90")
    p.add_argument("--time", action="store_true", help="time each launch/config fix on its captured launch (GPU)")
    p.add_argument("--out", help="also write the table to this file")
    p.add_argument("--codes", help="only these codes (comma-separated)")
    p.add_argument("--all-captures", action="store_true",
                   help="check every captured spec, not the representative set (more findings, far more compiles)")
    args = p.parse_args(argv)
    if args.time:
        from tritonlens.device.targets import has_local_gpu

        if not has_local_gpu():
            print("--time needs a local NVIDIA GPU", file=sys.stderr)
            return 2
    settings = Settings(target=args.target, all_captures=args.all_captures)
    files, problems = python_files(args.corpus)
    for problem in problems:
        print(problem, file=sys.stderr)
    codes = set(args.codes.split(",")) if args.codes else None
    rows: list[Row] = []
    counts = {"tried": 0, "not proven": 0}
    warnings = 0
    t0 = time.perf_counter()
    with Checker(settings) as checker:
        for report in checker.check_files(files):
            if not report.kernels:
                continue
            with open(report.path, encoding="utf-8") as fh:
                text = fh.read()
            for kr in report.kernels:
                for f in kr.findings:
                    if f.severity not in ("warning", "error") or (codes and f.code not in codes):
                        continue
                    warnings += 1
                    if f.code not in hints.CANDIDATES:
                        rows.append(Row(f"{os.path.relpath(report.path, find_workspace_root(report.path))}:{f.line}",
                                        f.code, kr.name, "none", "(no quick fix for this code)", False, 0.0))
                        continue
                    rows.extend(fixes_for(checker, settings, report.path, text, kr, f, args.time, counts))
                    print(f"{rows[-1].where} {f.code}: {rows[-1].edits}", file=sys.stderr, flush=True)
    table = render(rows, counts, args.time, time.perf_counter() - t0, warnings)
    print(table)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
