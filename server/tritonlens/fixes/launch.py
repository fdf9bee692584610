"""Quick fixes that edit the program where a launch value is set (frontend/value_sources): the launch call's keyword
(`kernel[grid](..., num_warps=4)` → 8, or the keyword added where the call passes none), a module or local constant
(`BLOCK = 1024`, when only this kernel's launches read it), an entry of `@triton.heuristics` that returns a constant.
A value computed at run time (`BLOCK_SIZE, num_warps = calculate_settings(n_cols)`, a heuristics lambda of `args`) gets
no blind edit: a pointer at the line that computes it, saying what the proof showed, and a conditional
(`num_warps=16 if BLOCK_SIZE >= 32768 else num_warps`) proven on every captured spec the condition selects.

Every fix is proven by re-compiling the spec the finding came from with that one value changed (`SpecVariant`): its
other options, constexprs and divisibility untouched. Its title lists every metric that changed; one after which
another finding appears or a metric gets worse says so (the trade) and is not the preferred one. An option set in
a hint comment or an autotune config is left to the config fixes (`configs`) and the hint edits ("Tell tritonlens:
…").
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..frontend.value_sources import ValueSource, where_set, whole_row_blocks
from ..model import CompiledSpec, Finding, KernelReport, Spec, SpecVariant
from ..report.irviews import compiled_specs
from .configs import holding, metric_changes
from .edit import Edit, apply_edits, fit_argument
from ..source import split_lines

MAX_WARPS = 16
_LAUNCH_ORIGIN = re.compile(r"launch at (?P<file>[^:]+):(?P<line>\d+)$")


@dataclass
class LaunchCall:
    """One `name[grid](...)` call in the text: its line, the span of each keyword's value, where a new keyword goes."""

    line: int  # 1-based
    keywords: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # 0-based line/char spans
    close: tuple[int, int] = (0, 0)  # 0-based position of the call's `)`
    texts: dict[str, str] = field(default_factory=dict)  # each keyword's source text
    literals: dict[str, Any] = field(default_factory=dict)  # keywords passed as literals (`BACKWARD_PASS=True`)


def launch_calls(text: str, kernel_name: str) -> list[LaunchCall]:
    """The launches of `kernel_name` (`k[grid](...)`, `mod.k[grid](...)`) in `text`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = split_lines(text)

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
                call.texts[kw.arg] = ast.get_source_segment(text, v) or ""
                if isinstance(v, ast.Constant):
                    call.literals[kw.arg] = v.value
        out.append(call)
    return sorted(out, key=lambda c: c.line)


MAX_PROOFS = 8  # captured specs one conditional edit may change and still be proven spec by spec
_NOT_LAUNCH = ("hint", "autotune")  # origins of a value set where the launch cannot change it


def _changes(kr: KernelReport, f: Finding, spec: Spec, text: str) -> list[tuple[str, str, list[int]]]:
    """(name, "option" | "constant", values to try in order) that may remove `f`, one variable at a time: more warps
    for a spill (fewer where the register file caps each thread: 16 warps leave 128 registers a thread, 32 leave 64),
    fewer stages for shared memory, a halved block (never one a whole row must fit in, nor one the host computes)."""
    out: list[tuple[str, str, list[int]]] = []
    if f.code == "SASS001":
        now = int(spec.options.get("num_warps", 4))
        out.append(("num_warps", "option",
                    [w for w in (now * 2, now * 4) if w <= MAX_WARPS] + ([now // 2] if now >= 16 else [])))
    elif f.code in ("RES001", "RES002") and f.data.get("limiter") != "registers":
        now = int(spec.options.get("num_stages", 3))
        out.append(("num_stages", "option", [s for s in (now - 1, now - 2) if s >= 1]))
    whole = whole_row_blocks(text, kr.kernel.def_line)
    for name in [n for n in kr.kernel.constexpr_names if "BLOCK" in n.upper() and n not in whole][:2]:
        value = spec.constants.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 32:
            out.append((name, "constant", [value // 2]))
    return [c for c in out if c[2]]


class LaunchCandidate:
    """Set `option` (a launch option or a constexpr) to `value` where the program sets it: `where` is the place edited
    (launch, constant, heuristics) or `pointer` (no edit: the finding points at the line that computes the value and
    says what the proof showed). Proven on `proofs`, (position in the old report's compiled specs, the spec with the
    value the edited expression gives it): the finding's spec, or every captured spec a conditional selects. `group`:
    alternatives of which only the first that works is offered (num_warps 8, then 16)."""

    def __init__(self, label: str, call: LaunchCall | None, option: str, value: int, variant: SpecVariant,
                 spec_index: int, where: str = "launch", edit: Edit | None = None,
                 proofs: list[tuple[int, SpecVariant]] | None = None, source: ValueSource | None = None,
                 condition: str = ""):
        self.label, self.call, self.option, self.value, self.variant = label, call, option, value, variant
        self.spec_index = spec_index  # position in the old report's compiled specs of the spec it is proven on
        self.where, self.source, self.condition = where, source, condition
        self.proofs = proofs or [(spec_index, variant)]
        self.group = f"{where}:{option}" if where in ("pointer", "conditional") else f"launch:{option}"
        self._edit = edit
        self.why = ""  # why the proof failed, when it did
        self.partial = False  # set by the proof: the finding stays, its cost at most halved (a spill)
        self.values: dict[str, str] = {}
        self.edits: list[Edit] = []
        self.new_text = ""
        self.shift = 0

    @property
    def is_pointer(self) -> bool:
        return self.where == "pointer"

    def trades(self, worse: list[str]) -> list[str]:
        """Of what got worse on a proven spec, what this change trades away (all of it, for an edit of a value)."""
        return worse

    def apply(self, text: str) -> tuple[list[Edit], str, int]:
        if self.is_pointer:
            return [], text, 0
        if self._edit is not None:
            edit = fit_argument(text, self._edit)
            return [edit], apply_edits(text, [edit]), 0
        assert self.call is not None
        span = self.call.keywords.get(self.option)
        if span is not None:
            edit = Edit.replace(*span, str(self.value))
        else:
            edit = fit_argument(text, Edit.insert(*self.call.close, f", {self.option}={self.value}"))
        return [edit], apply_edits(text, [edit]), 0


def _call_for(spec_origin: str, calls: list[LaunchCall], spec: Spec | None = None) -> LaunchCall | None:
    """The call that set the option (a literal launch site of this file), else the file's only launch of the kernel
    when the option was never set there (a captured or default value comes from that call), else the only call whose
    literal keywords the spec has (`BACKWARD_PASS=True` tells a backward launch from the forward one)."""
    m = _LAUNCH_ORIGIN.match(spec_origin or "")
    if m:
        return next((c for c in calls if c.line == int(m.group("line"))), None)
    if len(calls) == 1:
        return calls[0]
    if spec is None:
        return None
    fits = [c for c in calls if c.literals and all(k in spec.constants and spec.constants[k] == v
                                                   and type(spec.constants[k]) is type(v)
                                                   for k, v in c.literals.items() if k not in _DEFAULTS)]
    return fits[0] if len(fits) == 1 else None


def _replace(span: tuple[int, int, int, int], new: str) -> Edit:
    return Edit.replace(*span, new)


def _variant(kr: KernelReport, spec: Spec, name: str, kind: str, value: int) -> SpecVariant:
    pair = ((name, value),)
    return SpecVariant(kernel=kr.name, spec_key=spec.key(), options=pair if kind == "option" else (),
                       constants=pair if kind == "constant" else ())


def _current(spec: Spec, name: str, kind: str) -> Any:
    return spec.options.get(name, _DEFAULTS.get(name)) if kind == "option" else spec.constants.get(name)


_DEFAULTS = {"num_warps": 4, "num_stages": 3}


def candidates(kr: KernelReport, f: Finding, text: str, root: str | None = None) -> Iterator[LaunchCandidate]:
    """Edits of the place each value is set, then (for a value computed at run time) a pointer at it and a
    conditional launch keyword proven on every captured spec it selects."""
    held = [cs for cs in holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)[:1]
    if not held:
        return
    cs: CompiledSpec = held[0]
    spec = cs.spec
    if "config" in spec.label:
        return  # an autotune config: fixes.configs edits it there
    index = kr.compiled.index(cs)
    calls = launch_calls(text, kr.kernel.func_name or kr.name)
    path = kr.kernel.path
    for name, kind, values in _changes(kr, f, spec, text):
        origin = spec.origins.get(name, "")
        if origin.startswith(_NOT_LAUNCH):
            continue  # set in a hint or a config: those fixes edit it where it is
        call = _call_for(origin, calls, spec) if calls else None
        src = where_set(path, text, kr.kernel.func_name or kr.name, kr.kernel.def_line, name,
                        call.line if call else None, root)
        if src is None:
            continue
        for value in values:
            yield from _at_source(kr, f, cs, index, call, src, name, kind, value, calls)


def _at_source(kr: KernelReport, f: Finding, cs: CompiledSpec, index: int, call: LaunchCall | None,
               src: ValueSource, name: str, kind: str, value: int, calls: list[LaunchCall] = ()
               ) -> Iterator[LaunchCandidate]:
    variant = _variant(kr, cs.spec, name, kind, value)
    if src.kind == "launch" and call is not None:
        if kind == "constant":
            return  # a literal block at the launch is usually repeated in its grid: halving one of them is wrong
        changed = _same_call(kr, cs, index, call, calls, name, kind, value)
        if kind == "option":
            # The launch's other specs change too: first the edit that changes only the specs like the finding's
            # (a larger block), proven on each of them.
            cond = _conditional(kr, f, index, name, kind, value, src, call)
            if cond is not None and len(cond.proofs) < len(changed):
                yield cond
        yield LaunchCandidate(f"Use {name}={value} at the launch on line {call.line}", call, name, value, variant,
                              index, proofs=changed[:MAX_PROOFS])
    elif src.kind == "constant" and src.span is not None and not src.shared:
        yield LaunchCandidate(f"Set {src.local} = {value} on line {src.line} (was {src.text})", call, name, value,
                              variant, index, "constant", _replace(src.span, str(value)), source=src)
    elif src.kind == "constant" and call is not None and name in call.keywords and kind == "option":
        # (a shared block constant is left alone: the launch's grid may read the same name)
        yield LaunchCandidate(f"Use {name}={value} at the launch on line {call.line} ({src.local} is read elsewhere "
                              "too)", call, name, value, variant, index, source=src)
    elif src.kind == "heuristics" and src.literal and src.span is not None:
        yield LaunchCandidate(f"Return {value} for {name} in @triton.heuristics on line {src.line} (was {src.text})",
                              call, name, value, variant, index, "heuristics", _replace(src.span, str(value)),
                              source=src)
    elif src.kind in ("heuristics", "helper", "computed") and src.span is not None and kind == "option":
        # (a block the host computes is sized to its data, `next_power_of_2(n)`: halving it is no tuning choice)
        at = f" at {src.helper_at[0].rsplit('/', 1)[-1]}:{src.helper_at[1]}" if src.helper_at else ""
        origin = f"its @triton.heuristics lambda on line {src.line} ({src.text})" if src.kind == "heuristics" else \
            f"{src.text}{at} (line {src.line})"
        yield LaunchCandidate(f"{name} comes from {origin}: {name}={value}", call, name, value, variant, index,
                              "pointer", source=src)
        cond = _conditional(kr, f, index, name, kind, value, src, call)
        if cond is not None:
            yield cond


def _same_call(kr: KernelReport, cs: CompiledSpec, index: int, call: LaunchCall, calls: list[LaunchCall], name: str,
               kind: str, value: int) -> list[tuple[int, SpecVariant]]:
    """What an edit of `call` changes: the finding's spec first, then every other compiled spec launched by that call
    whose value it changes, each with the new value (the caller proves at most MAX_PROOFS of them)."""
    out = [(index, _variant(kr, cs.spec, name, kind, value))]
    for other in compiled_specs(kr):
        if other is cs or _current(other.spec, name, kind) == value or \
                _call_for(other.spec.origins.get(name, ""), list(calls), other.spec) is not call:
            continue
        out.append((kr.compiled.index(other), _variant(kr, other.spec, name, kind, value)))
    return out


def _conditional(kr: KernelReport, f: Finding, index: int, name: str, kind: str, value: int, src: ValueSource,
                 call: LaunchCall | None) -> LaunchCandidate | None:
    """`value if K >= T else <what it was>`, with K a constexpr every compiled spec has and T its smallest value among
    the specs the finding holds in: the edit changes exactly the captured specs with K >= T, and each of those is
    proven with the value the edited expression gives it."""
    specs = compiled_specs(kr)
    held = [cs for cs in holding(kr, f) if cs in specs] or [kr.compiled[index]]
    at_launch = src.kind != "heuristics"
    span = call.keywords.get(name) if at_launch and call is not None else src.span
    # A launch option the call does not pass (Triton's default): the conditional is added to the call.
    added = span is None and at_launch and call is not None and kind == "option" and name in _DEFAULTS
    if span is None and not added:
        return None
    options = []
    for k in kr.kernel.constexpr_names:
        vals = [cs.spec.constants.get(k) for cs in specs]
        if k == name or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            continue
        if at_launch:  # the launch must pass K as a local the condition can read
            text = call.texts.get(k) if call is not None else None
            if not text or not text.isidentifier():
                continue
        else:
            text = f'args["{k}"]'
        threshold = min(cs.spec.constants[k] for cs in held)
        chosen = [cs for cs in specs if cs.spec.constants[k] >= threshold]
        extra = len([cs for cs in chosen if cs not in held])
        options.append((extra, "BLOCK" not in k.upper(), k, text, threshold, chosen))
    if not options:
        return None
    _, _, k, text, threshold, chosen = min(options, key=lambda o: o[:3])
    proofs = [(kr.compiled.index(cs), _variant(kr, cs.spec, name, kind, value)) for cs in chosen
              if _current(cs.spec, name, kind) != value]
    if not proofs or len(proofs) > MAX_PROOFS:
        return None
    was = str(_DEFAULTS[name]) if added else call.texts.get(name, "") if at_launch and call is not None else src.text
    if not was.isidentifier() and not was.isdigit():
        was = f"({was})"
    expression = f"{value} if {text} >= {threshold} else {was}"
    where = f"at the launch on line {call.line}" if at_launch and call is not None else \
        f"in @triton.heuristics on line {src.line}"
    first = next((v for i, v in proofs if i == index), proofs[0][1])
    if added:
        edit = Edit.insert(*call.close, f", {name}={expression}")
    else:
        edit = _replace(span, expression)
    return LaunchCandidate(f"Use {name}={expression} {where}", call, name, value, first, index, "conditional",
                           edit, proofs, src, condition=f"{k} >= {threshold}")


# ---------------------------------------------------------------- the proof
def prove(checker, path: str, text: str, kr: KernelReport, f: Finding, cand: LaunchCandidate,
          group: str | None = None) -> tuple[str, bool] | None:
    """Re-compile each spec the candidate changes, with the value it gives that spec (the text stays as it is: the
    edit's effect is the variant), and say what that showed (`outcome`)."""
    from ..compiler.pool import urgent

    with urgent():  # ahead of the save compiles of the file's other kernels
        plans = [(i, checker.plan_file(path, text, kernels={kr.name}, group=group, variant=v)) for i, v in cand.proofs]
    news = []
    for i, plan in plans:
        report = checker.finish(plan)
        new = next((k for k in report.kernels if k.name == kr.name and k.kernel.branch == kr.kernel.branch), None)
        if new is None:
            return None
        news.append((i, new))
    return outcome_of(kr, news, f, cand)


def outcome(old: KernelReport, new: KernelReport, f: Finding, cand: LaunchCandidate) -> tuple[str, bool] | None:
    """(what the re-compile of the one changed spec showed, whether it traded something away), or None when the
    finding is still there or the spec no longer compiles."""
    return outcome_of(old, [(cand.spec_index, new)], f, cand)


def outcome_of(old: KernelReport, news: list[tuple[int, KernelReport]], f: Finding, cand: LaunchCandidate
               ) -> tuple[str, bool] | None:
    """Over every proven spec: None when one no longer compiles or still has the finding where it had it; else the
    title's tail — what changed on each spec (every metric), what got worse or appeared (the trade), where proven."""
    held = {cs.spec.key() for cs in holding(old, f)}
    parts, worse_all = [], []
    cand.partial = False
    for i, new in news:
        after = compiled_specs(new)
        before = old.compiled[i]
        if len(after) != 1 or any(g.code == "SRC001" for g in new.findings):
            cand.why = f"{_spec_name(before, cand)} no longer compiles"
            return None
        changed, worse = metric_changes(before.metrics, after[0].metrics, f.code)
        worse = cand.trades(worse)
        if before.spec.key() in held and any(g.code == f.code for g in after[0].findings):
            if not _halves_spill(before.metrics, after[0].metrics, f.code):
                cand.why = f"{f.code} still there on {_spec_name(before, cand)}" + (f" ({'; '.join(changed)})"
                                                                                     if changed else "")
                return None
            cand.partial = True  # the spill is still there, at most half of it: offered, never preferred
        had = {(g.code, g.line) for g in before.findings}
        worse += [f"adds {c} on line {ln}" for c, ln in sorted({(g.code, g.line) for g in after[0].findings
                                                                if g.severity in ("warning", "error")
                                                                and (g.code, g.line) not in had})][:3]
        label = _spec_name(before, cand)
        parts.append((label, changed))
        worse_all += [f"{w} ({label})" if len(news) > 1 else w for w in worse]
    verb = "reduces" if cand.partial else "removes"
    if len(news) == 1:
        said = f"{verb} {f.code}" + (f" ({'; '.join(parts[0][1])})" if parts[0][1] else "")
    else:
        shown = "; ".join(f"{label}: {', '.join(ch) or 'no metric changed'}" for label, ch in parts[:3])
        more = f"; and {len(parts) - 3} more" if len(parts) > 3 else ""
        said = f"{verb} {f.code} on {len(news)} captured specs ({shown}{more})"
    if worse_all:
        said += "; but " + ", ".join(worse_all[:4])
    where = f"proven on {len(news)} specs" if len(news) > 1 else \
        f"proven on {old.compiled[news[0][0]].spec.label or 'the spec'}"
    return said + f" [{where}]", bool(worse_all) or cand.partial


def _halves_spill(m0: dict, m1: dict, code: str) -> bool:
    """A spill that a change leaves at most half as big: worth offering (a 45 KB spill at 16 warps instead of 4 left
    5.8 KB, and ran 3.9× faster on an H200), though the finding stays."""
    a, b = m0.get("spill_bytes"), m1.get("spill_bytes")
    return code == "SASS001" and bool(a) and b is not None and b <= a / 2


def _spec_name(cs: CompiledSpec, cand: LaunchCandidate) -> str:
    key = cand.condition.split(" ")[0] if cand.condition else ""
    if key and key in cs.spec.constants:
        return f"{key}={cs.spec.constants[key]}"
    return cs.spec.label or "the spec"


def time_on_gpu(path: str, root: str, kr: KernelReport, cand: LaunchCandidate, timeout: float = 120.0
                ) -> tuple[float, float, str] | None:
    """On a machine with a GPU: the captured launch of the spec the fix is proven on, replayed and timed as it is and
    with the fix's one change (`tritonlens bench`'s replay). (before µs, after µs, GPU name), or None when the spec
    came with no replayable capture or a replay failed."""
    kind = "option" if any(k == cand.option for k, _ in cand.variant.options) else "constant"
    return time_change_on_gpu(path, root, kr, cand.spec_index, {cand.option: cand.value}, kind, cand.label, timeout)


def time_change_on_gpu(path: str, root: str, kr: KernelReport, spec_index: int, change: dict[str, Any], kind: str,
                       label: str, timeout: float = 120.0) -> tuple[float, float, str] | None:
    """The captured launch of spec `spec_index` of `kr`, replayed as launched and with `change` of launch options:
    (before µs, after µs, GPU name), or None (no replayable capture, a replay failed, or a constexpr change: the
    captured grid was sized for the old block, and a grid computed from the new one is not known here)."""
    from ..gpu.bench import Job, local_gpu, run_on_gpu
    from ..frontend.captures import identity, load_captures

    spec = kr.compiled[spec_index].spec
    if not spec.capture_id or kind != "option":
        return None
    caps, _ = load_captures(root, path)
    cap = next((c for c in caps if identity(c) == spec.capture_id and c.get("launch")), None)
    if cap is None:
        return None
    changed = dict(cap, options={**(cap.get("options") or {}), **change})
    results = run_on_gpu([Job(path, kr.name, cap, "as launched"), Job(path, kr.name, changed, label)], root,
                         timeout)
    if len(results) != 2 or not all(r.measured for r in results):
        return None
    return results[0].time_us, results[1].time_us, str(local_gpu().get("name") or "the GPU")
