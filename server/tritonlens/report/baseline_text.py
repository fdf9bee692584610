"""The output of `tritonlens diff`: a comparison with the baseline (report/baseline.py's `compare`) as text or as
JSON."""
from __future__ import annotations

from ..source import split_lines


def diff_json(cmp, diffs: dict) -> dict:
    """`tritonlens diff --format json`: the comparison as plain data."""
    def changes(items):
        return [{"name": c.name, "baseline": c.old, "now": c.new, "regressed": c.regressed} for c in items]

    kernels = []
    for kd in cmp.kernels:
        specs = [{"baseline": (sd.old or {}).get("describe"), "now": (sd.new or {}).get("describe"),
                  "matched_by": sd.matched_by or None, "knobs": changes(sd.knobs), "metrics": changes(sd.metrics),
                  "appeared": sd.appeared, "gone": sd.gone, "ir_changed": sd.ir_changed,
                  **({"ir_diff": diffs[(kd.path, kd.kernel, sd.new_key)]}
                     if (kd.path, kd.kernel, sd.new_key) in diffs else {})} for sd in kd.specs]
        kernels.append({"path": kd.path, "kernel": kd.kernel, "status": kd.status, "appeared": kd.appeared,
                        "gone": kd.gone, "specs": specs})
    return {"versions": changes(cmp.versions), "kernels": kernels,
            "files": {p: {"appeared": a, "gone": g} for p, (a, g, _) in cmp.files.items() if a or g}}


def diff_text(cmp, diffs: dict, base_name: str) -> str:
    """`tritonlens diff` as text: what changed per kernel and spec since the baseline `base_name`, with the IR diffs
    of `diffs` ((path, kernel, spec key) -> unified diff) under their specs."""
    out: list[str] = []

    def emit(line: str) -> None:
        out.append(line + "\n")

    def findings(appeared, gone, indent):
        for r in appeared:
            emit(f"{indent}+ {r['code']} line {r['line']}: {r['message']}")
        for r in gone:
            emit(f"{indent}- {r['code']} line {r['line']}: {r['message']}")

    emit(f"compared with {base_name}")
    if cmp.versions:
        emit("  versions changed (deltas below may be the compiler's, not your edit's): " +
             ", ".join(c.text() for c in cmp.versions))
    for path, (appeared, gone, _) in cmp.files.items():
        if appeared or gone:
            emit(f"{path}")
            findings(appeared, gone, "  ")
    n_changed = n_specs = 0
    for kd in cmp.kernels:
        if kd.status != "same":
            emit(f"{kd.path}::{kd.kernel}: {'not in the baseline' if kd.status == 'new' else 'gone'}")
        findings(kd.appeared, kd.gone, "  ")
        for sd in kd.specs:
            n_specs += 1
            if not sd.changed:
                continue
            n_changed += 1
            if kd.status == "same" and not sd.matched_by:
                emit(f"{kd.path}::{kd.kernel} [{sd.describe}]: "
                     f"{'spec not in the baseline' if sd.new else 'spec no longer compiled'}")
            else:
                emit(f"{kd.path}::{kd.kernel} [{sd.describe}]")
            if sd.knobs:
                knobs = [c for c in sd.knobs if c.name != "target"]
                how = f" (paired with the baseline's spec by {sd.matched_by})" if sd.matched_by != "key" else ""
                emit(f"  spec: {', '.join(c.text() for c in knobs)}{how}")
                if len(knobs) > 1:
                    emit(f"  {len(knobs)} knobs changed at once: the deltas cannot be pinned on one of them")
            for c in sd.metrics:
                flag = f"  (regressed{': ' + c.why if c.why else ''})" if c.regressed else ""
                emit(f"  {c.text()}{flag}")
            findings(sd.appeared, sd.gone, "  ")
            if sd.ir_changed:
                emit(f"  IR changed: {', '.join(sd.ir_changed)}")
            text = diffs.get((kd.path, kd.kernel, sd.new_key))
            if text:
                out.append("".join("    " + ln for ln in split_lines(text, keepends=True)))
    emit(f"\n{n_changed} of {n_specs} spec(s) changed since the baseline")
    return "".join(out)
