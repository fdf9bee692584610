"""The language server: `create_server()` builds one; `main()` runs it on stdio (`tritonlens serve`).

Handlers live in one module per feature and stay thin: they read the latest `FileReport` pieces kept by
`compiling.CompileScheduler` and call the core (pipeline, checks, ir). Nothing here blocks the event loop: compiles
run in a thread that waits on the worker processes.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import traceback
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..settings import Settings

log = logging.getLogger(__name__)


async def in_daemon_thread(fn, *args, **kwargs):
    """`asyncio.to_thread` for calls that wait on compiles: the default executor's threads are joined when the event
    loop closes and at interpreter exit, so a compile stuck in user code (`time.sleep(600)` at module level) would
    keep the process alive after the client has gone. A daemon thread is never waited for."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def settle(result, exc) -> None:
        if not fut.done():
            fut.set_exception(exc) if exc is not None else fut.set_result(result)

    def run() -> None:
        try:
            result, exc = fn(*args, **kwargs), None
        except BaseException as e:  # noqa: BLE001 — handed to the awaiting coroutine
            result, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, result, exc)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    threading.Thread(target=run, daemon=True, name=f"tritonlens-{getattr(fn, '__name__', 'call')}").start()
    return await fut


class TritonLensServer(LanguageServer):
    """A pygls server holding the settings, the `Checker` and the per-document compile state."""

    def __init__(self) -> None:
        super().__init__("tritonlens", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        from .compiling import CompileScheduler

        self.settings = Settings()
        self._checker = None
        self.scheduler = CompileScheduler(self)
        self.watcher = None

    # ------------------------------------------------------------------ state
    @property
    def checker(self):
        """The `Checker` (and its worker pool), made on first use so that `initialize` can set the settings."""
        if self._checker is None:
            from ..pipeline import Checker

            self._checker = Checker(self.settings)
        return self._checker

    def apply_settings(self, raw: Any, origin: str) -> bool:
        """Parse raw settings; bad values fall back to defaults and are logged. True when anything changed."""
        new = Settings.from_dict(raw)
        for problem in new.problems:
            self.log(f"{origin}: {problem}", types.MessageType.Warning)
        if new == self.settings:
            return False
        self.settings = new
        if self._checker is not None:
            self._checker.update_settings(new)
        return True

    def terminate(self) -> None:
        """SIGTERM (a client whose shutdown timed out, or none at all): kill the compile workers and leave now. A
        normal exit would wait for pygls' stdin reader thread, blocked until the client closes the pipe."""
        try:
            self.close()
        finally:
            os._exit(0)

    def close(self) -> None:
        self.scheduler.cancel_all()
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if self._checker is not None:
            self._checker.close()
            self._checker = None

    # ------------------------------------------------------------------ messages
    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """A `window/logMessage` (and the Python log). Call on the event loop thread."""
        {types.MessageType.Error: log.error, types.MessageType.Warning: log.warning}.get(kind, log.info)(message)
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # noqa: BLE001 — no transport yet (unit use) or the client went away
            pass

    def report_server_error(self, error: Exception, source) -> None:
        """pygls shows a popup for errors in notification handlers; a log line is enough (and never repeats)."""
        detail = "".join(traceback.format_exception(error)).rstrip()
        self.log(f"tritonlens: internal error ({getattr(source, '__name__', source)}): {detail}",
                 types.MessageType.Error)


def create_server() -> TritonLensServer:
    """A fresh server with every feature registered (tests make one each)."""
    from . import actions, diagnostics, hover, ir_document, lens, lifecycle, profiling

    server = TritonLensServer()
    for module in (lifecycle, diagnostics, hover, lens, ir_document, actions, profiling):
        module.register(server)
    return server


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="tritonlens %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message it sends at INFO
    server = create_server()
    try:
        server.start_io()
    finally:
        server.close()
