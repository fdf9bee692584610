"""What the feature modules of `lsp/` may use of the server: the `Host` interface, and `in_daemon_thread`.

`server.py` assembles the features (`TritonLensServer` is a `Host`); the features know only this file, so the
imports run one way — server → features → host — and one handler file reads alone.
"""
from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from lsprotocol import types
    from pygls.workspace import Workspace

    from ..pipeline import Checker
    from ..settings import Settings
    from .docstate import DocState


class Scheduler(Protocol):
    """What compiles when (`compiling.CompileScheduler`), as the features use it."""

    docs: "dict[str, DocState]"
    listeners: "list[Callable[[DocState], None]]"
    debounce_s: float

    def state(self, uri: str) -> "DocState | None": ...

    def schedule(self, uri: str, delay: float = 0.0, full: bool = False) -> None: ...

    def schedule_all(self, full: bool = True, only: "Callable[[DocState], bool] | None" = None) -> None: ...

    def publish(self, st: "DocState", version: int | None = None) -> None: ...

    def forget(self, uri: str) -> None: ...

    def cancel_all(self) -> None: ...

    def run_in_thread(self, fn: Callable[[], Any]) -> None: ...


class Environment(Protocol):
    """The start-up check of the environment (`environment.EnvironmentCheck`)."""

    async def problem(self) -> str | None: ...


class Host(Protocol):
    """The server as the features see it: state they read, messages they send, how they register."""

    settings: "Settings"
    scheduler: Scheduler
    environment: Environment
    workspace_root: str | None
    watcher: Any
    version: str | None

    @property
    def checker(self) -> "Checker":
        """The `Checker`, made on first use."""

    @property
    def running_checker(self) -> "Checker | None":
        """The `Checker` if one was made (cancelling needs no new worker pool)."""

    @property
    def workspace(self) -> "Workspace": ...

    @property
    def client_capabilities(self) -> "types.ClientCapabilities": ...

    @property
    def work_done_progress(self) -> Any: ...

    @property
    def protocol(self) -> Any: ...

    def apply_settings(self, raw: Any, origin: str) -> bool: ...

    def log(self, message: str, kind: "types.MessageType" = ...) -> None: ...

    def close(self) -> None: ...

    def terminate(self) -> None: ...

    def feature(self, name: str, options: Any = None) -> Callable: ...

    def command(self, name: str) -> Callable: ...

    def text_document_publish_diagnostics(self, params: "types.PublishDiagnosticsParams") -> None: ...

    def window_show_message(self, params: "types.ShowMessageParams") -> None: ...

    def workspace_apply_edit_async(self, params: "types.ApplyWorkspaceEditParams") -> Any: ...

    def workspace_code_lens_refresh(self, params: None) -> Any: ...


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
