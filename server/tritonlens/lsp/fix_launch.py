"""Quick fixes that edit the launch call: `kernel[grid](..., num_warps=4)` → `num_warps=8`, or the keyword added
where the call passes none (Triton's default then applies). The program changes where the value is set, and the fix
is proven on exactly the spec the finding came from with that one value changed (`SpecVariant`): the launch-site or
captured spec, its other options, constexprs and divisibility untouched. A fix after which another finding appears is
offered with the trade in its title, never silently, and is not the preferred one.

Where the kernel is launched from several calls in the file, or the option comes from a hint comment or an autotune
config, this module offers nothing: the config fixes (fix_configs) and the hint edits ("Tell tritonlens: …") apply.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterator

from lsprotocol import types

from ..model import CompiledSpec, Finding, KernelReport, SpecVariant
from .fix_configs import _apply, deltas, holding
from ..report.irviews import compiled_specs

MAX_WARPS = 16
_LAUNCH_ORIGIN = re.compile(r"launch at (?P<file>[^:]+):(?P<line>\d+)$")


@dataclass
class LaunchCall:
    """One `name[grid](...)` call in the text: its line, the span of each keyword's value, where a new keyword goes."""

    line: int  # 1-based
    keywords: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # 0-based line/char spans
    close: tuple[int, int] = (0, 0)  # 0-based position of the call's `)`


def launch_calls(text: str, kernel_name: str) -> list[LaunchCall]:
    """The launches of `kernel_name` (`k[grid](...)`, `mod.k[grid](...)`) in `text`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()

    def char(line: int, byte_col: int) -> int:  # ast columns are UTF-8 byte offsets
        raw = lines[line - 1].encode() if 0 < line <= len(lines) else b""
        return len(raw[:byte_col].decode(errors="replace"))

    short = kernel_name.rsplit(".", 1)[-1]
    out: list[LaunchCall] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        target = node.func.value
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        if name != short or node.end_lineno is None or node.end_col_offset is None:
            continue
        call = LaunchCall(line=node.lineno, close=(node.end_lineno - 1, char(node.end_lineno, node.end_col_offset) - 1))
        for kw in node.keywords:
            v = kw.value
            if kw.arg and v.end_lineno is not None and v.end_col_offset is not None:
                call.keywords[kw.arg] = (v.lineno - 1, char(v.lineno, v.col_offset), v.end_lineno - 1,
                                         char(v.end_lineno, v.end_col_offset))
        out.append(call)
    return sorted(out, key=lambda c: c.line)


class LaunchCandidate:
    """Set `option` to `value` at one launch call; proven on `variant`. `group`: alternatives of which only the first
    that works is offered (num_warps 8, then 16)."""

    def __init__(self, label: str, call: LaunchCall, option: str, value: int, variant: SpecVariant, spec_index: int):
        self.label, self.call, self.option, self.value, self.variant = label, call, option, value, variant
        self.spec_index = spec_index  # position in the old report's compiled specs of the spec it is proven on
        self.group = f"launch:{option}"
        self.values: dict[str, str] = {}
        self.edits: list[types.TextEdit] = []
        self.new_text = ""
        self.shift = 0

    def apply(self, text: str) -> tuple[list[types.TextEdit], str, int]:
        span = self.call.keywords.get(self.option)
        if span is not None:
            rng = types.Range(types.Position(span[0], span[1]), types.Position(span[2], span[3]))
            edit = types.TextEdit(range=rng, new_text=str(self.value))
        else:
            at = types.Position(*self.call.close)
            edit = types.TextEdit(range=types.Range(at, at), new_text=f", {self.option}={self.value}")
        return [edit], _apply(text, [edit]), 0


def _call_for(spec_origin: str, calls: list[LaunchCall]) -> LaunchCall | None:
    """The call that set the option (a literal launch site of this file), else the file's only launch of the kernel
    when the option was never set there (a captured or default value comes from that call)."""
    m = _LAUNCH_ORIGIN.match(spec_origin or "")
    if m:
        return next((c for c in calls if c.line == int(m.group("line"))), None)
    return calls[0] if len(calls) == 1 else None


def candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[LaunchCandidate]:
    calls = launch_calls(text, kr.kernel.func_name or kr.name)
    if not calls:
        return
    held = [cs for cs in holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)[:1]
    if not held:
        return
    cs: CompiledSpec = held[0]
    spec = cs.spec
    index = kr.compiled.index(cs)
    if f.code == "SASS001":
        option, now = "num_warps", int(spec.options.get("num_warps", 4))
        values = [w for w in (now * 2, now * 4) if w <= MAX_WARPS]
    elif f.code in ("RES001", "RES002") and f.data.get("limiter") != "registers":
        option, now = "num_stages", int(spec.options.get("num_stages", 3))
        values = [s for s in (now - 1, now - 2) if s >= 1]
    else:
        return
    origin = spec.origins.get(option, "")
    if origin.startswith(("hint", "autotune")) or "config" in spec.label:
        return  # set in a hint or a config: those fixes edit it where it is
    call = _call_for(origin, calls)
    if call is None:
        return
    for value in values:
        variant = SpecVariant(kernel=kr.name, spec_key=spec.key(), options=((option, value),))
        yield LaunchCandidate(f"Use {option}={value} at the launch on line {call.line}", call, option, value,
                              variant, index)


def outcome(old: KernelReport, new: KernelReport, f: Finding, cand: LaunchCandidate) -> tuple[str, bool] | None:
    """(what the re-compile of the one changed spec showed, whether it traded something away), or None when the
    finding is still there or the spec no longer compiles."""
    after = compiled_specs(new)
    if len(after) != 1 or any(g.code == "SRC001" for g in new.findings):
        return None
    before = old.compiled[cand.spec_index]
    if any(g.code == f.code for g in after[0].findings):
        return None
    said = f"removes {f.code}"
    shown = deltas(f.code, before.metrics, after[0].metrics)
    if shown:
        said += f" ({shown})"
    had = {(g.code, g.line) for g in before.findings}
    worse = sorted({(g.code, g.line) for g in after[0].findings
                    if g.severity in ("warning", "error") and (g.code, g.line) not in had})
    if worse:
        said += "; but adds " + ", ".join(f"{c} on line {ln}" for c, ln in worse[:3])
    return said + f" [proven on {before.spec.label or 'the spec'}]", bool(worse)




def time_on_gpu(path: str, root: str, kr: KernelReport, cand: LaunchCandidate, timeout: float = 120.0
                ) -> tuple[float, float, str] | None:
    """On a machine with a GPU: the captured launch of the spec the fix is proven on, replayed and timed as it is and
    with the fix's one change (`tritonlens bench`'s replay). (before µs, after µs, GPU name), or None when the spec
    came with no replayable capture or a replay failed."""
    from ..gpu.bench import Job, local_gpu, run_on_gpu
    from ..frontend.captures import identity, load_captures

    spec = kr.compiled[cand.spec_index].spec
    if not spec.capture_id:
        return None
    caps, _ = load_captures(root, path)
    cap = next((c for c in caps if identity(c) == spec.capture_id and c.get("launch")), None)
    if cap is None:
        return None
    changed = dict(cap, options={**(cap.get("options") or {}), cand.option: cand.value})
    results = run_on_gpu([Job(path, kr.name, cap, "as launched"), Job(path, kr.name, changed, cand.label)], root,
                         timeout)
    if len(results) != 2 or not all(r.measured for r in results):
        return None
    return results[0].time_us, results[1].time_us, str(local_gpu().get("name") or "the GPU")
