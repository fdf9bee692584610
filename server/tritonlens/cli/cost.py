"""`tritonlens cost PATH... [--captures FILE] [--format text|json]`: the cost model's estimate of every captured launch
beside the time the capture measured — where the model and the GPU agree, and where they do not."""
from __future__ import annotations

import json
import sys
from typing import Any

from ..frontend.untrusted import printable
from ..source import python_files
from ..units import fmt_us
from .common import EXIT_ERROR, EXIT_OK, compile_flags, rel, settings_from

PARTS = ("memory_us", "tile_us", "dot_us", "issue_us", "mio_us", "program_us", "spill_us", "convert_us")
_PART_NAMES = {"memory_us": "memory", "tile_us": "L2 tiles", "dot_us": "dots", "issue_us": "instructions",
               "mio_us": "memory-I/O pipe (shared, L1)", "program_us": "programs", "spill_us": "spills",
               "convert_us": "conversions"}


def add_parser(sub) -> None:
    c = sub.add_parser("cost", help="the cost model's estimate of every captured launch, beside its measured time")
    c.add_argument("paths", nargs="+", metavar="PATH")
    compile_flags(c)
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.set_defaults(run=run, all_captures=True)


def rows(reports) -> list[dict[str, Any]]:
    """One row per captured launch of every compiled spec: the estimate, its bound and parts, and the measured time
    with the ratio where the capture timed it."""
    out = []
    for report in reports:
        for kr in report.kernels:
            for cs in kr.compiled:
                for lc in (cs.metrics or {}).get("launch_costs") or ():
                    measured = lc.get("measured_us")
                    timed = lc.get("timed_us")
                    out.append({
                        "path": rel(report.path), "kernel": kr.kernel.name, "spec": cs.spec.label,
                        "config": cs.spec.describe(), "target": cs.spec.target, "grid": lc.get("grid"),
                        "count": lc.get("count"), "est_us": lc.get("est_us"), "floor_us": lc.get("floor_us"),
                        "unknown": lc.get("unknown"),
                        "bound": lc.get("bound"), "class": lc.get("class"), "confidence": lc.get("confidence"),
                        "parts": {k: lc.get(k) for k in PARTS if k in lc},
                        "dram_bytes": lc.get("dram_bytes"), "l2_bytes": lc.get("l2_bytes"), "flops": lc.get("flops"),
                        "sector_bytes": lc.get("sector_bytes", 0),
                        "dot_flops": lc.get("dot_flops"), "unknown_trips": lc.get("unknown_trips", 0),
                        "overlap": lc.get("overlap", 1.0),
                        "measured_us": measured if measured is not None else timed,
                        "timed": lc.get("timed"), "time_reliable": lc.get("time_reliable"),
                        "ratio": round(lc["est_us"] / measured, 3) if measured and lc.get("est_us") else None,
                    })
    return out


def render(table: list[dict[str, Any]]) -> str:
    if not table:
        return "no captured launches: record some with `tritonlens capture --time -- CMD` (on a GPU)"
    lines = []
    head = ("kernel", "spec", "grid", "estimate", "bound", "parts", "measured", "est/measured", "confidence")
    body = []
    for r in table:
        parts = r["parts"]
        top = sorted(((v or 0.0, k) for k, v in parts.items()), reverse=True)
        shown = ", ".join(f"{_PART_NAMES[k]} {fmt_us(v)}" for v, k in top[:3] if v >= 0.05)
        measured = "-"
        if r["measured_us"] is not None:
            measured = fmt_us(r["measured_us"]) + (f" ({r['timed']}×)" if r.get("timed") else "")
            if r.get("time_reliable") is False:
                measured += " unreliable"
        body.append((printable(r["kernel"]), r["spec"], "x".join(map(str, r["grid"] or [])),
                     fmt_us(r["est_us"]) if r["est_us"] is not None else "unknown", r["bound"] or "", shown, measured,
                     f"{r['ratio']:.2f}" if r["ratio"] is not None else "-", r["confidence"] or ""))
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    for row in [head, *body]:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    lines += [f"{printable(r['kernel'])} {'x'.join(map(str, r['grid'] or []))}: no estimate, {r['unknown']}"
              for r in table if r.get("unknown")]
    ratios = [r["ratio"] for r in table if r["ratio"] is not None]
    within = sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5)
    lines.append(f"{len(table)} launch(es); {len(ratios)} with a trusted measured time, {within} of them estimated "
                 f"within 1.5×" + (f"; {len(ratios) - within} disagree" if len(ratios) > within else ""))
    return "\n".join(lines)


def run(args) -> int:
    from ..pipeline import Checker

    files, problems = python_files(args.paths)
    for msg in problems:
        print(f"tritonlens: {msg}", file=sys.stderr)
    if problems and not files:
        return EXIT_ERROR
    settings = settings_from(args)
    with Checker(settings, capture_file=args.captures) as checker:
        reports = list(checker.check_files(files))
    for report in reports:
        for msg in report.problems:
            print(f"tritonlens: {msg}", file=sys.stderr)
    table = rows(reports)
    if args.format == "json":
        json.dump(table, sys.stdout, indent=2)
        print()
    else:
        print(render(table))
    return EXIT_OK
