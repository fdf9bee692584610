"""Quick fixes, keyed by rule code. A fix changes the program where the value is set — the launch call
(`fix_launch`), a literal autotune config (`fix_configs`) — or, where the value is only tritonlens's assumption, the
hint comment that states it ("Tell tritonlens: …": it changes no code, and is never the preferred fix). Each candidate
is re-compiled — a launch edit on exactly the spec the finding came from with the one value changed — and offered
only when that shows it helps, its title saying what it showed ("Use num_warps=8 at the launch on line 40 — removes
SASS001 (296 B spilled → 0; registers 255 → 184)"); one that adds another finding says so and is not preferred."""
from __future__ import annotations

import asyncio
import itertools
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from lsprotocol import types

from ..frontend.value_sources import whole_row_blocks
from ..model import Finding, KernelInfo, KernelReport
from . import fix_configs, fix_launch, fix_tail
from .diagnostics import SOURCE
from .host import in_daemon_thread
from ..report.cost import fmt_bytes
from ..report.irviews import SpecView, compiled_specs
from ..pipeline import find_workspace_root
from .protocol import allow
from pygls.uris import from_fs_path

if TYPE_CHECKING:
    from .docstate import DocState
    from .host import Host

MAX_FIXES_PER_DIAGNOSTIC = 2
TELL = "Tell tritonlens: "  # the title of a fix that edits only a hint: what tritonlens assumes, not the program
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
    specs = [cs for cs in fix_configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
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
    specs = [cs for cs in fix_configs.holding(kr, f) if cs in compiled_specs(kr)] or compiled_specs(kr)
    if not specs:
        return
    spec = specs[0].spec
    stages = spec.options.get("num_stages")
    if isinstance(stages, int) and stages > 1 and f.data.get("limiter") != "registers":
        yield Candidate(f"{TELL}the launch uses num_stages={stages - 1}", {"num_stages": str(stages - 1)})
    yield from _halved_blocks(kr, spec, text)


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
        changed, worse = fix_configs.metric_changes(_metrics(old, at), _metrics(new, at), f.code)
        said = f"removes {f.code}" + (f" ({'; '.join(changed)})" if changed else "") + \
            (f"; but {', '.join(worse[:4])}" if worse else "")
    return said


# ---------------------------------------------------------------- the search, in the background
# A codeAction request is answered within this many seconds; its re-compiles go on after it (the environment
# variable shortens it in tests, or lengthens it for clients that cannot resolve a fix later).
FIX_WAIT_S = float(os.environ.get("TRITONLENS_FIX_WAIT_S", "4"))
RESOLVE_WAIT_S = 180.0  # codeAction/resolve of a fix still being checked: the user picked it and waits
_FIX_DATA = "tritonlens_fix"
APPLY_FIX = "tritonlens.applyFix"  # the same, for clients without codeAction/resolve: applied by workspace/applyEdit


def _recompile(checker, path: str, text: str, name: str, group: str | None, variant=None):
    from ..compiler.pool import urgent

    with urgent():  # ahead of the save compiles of the file's other kernels
        return checker.check_file(path, text, kernels={name}, group=group, variant=variant)


def fix_candidates(kr: KernelReport, f: Finding, text: str, code: str, root: str | None = None
                   ) -> tuple[list[Any], int]:
    """The candidates for one finding, in the order they are tried, and how many proven ones are offered. Program
    edits first — where the value is set (launch, constant, heuristics; a pointer and a conditional for a value
    computed at run time), then the configs — the hint edits after them."""
    from_configs = fix_configs.candidates(kr, f, text) if code in CONFIG_CODES else None
    launch = list(fix_launch.candidates(kr, f, text, root)) if code in CONFIG_CODES else []
    # A hint would replace the launch's spec rather than change the launch: none where the launch can be edited.
    rest = from_configs if from_configs is not None else [] if launch else CANDIDATES[code](kr, f, text)
    limit = (MAX_CONFIG_FIXES if from_configs is not None else MAX_FIXES_PER_DIAGNOSTIC) + \
        len({c.group for c in launch})
    # A kernel edit (a mask-free path for full blocks) after the hint edits, counted beside them.
    tail = list(fix_tail.candidates(kr, f, text)) if code in fix_tail.CODES else []
    return launch + list(rest) + tail, limit + len(tail)


def prove(checker, settings, path: str, text: str, kr: KernelReport, f: Finding, cand: Any,
          group: str | None = None) -> tuple[str | None, bool]:
    """Apply one candidate to a copy of `text` and re-compile what it changes: (what that showed, or None when it
    did not help; whether it traded something away). A launch, constant or heuristics edit leaves the kernel as it
    is: its proof is each spec it changes with the value it gives it (fix_launch.prove)."""
    if getattr(cand, "group", None) is None:
        cand.edits, cand.new_text, cand.shift = apply_hint(text, kr.kernel, cand.values)
    else:
        cand.edits, cand.new_text, cand.shift = cand.apply(text)
    if isinstance(cand, fix_launch.LaunchCandidate):
        shown = fix_launch.prove(checker, path, text, kr, f, cand, group)
        return shown if shown is not None else (None, False)
    report = _recompile(checker, path, cand.new_text, kr.name, group)
    new = next((k for k in report.kernels if k.name == kr.name and k.kernel.branch == kr.kernel.branch), None)
    if new is None:
        return None, False
    if isinstance(cand, fix_tail.TailCandidate):  # proven on the edited kernel's own PTX
        return cand.outcome(kr, new, f, settings) or (None, False)
    if getattr(cand, "group", None) is None:
        return outcome(kr, new, f, cand, settings), False
    return fix_configs.outcome(kr, new, f, cand), bool(getattr(cand, "traded", False))


SHOW_SOURCE = "tritonlens.showSource"  # a pointer's command: the line that computes a value, shown in the editor


def _action(uri: str, diag: types.Diagnostic, cand: Any, said: str, traded: bool,
            proven: list[types.CodeAction]) -> types.CodeAction:
    """The proven fix as a code action: a program edit is preferred unless it trades something away (or another
    is preferred already); a hint edit never is; a pointer has no edit, only the place to look at."""
    title = f"{cand.label} — {said}"
    if isinstance(cand, fix_launch.LaunchCandidate) and cand.is_pointer:
        src = cand.source
        at = src.helper_at if src is not None and src.helper_at else (src.path, src.line) if src else None
        command = types.Command(title=title, command=SHOW_SOURCE, arguments=[at[0], at[1]]) if at else None
        return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag], command=command)
    program = getattr(cand, "group", None) is not None  # a launch or config edit; a hint edit changes no code
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                            is_preferred=program and not traded and not any(a.is_preferred for a in proven),
                            edit=types.WorkspaceEdit(changes={uri: cand.edits}))


class FixSearch:
    """The re-compiles behind one diagnostic's quick fixes, one candidate after another, in the background.
    `answer()` says what is known at any moment: the fixes proven so far and, while candidates are still being
    re-compiled, each of those as an unverified placeholder that `codeAction/resolve` turns into the proven fix (or
    declines) once its re-compile is done. Nothing is offered with an edit before its re-compile proved it."""

    def __init__(self, ident: int, st: "DocState", kr: KernelReport, finding: Finding, diag: types.Diagnostic,
                 text: str) -> None:
        self.ident, self.st, self.kr, self.finding, self.diag, self.text = ident, st, kr, finding, diag, text
        self.cands, self.limit = fix_candidates(kr, finding, text, str(diag.code), find_workspace_root(st.path))
        self.verdicts: dict[int, types.CodeAction | None] = {}
        self.proven: list[types.CodeAction] = []
        self.decided = asyncio.Event()  # set (and cleared) at each verdict
        self.partial = False  # an answer went out while candidates were still re-compiling
        self.task: asyncio.Task | None = None

    def start(self, ls: "Host") -> "FixSearch":
        self.task = asyncio.ensure_future(self._run(ls))
        return self

    @property
    def done(self) -> bool:
        return self.task is not None and self.task.done()

    def answer(self, resolvable: bool) -> list[types.CodeAction | types.Command]:
        out = list(self.proven)
        if self.done:
            return out
        # One placeholder per kind of edit (config fixes: the first of "num_stages 5 → 4, → 3, → 2" that works).
        groups = {getattr(self.cands[i], "group", None) for i, a in self.verdicts.items() if a is not None}
        undecided = []
        for i in range(len(self.cands)):
            group = getattr(self.cands[i], "group", None)
            if i not in self.verdicts and (group is None or group not in groups):
                undecided.append(i)
                groups.add(group)
        for i in undecided[:max(0, self.limit - len(out))]:
            self.partial = True
            title = f"{self.cands[i].label} — not verified yet (re-compiling)"
            ref = {_FIX_DATA: [self.ident, i]}
            if resolvable:
                out.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[self.diag],
                                            data=ref))
            else:  # a bare Command, which every client can run (tritonlens.applyFix then sends the proven edit)
                out.append(types.Command(title=title, command=APPLY_FIX, arguments=[ref]))
        return out

    async def verdict(self, i: int, timeout: float) -> types.CodeAction | None:
        """The proven fix of candidate `i` once its re-compile is done; None when it did not help (or no verdict in
        `timeout` seconds)."""
        async def decided() -> None:
            while i not in self.verdicts and not self.done:
                self.decided.clear()
                await self.decided.wait()
        try:
            await asyncio.wait_for(decided(), timeout)
        except asyncio.TimeoutError:
            return None
        return self.verdicts.get(i)

    def _decide(self, i: int, action: types.CodeAction | None) -> None:
        self.verdicts[i] = action
        if action is not None:
            self.proven.append(action)
        self.decided.set()

    async def _run(self, ls: "Host") -> None:

        st, kr, f = self.st, self.kr, self.finding
        groups: set[str] = set()  # config edit groups already answered by a proven fix
        try:
            for i, cand in enumerate(self.cands):
                group = getattr(cand, "group", None)
                if len(self.proven) >= self.limit:
                    break
                if group in groups:
                    self._decide(i, None)
                    continue
                said, traded = await in_daemon_thread(prove, ls.checker, ls.settings, st.path, self.text, kr, f, cand,
                                                      f"{st.uri}#fix")
                if said is not None and isinstance(cand, fix_launch.LaunchCandidate) and not cand.is_pointer \
                        and _gpu_here():
                    said = await _timed(ls, st, kr, cand, said)
                if said is None:
                    self._decide(i, None)
                    continue
                if group is not None and not getattr(cand, "partial", False):  # a partial one lets the next try
                    groups.add(group)
                self._decide(i, _action(st.uri, self.diag, cand, said, traded, self.proven))
        except Exception as exc:  # noqa: BLE001 — no fix is better than a dead server
            ls.log(f"quick fixes for {self.diag.code} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
        finally:
            for i in range(len(self.cands)):
                self.verdicts.setdefault(i, None)
            self.decided.set()
        if self.partial and st.group is None and st.seen_text == self.text:
            ls.scheduler.publish(st, st.version)  # the same diagnostics again: clients ask for code actions anew


def _gpu_here() -> bool:
    from ..device.targets import has_local_gpu

    return has_local_gpu()


async def _timed(ls: "Host", st: "DocState", kr: KernelReport, cand: Any, said: str) -> str | None:
    """A launch fix on a GPU machine: its captured launch timed before and after; a fix measured slower is withheld
    (None), one measured faster says by how much."""
    timing = await in_daemon_thread(fix_launch.time_on_gpu, st.path, find_workspace_root(st.path), kr, cand)
    if timing is None:
        return said
    before, after, gpu = timing
    if after >= before:
        ls.log(f"{cand.label}: withheld, measured slower on {gpu} ({before:.1f} → {after:.1f} µs)")
        return None
    return f"{before:.1f} → {after:.1f} µs on {gpu} (captured launch); {said}"


# ---------------------------------------------------------------- the handlers
def _target_of(kr: KernelReport, diag: types.Diagnostic) -> Finding | None:
    data = diag.data if isinstance(diag.data, dict) else {}
    return _target(kr, data, str(diag.code or ""))


async def _current_report(st: "DocState", diag: types.Diagnostic, text: str, deadline: float) -> KernelReport | None:
    """The report of the diagnostic's kernel that holds for `text`, waiting (until `deadline`) while the compile
    that will make it is in flight."""
    data = diag.data if isinstance(diag.data, dict) else {}
    loop = asyncio.get_running_loop()
    while True:
        kr = st.current(data.get("kernel") or "", data.get("line"), text)
        in_flight = st.debounce is not None or (st.task is not None and not st.task.done())
        if kr is not None or not in_flight or loop.time() >= deadline:
            return kr
        await asyncio.sleep(0.05)


def _resolvable(ls: "Host") -> bool:
    """Whether the client fills a code action's edit with codeAction/resolve (VS Code, Neovim ≥ 0.6 do)."""
    caps = ls.client_capabilities
    action = caps and caps.text_document and caps.text_document.code_action
    support = action and action.resolve_support
    return bool(support and "edit" in (support.properties or []) and action.data_support)


class Fixes:
    """The fix searches of open documents, by (uri, text, diagnostic), and the handlers that answer from them."""

    def __init__(self) -> None:
        self.searches: dict[tuple, FixSearch] = {}
        self.by_ident: dict[int, FixSearch] = {}
        self._ids = itertools.count(1)

    def _drop_stale(self, ls: "Host", uri: str, text: str) -> None:
        """The buffer moved on: its old searches' line numbers no longer hold, and their re-compiles are waste."""
        stale = [k for k, s in self.searches.items() if k[0] == uri and s.text != text]
        for key in stale:
            search = self.searches.pop(key)
            self.by_ident.pop(search.ident, None)
            if search.task is not None:
                search.task.cancel()
        if stale and ls.running_checker is not None:
            service = ls.checker.service
            ls.scheduler.run_in_thread(lambda: service.cancel(f"{uri}#fix"))

    def search(self, ls: "Host", st: "DocState", kr: KernelReport, diag: types.Diagnostic,
               text: str) -> FixSearch | None:
        f = _target_of(kr, diag)
        if f is None:
            return None
        key = (st.uri, text, diag.code, diag.range.start.line, diag.range.start.character)
        search = self.searches.get(key)
        if search is None or search.kr is not kr:  # new, or the kernel was compiled again (settings, captures)
            search = FixSearch(next(self._ids), st, kr, f, diag, text).start(ls)
            self.searches[key] = search
            self.by_ident[search.ident] = search
            while len(self.searches) > 256:
                old = self.searches.pop(next(iter(self.searches)))
                self.by_ident.pop(old.ident, None)
        return search

    async def code_action(self, ls: "Host", params: types.CodeActionParams) -> list[Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIX_WAIT_S
        uri = params.text_document.uri
        st = ls.scheduler.state(uri)
        diags = [d for d in params.context.diagnostics if d.source == SOURCE and str(d.code or "") in CANDIDATES]
        if st is None or not diags:
            return []
        text = ls.workspace.get_text_document(uri).source
        self._drop_stale(ls, uri, text)
        searches = []
        for diag in diags:
            kr = await _current_report(st, diag, text, deadline)
            search = self.search(ls, st, kr, diag, text) if kr is not None else None
            if search is not None:
                searches.append(search)
        running = [s.task for s in searches if not s.done]
        if running:
            await asyncio.wait(running, timeout=max(0.0, deadline - loop.time()))
        resolvable = _resolvable(ls)
        return [a for s in searches for a in s.answer(resolvable)]

    async def _proven(self, ls: "Host", ref: Any) -> types.CodeAction | None:
        """The proven fix behind a placeholder's reference, once its re-compile is done and if the buffer is still
        the text it was made for; otherwise a message says why nothing changes."""
        search = self.by_ident.get(ref[0]) if isinstance(ref, list) and len(ref) == 2 else None
        if search is None or not isinstance(ref[1], int) or not 0 <= ref[1] < len(search.cands):
            return None
        proven = await search.verdict(ref[1], RESOLVE_WAIT_S)
        if proven is not None and ls.workspace.get_text_document(search.st.uri).source == search.text:
            return proven
        why = (f"the re-compile did not remove {search.diag.code}" if proven is None
               else "the file changed while it re-compiled")
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Info, message=f"tritonlens: {search.cands[ref[1]].label} — {why}; nothing changed"))
        return None

    async def resolve(self, ls: "Host", action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        if _FIX_DATA not in data:
            return action
        return await self._proven(ls, data[_FIX_DATA]) or action

    async def apply(self, ls: "Host", args: Any) -> bool:
        ref = next((a[_FIX_DATA] for a in args if isinstance(a, dict) and _FIX_DATA in a), None)
        proven = await self._proven(ls, ref)
        if proven is not None and proven.edit is None and proven.command is not None:  # a pointer: show its place
            return await show_source(ls, proven.command.arguments or [])
        if proven is None or proven.edit is None:
            return False
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=proven.edit,
                                                                                    label=proven.title))
        return bool(result and result.applied)


async def show_source(ls: "Host", args: list) -> bool:
    """Open (path, 1-based line) in the client (window/showDocument): where a pointer's value is set."""
    if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
        return False
    at = types.Position(max(0, args[1] - 1), 0)
    result = await ls.window_show_document_async(types.ShowDocumentParams(
        uri=from_fs_path(args[0]), selection=types.Range(at, at), take_focus=True))
    return bool(result and result.success)


def register(server: "Host") -> None:
    fixes = Fixes()
    # Resolving or applying a fix the user picked waits for its re-compile (and the client's applyEdit answer).
    allow(server, types.CODE_ACTION_RESOLVE, RESOLVE_WAIT_S + 10)
    allow(server, types.WORKSPACE_EXECUTE_COMMAND, RESOLVE_WAIT_S + 30)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True))
    async def code_action(ls: "Host", params: types.CodeActionParams) -> list[Any]:
        return await fixes.code_action(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: "Host", params: types.CodeAction) -> types.CodeAction:
        return await fixes.resolve(ls, params)

    @server.command(SHOW_SOURCE)
    async def show_source_command(ls, *args: Any) -> bool:  # a pointer's place: (path, 1-based line)
        return await show_source(ls, [a for arg in args for a in (arg if isinstance(arg, list) else [arg])])

    @server.command(APPLY_FIX)
    async def apply_fix(ls, *args: Any) -> bool:  # no type-checking-only hints: see lifecycle
        return await fixes.apply(ls, [a for arg in args for a in (arg if isinstance(arg, list) else [arg])])
