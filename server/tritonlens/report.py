"""Findings of all specs of a kernel merged into one `KernelReport`: the object every presenter reads."""
from __future__ import annotations

import ast
import re

from .model import Artifacts, CompiledSpec, CompileError, Finding, KernelInfo, KernelReport, Spec
from .settings import Settings
from .specs import ASSUMED

_ENV_ERRORS = {"Timeout", "WorkerCrash", "InternalError", "Cancelled"}


def error_finding(kernel: KernelInfo, spec: Spec, art: Artifacts, withheld: dict[str, str] | None = None,
                  source: str | None = None) -> Finding:
    """A failed compile as SRC001 on the line Triton names (made absolute), else on the def line. When the error is
    about a name whose only binding tritonlens chose not to run (`withheld`), the message says so. When it is a type
    error about fp32 and values loaded through pointers that tritonlens typed `*fp32` by default reach the failing
    line (`source`, the kernel's file, tells which), the error may be ours, not the kernel's: the finding is an info
    that names those pointers and the hint that types them, not an error."""
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
    for name, why in (withheld or {}).items():
        if re.search(rf"\b{re.escape(name)}\b", err.message):
            fix = ("bind it outside that `if`" if "`if` whose condition" in why
                   else "make it a literal or tl.constexpr")
            message += (f" — `{name}` comes from {why} (moduleExecution=definitions); {fix}, or set "
                        f"moduleExecution to full")
            break
    severity = "error"
    data: dict = {"kind": err.kind, "detail": err.message}
    assumed = _assumed_pointers_behind(kernel, spec, err, source)
    if assumed:
        severity = "info"
        data["assumed_pointers"] = assumed
        shown = ", ".join(assumed)
        message = (f"does not compile with {shown} typed *fp32, which tritonlens assumes for a pointer whose element "
                   f"type it cannot see — {message}; if {'it points' if len(assumed) == 1 else 'they point'} to "
                   f"integers or another type, say so in a hint: `# tritonlens: "
                   f"{', '.join(f'{n}=*i32' for n in assumed)}`")
    return Finding(
        path=kernel.path, line=line, column=col, end_line=line, end_column=end_col, code="SRC001",
        severity=severity, message=f"{message} [{spec.describe()}]", kernel=kernel.name, config=spec.describe(),
        target=spec.target, data=data,
    )


_FP32 = re.compile(r"\bfp32\b|\bfloat32\b")


def _assumed_pointers_behind(kernel: KernelInfo, spec: Spec, err: CompileError, source: str | None) -> list[str]:
    """Pointers typed `*fp32` by assumption (not by a capture, hint or launch) whose loaded values reach the line of
    a type error that names fp32 — through the statement at that line and the assignments feeding it."""
    if err.kind != "CompilationError" or not _FP32.search(err.message) or not err.line or source is None:
        return []
    assumed = [n for n, ty in spec.signature.items() if ty == "*fp32" and spec.origins.get(n) == ASSUMED]
    if not assumed:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno == kernel.def_line), None)
    if fn is None or not fn.lineno <= err.line <= (fn.end_lineno or fn.lineno):
        return []
    at = [s for s in ast.walk(fn) if isinstance(s, ast.stmt) and s is not fn
          and s.lineno <= err.line <= (s.end_lineno or s.lineno)]
    if not at:
        return []
    stmt = at[-1]  # ast.walk goes outside-in: the innermost statement at that line
    focus: ast.AST = stmt
    if isinstance(stmt, (ast.For, ast.While, ast.If)) and "Loop-carried" not in err.message:
        focus = stmt.iter if isinstance(stmt, ast.For) else stmt.test  # the header, not the body
    names = {n.id for n in ast.walk(focus) if isinstance(n, ast.Name)}
    assigns = [s for s in ast.walk(fn) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and getattr(s, "value", None) is not None]
    changed = True
    while changed:  # names feeding the failing statement, through assignments anywhere in the kernel
        changed = False
        for s in assigns:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if any(isinstance(t, ast.Name) and t.id in names for tg in targets for t in ast.walk(tg)):
                used = {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)} - names  # type: ignore[arg-type]
                if used:
                    names |= used
                    changed = True
    return [n for n in assumed if n in names]


def finish_report(kr: KernelReport, spec_findings: list[Finding], settings: Settings) -> KernelReport:
    """Merge the findings of every compiled spec: one finding per (code, line, column, merge key or message); when it holds
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
    labels = config_labels([cs.spec for cs in kr.compiled])
    for key in order:
        items = groups[key]
        first = items[0][1]
        specs = {cs.spec.key() for cs, _ in items}
        if total > 1 and len(specs) < total:
            shown = []
            for cs, _ in items:
                label = labels.get(cs.spec.key()) or _short(cs.spec)
                if label not in shown:
                    shown.append(label)
            text = "; ".join(shown[:3]) + ("; …" if len(shown) > 3 else "")
            first.message = f"{first.message} (in {len(specs)} of {total} configs: {text})"
        elif total > 1:
            first.message = f"{first.message} (in all {total} configs)"
        first.data["specs"] = sorted(specs)
        first.data["configs"] = [labels.get(cs.spec.key()) or _short(cs.spec) for cs, _ in items]
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


def _spec_values(spec: Spec) -> dict[str, str]:
    """What tells one spec from another, in the order a reader looks for it: target, constexprs, options, then the
    types and divisibility assumed for runtime arguments."""
    values: dict[str, str] = {"target": spec.target}
    for name, value in spec.constants.items():
        if spec.signature.get(name) == "constexpr":
            values[name] = repr(value)
    for opt in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        if opt in spec.options:
            values[opt] = repr(spec.options[opt])
    for name, ty in spec.signature.items():
        if ty == "constexpr":
            continue
        if name in spec.constants:
            values[name] = repr(spec.constants[name])
            continue
        div = spec.attrs.get(name, {}).get("divisibility")
        values[name] = f"{ty}%{div}" if div and not ty.startswith("*") else ty if div == 16 or not ty.startswith("*") \
            else f"{ty}%1"
    return values


def config_labels(specs: list[Spec]) -> dict[str, str]:
    """spec key -> `BLOCK_M=128, BLOCK_N=128, num_warps=8`: only the values that differ between the specs (all of
    them describe() when a single spec or when they differ in nothing visible)."""
    values = [_spec_values(s) for s in specs]
    keys: list[str] = []
    for v in values:
        for k in v:
            if k not in keys:
                keys.append(k)
    differing = [k for k in keys if len({v.get(k) for v in values}) > 1]
    out: dict[str, str] = {}
    for spec, v in zip(specs, values):
        if len(specs) < 2 or not differing:
            out[spec.key()] = spec.label or spec.describe()
        else:
            out[spec.key()] = ", ".join(f"{k}={v[k]}" if k != "target" else v[k] for k in differing if k in v)
    return out
