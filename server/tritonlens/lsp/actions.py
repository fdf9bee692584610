"""Quick fixes in the editor: the code actions of a diagnostic, answered within a bound while their re-compiles go on
in the background, resolved (or applied with `tritonlens.applyFix`) once proven. The search itself — candidates,
proofs, titles, edits — is `fixes/`, without a protocol; this module turns its `Fix`es into code actions."""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..fixes.edit import Edit
from ..fixes.hints import finding_at, fixable
from ..fixes.search import Fix, Search
from ..model import Finding, KernelReport
from .diagnostics import SOURCE
from .host import in_daemon_thread
from ..pipeline import find_workspace_root
from .protocol import allow
from pygls.uris import from_fs_path

if TYPE_CHECKING:
    from .docstate import DocState
    from .host import Host

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the search, in the background
# A codeAction request is answered within this many seconds; its re-compiles go on after it (the environment
# variable shortens it in tests, or lengthens it for clients that cannot resolve a fix later).
FIX_WAIT_S = float(os.environ.get("TRITONLENS_FIX_WAIT_S", "4"))
RESOLVE_WAIT_S = 180.0  # codeAction/resolve of a fix still being checked: the user picked it and waits
_FIX_DATA = "tritonlens_fix"
APPLY_FIX = "tritonlens.applyFix"  # the same, for clients without codeAction/resolve: applied by workspace/applyEdit


SHOW_SOURCE = "tritonlens.showSource"  # a pointer's command: the line that computes a value, shown in the editor


def to_text_edit(edit: Edit) -> types.TextEdit:
    r = edit.range
    return types.TextEdit(range=types.Range(types.Position(r.start.line, r.start.character),
                                            types.Position(r.end.line, r.end.character)), new_text=edit.new_text)


def _action(uri: str, diag: types.Diagnostic, fix: Fix) -> types.CodeAction:
    """A proven fix as a code action: a pointer's is a command that shows the line setting the value. The title is
    one menu line; what it leaves out of the proof (each spec's changes) goes to the log."""
    if fix.detail:
        log.info("quick fix %r: %s", fix.title, fix.detail)
    if fix.pointer:
        command = types.Command(title=fix.title, command=SHOW_SOURCE, arguments=list(fix.show)) if fix.show else None
        return types.CodeAction(title=fix.title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                                command=command)
    return types.CodeAction(title=fix.title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                            is_preferred=fix.preferred,
                            edit=types.WorkspaceEdit(changes={uri: [to_text_edit(e) for e in fix.edits]}))


class FixSearch:
    """The re-compiles behind one diagnostic's quick fixes, one candidate after another, in the background.
    `answer()` says what is known at any moment: the fixes proven so far and, while candidates are still being
    re-compiled, each of those as an unverified placeholder that `codeAction/resolve` turns into the proven fix (or
    declines) once its re-compile is done. Nothing is offered with an edit before its re-compile proved it."""

    def __init__(self, ident: int, st: "DocState", kr: KernelReport, finding: Finding, diag: types.Diagnostic,
                 text: str) -> None:
        self.ident, self.st, self.kr, self.finding, self.diag, self.text = ident, st, kr, finding, diag, text
        self.search = Search(kr, finding, text, str(diag.code), find_workspace_root(st.path))
        self.search.on_decide = lambda i: self.decided.set()
        self.cands, self.limit = self.search.cands, self.search.limit
        self._actions: dict[int, types.CodeAction] = {}
        self.decided = asyncio.Event()  # set (and cleared) at each verdict
        self.partial = False  # an answer went out while candidates were still re-compiling
        self.task: asyncio.Task | None = None

    def _action_of(self, i: int) -> types.CodeAction | None:
        fix = self.search.verdicts.get(i)
        if fix is None:
            return None
        if i not in self._actions:
            self._actions[i] = _action(self.st.uri, self.diag, fix)
        return self._actions[i]

    @property
    def proven(self) -> list[types.CodeAction]:
        return [a for i in list(self.search.verdicts) if (a := self._action_of(i)) is not None]

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
        verdicts = self.search.verdicts
        groups = {getattr(self.cands[i], "group", None) for i, a in verdicts.items() if a is not None}
        undecided = []
        for i in range(len(self.cands)):
            group = getattr(self.cands[i], "group", None)
            if i not in verdicts and (group is None or group not in groups):
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
            while i not in self.search.verdicts and not self.done:
                self.decided.clear()
                await self.decided.wait()
        try:
            await asyncio.wait_for(decided(), timeout)
        except asyncio.TimeoutError:
            return None
        return self._action_of(i)

    async def _run(self, ls: "Host") -> None:
        st, search = self.st, self.search
        try:
            for i in search.pending():
                said: list[str] = []  # logged here, on the event loop
                fix = await in_daemon_thread(search.attempt, ls.checker, ls.settings, st.path, i, f"{st.uri}#fix",
                                             None, said.append)
                for line in said:
                    ls.log(line)
                search.decide(i, fix)
        except Exception as exc:  # noqa: BLE001 — no fix is better than a dead server
            ls.log(f"quick fixes for {self.diag.code} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
        finally:
            search.finish()
            self.decided.set()
        if self.partial and st.group is None and st.seen_text == self.text:
            ls.scheduler.publish(st, st.version)  # the same diagnostics again: clients ask for code actions anew


# ---------------------------------------------------------------- the handlers
def _target_of(kr: KernelReport, diag: types.Diagnostic) -> Finding | None:
    data = diag.data if isinstance(diag.data, dict) else {}
    return finding_at(kr, data, str(diag.code or ""))


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
        diags = [d for d in params.context.diagnostics if d.source == SOURCE and fixable(str(d.code or ""))]
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
