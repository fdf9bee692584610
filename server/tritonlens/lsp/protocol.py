"""Every request gets an answer, in bounded time: the JSON-RPC layer under the features.

pygls reads a message and builds its typed params before any handler sees it; when that fails (a codeAction whose
diagnostics lack a `range`) it logs the error and drops the message, and the client waits for an answer that never
comes. Here such a request is answered at once with InvalidParams naming the field. A request that is still running
after its limit (`request_limits`, else `REQUEST_LIMIT_S`) is answered with RequestFailed and cancelled; a request
after `shutdown` is answered with InvalidRequest, as the protocol asks, instead of being ignored. The open documents
number their lines as the editor and Python do (`SourceDocument`).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from cattrs import transform_error
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from ..source import read_source, split_lines

log = logging.getLogger(__name__)

# Requests the editor sends by itself (hover, lenses, code actions, IR views) answer from what is at hand within
# seconds; a handler that has not answered by then is stuck, and the client should hear so.
REQUEST_LIMIT_S = 30.0


class _Answered:
    """Stands for a request already answered with an error while it was read: nothing more to do."""

    jsonrpc = "answered"


class AnsweringProtocol(LanguageServerProtocol):
    """The LSP protocol of pygls, answering the requests it would leave unanswered."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        # Method -> seconds a request may run before it is answered with an error (features raise theirs: see
        # `allow`).
        self.request_limits: dict[str, float] = {}
        self._answered_early: set[Any] = set()

    # pygls makes the workspace when `initialize` arrives; its documents are made ours (see `SourceDocument`)
    @property
    def _workspace(self) -> Workspace | None:
        return self.__dict__.get("_source_workspace")

    @_workspace.setter
    def _workspace(self, workspace: Workspace | None) -> None:
        if type(workspace) is Workspace:
            workspace.__class__ = SourceWorkspace
        self.__dict__["_source_workspace"] = workspace

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "method" not in data or "id" not in data:
                raise  # a notification has nobody to answer; a response's waiter is failed by pygls' reader
            why = _why_invalid(exc.__cause__)
            message = f"{exc.message} for {data['method']}" + (f": {why}" if why else "")
            self._send_response(data["id"], error=types.ResponseError(code=exc.code, message=message))
            return _Answered()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Answered):
            return
        if self._shutdown and getattr(message, "method", "") != types.EXIT and hasattr(message, "id") \
                and hasattr(message, "method"):
            self._send_response(message.id, error=JsonRpcInvalidRequest(
                f"the server is shutting down: {message.method} is not served").to_response_error())
            return
        super().handle_message(message)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        super()._handle_request(msg_id, method_name, params)
        future = self._request_futures.get(msg_id)
        if future is None or future.done():
            return
        limit = self.request_limits.get(method_name, REQUEST_LIMIT_S)
        try:
            asyncio.get_running_loop().call_later(limit, self._overdue, msg_id, method_name, future, limit)
        except RuntimeError:  # no event loop (a unit use): nothing can wait on it anyway
            pass

    def _overdue(self, msg_id: Any, method_name: str, future: Any, limit: float) -> None:
        if future.done() or self._request_futures.get(msg_id) is not future:
            return
        self._request_futures.pop(msg_id, None)
        self._answered_early.add(msg_id)
        log.warning("%s (request %s) did not finish in %g s; answered with an error", method_name, msg_id, limit)
        self._send_response(msg_id, error=types.ResponseError(
            code=types.LSPErrorCodes.RequestFailed,
            message=f"tritonlens did not finish {method_name} in {limit:g} s"))
        future.cancel()  # a coroutine stops here; a thread's work runs on, but its answer is not sent twice

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        if msg_id in self._answered_early:
            self._answered_early.discard(msg_id)
            return
        super()._send_handler_result(future, msg_id=msg_id)


class SourceDocument(TextDocument):
    """A document whose lines are broken where the editor and Python break them (`source.split_lines`). pygls'
    own use `str.splitlines()`, which also breaks at form feeds, U+2028 and the like: an incremental change below
    one was applied to the line above the one the editor meant, and the buffer the server compiled was not the
    editor's. A document the editor has not opened is read as a workspace file."""

    @property
    def lines(self) -> list[str]:
        return split_lines(self.source, keepends=True)

    @property
    def source(self) -> str:
        """The editor's text; of a document it has not opened, the file's — read as every workspace file is
        (`reads`: pygls' own read followed a link to `/proc/self/fd/0` into the server's stdin, unbounded)."""
        if self._source is None and self.path is not None:
            text, problem = read_source(self.path)
            if text is None:
                log.warning("%s", problem)
            return text or ""
        return self._source or ""


class SourceWorkspace(Workspace):
    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return SourceDocument(doc_uri, source=source, version=version, language_id=language_id,
                              sync_kind=self._sync_kind, position_codec=self._position_codec)


def allow(server: Any, method: str, seconds: float) -> None:
    """Let requests of `method` run up to `seconds` before they are answered with an error (a user-started action
    that waits on a compile or a profiler). Never lowers a limit another feature set for the same method."""
    limits = getattr(server.protocol, "request_limits", None)
    if limits is not None:
        limits[method] = max(limits.get(method, REQUEST_LIMIT_S), seconds)


def _why_invalid(error: BaseException | None) -> str:
    """cattrs' account of what did not fit (`required field missing @ $.params.context.diagnostics[0].range`)."""
    if error is None:
        return ""
    try:
        return "; ".join(transform_error(error, path="$"))  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 — not a cattrs validation error: its own text
        return str(error)
