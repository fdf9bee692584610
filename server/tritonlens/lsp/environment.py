"""The environment the server compiles in, checked once at start (`tritonlens doctor`): the report goes to the log
(`window/logMessage`), and when nothing can compile — `triton` missing, or another `triton` shadowing it — one
message says why (`window/showMessage`, and one diagnostic per open file instead of a compile error on every kernel).
"""
from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from lsprotocol import types

from .host import in_daemon_thread

if TYPE_CHECKING:
    from ..doctor import Diagnosis
    from .host import Host

WAIT_S = 60.0  # a compile waits this long for the check at most; then it runs as if all were well


class EnvironmentCheck:
    def __init__(self) -> None:
        self._task: asyncio.Task | None = None
        self.diagnosis: "Diagnosis | None" = None

    def start(self, ls: "Host") -> None:
        """Run the doctor in a thread (it starts one Python that imports triton); log what it found."""
        self._task = asyncio.ensure_future(self._run(ls))

    async def _run(self, ls: "Host") -> "Diagnosis | None":
        from ..doctor import diagnose

        try:
            self.diagnosis = await in_daemon_thread(diagnose, ls.workspace_root or os.getcwd(), ls.workspace_root)
        except Exception as exc:  # noqa: BLE001 — a broken check must not stop the server
            ls.log(f"tritonlens doctor failed: {type(exc).__name__}: {exc}", types.MessageType.Warning)
            return None
        d = self.diagnosis
        ls.log("tritonlens doctor:\n" + d.text(), types.MessageType.Info if d.ok else types.MessageType.Error)
        if (problem := d.problem()) is not None:
            try:
                ls.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"tritonlens cannot compile: {problem}"))
            except Exception:  # noqa: BLE001 — no client attached
                pass
        return d

    async def problem(self) -> str | None:
        """Why nothing can compile here, or None (also when the check has not started or takes too long)."""
        if self._task is None:
            return None
        try:
            d = await asyncio.wait_for(asyncio.shield(self._task), WAIT_S)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001
            return None
        return d.problem() if d is not None else None
