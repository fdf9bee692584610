"""When and what to compile: per document, latest request wins, only changed kernels, results as they finish.

`check_file` runs in a thread (it waits on the worker processes); its per-kernel callback runs in a pool thread and
hops to the event loop with `call_soon_threadsafe` before touching any state or the transport. Each compile of a
document has a generation number: a newer save bumps it, cancels the older compile's jobs (`service.cancel`) and
anything the older compile still delivers is dropped.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from typing import TYPE_CHECKING, Any, Callable

from lsprotocol import types

from ..model import KernelReport
from .docstate import DocState, kernel_key
from .host import in_daemon_thread

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.5


class CompileScheduler:
    debounce_s = DEBOUNCE_S  # didChange → compile, with compileOn: change

    def __init__(self, server: "Host") -> None:
        self.server = server
        self.docs: dict[str, DocState] = {}
        self.listeners: list[Callable[[DocState], None]] = []  # called after each publish (tests, watchers)
        self._auto_started: set[str] = set()  # the runs of launch code started (autocapture's cache keys)
        self._auto_lock = threading.Lock()  # one automatic capture at a time: each is a process importing torch

    # ------------------------------------------------------------------ requests
    def state(self, uri: str) -> DocState | None:
        return self.docs.get(uri)

    def schedule(self, uri: str, delay: float = 0.0, full: bool = False) -> None:
        """Compile `uri` (its current buffer text) after `delay` seconds; `full` forgets what is known."""
        doc = self.server.workspace.get_text_document(uri)
        st = self.docs.get(uri)
        if st is None:
            st = self.docs[uri] = DocState(uri, os.path.abspath(doc.path))
        if full:
            st.keys.clear()
        if st.debounce is not None:
            st.debounce.cancel()
            st.debounce = None
        loop = asyncio.get_running_loop()
        if delay > 0:
            st.debounce = loop.call_later(delay, self._start, st)
        else:
            self._start(st)

    def schedule_all(self, full: bool = True, only: Callable[[DocState], bool] | None = None) -> None:
        for uri, st in list(self.docs.items()):
            if only is None or only(st):
                self.schedule(uri, full=full)

    def forget(self, uri: str) -> None:
        st = self.docs.pop(uri, None)
        if st is None:
            return
        st.generation += 1
        st.partial.clear()
        if st.debounce is not None:
            st.debounce.cancel()
        self._cancel_group(st)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def cancel_all(self) -> None:
        """Stop every compile now (shutdown): queued jobs never start and running workers are killed at once, so
        the process can exit without waiting for a compile (or a module that sleeps) to finish."""
        checker = self.server.running_checker
        for st in self.docs.values():
            st.generation += 1
            st.partial.clear()
            if st.debounce is not None:
                st.debounce.cancel()
                st.debounce = None
            if checker is not None:
                for group in {st.group, f"{st.uri}#fix"} - {None}:
                    checker.service.cancel(group, kill_after=0)

    def run_in_thread(self, fn: Callable[[], Any]) -> None:
        asyncio.get_running_loop().run_in_executor(None, fn)

    @property
    def busy(self) -> bool:
        return any(st.group is not None for st in self.docs.values())

    # ------------------------------------------------------------------ one compile
    def _cancel_group(self, st: DocState) -> None:
        if st.group is not None and self.server.running_checker is not None:
            group = st.group
            self.run_in_thread(lambda: self.server.checker.service.cancel(group))

    def _start(self, st: DocState) -> None:
        st.debounce = None
        st.generation += 1
        st.partial.clear()
        self._cancel_group(st)
        st.task = asyncio.ensure_future(self._run(st, st.generation))

    async def _run(self, st: DocState, gen: int) -> None:
        from .status import send_status

        group = f"{st.uri}@{gen}"
        st.group = group
        send_status(self.server, "compiling", f"compiling {os.path.basename(st.path)}")
        progress = _Progress(self.server)
        try:
            if (problem := await self.server.environment.problem()) is not None:
                self._blocked(st, gen, problem)
                return
            if gen != st.generation:  # closed (or saved again) meanwhile: a closed document reads from disk, or fails
                return
            st.blocked = None
            await self._compile(st, gen, group, progress)
            st.crashed = None
            self._refresh_lenses()
        except asyncio.CancelledError:  # the event loop is closing (the client went away): stop the compile too
            if self.server.running_checker is not None:
                self.server.running_checker.service.cancel(group, kill_after=0)
            raise
        except Exception as exc:  # noqa: BLE001 — a bug must cost one compile, not the server
            log.exception("compile of %s failed", st.uri)
            if gen == st.generation:
                st.crashed = f"tritonlens internal error while checking this file: {type(exc).__name__}: {exc}"
                self.server.log(st.crashed, types.MessageType.Error)
                self.publish(st)
        finally:
            progress.end()
            if st.group == group:
                st.group = None
            if not self.busy:
                send_status(self.server, "idle")

    def _blocked(self, st: DocState, gen: int, problem: str) -> None:
        """Nothing can compile here: one diagnostic for the file, not a compile error per kernel."""
        if gen != st.generation:
            return
        st.kernels.clear()
        st.keys.clear()
        st.file_findings = []
        st.blocked = problem
        self.publish(st, self.server.workspace.get_text_document(st.uri).version)

    async def _compile(self, st: DocState, gen: int, group: str, progress: "_Progress") -> None:
        from ..pipeline import is_device_helper, find_workspace_root

        server = self.server
        doc = server.workspace.get_text_document(st.uri)
        text, version = doc.source, doc.version
        root = find_workspace_root(st.path)
        found = await asyncio.to_thread(server.checker.discover, st.path, text, root)
        if gen != st.generation:
            return
        infos = {k.key: k for k in found.kernels}
        st.seen_text, st.seen_infos = text, infos
        changed = {n for n, k in infos.items() if st.keys.get(n) != kernel_key(k)}
        to_compile = [n for n in changed if not is_device_helper(infos[n], found.kernels, text)]
        checker = server.checker
        loop = asyncio.get_running_loop()
        done: list[str] = []

        def on_kernel_loop(kr: KernelReport) -> None:
            if gen != st.generation:
                return
            key = kr.kernel.key
            st.kernels[key] = kr
            st.partial.pop(key, None)
            st.infos[key] = kr.kernel
            if not _transient(kr):
                st.keys[key] = kernel_key(kr.kernel)
            done.append(key)
            self.publish(st, version)
            left = [n for n in to_compile if n not in done]
            if left:
                progress.report(f"Compiling {infos[left[0]].display_name} ({len(done) + 1}/{len(to_compile)})",
                                100 * len(done) // len(to_compile))

        def on_kernel(kr: KernelReport) -> None:  # a pool thread
            loop.call_soon_threadsafe(on_kernel_loop, kr)

        def on_partial_loop(kr: KernelReport) -> None:
            # The kernel's first compiled spec while the others compile: its findings now, the full report later.
            key = kr.kernel.key
            if gen != st.generation or key in done:
                return
            st.partial[key] = kr
            self.publish(st, version)

        def on_partial(kr: KernelReport) -> None:  # a pool thread
            loop.call_soon_threadsafe(on_partial_loop, kr)

        report = None
        if to_compile:
            await progress.begin(f"Compiling {infos[to_compile[0]].display_name} (1/{len(to_compile)})")
            report = await in_daemon_thread(checker.check_file, st.path, text, workspace_root=root,
                                             on_kernel=on_kernel, group=group,
                                             kernels={infos[k].name for k in to_compile}, on_partial=on_partial,
                                             auto="cached")
            await asyncio.sleep(0)  # let the queued per-kernel callbacks run first
        if gen != st.generation:
            return
        st.partial.clear()
        for name in changed:
            if name not in done:  # a helper, or a kernel with no report this time
                st.kernels.pop(name, None)
                st.keys[name] = kernel_key(infos[name])
        for name in list(st.kernels):
            if name not in infos:
                del st.kernels[name]
        for name in list(st.keys):
            if name not in infos:
                del st.keys[name]
        st.infos = dict(infos)
        st.text = text
        st.version = version
        st.file_findings = list(found.errors)
        if report is not None:
            for problem in report.problems:
                server.log(problem, types.MessageType.Warning)
            st.file_findings += [f for f in report.findings if f.code == "SRC008"]  # the rest: found.errors
        self.publish(st, version)
        if report is not None and report.wants_auto_capture:
            self._auto_capture(st, root, report.wants_auto_capture)

    def _auto_capture(self, st: DocState, root: str, key: str) -> None:
        """Run the file's launch code in the background (gpu/autocapture.py, bounded and sandboxed), once per content
        of the files it runs (`key`), and compile the document again when its launches are in: the first diagnostics
        come from what the file says, the truer ones as soon as they are ready."""
        if key in self._auto_started:
            return
        self._auto_started.add(key)
        checker = self.server.checker
        loop = asyncio.get_running_loop()
        lock = self._auto_lock

        def run() -> None:  # a daemon thread: a server that exits does not wait for a test (the run dies with it)
            with lock:
                try:
                    result = checker.auto_capture(st.path, root)
                except Exception as exc:  # noqa: BLE001 — a source of specs, never the editor's failure
                    log.error("automatic capture of %s failed: %s", st.path, exc)
                    return
            loop.call_soon_threadsafe(done, result)

        def done(result) -> None:
            if self.docs.get(st.uri) is not st:
                return
            what = f"{len(result.captures)} compile(s)" + (f"; {result.outcome}: {result.message}"
                                                          if result.failed else "")
            self.server.log(f"launch code of {os.path.basename(st.path)} ran without a GPU in {result.seconds:.1f} s "
                            f"({what}); re-checking")
            self.schedule(st.uri, full=True)

        threading.Thread(target=run, daemon=True, name="tritonlens-autocapture").start()

    # ------------------------------------------------------------------ output
    def _refresh_lenses(self) -> None:
        """The lens above a kernel says what its last compile gave; a client asks for lenses when the text changes,
        before that compile ended, so it is asked again (LSP 3.16 `workspace/codeLens/refresh`)."""
        caps = self.server.client_capabilities
        if caps and caps.workspace and caps.workspace.code_lens and caps.workspace.code_lens.refresh_support:
            answer = self.server.workspace_code_lens_refresh(None)
            # A client that declares the capability but answers with an error costs nothing: retrieve it.
            answer.add_done_callback(lambda f: f.cancelled() or f.exception())

    def publish(self, st: DocState, version: int | None = None) -> None:
        from .diagnostics import diagnostics_for

        diags = diagnostics_for(st)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=st.uri, diagnostics=diags, version=version))
        for listener in self.listeners:
            listener(st)


def _transient(kr: KernelReport) -> bool:
    return any(cs.artifacts is None or (cs.artifacts.error is not None and cs.artifacts.error.ours)
               for cs in kr.compiled)


class _Progress:
    """`$/progress` for one compile, when the client supports server-initiated progress."""

    def __init__(self, server: "Host") -> None:
        self.server = server
        self.token: str | None = None

    async def begin(self, message: str) -> None:
        caps = self.server.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return
        token = f"tritonlens-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), 5)
        except Exception:  # noqa: BLE001 — a client that refuses progress still gets diagnostics
            return
        self.token = token
        self.server.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title="tritonlens", message=message, percentage=0, cancellable=False))

    def report(self, message: str, percentage: int) -> None:
        if self.token is not None:
            self.server.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage))

    def end(self) -> None:
        if self.token is not None:
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message="done"))
            self.server.work_done_progress.tokens.pop(self.token, None)
            self.token = None
