"""The language server: `create_server()` builds one; `main()` runs it on stdio (`tritonlens serve`).

Handlers live in one module per feature and stay thin: they see the server only as a `host.Host` (no feature
imports this file), read the latest reports kept by `compiling.CompileScheduler` and call the core (pipeline,
checks, ir). Nothing here blocks the event loop: compiles
run in a thread that waits on the worker processes.
"""
from __future__ import annotations

import logging
import os
import traceback
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..settings import Settings

log = logging.getLogger(__name__)


class TritonLensServer(LanguageServer):
    """A pygls server holding the settings, the `Checker` and the per-document compile state: the `host.Host` that
    every feature module is given (they never import this file)."""

    def __init__(self) -> None:
        from .protocol import AnsweringProtocol

        super().__init__("tritonlens", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=AnsweringProtocol)
        from .compiling import CompileScheduler
        from .environment import EnvironmentCheck

        self.settings = Settings()
        self._checker = None
        self.scheduler = CompileScheduler(self)
        self.environment = EnvironmentCheck()
        self.watcher = None
        self._reporting = False  # inside report_server_error (see there)

    # ------------------------------------------------------------------ state
    @property
    def checker(self):
        """The `Checker` (and its worker pool), made on first use so that `initialize` can set the settings."""
        if self._checker is None:
            from ..pipeline import Checker

            self._checker = Checker(self.settings, sass_ahead=True)  # hovers show SASS: made before they ask
        return self._checker

    @property
    def running_checker(self):
        """The `Checker` if one was made: cancelling must not start a worker pool."""
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
        """A `window/logMessage`, or the Python log (stderr) when there is no client to send it to: clients show
        the server's stderr in the same log, so writing both printed every line twice. Call on the event loop
        thread."""
        if getattr(self.protocol, "writer", None) is not None:
            try:
                self.window_log_message(types.LogMessageParams(type=kind, message=message))
                return
            except Exception:  # noqa: BLE001 — the client went away: the Python log still has it
                pass
        {types.MessageType.Error: log.error, types.MessageType.Warning: log.warning}.get(kind, log.info)(message)

    def report_server_error(self, error: Exception, source) -> None:
        """pygls shows a popup for errors in notification handlers; a log line is enough (and never repeats). An
        error in sending that line (the client closed the pipe: a compile ending after `exit`) comes back here from
        pygls' writer; it goes to the Python log only, not round again to the client."""
        detail = "".join(traceback.format_exception(error)).rstrip()
        message = f"tritonlens: internal error ({getattr(source, '__name__', source)}): {detail}"
        if self._reporting:
            log.error("%s", message)
            return
        self._reporting = True
        try:
            self.log(message, types.MessageType.Error)
        finally:
            self._reporting = False


def create_server() -> TritonLensServer:
    """A fresh server with every feature registered (tests make one each)."""
    from . import (actions, benching, compare, diagnostics, hover, ir_document, lens, lifecycle, profiling,
                   time_report)

    server = TritonLensServer()
    for module in (lifecycle, diagnostics, hover, lens, ir_document, actions, profiling, benching, compare,
                   time_report):
        module.register(server)
    return server


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="tritonlens %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message it sends at INFO
    # A client cancels requests that were answered meanwhile (VS Code does on every start): normal, not a warning.
    logging.getLogger("pygls.protocol.json_rpc").addFilter(
        lambda record: not record.getMessage().startswith("Cancel notification for unknown message id"))
    server = create_server()
    try:
        server.start_io()
    finally:
        server.close()
