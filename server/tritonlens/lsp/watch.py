"""Re-check open documents when captured launches or an imported workspace module change on disk (watchdog)."""
from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from ..sidecar import CAPTURES, FOLDER

if TYPE_CHECKING:
    from .docstate import DocState
    from .host import Host

log = logging.getLogger(__name__)
SETTLE_S = 0.3  # editors write a file in several steps


class Watcher:
    def __init__(self, server: "Host", root: str, loop: asyncio.AbstractEventLoop) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        self.server = server
        self.root = os.path.abspath(root)
        self.loop = loop
        self._pending: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:  # a watchdog thread
                if event.event_type in ("opened", "closed_no_write") or event.is_directory:
                    return
                for p in (event.src_path, getattr(event, "dest_path", "")):
                    if p and (p.endswith(".py") or p.endswith("captures.jsonl")):
                        loop.call_soon_threadsafe(watcher._changed, os.path.abspath(os.fsdecode(p)))

        self.observer = Observer()
        self.observer.schedule(Handler(), self.root, recursive=True)
        self.observer.daemon = True
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()

    def _changed(self, path: str) -> None:
        self._pending.add(path)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(SETTLE_S, self._flush)

    def _flush(self) -> None:
        self._timer = None
        paths, self._pending = self._pending, set()
        sched = self.server.scheduler
        if any(p.endswith(os.path.join(FOLDER, CAPTURES)) for p in paths):
            self.server.log("captures changed; re-checking open documents")
            sched.schedule_all(full=True)
            return
        modules = {p for p in paths if p.endswith(".py")}
        if not modules:
            return

        def imports_one(st: "DocState") -> bool:  # a document's own save is handled by didSave
            return st.path not in modules and any(_imports(st, p, self.root) for p in modules)

        hit = [st.uri for st in sched.docs.values() if imports_one(st)]
        if hit:
            self.server.log(f"{', '.join(sorted(os.path.basename(p) for p in modules))} changed; re-checking "
                            f"{len(hit)} open document(s)")
            sched.schedule_all(full=True, only=imports_one)


def _module_names(path: str, root: str) -> set[str]:
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    if rel.endswith(".__init__"):
        rel = rel[: -len(".__init__")]
    parts = rel.split(".")
    return {".".join(parts[i:]) for i in range(len(parts))}  # `pkg.helpers`, `helpers` (relative imports)


def _imports(st: "DocState", path: str, root: str) -> bool:
    """Whether a kernel of the document uses the module at `path` (its helpers list names workspace modules), or
    the document's text imports it."""
    names = _module_names(path, root)
    for info in st.infos.values():
        if any(h in names for h in info.helpers):
            return True
    stem = os.path.splitext(os.path.basename(path))[0]
    return any(f"import {n}" in st.text or f"from {n} " in st.text or f"from .{n} " in st.text
               for n in names | {stem})


def start_watcher(server: "Host") -> None:
    root = getattr(server, "workspace_root", None)
    if not root or not os.path.isdir(root):
        return
    try:
        server.watcher = Watcher(server, root, asyncio.get_running_loop())
    except Exception as exc:  # noqa: BLE001 — no inotify slots, a read-only mount: work without watching
        server.log(f"not watching {root} for captures and module changes: {exc}")
