"""Findings of all specs of a kernel merged into one `KernelReport`: the object every presenter reads."""
from __future__ import annotations

from .model import Artifacts, CompiledSpec, Finding, KernelInfo, KernelReport, Spec
from .settings import Settings

_ENV_ERRORS = {"Timeout", "WorkerCrash", "InternalError", "Cancelled"}


def error_finding(kernel: KernelInfo, spec: Spec, art: Artifacts) -> Finding:
    """A failed compile as SRC001 on the line Triton names (made absolute), else on the def line."""
    err = art.error
    assert err is not None
    line = err.line or kernel.def_line
    col = err.col or kernel.col
    end_col = err.end_col or (col + 1 if err.col else kernel.col + 3)
    if err.kind in _ENV_ERRORS:
        prefix = {"Timeout": "compile timed out", "WorkerCrash": "compiler crashed",
                  "InternalError": "internal error", "Cancelled": "compile cancelled"}[err.kind]
    elif err.kind == "OutOfResources":
        prefix = "out of resources"
    elif err.kind == "LoadError":
        prefix = "kernel module did not load"
    else:
        prefix = "compile error"
    first = err.message.strip().splitlines()[0] if err.message.strip() else err.kind
    message = f"{prefix}: {first}" if not first.startswith(prefix) else first
    return Finding(
        path=kernel.path, line=line, column=col, end_line=line, end_column=end_col, code="SRC001",
        severity="error", message=f"{message} [{spec.describe()}]", kernel=kernel.name, config=spec.describe(),
        target=spec.target, data={"kind": err.kind, "detail": err.message},
    )


def finish_report(kr: KernelReport, spec_findings: list[Finding], settings: Settings) -> KernelReport:
    """Merge the findings of every compiled spec: one finding per (code, line, column, message-kind); when it holds
    in only some specs, say in which ("in 1 of 2 configs: BLOCK_M=128, ...")."""
    total = len(kr.compiled)
    groups: dict[tuple, list[tuple[CompiledSpec, Finding]]] = {}
    order: list[tuple] = []
    for cs in kr.compiled:
        for f in cs.findings:
            key = (f.code, f.path, f.line, f.column, f.data.get("merge_key", f.message))
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append((cs, f))
    merged: list[Finding] = []
    for key in order:
        items = groups[key]
        first = items[0][1]
        specs = {cs.spec.key() for cs, _ in items}
        if total > 1 and len(specs) < total:
            labels = "; ".join(_short(cs.spec) for cs, _ in items[:3]) + ("; …" if len(items) > 3 else "")
            first.message = f"{first.message} (in {len(specs)} of {total} specs: {labels})"
        elif total > 1:
            first.message = f"{first.message} (in all {total} specs)"
        first.data["specs"] = sorted(specs)
        merged.append(first)
    for f in spec_findings:
        sev = settings.severity_for(f.code, f.severity)
        if sev is None:
            continue
        f.severity = sev
        merged.append(f)
    kr.findings = sorted(merged, key=Finding.sort_key)
    return kr


def _short(spec: Spec) -> str:
    return spec.label or spec.describe()
