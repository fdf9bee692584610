"""A pool of persistent compile workers with timeouts, crash recovery and cancellation.

Each worker is a spawned process that imported triton once (`worker.serve`). One thread per worker feeds it jobs from
a shared queue. A worker that dies (SIGSEGV in LLVM, os._exit in user code), outlives the job's timeout or grows past
the memory bound is killed and replaced; the job gets an error `Artifacts` and the next job runs on a fresh worker.

Everything a job starts ends with it: a worker is the subreaper of what its module code forks (a double-forked
grandchild stays its descendant, in its process group, which the sandbox does not let it leave), and a worker that
has a live descendant when its job ends is killed with its group (`left_behind`) and replaced.

The memory bound is on resident memory (RSS, summed over the worker and all its descendants: the tools it runs, such
as ptxas, and what module code forked), read from /proc every POLL_S while a job runs — not on address space: CUDA initialisation, thread stacks and a torch import reserve
gigabytes of address space they never use, and an address-space cap (RLIMIT_AS) failed those imports. A burst can
overshoot the bound by what it allocates in one POLL_S. Where /proc is missing (macOS, Windows) there is no bound.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from multiprocessing.connection import Connection
from dataclasses import dataclass, field
from typing import Any

from . import sandbox, wire
from .worker import _package_of, read_trail
from ..frontend.untrusted import printable
from ..model import Artifacts, CompileError
from ..device.environment import named_env
from ..device.run import RunDevice, run_devices
from ..settings import DEFAULT_MEMORY_MB

_START_TIMEOUT = 120.0  # importing triton on a loaded 2-core machine can take a while
POLL_S = 0.05  # how often a running job's worker is checked: result ready, alive, resident memory

CANCELLED = "compile cancelled by a newer request"
URGENT, NORMAL = 0, 1  # queue priorities: lower runs first
_submitting = threading.local()


@contextlib.contextmanager
def urgent():
    """Jobs made in this thread inside the block jump the queue (an editor's quick-fix re-compile, which a user waits
    for, ahead of the save compiles of other kernels). They never preempt a running job, and they are few (a handful
    per code-action request), so the save compiles behind them are delayed, not starved."""
    old = getattr(_submitting, "priority", NORMAL)
    _submitting.priority = URGENT
    try:
        yield
    finally:
        _submitting.priority = old


def _current_priority() -> int:
    return getattr(_submitting, "priority", NORMAL)


@dataclass
class CompileJob:
    path: str
    text: str  # the module text the worker executes (a slice, or the whole file)
    qualname: str
    spec: dict[str, Any]
    workspace_root: str | None = None
    timeout: float = 60.0
    group: str | None = None  # cancel() by group: e.g. a document URI
    id: int = field(default_factory=lambda: next(_ids))
    priority: int = field(default_factory=_current_priority)  # URGENT inside `with urgent():`
    # what the worker needs to analyse the compile it made (checks.analyse's arguments but the artifacts); None:
    # the caller analyses
    analysis: dict[str, Any] | None = None
    # the run's device for the spec's target (device/run.py): the compiler's target, the GPU the imports answer as
    # without a GPU, their environment; a job made outside a run gets the target's own (its default GPU)
    run: RunDevice | None = None
    # disassemble the SASS in the worker with the compile (the editor's hovers show it): the results then arrive with
    # nothing left to make on the hover path
    sass: bool = False
    # a compile made already (an artefact cache hit) for the worker to analyse (`analysis`), not compile: the result
    # carries the analysis only
    artifacts: Artifacts | None = None

    def __post_init__(self) -> None:
        if self.run is None:
            self.run = run_devices(self.spec["target"], local=False)[0]

    def to_wire(self) -> dict[str, Any]:
        assert self.run is not None
        device = self.run.job()
        if device.get("env"):  # tritonlens.env: a name without a value passes the checking process's
            device["env"] = named_env(device["env"])
        wire = {"path": self.path, "text": self.text, "qualname": self.qualname, "spec": self.spec,
                "workspace_root": self.workspace_root, "device": device, "target": self.run.arch}
        if self.analysis is not None:
            wire["analysis"] = self.analysis
        if self.sass:
            wire["sass"] = True
        if self.artifacts is not None:
            wire["artifacts"] = self.artifacts
        return wire


_ids = itertools.count(1)
_order = itertools.count()  # FIFO among equal priorities (and never compares two jobs)


class _Channel:
    """Two one-way pipes to a worker, framed by multiprocessing's Connection. Jobs go out pickled (the worker
    trusts us); answers come back as JSON bytes (compiler.wire), never unpickled: the worker runs the user's code."""

    def __init__(self, to_worker: int, from_worker: int) -> None:
        self._out = Connection(to_worker, readable=False)
        self._in = Connection(from_worker, writable=False)

    def send(self, obj: Any) -> None:
        self._out.send(obj)

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def recv(self) -> dict[str, Any]:
        """The next message; ValueError when it is not one a worker makes (OSError for an oversized frame)."""
        return wire.decode(self._in.recv_bytes(wire.MAX_MESSAGE))

    def close(self) -> None:
        self._out.close()
        self._in.close()


_sandbox_told: list[str] = []  # the one-time log line about the sandbox, once said


def _tell_sandbox(state: dict[str, Any] | None) -> None:
    """Say once per process, on stderr (the editor's log), when the workers run unconfined or partly confined."""
    if _sandbox_told or not state or (state.get("on") and not state.get("missing")):
        return
    _sandbox_told.append(sandbox.describe(state))
    print(f"tritonlens: compile worker sandbox {_sandbox_told[0]} (`tritonlens doctor` says more)",
          file=sys.stderr, flush=True)


class _Worker:
    """A `tritonlens.compiler.worker` process. A plain subprocess rather than multiprocessing's spawn:
    spawn re-imports the parent's `__main__` in the child, which runs a user's unguarded script again and fails
    outright from a REPL or stdin. Its stdout goes to our stderr: in `tritonlens serve`, stdout is the LSP channel.

    It runs `python` (default: this interpreter; another one, with another Triton, needs only triton and the
    tritonlens package), confined to a folder of its own (compiler.sandbox) with a clean environment plus `env`."""

    def __init__(self, python: str | None = None, env: dict[str, str] | None = None) -> None:
        self.python = python or sys.executable
        self.env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self.conn: _Channel | None = None
        self.root: str | None = None  # the sandbox: root/w is the worker's writable folder, root/tools its stand-ins
        self.sandbox: dict[str, Any] | None = None
        # the folders its imports may read (compiler.sandbox.read_rules): fixed when it starts, so a job from a
        # workspace it was not started for restarts it with that one added (`covers`)
        self.reads: tuple[str, ...] = ()
        self.cwd: str | None = None  # the working directory its imports get (`job_cwd`)

    def covers(self, reads: tuple[str, ...], cwd: str | None = None) -> bool:
        return all(any(sandbox.within(r, have) for have in self.reads) for r in reads) \
            and (cwd is None or cwd == self.cwd)

    @property
    def trail(self) -> str | None:
        return os.path.join(self.root, "w", "trail") if self.root else None

    def start(self, reads: tuple[str, ...] = (), cwd: str | None = None) -> None:
        import tempfile

        from ..device.targets import local_gpu_target

        self.reads = tuple(dict.fromkeys([*self.reads, *reads]))
        self.cwd = cwd or os.getcwd()
        self.root = tempfile.mkdtemp(prefix="tritonlens-worker-")
        folder = os.path.join(self.root, "w")
        # started isolated, in its own folder; it confines itself before anything of the workspace can load, then
        # takes `cwd` as `python -m` there would have (compiler.sandbox.boot)
        argv, env = sandbox.command(self.python, "tritonlens.compiler.worker:main", [], folder, cwd=self.cwd,
                                    gpu=local_gpu_target() is not None, tools=os.path.join(self.root, "tools"),
                                    extra_env=self.env, reads=list(self.reads))
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [*argv, str(job_r), str(res_w), os.path.join(folder, "trail")],
                pass_fds=(job_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, env=env, close_fds=True, cwd=self.root,
                start_new_session=hasattr(os, "killpg"))  # its own group: what it started dies with it
            _relay(self.proc.stdout)
        finally:
            os.close(job_r)
            os.close(res_w)
        self.conn = _Channel(job_w, res_r)
        if not self.conn.poll(_START_TIMEOUT):
            self.kill()
            raise RuntimeError("compile worker did not start (importing triton took too long)")
        try:
            hello = self.conn.recv()
        except (EOFError, OSError, ValueError):
            why = self.describe_death()
            self.kill()
            raise RuntimeError(f"compile worker failed to start ({why}); is triton installed for "
                               f"{self.python}?") from None
        if not hello.get("ready"):
            self.kill()
            raise RuntimeError(f"compile worker failed to start: {hello}")
        self.sandbox = hello.get("sandbox") if isinstance(hello.get("sandbox"), dict) else None
        _tell_sandbox(self.sandbox)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def kill(self) -> None:
        if self.proc is not None and hasattr(os, "killpg"):
            try:  # the worker and what its user code forked (a child left looping would outlive it)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.conn is not None:
            self.conn.close()
        if self.root is not None:
            import shutil

            shutil.rmtree(self.root, ignore_errors=True)
        self.proc = self.conn = self.root = None

    def importing(self) -> str | None:
        """The module the worker was importing (for a job) when asked, else None."""
        phase, module = read_trail(self.trail) if self.trail else ("", "")
        return (module or "?") if phase == "import" else None

    def describe_death(self) -> str:
        code = self.proc.wait(5) if self.proc else None
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"


class CompileService:
    """`submit(job) -> Future[Artifacts]`. Thread-safe. Workers start lazily, on the first job. Queued jobs run by
    `job.priority`, then in submission order."""

    def __init__(self, max_workers: int = 2, memory_mb: int = DEFAULT_MEMORY_MB, python: str | None = None) -> None:
        self.max_workers = max(1, int(max_workers))
        self.python = python or sys.executable  # the workers' interpreter (compare runs another Triton's)
        self.memory_mb = int(memory_mb)  # resident memory per worker, in MB; 0 = unbounded
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._running: dict[int, tuple[CompileJob, _Worker]] = {}
        self._cancelled: set[int] = set()
        self._started: dict[int, float] = {}
        self._closed = False
        self.restarts = 0

    # ------------------------------------------------------------ public
    def submit(self, job: CompileJob) -> Future:
        if self._closed:
            raise RuntimeError("compile service is shut down")
        fut: Future = Future()
        fut.job = job  # type: ignore[attr-defined]
        self._ensure_threads()
        self._put(job.priority, job, fut)
        return fut

    def _put(self, priority: int, job: CompileJob | None, fut: Future | None) -> None:
        self._queue.put((priority, next(_order), job, fut))

    def cancel(self, group: str, kill_after: float = 2.0) -> int:
        """Cancel a group's jobs: queued ones never start; a running one resolves as Cancelled (its result is
        dropped). Its worker is killed only when the job has run longer than `kill_after` seconds — restarting a
        worker costs a triton import, more than letting a short compile finish unseen. Returns how many jobs were cancelled."""
        n = 0
        with self._lock:
            pending = []
            while True:
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for item in pending:
                _, _, job, fut = item
                if job is not None and job.group == group:
                    fut.cancel()
                    n += 1
                else:
                    self._queue.put(item)
            now = time.perf_counter()
            for job_id, (job, w) in list(self._running.items()):
                if job.group == group:
                    self._cancelled.add(job_id)
                    if now - self._started.get(job_id, now) > kill_after:
                        w.kill()
                    n += 1
        return n

    def shutdown(self) -> None:
        """Stop now: queued jobs are cancelled, running ones killed (they resolve as Cancelled), threads joined."""
        self._closed = True
        with self._lock:
            while True:
                try:
                    _, _, _, fut = self._queue.get_nowait()
                except queue.Empty:
                    break
                if fut is not None:
                    fut.cancel()
            for job_id, (_, w) in list(self._running.items()):
                self._cancelled.add(job_id)
                w.kill()
        for _ in self._threads:
            self._put(URGENT - 1, None, None)
        for t in self._threads:
            t.join(10)

    def __enter__(self) -> "CompileService":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # ------------------------------------------------------------ internals
    def _ensure_threads(self) -> None:
        with self._lock:
            while len(self._threads) < self.max_workers:
                t = threading.Thread(target=self._loop, daemon=True, name=f"tritonlens-pool-{len(self._threads)}")
                self._threads.append(t)
                t.start()

    def _loop(self) -> None:
        w = _Worker(self.python)
        try:
            while True:
                _, _, job, fut = self._queue.get()
                if job is None:
                    return
                if not fut.set_running_or_notify_cancel():
                    continue
                # Running from here on, also while its worker starts (a triton import: seconds), so that a cancel
                # in that time finds it.
                with self._lock:
                    self._running[job.id] = (job, w)
                    self._started[job.id] = time.perf_counter()
                try:
                    need, cwd = job_reads(job), job_cwd(job)
                    if w.alive and not w.covers(need, cwd):
                        w.kill()  # its reads were fixed at its start: it starts again with this workspace too
                    if not w.alive:
                        w.start(need, cwd)
                    if job.id in self._cancelled:
                        fut.set_result(_failed(job, "Cancelled", CANCELLED))
                    else:
                        fut.set_result(self._run(w, job))
                except BaseException as exc:  # noqa: BLE001 — a job must always resolve
                    fut.set_result(_failed(job, "Cancelled", CANCELLED) if job.id in self._cancelled
                                   else _failed(job, "InternalError", f"{type(exc).__name__}: {exc}"))
                finally:
                    with self._lock:
                        self._running.pop(job.id, None)
                        self._started.pop(job.id, None)
                        self._cancelled.discard(job.id)
        finally:
            w.kill()

    def _run(self, w: _Worker, job: CompileJob) -> Artifacts:
        start = time.perf_counter()
        conn = w.conn
        bound = self.memory_mb << 20
        conn.send(job.to_wire())
        deadline = start + job.timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                importing = w.importing()
                w.kill()
                self.restarts += 1
                if importing:
                    return _failed(job, "ImportTimeout", import_timeout_message(job, importing))
                return _failed(job, "Timeout", f"the compile did not finish in {job.timeout:g} s, tritonlens's "
                                               "time-out; the worker was stopped (raise tritonlens.compileTimeout "
                                               "or `check --timeout` if the kernel is big)")
            try:
                if conn.poll(min(left, POLL_S)):
                    result = wire.artifacts_from_wire(conn.recv().get("result"))
                    if (bound and resident_bytes(w.pid) > 0.9 * bound) or left_behind(w.pid):
                        # what the job left (memory, processes its module code started) would outlive it and count
                        # against the next one: it ends with its worker, which starts afresh
                        w.kill()
                    if job.id in self._cancelled:
                        return _failed(job, "Cancelled", CANCELLED)
                    return result
            except (EOFError, OSError):
                pass
            except ValueError as exc:  # not an answer a worker makes: whatever wrote it, the worker is done
                w.kill()
                self.restarts += 1
                return _failed(job, "WorkerCrash", f"the compile worker sent a malformed answer ({exc}) for "
                                                   f"{job.qualname}; it was stopped and replaced")
            if bound and w.alive and (used := resident_bytes(w.pid)) > bound:
                importing = w.importing()
                w.kill()
                self.restarts += 1
                return _failed(job, "MemoryLimit", memory_limit_message(self.memory_mb, used, importing))
            if not w.alive:
                if job.id in self._cancelled:
                    return _failed(job, "Cancelled", CANCELLED)
                why = w.describe_death()
                importing = w.importing()
                w.kill()
                self.restarts += 1
                if importing:
                    return _failed(job, "ImportCrash",
                                   f"the worker process crashed ({why}) while importing `{importing}` for "
                                   f"{os.path.basename(job.path)}, before any compile; the worker was restarted")
                return _failed(job, "WorkerCrash",
                               f"the compiler process crashed ({why}) while compiling {job.qualname}; "
                               "the worker was restarted")


def job_cwd(job: CompileJob) -> str:
    """The working directory a job's imports get: this process's, as `python -m` here would have given — unless it
    lies outside the job's workspace (a language server started in a folder of its own, the workspace named by the
    client), where the workspace is."""
    here = os.getcwd()
    root = job.workspace_root
    if root and not sandbox.within(os.path.realpath(here), os.path.realpath(root)):
        return os.path.abspath(root)
    return here


def job_reads(job: CompileJob) -> tuple[str, ...]:
    """The folders a job's imports read from (the worker puts them on sys.path): its workspace, and the file's
    package root and folder where they lie outside it."""
    real = os.path.realpath
    roots = [real(job.workspace_root)] if job.workspace_root else []
    if job.path and not job.path.startswith("<"):
        path = os.path.abspath(job.path)
        for extra in (_package_of(path)[1], os.path.dirname(path)):
            if not any(sandbox.within(real(extra), r) for r in roots):
                roots.append(real(extra))
    return tuple(roots)


def _relay(stream) -> None:
    """What a worker prints (its imports' chatter, user code's prints) goes on to our stderr — in `tritonlens serve`
    stdout is the LSP channel — line by line, with control characters escaped: a module's print must not drive the
    terminal (set its title, clear the screen)."""
    def run() -> None:
        with stream:
            for raw in iter(lambda: stream.readline(1 << 16), b""):
                text = printable(raw.decode("utf-8", "replace").rstrip("\r\n"))
                try:
                    sys.stderr.write(text + "\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass

    threading.Thread(target=run, daemon=True, name="tritonlens-worker-output").start()


def import_timeout_message(job: CompileJob, module: str) -> str:
    return (f"importing `{module}` for {os.path.basename(job.path)} did not finish in {job.timeout:g} s; the worker "
            "was stopped — code that runs at import waits (for a network, which the sandbox does not give, a lock "
            "or input) or does not end: make the import return promptly")


def memory_limit_message(memory_mb: int, used: int, importing: str | None = None) -> str:
    during = f" while importing `{importing}`" if importing else ""
    return (f"the compile worker's resident memory reached {used >> 20} MB{during}, past tritonlens's bound of "
            f"{memory_mb} MB "
            "per worker; the worker was stopped and replaced (raise tritonlens.compileMemoryMB or `check "
            "--memory-mb`, or shrink the BLOCK sizes)")


def descendants(pid: int | None) -> list[int]:
    """The processes below `pid` (children of any of its threads, theirs, ...), from /proc; [] where /proc cannot
    say. A confined process is its children's subreaper (sandbox.child_subreaper): a double-forked grandchild is
    among them, not lost to init."""
    found: list[int] = []
    todo, seen = [pid], {pid}
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/children", "rb") as f:
                    children = [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                continue
            for c in children:
                if c not in seen:
                    seen.add(c)
                    found.append(c)
                    todo.append(c)
    return found


def resident_bytes(pid: int | None) -> int:
    """Resident memory of process `pid` and all its descendants (the tools it runs: ptxas; what module code forked,
    orphans included), in bytes; 0 where /proc cannot say (not Linux, or the process is gone)."""
    if pid is None:
        return 0
    total = 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    for p in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def left_behind(pid: int | None) -> list[int]:
    """The live (not zombie) descendants of a worker between jobs: what a job's module code started and left
    running. A job ends with everything it started, so a worker that has any is stopped with them (`kill`)."""
    alive = []
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            alive.append(p)
    return alive


def _failed(job: CompileJob, kind: str, message: str) -> Artifacts:
    from ..model import Spec

    spec = Spec.from_json(job.spec)
    return Artifacts(kernel=job.qualname, spec_key=spec.key(), target=spec.target,
                     error=CompileError(kind, message, None, None, job.path))


def default_workers() -> int:
    return max(1, min(4, (os.cpu_count() or 2) - 1)) if (os.cpu_count() or 2) > 2 else 2
