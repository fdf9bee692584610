"""Quick fixes, keyed by rule code. Each candidate edit (a hint comment added or changed, or a literal autotune config
edited: see `fix_configs`) is applied to a copy of the buffer and re-compiled; it is offered only when the re-compile
shows that it helps, and its title says what it showed ("Assume n_elements % 16 == 0 — removes PTX001 on line 13;
ld.global 32→128-bit", "Use num_warps=8 — removes SASS001 (296 B spilled → 0; registers 255 → 184)")."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from lsprotocol import types

from ..model import Finding, KernelInfo, KernelReport
from . import fix_configs
from .diagnostics import SOURCE
from .irviews import SpecView, compiled_specs, fmt_bytes

if TYPE_CHECKING:
    from .compiling import DocState
    from .server import TritonLensServer

MAX_FIXES_PER_DIAGNOSTIC = 2
MAX_CONFIG_FIXES = 4  # per diagnostic, over all the configs it holds in
_MARKER = "# tritonlens: "


# ---------------------------------------------------------------- hint edits (pure text)
@dataclass
class Candidate:
    """One proposed change: `values` set in the kernel's hint lines (or a new hint line with them)."""

    label: str  # "Assume n_elements % 16 == 0"
    values: dict[str, str]
    edits: list[types.TextEdit] = field(default_factory=list)
    new_text: str = ""
    shift: int = 0  # lines inserted above the kernel


def format_hint(indent: str, values: dict[str, str]) -> str:
    return indent + _MARKER + ", ".join(f"{k}={v}" for k, v in values.items())


def apply_hint(text: str, kernel: KernelInfo, values: dict[str, str]) -> tuple[list[types.TextEdit], str, int]:
    """Set `values` in every hint line directly above the kernel's decorators, or insert one hint line there.
    Returns (edits, new text, lines inserted above the kernel)."""
    lines = text.splitlines(keepends=True)
    edits: list[types.TextEdit] = []
    if kernel.hints:
        for hint in kernel.hints:
            old = lines[hint.line - 1].rstrip("\r\n")
            merged = dict(hint.values)
            merged.update(values)
            new = format_hint(old[:hint.col - 1], merged)
            edits.append(types.TextEdit(range=types.Range(types.Position(hint.line - 1, 0),
                                                          types.Position(hint.line - 1, len(old))), new_text=new))
            ending = lines[hint.line - 1][len(old):]
            lines[hint.line - 1] = new + ending
        return edits, "".join(lines), 0
    at = kernel.decorator_line - 1
    indent = re.match(r"\s*", lines[at] if at < len(lines) else "").group(0)
    new = format_hint(indent, values) + "\n"
    edits.append(types.TextEdit(range=types.Range(types.Position(at, 0), types.Position(at, 0)), new_text=new))
    lines.insert(at, new)
    return edits, "".join(lines), 1


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
    yield Candidate(f"Assume {what}", values)
    if len(values) > 1:
        for name, v in values.items():
            yield Candidate(f"Assume {name} % 16 == 0" if not v.startswith("*") else f"Assume {name} is aligned",
                            {name: v})


def _missing_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    name = f.data.get("param")
    if not name:
        return
    seen: list[str] = []
    for value in [str(c) for c in f.data.get("candidates", [])] + _powers_for(name):
        if value not in seen:
            seen.append(value)
            yield Candidate(f"Add hint {name}={value}", {name: value})


def _powers_for(name: str) -> list[str]:
    upper = name.upper()
    if "BLOCK" in upper or upper.startswith("BS") or upper.endswith("_SIZE"):
        return ["1024", "128", "64"]
    if "GROUP" in upper or "STAGE" in upper:
        return ["8", "4"]
    return ["64", "16", "1"]


def _spill_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    specs = [cs for cs in fix_configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
    if not specs:
        return
    spec = specs[0].spec
    warps = int(spec.options.get("num_warps", 4))
    if warps < 16:
        yield Candidate(f"Use num_warps={warps * 2}", {"num_warps": str(warps * 2)})
    yield from _halved_blocks(kr, spec)


def _halved_blocks(kr: KernelReport, spec, limit: int = 3) -> Iterator[Candidate]:
    for name in [n for n in kr.kernel.constexpr_names if "BLOCK" in n.upper()][:limit]:
        value = spec.constants.get(name)
        if isinstance(value, int) and value >= 32:
            yield Candidate(f"Halve {name} to {value // 2}", {name: str(value // 2)})


def _resource_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[Candidate]:
    """RES001 / RES002 from a hint spec: fewer pipeline stages, then smaller blocks."""
    specs = [cs for cs in fix_configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
    if not specs:
        return
    spec = specs[0].spec
    stages = spec.options.get("num_stages")
    if isinstance(stages, int) and stages > 1 and f.data.get("limiter") != "registers":
        yield Candidate(f"Use num_stages={stages - 1}", {"num_stages": str(stages - 1)})
    yield from _halved_blocks(kr, spec)


CANDIDATES: dict[str, Callable[[KernelReport, Finding, str], Iterator[Candidate]]] = {
    "PTX001": _memory_candidates, "PTX002": _memory_candidates, "SRC002": _missing_candidates,
    "SASS001": _spill_candidates, "RES001": _resource_candidates, "RES002": _resource_candidates,
}
CONFIG_CODES = {"SASS001", "RES001", "RES002"}  # findings a config edit can remove


# ---------------------------------------------------------------- did it help?
def _target(old: KernelReport, diag_data: dict[str, Any], code: str) -> Finding | None:
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
    if f.code in ("PTX001", "PTX002"):
        kind = "ld.global" if f.code == "PTX001" else "st.global"
        before, after = _width(old, f.line, kind, settings), _width(new, f.line + cand.shift, kind, settings)
        if before and after:
            said += f"; {kind} {before}→{after}-bit"
    else:
        at = _holding_index(old, f)
        shown = fix_configs.deltas(f.code, _metrics(old, at), _metrics(new, at))
        said = f"removes {f.code}" + (f" ({shown})" if shown else "")
    return said


# ---------------------------------------------------------------- the handler
async def fixes_for(ls: "TritonLensServer", st: "DocState", diag: types.Diagnostic) -> list[types.CodeAction]:
    from .server import in_daemon_thread

    data = diag.data if isinstance(diag.data, dict) else {}
    code = str(diag.code or "")
    kr = st.kernel_named(data.get("kernel") or "", data.get("line"))
    make = CANDIDATES.get(code)
    if kr is None or make is None:
        return []
    f = _target(kr, data, code)
    if f is None:
        return []
    doc = ls.workspace.get_text_document(st.uri)
    text = doc.source
    if text != st.text:  # the buffer moved on since the compile: line numbers no longer hold
        return []
    from_configs = fix_configs.candidates(kr, f, text) if code in CONFIG_CODES else None
    cands: Iterator[Any] = from_configs if from_configs is not None else make(kr, f, text)
    limit = MAX_CONFIG_FIXES if from_configs is not None else MAX_FIXES_PER_DIAGNOSTIC
    out: list[types.CodeAction] = []
    done: set[str] = set()  # config edit groups already answered by an offered fix
    for cand in cands:
        group = getattr(cand, "group", None)
        if group in done:
            continue
        if group is None:
            cand.edits, cand.new_text, cand.shift = apply_hint(text, kr.kernel, cand.values)
        else:
            cand.edits, cand.new_text, cand.shift = cand.apply(text)
        report = await in_daemon_thread(ls.checker.check_file, st.path, cand.new_text, kernels={kr.name},
                                         group=f"{st.uri}#fix")
        new = next((k for k in report.kernels if k.name == kr.name and k.kernel.branch == kr.kernel.branch), None)
        if new is None:
            said = None
        elif group is None:
            said = outcome(kr, new, f, cand, ls.settings)
        else:
            said = fix_configs.outcome(kr, new, f, cand)
        if said is None:
            continue
        if group is not None:
            done.add(group)
        out.append(types.CodeAction(
            title=f"{cand.label} — {said}", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
            is_preferred=not out, edit=types.WorkspaceEdit(changes={st.uri: cand.edits})))
        if len(out) >= limit:
            break
    return out


def register(server: "TritonLensServer") -> None:
    cache: dict[tuple, list[types.CodeAction]] = {}

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    async def code_action(ls: "TritonLensServer", params: types.CodeActionParams) -> list[types.CodeAction]:
        st = ls.scheduler.state(params.text_document.uri)
        if st is None:
            return []
        out: list[types.CodeAction] = []
        for diag in params.context.diagnostics:
            if diag.source != SOURCE or str(diag.code or "") not in CANDIDATES:
                continue
            key = (st.uri, st.text, diag.code, diag.range.start.line, diag.range.start.character)
            if key not in cache:
                try:
                    cache[key] = await fixes_for(ls, st, diag)
                except Exception as exc:  # noqa: BLE001 — no fix is better than a dead server
                    ls.log(f"quick fixes for {diag.code} failed: {type(exc).__name__}: {exc}",
                           types.MessageType.Error)
                    cache[key] = []
                if len(cache) > 256:
                    cache.pop(next(iter(cache)))
            out.extend(cache[key])
        return out
