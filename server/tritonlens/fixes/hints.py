"""Hint edits: where a value is only tritonlens's assumption, the fix states it in the hint comment above the kernel
(`# tritonlens: n_elements=i32%16`) — titled "Tell tritonlens: …", never the preferred fix, as it changes no code.
The candidates per rule code, the hint line's edit, and what the re-compile of the edited text showed."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..checks.registry import fix_strategies
from ..frontend.value_sources import whole_row_blocks
from ..model import Finding, KernelInfo, KernelReport
from ..units import fmt_bytes
from ..report.irviews import SpecView, compiled_specs
from . import configs
from .edit import Edit, apply_edits
from ..source import split_lines

TELL = "Tell tritonlens: "  # the title of a fix that edits only a hint: what tritonlens assumes, not the program
_MARKER = "# tritonlens: "


# ---------------------------------------------------------------- hint edits (pure text)
@dataclass
class Candidate:
    """One proposed change: `values` set in the kernel's hint lines (or a new hint line with them)."""

    label: str  # "Assume n_elements % 16 == 0"
    values: dict[str, str]
    edits: list[Edit] = field(default_factory=list)
    new_text: str = ""
    shift: int = 0  # lines inserted above the kernel


def format_hint(indent: str, values: dict[str, str]) -> str:
    return indent + _MARKER + ", ".join(f"{k}={v}" for k, v in values.items())


def apply_hint(text: str, kernel: KernelInfo, values: dict[str, str]) -> tuple[list[Edit], str, int]:
    """Set `values` in every hint line directly above the kernel's decorators, or insert one hint line there.
    Returns (edits, new text, lines inserted above the kernel)."""
    lines = split_lines(text, keepends=True)
    edits: list[Edit] = []
    if kernel.hints:
        for hint in kernel.hints:
            old = lines[hint.line - 1].rstrip("\r\n")
            merged = dict(hint.values)
            merged.update(values)
            new = format_hint(old[:hint.col - 1], merged)
            edits.append(Edit.replace(hint.line - 1, 0, hint.line - 1, len(old), new))
        return edits, apply_edits(text, edits), 0
    at = kernel.decorator_line - 1
    indent = re.match(r"\s*", lines[at] if at < len(lines) else "").group(0)
    edits.append(Edit.insert(at, 0, format_hint(indent, values) + "\n"))
    return edits, apply_edits(text, edits), 1


# ---------------------------------------------------------------- candidates per code
def _hint_value(kernel: KernelInfo, name: str) -> str | None:
    for hint in kernel.hints:
        if name in hint.values:
            return hint.values[name]
    return None


def _aligned(value: str | None, is_pointer: bool) -> str:
    """The hint value that states `name` is aligned / a multiple of 16, keeping the type already given."""
    if is_pointer:
        base = (value or "*fp32").split("%")[0]
        return base if base.startswith("*") else "*fp32"
    base = (value or "i32").split("%")[0]
    return f"{base if base[:1] in ('i', 'u') else 'i32'}%16"


def _memory_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    params = [p for p in f.data.get("params", []) if kr.kernel.param(p) is not None]
    if not params:
        return
    values = {}
    for name in params:
        value = _hint_value(kr.kernel, name)
        is_ptr = (value or "").startswith("*") or bool(kr.kernel.param(name).is_pointer)
        values[name] = _aligned(value, is_ptr)
    what = " and ".join(f"{n} % 16 == 0" if not v.startswith("*") else f"{n} is 16-byte aligned"
                        for n, v in values.items())
    yield Candidate(f"{TELL}{what}", values)
    if len(values) > 1:
        for name, v in values.items():
            yield Candidate(f"{TELL}{name} % 16 == 0" if not v.startswith("*") else f"{TELL}{name} is aligned",
                            {name: v})


def _missing_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    name = f.data.get("param")
    if not name:
        return
    # Only values the code gives (its launch sites): a constexpr is never guessed.
    seen: list[str] = []
    for value in [str(c) for c in f.data.get("candidates", [])]:
        if value not in seen:
            seen.append(value)
            yield Candidate(f"{TELL}{name}={value} (a launch site passes it)", {name: value})


def _spill_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    specs = [cs for cs in configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
    if not specs:
        return
    spec = specs[0].spec
    warps = int(spec.options.get("num_warps", 4))
    if warps < 16:
        yield Candidate(f"{TELL}the launch uses num_warps={warps * 2}", {"num_warps": str(warps * 2)})
    yield from _halved_blocks(kr, spec, text)


def _halved_blocks(kr: KernelReport, spec, text: str, limit: int = 3) -> Iterator[Candidate]:
    whole = whole_row_blocks(text, kr.kernel.def_line)
    for name in [n for n in kr.kernel.constexpr_names if "BLOCK" in n.upper() and n not in whole][:limit]:
        value = spec.constants.get(name)
        if isinstance(value, int) and value >= 32:
            yield Candidate(f"{TELL}the launch uses {name}={value // 2}", {name: str(value // 2)})


def _resource_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    """RES001 / RES002 from a hint spec: fewer pipeline stages, then smaller blocks."""
    specs = [cs for cs in configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
    if not specs:
        return
    spec = specs[0].spec
    stages = spec.options.get("num_stages")
    if isinstance(stages, int) and stages > 1 and f.data.get("limiter") != "registers":
        yield Candidate(f"{TELL}the launch uses num_stages={stages - 1}", {"num_stages": str(stages - 1)})
    yield from _halved_blocks(kr, spec, text)


def _new_config_candidates(kr: KernelReport, f: Finding, text: str):
    from .tuning import candidates  # configs the autotune list lacks, made from the cause (no hint edit)

    return candidates(kr, f, text)


def _prune_candidates(kr: KernelReport, f: Finding, text: str):
    from .tuning import prune_candidates  # the dead configs out of the literal autotune list (no hint edit)

    return prune_candidates(kr, f, text)


# hint candidates per fix strategy: a rule names its strategies (checks/registry.Rule.fixes)
STRATEGIES: dict[str, Callable[[KernelReport, Finding, str], Iterator[Candidate]]] = {
    "memory": _memory_candidates, "missing": _missing_candidates, "spill": _spill_candidates,
    "resources": _resource_candidates, "new_config": _new_config_candidates,
    "prune": _prune_candidates,
}


def hint_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    for strategy in fix_strategies(f.code):
        if strategy in STRATEGIES:
            yield from STRATEGIES[strategy](kr, f, text)


def fixable(code: str) -> bool:
    """A finding of `code` has a fix to search for (its rule names a strategy)."""
    return bool(fix_strategies(code))


def config_fixable(code: str) -> bool:
    """A config edit (the autotune list, the launch's options) can remove a finding of `code`."""
    return "config" in fix_strategies(code)


# ---------------------------------------------------------------- did it help?
def finding_at(old: KernelReport, diag_data: dict[str, Any], code: str) -> Finding | None:
    """The finding of `code` on the line a diagnostic's data names."""
    line = diag_data.get("line")
    for f in old.findings:
        if f.code == code and f.line == line:
            return f
    return None


def _still_there(new: KernelReport, f: Finding, shift: int) -> bool:
    if f.code == "SRC002":
        return any(g.code == "SRC002" and g.data.get("param") == f.data.get("param") for g in new.findings)
    return any(g.code == f.code and g.line == f.line + shift for g in new.findings)


def _width(kr: KernelReport, line: int, kind: str, settings) -> int | None:
    specs = compiled_specs(kr)
    if not specs:
        return None
    view = SpecView(kr, specs[0], settings)
    ptx = view.module("ptx")
    if ptx is None:
        return None
    wanted = set(view.ir_lines("ptx", line))
    bits = [i.bits for i in ptx.instrs if i.ir_line in wanted and i.kind == kind and i.bits]
    return max(bits) if bits else None


def _metrics(kr: KernelReport, index: int | None = None) -> dict[str, Any]:
    """Metrics of spec `index` of the report (the first compiled one when not given or not compiled)."""
    if index is not None and index < len(kr.compiled) and kr.compiled[index] in compiled_specs(kr):
        return kr.compiled[index].metrics
    specs = compiled_specs(kr)
    return specs[0].metrics if specs else {}


def _holding_index(kr: KernelReport, f: Finding) -> int | None:
    """Position in `kr.compiled` of the first compiled spec the finding holds in; a hint edit keeps positions."""
    keys = set(f.data.get("specs") or [])
    return next((i for i, cs in enumerate(kr.compiled) if cs.spec.key() in keys and cs in compiled_specs(kr)), None)


def outcome(old: KernelReport, new: KernelReport, f: Finding, cand: Candidate, settings) -> str | None:
    """What the re-compile showed, or None when the candidate does not help (finding still there, or it broke
    the compile)."""
    if _still_there(new, f, cand.shift):
        return None
    if any(g.code == "SRC001" for g in new.findings) or not compiled_specs(new):
        return None
    if f.code == "SRC002":
        m = _metrics(new)
        return (f"compiles: {m.get('registers', '?')} regs, {fmt_bytes(m.get('spill_bytes'))} spill, "
                f"{fmt_bytes(m.get('shared'))} smem")
    said = f"removes {f.code} on line {f.line}"
    if f.data.get("access") in ("load", "store"):  # a narrow access (PTX001 / PTX002)
        kind = "ld.global" if f.data["access"] == "load" else "st.global"
        before, after = _width(old, f.line, kind, settings), _width(new, f.line + cand.shift, kind, settings)
        if before and after:
            said += f"; {kind} {before}→{after}-bit"
    else:
        at = _holding_index(old, f)
        changed, worse = configs.metric_changes(_metrics(old, at), _metrics(new, at), f.code)
        said = f"removes {f.code}" + (f" ({'; '.join(changed)})" if changed else "") + \
            (f"; but {', '.join(worse[:4])}" if worse else "")
    return said


