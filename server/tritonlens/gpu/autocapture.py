"""Specs from the code that launches a kernel, without a GPU and without being asked: a kernel file that has no
capture and no hint gets its launch code (frontend/launchers.py: its `__main__` block or tests, the workspace's tests
that import it, a benchmark) run under `tritonlens capture --no-gpu`, and the specializations that run launched
become its specs, labelled with what launched them ("launched by `test_update_fn` in this file, no GPU").

What runs is user code, so it runs as the compile workers' imports do (compiler/sandbox.py): a process of its own
that confines itself before anything of the workspace loads — no writes outside its own folder, no programs but
tritonlens's, no network, a clean environment — bounded in time (`timeout`, then SIGTERM, which keeps what was
recorded, then SIGKILL of its process group) and in resident memory (the pool's measure, `pool.resident_bytes`, over
all its descendants: it is their subreaper, so a double-forked grandchild counts). However it ends, its process group
is killed: nothing it started outlives it.

A run is cached by the content of every file it ran (the kernel file and the test file or script, and for tests what
pytest reads with them: conftest.py files and pytest's configuration, `config_files_of_tests`) with the target and the
virtual GPU: opening the file again costs a cache read. A run that fails, hangs or runs out of memory is
cached too (until one of those files changes) and said once, as an info on the file: our limit, not the user's
error.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..frontend.captures import load_captures
from ..frontend.launchers import Launcher, find_launchers
from ..model import Finding
from ..source import read_source

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MEMORY_MB = 4096
_FORMAT = 1  # of a cache entry
_TAIL = 2000  # characters of the run's output kept for a failure's message
# a run's capture file kept in the cache at most (a suite's hundreds of compiles take well under 1 MB)
MAX_CAPTURE_BYTES = 32 << 20


@dataclass
class AutoCapture:
    """What running a file's launch code gave: the file's captures (folded, as `load_captures` returns them, each
    with "_by": what launched it), and how the run went — "ok", "failed" (it raised or exited non-zero, what it
    recorded before is kept), "timeout", "memory", "oversized" (its capture file held more than MAX_CAPTURE_BYTES and
    was not kept), "error" (it could not start) — with a one-line `message`."""

    launchers: list[Launcher] = field(default_factory=list)
    captures: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "ok"
    message: str = ""
    seconds: float = 0.0
    cached: bool = False
    bounds: str = ""  # in words: the time and memory it ran under

    @property
    def failed(self) -> bool:
        return self.outcome != "ok"

    def summary(self, path: str) -> str:
        """One line for `check`'s text: what ran, what it gave, how long, under which bounds."""
        by = sorted({c.get("_by", "") for c in self.captures} - {""}) or \
            [x.describe(path) for x in self.launchers[:1]]
        took = "cached" if self.cached else f"{self.seconds:.1f} s"
        state = "" if self.outcome == "ok" else f"; {self.outcome}: {self.message}"
        return (f"specs from its own launch code ({'; '.join(by[:3])}{' …' if len(by) > 3 else ''}): "
                f"{len(self.captures)} compile(s), run {took} ({self.bounds}){state}")

    def finding(self, path: str) -> Finding:
        """SRC008 on the file: its launch code did not run to the end here, and what stopped it — an info (the bound
        is tritonlens's, and a test that needs a GPU is no error of the file), on the launcher's line when it is in
        this file."""
        own = next((x for x in self.launchers if os.path.abspath(x.path) == os.path.abspath(path)), None)
        line = own.line if own else 1
        what = self.launchers[0].describe(path).removeprefix("launched by ").removesuffix(", no GPU") \
            if self.launchers else "the file's launch code"
        how = {"timeout": "did not finish in time", "memory": "held too much memory",
               "failed": "stopped before it launched a kernel of this file",
               "oversized": "left a capture file too big to keep",
               "error": "could not be started"}.get(self.outcome, self.outcome)
        return Finding(path, line, 1, line, 200, "SRC008", "info",
                       f"{what} {how} when run without a GPU to learn this file's launches ({self.message}; "
                       f"bounds: {self.bounds}): its kernels are compiled from what the file says alone — record real "
                       f"launches with `tritonlens capture -- CMD`, or add a hint (tritonlens's own limit, not an "
                       f"error in the file)", data={"outcome": self.outcome})


class AutoCapturer:
    """Runs (or finds in its cache) the launch code of kernel files. Thread-safe: each run is its own process."""

    def __init__(self, cache_dir: str, target: str, gpu_key: str = "", timeout: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int = DEFAULT_MEMORY_MB, python: str | None = None) -> None:
        self.cache_dir = os.path.join(cache_dir, "autocapture")
        self.target = target
        self.gpu_key = gpu_key
        self.timeout = float(timeout)
        self.memory_mb = int(memory_mb)
        self.python = python or sys.executable

    # ------------------------------------------------------------------ what to run, and its cache entry
    def launchers(self, path: str, root: str) -> tuple[list[Launcher], str | None]:
        """The launchers of the file as it is on disk (what a run runs), and the key of their cache entry (None: the
        file has none, or cannot be read)."""
        text, problem = read_source(path)
        if problem or text is None:
            return [], None
        found = find_launchers(path, text, root)
        if not found:
            return [], None
        h = hashlib.sha256()
        for part in (__version__, str(_FORMAT), self.target, self.gpu_key, os.path.abspath(path), text):
            h.update(part.encode("utf-8", "replace") + b"\0")
        for launcher in found:
            h.update(json.dumps([launcher.kind, launcher.path, list(launcher.names)]).encode())
            if os.path.abspath(launcher.path) != os.path.abspath(path):
                other, _ = read_source(launcher.path)
                h.update((other or "").encode("utf-8", "replace") + b"\0")
            if launcher.kind == "tests":
                for config in config_files_of_tests(launcher.path, root):
                    text, _ = read_source(config, root=root)
                    h.update(config.encode("utf-8", "replace") + b"\0" + (text or "").encode("utf-8", "replace")
                             + b"\0")
        return found, h.hexdigest()[:32]

    def cached(self, path: str, root: str) -> tuple[AutoCapture | None, str | None]:
        """(the cached run of the file's launch code or None: never run, or one of its files changed since; the key
        of the run it would be — None: the file has no launch code, and the result says so)."""
        found, key = self.launchers(path, root)
        if key is None:
            return AutoCapture(outcome="none"), None
        return self._read(key, found, path, root), key

    def run(self, path: str, root: str) -> AutoCapture:
        """Run the file's launch code now (or take its cached run); blocks for at most `timeout` seconds and a few
        more."""
        found, key = self.launchers(path, root)
        if key is None:
            return AutoCapture(outcome="none")
        hit = self._read(key, found, path, root)
        if hit is not None:
            return hit
        entry = os.path.join(self.cache_dir, key)
        result = self._run(found, path, root, entry)
        return self._read(key, found, path, root) or result

    def _read(self, key: str, found: list[Launcher], path: str, root: str) -> AutoCapture | None:
        entry = os.path.join(self.cache_dir, key)
        try:
            with open(os.path.join(entry, "outcome.json"), encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            return None
        caps, _ = load_captures(root, path, os.path.join(entry, "captures.jsonl"))
        by_default = found[0].describe(path)
        for cap in caps:
            by = cap.get("launched_by")
            cap["_by"] = by if isinstance(by, str) and by else by_default
        return AutoCapture(launchers=found, captures=caps, outcome=str(meta.get("outcome", "error")),
                           message=str(meta.get("message", ""))[:_TAIL], seconds=float(meta.get("seconds") or 0),
                           cached=True, bounds=str(meta.get("bounds", "")))

    # ------------------------------------------------------------------ the run
    def _run(self, found: list[Launcher], path: str, root: str, entry: str) -> AutoCapture:
        from ..compiler import sandbox
        from ..device.run import run_devices
        from .capture import PACKAGE_ROOT, child_env

        bounds = f"{self.timeout:g} s, {self.memory_mb} MB resident, sandboxed"
        box_root = tempfile.mkdtemp(prefix="tritonlens-autocapture-")
        folder = os.path.join(box_root, "w")
        os.makedirs(folder, exist_ok=True)
        captures = os.path.join(folder, "captures.jsonl")
        started = time.monotonic()
        outcome, message = "ok", ""
        try:
            device = run_devices(self.target, self.gpu_key, local=False)[0]
            env = child_env(captures, root, base=sandbox.clean_env(folder, PACKAGE_ROOT), no_gpu_target=device.target)
            env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep)
                                                if p and not p.endswith("_capture_hook"))  # installed after the box
        except Exception as exc:  # noqa: BLE001 — a bad target or GPU setting: said, not raised
            shutil.rmtree(box_root, ignore_errors=True)
            return AutoCapture(found, outcome="error", message=f"could not prepare the run: {exc}", bounds=bounds)
        try:
            from .capture_nogpu import ENV_GPU

            env[ENV_GPU] = device.gpu.key
            job = {"root": os.path.abspath(root), "path": os.path.abspath(path),
                   "launchers": [{"kind": x.kind, "path": x.path, "names": list(x.names),
                                  "label": x.describe(path)} for x in found]}
            # started as a compile worker is: isolated (-I -S), confined before anything of the workspace or
            # PYTHONPATH loads, the site loaded once confined (compiler.sandbox.boot)
            argv, _ = sandbox.command(self.python, "tritonlens.gpu.autocapture_run:run", [json.dumps(job)], folder,
                                      tools=os.path.join(box_root, "tools"),
                                      reads=[root, os.path.dirname(os.path.abspath(path))])
            log = os.path.join(box_root, "output.txt")
            with open(log, "wb") as out:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                        cwd=folder, close_fds=True, start_new_session=hasattr(os, "killpg"))
                try:
                    outcome = self._wait(proc)
                finally:
                    _end_group(proc)
            tail = _tail(log)
            if outcome == "ok" and proc.returncode != 0:
                outcome = "failed"
            if outcome == "failed":
                message = _why(tail) or f"exited with code {proc.returncode}"
            elif outcome == "timeout":
                message = f"still running after {self.timeout:g} s; stopped"
            elif outcome == "memory":
                message = f"held more than {self.memory_mb} MB; stopped"
            seconds = time.monotonic() - started
            self._store(entry, captures, {"format": _FORMAT, "outcome": outcome, "message": message,
                                          "seconds": round(seconds, 3), "bounds": bounds})
            return AutoCapture(found, outcome=outcome, message=message, seconds=seconds, bounds=bounds)
        finally:
            shutil.rmtree(box_root, ignore_errors=True)

    def _wait(self, proc: subprocess.Popen) -> str:
        from ..compiler.pool import resident_bytes

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                proc.wait(0.2)
                return "ok"
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                self._stop(proc)
                return "timeout"
            if self.memory_mb and resident_bytes(proc.pid) > self.memory_mb << 20:
                self._stop(proc, kill=True)
                return "memory"

    @staticmethod
    def _stop(proc: subprocess.Popen, kill: bool = False) -> None:
        """SIGTERM first (the capture hook writes what it holds), SIGKILL of the whole group after 2 s."""
        if not kill:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        _end_group(proc)
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)

    def _store(self, entry: str, captures: str, meta: dict[str, Any]) -> None:
        """The run's outcome and its capture file into the cache: the file only when it holds at most
        MAX_CAPTURE_BYTES of real bytes (writes.copy_bounded), else the outcome says it was not kept."""
        from ..writes import copy_bounded

        tmp = entry + f".tmp{os.getpid()}"
        try:
            os.makedirs(tmp, exist_ok=True)
            if os.path.lexists(captures):
                why = copy_bounded(captures, os.path.join(tmp, "captures.jsonl"), MAX_CAPTURE_BYTES)
                if why:
                    meta = {**meta, "outcome": "oversized", "message": f"its capture file was not kept: {why}"}
            with open(os.path.join(tmp, "outcome.json"), "w", encoding="utf-8") as f:
                json.dump(meta, f)
            shutil.rmtree(entry, ignore_errors=True)
            os.replace(tmp, entry)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)


# what pytest reads besides the test file: its fixtures and hooks (conftest.py in the test's folder and every one up
# to the root) and its configuration, looked for in the same folders
TEST_CONFIG = ("conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def config_files_of_tests(test_path: str, root: str) -> list[str]:
    """The files that change what running the tests of `test_path` does: TEST_CONFIG in its folder and each folder
    above it up to `root` (the workspace), the ones that exist — part of a run's cache key."""
    root = os.path.abspath(root)
    folder = os.path.dirname(os.path.abspath(test_path))
    found = []
    while True:
        found += [p for name in TEST_CONFIG if os.path.isfile(p := os.path.join(folder, name))]
        parent = os.path.dirname(folder)
        if folder == root or parent == folder or not (folder + os.sep).startswith(root + os.sep):
            return found
        folder = parent


def _end_group(proc: subprocess.Popen) -> None:
    """Everything the run started ends with it, however it ended: what its code forked (a double-forked grandchild
    included) is in its process group, which its sandbox does not let it leave."""
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8 * _TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _why(tail: str) -> str:
    """The last error line of the run's output (a traceback's last line, pytest's summary), printable, one line."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("tritonlens autocapture:"):
            return _printable(ln.split(":", 1)[1].strip())
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln or ln.startswith(("FAILED", "E ")):
            return _printable(ln)
    return _printable(lines[-1]) if lines else ""


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)[:300]
