"""A comparison as text, JSON and SARIF. Pure: an `Outcome` in, a string or a dict out."""
from __future__ import annotations

import os
from typing import Any

from ..checks.costmodel import mean_launch_us
from ..model import Finding
from .core import Outcome, SpecPair

CODE = "CMP001"  # a regression on the second side (its SARIF rule)
SUMMARY = "what the compiler does to this spec got worse under the other Triton release or target"


def side_names(out: Outcome) -> tuple[str, str]:
    a, b = out.sides
    if a.release == b.release:
        return a.target, b.target
    if a.target == b.target:
        return a.release.label, b.release.label
    return a.label, b.label


def headline(out: Outcome) -> str:
    c = out.counts()
    na, nb = side_names(out)
    regressed = c.get("regressed", 0)
    return (f"{na} → {nb}: {c['specs']} spec(s), {c['compared']} compared; {regressed} regressed "
            f"({c['gated']} past the gate), {c.get('improved', 0)} improved, {c.get('changed', 0)} changed in IR "
            f"only, {c.get('same', 0)} the same"
            + (f", {c['unverified']} not compared" if c.get("unverified") else "")
            + (f", {c.get('only-a', 0) + c.get('only-b', 0)} on one side only"
               if c.get("only-a") or c.get("only-b") else ""))


def to_text(out: Outcome, verbose: bool = False) -> str:
    """Regressions first (those past the gate marked ✗), then improvements; with `verbose` also specs whose IR
    changed and nothing a user tunes for."""
    na, nb = side_names(out)
    lines = [f"comparing {na} (first) with {nb} (second)"]
    shown = {"regressed", "improved", "unverified", "only-a", "only-b"} | ({"changed"} if verbose else set())
    section = None
    for p in out.pairs:
        if p.status not in shown:
            continue
        head = {"regressed": "Regressions", "improved": "Improvements", "changed": "Changed in the IR only",
                "unverified": "Not compared", "only-a": "On one side only", "only-b": "On one side only"}[p.status]
        if head != section:
            lines += ["", head]
            section = head
        lines.append(f"  {p.path}:{p.def_line} {p.kernel} [{p.describe}] ({p.label})")
        if p.knobs:
            lines.append(f"    paired by its label; the second side's spec differs: {', '.join(p.knobs)}")
        for r in p.regressions:
            lines.append(f"    {'✗' if r.gated else '-'} {r.kind}: {r.text}")
        for text in p.improvements:
            lines.append(f"    + {text}")
        if p.unverified:
            lines.append(f"    ? {p.unverified}")
        if p.status in ("only-a", "only-b"):
            lines.append(f"    compiled for the {'first' if p.status == 'only-a' else 'second'} side only")
        if p.ir_changed and (p.regressions or verbose):
            lines.append(f"    IR changed: {', '.join(p.ir_changed)}")
    lines += ["", headline(out)]
    secs = out.seconds
    if secs:
        parts = [f"{na} {secs.get('a', 0):.1f} s", f"{nb} {secs.get('b', 0):.1f} s"]
        if secs.get("environment"):
            parts.append(f"making the environment {secs['environment']:.1f} s (once)")
        lines.append("compile time: " + ", ".join(parts))
    return "\n".join(lines) + "\n"


def pair_json(p: SpecPair) -> dict[str, Any]:
    def side(rec: dict | None, extra: dict) -> dict[str, Any] | None:
        if rec is None:
            return None
        d = {"compiled": rec.get("compiled"), "metrics": rec.get("metrics", {}),
             "estimated_us": mean_launch_us(rec.get("metrics", {})),
             "instructions": extra.get("instructions"), "spill_lines": extra.get("spill_lines", []),
             "spill_in_loop": extra.get("spill_in_loop", [])}
        if extra.get("error"):
            d["error"] = extra["error"]
        return d

    return {"path": p.path, "kernel": p.kernel, "line": p.def_line, "label": p.label,
            "capture_id": p.capture_id or None, "spec": p.describe,
            "status": p.status, "gated": p.gated, "knobs": list(p.knobs),
            "regressions": [r.to_json() for r in p.regressions],
            "improvements": list(p.improvements), "ir_changed": list(p.ir_changed),
            "findings_appeared": p.appeared, "findings_gone": p.gone, "unverified": p.unverified or None,
            "first": side(p.a, p.a_extra), "second": side(p.b, p.b_extra)}


def to_json(out: Outcome) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {"triton": s.release.triton, "python": s.release.python, "origin": s.release.origin,
                "target": s.target}

    th = out.thresholds
    return {"first": side(out.sides[0]), "second": side(out.sides[1]), "counts": out.counts(),
            "thresholds": {"fail_on": sorted(th.fail_on), "spill_bytes": th.spill_bytes, "registers": th.registers,
                           "occupancy_pct": th.occupancy_pct, "conversions": th.conversions, "time_pct": th.time_pct,
                           "instructions_pct": th.instructions_pct},
            "seconds": {k: round(v, 2) for k, v in out.seconds.items()}, "problems": out.problems,
            "specs": [pair_json(p) for p in out.pairs]}


def findings(out: Outcome, base: str) -> list[Finding]:
    """One CMP001 per regressed spec, on the kernel's def line: an error when past the gate, else a note."""
    na, nb = side_names(out)
    found = []
    for p in out.pairs:
        if not p.regressions:
            continue
        path = p.path if os.path.isabs(p.path) else os.path.join(base, p.path)
        text = "; ".join(r.text for r in p.regressions)
        found.append(Finding(path=path, line=p.def_line, column=1, end_line=p.def_line, end_column=2, code=CODE,
                             severity="error" if p.gated else "info",
                             message=f"{na} → {nb}: {text} [{p.describe}]", kernel=p.kernel, config=p.describe,
                             target=out.sides[1].target))
    return found


def to_sarif(out: Outcome, base: str) -> dict[str, Any]:
    from ..report.sarif import to_sarif as sarif

    doc = sarif(findings(out, base), base)
    for rule in doc["runs"][0]["tool"]["driver"]["rules"]:
        if rule["id"] == CODE:
            rule.update({"name": "release-regression", "shortDescription": {"text": SUMMARY},
                         "defaultConfiguration": {"level": "error"}})
    return doc
