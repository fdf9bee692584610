"""initialize / settings / commands / shutdown."""
from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from .host import Host

RECOMPILE = "tritonlens.recompile"


def register(server: "Host") -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: "Host", params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options, "initializationOptions")
        ls.workspace_root = _root_path(params)

    @server.feature(types.INITIALIZED)
    def initialized(ls: "Host", params: types.InitializedParams) -> None:
        from .status import send_status
        from .watch import start_watcher

        ls.log(f"tritonlens {ls.version}: target {ls.settings.target}, compile on {ls.settings.compile_on}")
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, ls.terminate)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            pass
        start_watcher(ls)
        ls.environment.start(ls)
        send_status(ls, "idle", "ready")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: "Host", params: types.DidChangeConfigurationParams) -> None:
        if params.settings is None:  # a pull-model client: nothing sent, nothing changed
            return
        if ls.apply_settings(params.settings, "workspace/didChangeConfiguration"):
            ls.log("settings changed; re-checking open documents")
            ls.scheduler.schedule_all(full=True)

    # Command handlers carry no annotation that only exists for type checkers: pygls resolves their type hints to
    # convert the arguments, and an unresolvable one fails every call that has an `arguments` array (all of
    # VS Code's) with "Invalid Params".
    @server.command(RECOMPILE)
    def recompile(ls, *args: Any) -> None:
        uris = [a for a in _flatten(args) if isinstance(a, str) and a in ls.scheduler.docs]
        if uris:
            for uri in uris:
                ls.scheduler.schedule(uri, full=True)
        else:
            ls.scheduler.schedule_all(full=True)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: "Host", params: None) -> None:
        ls.close()


def _flatten(args: Any) -> list[Any]:
    out: list[Any] = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flatten(a))
        elif isinstance(a, dict) and "uri" in a:
            out.append(a["uri"])
        else:
            out.append(a)
    return out


def _root_path(params: types.InitializeParams) -> str | None:
    from pygls.uris import to_fs_path

    if params.workspace_folders:
        return to_fs_path(params.workspace_folders[0].uri)
    if params.root_uri:
        return to_fs_path(params.root_uri)
    return params.root_path
