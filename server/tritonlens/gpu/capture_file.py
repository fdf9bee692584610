"""The capture file: `CaptureWriter` appends capture lines once per distinct compile, across the threads and processes
of a run (the file is locked while written, JSON only)."""
from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any, Iterator

from ..frontend.captures import MAX_LINE, bounded_lines, identity
from ..writes import open_append, workspace_of

# ---------------------------------------------------------------- the file
@contextlib.contextmanager
def _locked(f) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt locks a byte range
        import msvcrt

        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
        try:
            yield
        finally:
            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class CaptureWriter:
    """Appends capture lines to one file, once per distinct compile, across threads and processes.

    Every write happens under an exclusive lock on the file, as one `os.write` of whole lines to an O_APPEND
    descriptor, so concurrent writers (`pytest -n 16` under capture) neither lose nor interleave lines; a half line
    left by a killed process is ended before the next line, so it spoils only itself. What other processes wrote is
    read incrementally (from where this writer last stopped), line by line and bounded, to keep the dedupe exact."""

    def __init__(self, file: str, tally: str | None = None) -> None:
        self.file = file
        self.tally = tally  # a file that gets one line per compile this writer adds (the run's own count)
        self._seen: set[str] = set()
        self._scanned = 0  # bytes of the file already read into _seen
        self._lock = threading.Lock()

    def append(self, rec: dict[str, Any]) -> bool:
        """Write `rec` unless the file already holds the same compile. True when written."""
        ident = identity(rec)
        with self._lock:
            if ident in self._seen:
                return False
            with self._open() as f, _locked(f):
                self._scan(f)
                if ident in self._seen:
                    return False
                self._write(f, [rec])
            self._seen.add(ident)
        if self.tally:
            with contextlib.suppress(OSError):
                fd = os.open(self.tally, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, b"1\n")  # one small O_APPEND write: atomic among this run's processes
                finally:
                    os.close(fd)
        return True

    def append_records(self, recs: list[dict[str, Any]]) -> None:
        """Write `recs` as they are (count/choice records: several per compile are meant to be summed)."""
        if not recs:
            return
        with self._lock, self._open() as f, _locked(f):
            self._write(f, recs)

    def _open(self):
        # never through a link: a committed `.tritonlens/captures.jsonl -> ~/.profile` stays untouched
        return open_append(self.file, workspace_of(self.file), read=True)

    def _scan(self, f) -> None:
        size = f.seek(0, os.SEEK_END)
        if size < self._scanned:  # the file was truncated or replaced: read it all again
            self._scanned = 0
        f.seek(self._scanned)
        for line in bounded_lines(f):
            if len(line) > MAX_LINE or not line.endswith(b"\n"):
                continue
            with contextlib.suppress(ValueError, RecursionError, AttributeError, TypeError):
                obj = json.loads(line)
                if isinstance(obj, dict) and obj.get("record", "compile") == "compile":
                    self._seen.add(identity(obj))
        self._scanned = size

    def _write(self, f, recs: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, allow_nan=False, default=str) + "\n" for r in recs).encode("utf-8")
        size = f.seek(0, os.SEEK_END)
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:  # O_APPEND: every chunk lands at the end, and the lock keeps other writers out meanwhile
            view = view[os.write(f.fileno(), view):]
        if self._scanned == size:  # nothing unread before our lines: no need to read them back
            self._scanned = size + len(data)
