"""How the language server behaves in real use: latency, memory and robustness, measured against a real
`tritonlens serve` process over stdio. Prints a table; asserts nothing (the tests check behaviour, this measures it).

    python bench/lsp_latency.py            # all cases (a few minutes on a 2-core CPU)
    python bench/lsp_latency.py hover big  # only the cases whose name contains one of these words

Every run uses a fresh artefact cache (TRITONLENS_CACHE_DIR), so "cold" means cold: worker start, triton import,
compile. Compiles for cuda:90 on the CPU; no GPU needed.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = [sys.executable, "-c", "from tritonlens.lsp.server import main; main()"]
OPTIONS = {"target": "cuda:90", "maxWorkers": 2, "compileTimeout": 120}
ROWS: list[tuple[str, str, str]] = []


def row(case: str, value: str, note: str = "") -> None:
    ROWS.append((case, value, note))
    print(f"  {case}: {value}  {note}", flush=True)


# ---------------------------------------------------------------- a client that timestamps what it receives
class Client:
    def __init__(self) -> None:
        self.lc = LanguageClient("tritonlens-bench", "0")
        self.events: list[tuple[float, str, Any]] = []  # (time, kind, payload)
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.logs: list[str] = []
        lc = self.lc

        @lc.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diags(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = params.diagnostics
            self.events.append((time.perf_counter(), "diagnostics", params))

        @lc.feature("tritonlens/status")
        def status(params: Any) -> None:
            self.events.append((time.perf_counter(), "status", params))

        @lc.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)

        @lc.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: Any) -> None:
            return None

        @lc.feature(types.PROGRESS)
        def progress(params: Any) -> None:
            pass

    async def start(self, root: str, options: dict[str, Any] | None = None, env: dict[str, str] | None = None):
        await self.lc.start_io(*SERVER, env=env, cwd=root)
        self.proc = self.lc._server
        asyncio.get_running_loop().create_task(self._drain())
        uri = "file://" + root
        await self.lc.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
            root_uri=uri, workspace_folders=[types.WorkspaceFolder(uri=uri, name="ws")],
            initialization_options=OPTIONS if options is None else options))
        self.lc.initialized(types.InitializedParams())

    async def _drain(self) -> None:
        while self.proc.stderr and await self.proc.stderr.readline():
            pass

    def open(self, uri: str, text: str, version: int = 1) -> float:
        t = time.perf_counter()
        self.lc.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
        return t

    def change(self, uri: str, text: str, version: int) -> None:
        self.lc.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))

    def save(self, uri: str) -> float:
        t = time.perf_counter()
        self.lc.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        return t

    def close(self, uri: str) -> None:
        self.lc.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    async def first(self, kind: str, since: float, pred: Callable[[Any], bool] = lambda p: True,
                    timeout: float = 300) -> float | None:
        """Seconds from `since` to the first event of `kind` after it that satisfies `pred`."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for t, k, p in self.events:
                if k == kind and t >= since and pred(p):
                    return t - since
            await asyncio.sleep(0.005)
        return None

    async def idle(self, since: float, timeout: float = 300) -> float | None:
        """Seconds from `since` until the server reports idle after having compiled."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            seen = [(t, _status(p)) for t, k, p in self.events if k == "status" and t >= since]
            if any(s["state"] == "compiling" for _, s in seen) and seen[-1][1]["state"] == "idle":
                return seen[-1][0] - since
            await asyncio.sleep(0.005)
        return None

    def compiles_started(self, since: float) -> int:
        return sum(1 for t, k, p in self.events if k == "status" and t >= since and _status(p)["state"] == "compiling")

    async def request(self, method: str, params: Any) -> tuple[float, Any]:
        t = time.perf_counter()
        result = await self.lc.protocol.send_request_async(method, params)
        return time.perf_counter() - t, result

    async def hover(self, uri: str, line: int, col: int) -> tuple[float, Any]:
        t = time.perf_counter()
        h = await self.lc.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(line, col)))
        return time.perf_counter() - t, h

    def tree(self) -> list[int]:
        return descendants(self.proc.pid)

    async def stop(self, timeout: float = 30) -> float:
        """shutdown + exit; seconds until the server process is gone."""
        t = time.perf_counter()
        try:
            await asyncio.wait_for(self.lc.shutdown_async(None), timeout)
        except Exception:  # noqa: BLE001
            pass
        self.lc.exit(None)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            return float("inf")
        finally:
            self.lc._stop_event.set()
        return time.perf_counter() - t


def _status(p: Any) -> dict[str, Any]:
    return p if isinstance(p, dict) else p._asdict()


def descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout.split("\n")
    kids: dict[int, list[int]] = {}
    for line in out:
        if line.strip():
            a, b = map(int, line.split())
            kids.setdefault(b, []).append(a)
    found, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def alive(pids: list[int]) -> list[int]:
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().split()[2] != "Z":
                    out.append(p)
        except OSError:
            pass
    return out


def rss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def ms(s: float | None) -> str:
    return "—" if s is None else ("∞" if s == float("inf") else f"{s * 1000:.0f} ms")


# ---------------------------------------------------------------- kernels
BIG = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: x_ptr=*fp32, out_ptr=*fp32, n=i32, BLOCK=8192, num_warps=1
    @triton.jit
    def big_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        y = tl.sin(x) * tl.cos(x) + tl.exp(x)
        tl.store(out_ptr + offs, y, mask=offs < n)
    ''')

ONE = '''
# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=256, num_warps=4
@triton.jit
def k{i}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * {i} + 1, mask=offs < n)
'''
TWENTY = "import triton\nimport triton.language as tl\n" + "".join(ONE.format(i=i) for i in range(20))

HANG = textwrap.dedent('''\
    import time
    import triton
    import triton.language as tl

    time.sleep(600)


    # tritonlens: x_ptr=*fp32, BLOCK=128
    @triton.jit
    def slow_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
    ''')


def write(root: str, name: str, text: str | bytes) -> tuple[str, str]:
    path = os.path.join(root, name)
    with open(path, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
    return path, "file://" + path


# ---------------------------------------------------------------- cases
async def matmul(root: str, env) -> None:
    c = Client()
    await c.start(root, env=env)
    text = open(os.path.join(REPO, "examples", "matmul.py")).read()
    path, uri = write(root, "matmul.py", text)
    t = c.open(uri, text)
    row("matmul.py cold (server start, worker start, compile): open → first diagnostics", ms(await c.first("diagnostics", t)))
    row("matmul.py cold: open → idle", ms(await c.idle(t)), f"RSS server+workers {rss_mb([c.proc.pid] + c.tree()):.0f} MB")

    edited = text.replace("    pid = tl.program_id(axis=0)", "    pid = tl.program_id(axis=0)  # edited", 1)
    write(root, "matmul.py", edited)
    c.change(uri, edited, 2)
    t = c.save(uri)
    row("matmul.py warm workers, kernel edited: didSave → first diagnostics", ms(await c.first("diagnostics", t)))
    row("matmul.py warm workers, kernel edited: didSave → idle", ms(await c.idle(t)))
    t = c.save(uri)
    row("matmul.py unchanged: didSave → diagnostics", ms(await c.first("diagnostics", t)))
    c.close(uri)
    await asyncio.sleep(0.2)
    t = c.open(uri, edited, 3)
    row("matmul.py reopened (artefact cache hit): open → diagnostics", ms(await c.first("diagnostics", t)))
    await c.idle(t)

    lines = edited.splitlines()
    dot = next(i for i, s in enumerate(lines) if "tl.dot(" in s)
    deff = next(i for i, s in enumerate(lines) if s.startswith("def matmul_kernel"))
    for label, line in (("body line (tl.dot)", dot), ("def line (metrics table)", deff)):
        times = []
        for _ in range(10):
            dt, h = await c.hover(uri, line, 8)
            times.append(dt)
        size = len(h.contents.value) if h else 0
        row(f"hover on matmul {label}", f"first {ms(times[0])}, median {ms(statistics.median(times[1:]))}",
            f"{size} chars")
    # A user's first hover comes a moment after the diagnostics, not in the same millisecond: recompiled, then a pause,
    # the first hover has only what is still lazy on the hover path to wait for (the SASS is made as results arrive).
    again = edited.replace("  # edited", "  # edited again", 1)
    write(root, "matmul.py", again)
    c.change(uri, again, 4)
    t = c.save(uri)
    await c.idle(t)
    await asyncio.sleep(1.0)
    times = []
    for _ in range(10):
        dt, h = await c.hover(uri, dot, 8)
        times.append(dt)
    row("hover on matmul body line, 1 s after a recompile", f"first {ms(times[0])}, median "
        f"{ms(statistics.median(times[1:]))}", f"{len(h.contents.value) if h else 0} chars")
    dt, lenses = await c.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    row("codeLens on matmul.py", ms(dt), f"{len(lenses)} lenses")
    row("memory after matmul", f"{rss_mb([c.proc.pid]):.0f} MB server", f"{rss_mb(c.tree()):.0f} MB workers")
    await c.stop()


async def big(root: str, env) -> None:
    c = Client()
    await c.start(root, env=env)
    path, uri = write(root, "big.py", BIG)
    t = c.open(uri, BIG)
    row("big PTX kernel (BLOCK 8192, 1 warp): open → idle", ms(await c.idle(t)))
    load = 8  # 0-based: x = tl.load(...)
    times = []
    for stage in ("ptx", "ptx", "ptx", "sass", "ttgir"):
        dt, doc = await c.request("tritonlens/irDocument", {"uri": uri, "kernel": None, "stage": stage, "line": load})
        d = doc if isinstance(doc, dict) else (doc._asdict() if doc is not None else {})
        times.append((stage, dt, len(d.get("text", "")), len(d.get("ranges", []))))
    for i, (stage, dt, size, nr) in enumerate(times):
        row(f"irDocument {stage} #{i + 1} (line {load})", ms(dt), f"{size / 1e6:.2f} MB text, {nr} ranges")
    await follow_cursor(c, uri)
    hv = []
    for _ in range(5):
        dt, h = await c.hover(uri, load, 8)
        hv.append(dt)
    row("hover on the big kernel's load line", f"first {ms(hv[0])}, median {ms(statistics.median(hv[1:]))}")
    row("memory after big kernel", f"{rss_mb([c.proc.pid]):.0f} MB server", f"{rss_mb(c.tree()):.0f} MB workers")
    await c.stop()


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


async def follow_cursor(c: Client, uri: str) -> None:
    """What the VS Code client does while an IR tab is visible and the cursor moves over the kernel's body:
    one irDocument per line change. The old request (no `have`) gets the whole text every time; naming the held
    text gets `unchanged` and only the ranges. Bytes: the result as JSON (what goes on the wire, give or take
    whitespace); ms: the round trip (server encode, transfer, client decode)."""
    body = [7, 8, 9, 10]  # 0-based: offs, load, sin/cos/exp, store
    for stage in ("ptx", "sass"):
        _, held = await c.request("tritonlens/irDocument", {"uri": uri, "kernel": "big_kernel", "stage": stage,
                                                            "line": body[0]})
        held = _plain(held)
        if not held or "text" not in held:
            row(f"cursor follow on the big {stage.upper()}", "no document")
            continue
        size = f"{len(held['text'].encode()) / 1e6:.1f} MB {stage.upper()}"
        have = {"path": held["path"], "hash": held["hash"]} if "hash" in held else None
        for label, extra in (("full text per move (no have)", {}), ("have → unchanged", {"have": have})):
            if extra and have is None:
                row(f"cursor follow on the {size}, {label}", "server gives no hash")
                continue
            times, sizes = [], []
            for i in range(12):
                params = {"uri": uri, "kernel": "big_kernel", "stage": stage, "line": body[(i + 1) % len(body)],
                          **extra}
                dt, doc = await c.request("tritonlens/irDocument", params)
                times.append(dt)
                sizes.append(len(json.dumps(_plain(doc)).encode()))
            row(f"cursor follow on the {size}, {label}", f"median {ms(statistics.median(times))}",
                f"{statistics.median(sizes):,.0f} bytes per reply, 12 moves")


async def typing(root: str, env) -> None:
    c = Client()
    await c.start(root, {**OPTIONS, "compileOn": "change"}, env=env)
    text = TWENTY.split("\n# tritonlens", 2)
    text = text[0] + "\n# tritonlens" + text[1]  # the first kernel only
    path, uri = write(root, "typing.py", text)
    t = c.open(uri, text)
    await c.idle(t)
    t = time.perf_counter()
    for v in range(2, 52):
        text = text.replace("x * 0 + 1", "x * 0 + 1 ", 1)
        c.change(uri, text.replace("+ 1", f"+ {v}"), v)
        await asyncio.sleep(0.1)
    await asyncio.sleep(3)
    row("compileOn change: 50 didChange in 5 s → compiles started", str(c.compiles_started(t)))
    await c.stop()


async def twenty(root: str, env) -> None:
    c = Client()
    await c.start(root, env=env)
    path, uri = write(root, "twenty.py", TWENTY)
    t = c.open(uri, TWENTY)
    first = await c.first("diagnostics", t)
    done = await c.idle(t)
    n = sum(1 for _, k, p in c.events if k == "diagnostics" and p.uri == uri)
    row("file with 20 kernels: open → first / all diagnostics", f"{ms(first)} / {ms(done)}", f"{n} publishes")
    dt, lenses = await c.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    row("codeLens on 20 kernels", ms(dt), f"{len(lenses)} lenses")
    await c.stop()


async def hang(root: str, env) -> None:
    c = Client()
    await c.start(root, {**OPTIONS, "moduleExecution": "full", "compileTimeout": 5}, env=env)
    small = BIG.replace("BLOCK=8192, num_warps=1", "BLOCK=128, num_warps=4")
    _, other = write(root, "other.py", small)
    t = c.open(other, small)
    await c.idle(t)
    path, uri = write(root, "hang.py", HANG)
    t = c.open(uri, HANG)
    await asyncio.sleep(1.0)
    dt, h = await c.hover(other, 8, 8)
    row("hover on another file while a module hangs the compiler", ms(dt), "answered" if h else "no hover")
    got = await c.first("diagnostics", t, lambda p: p.uri == uri and any("Timeout" in d.message or "did not finish"
                                                                        in d.message for d in p.diagnostics), 60)
    row("module-level time.sleep(600), compileTimeout 5: open → timeout diagnostic", ms(got))
    t = time.perf_counter()
    c.change(other, small.replace("+ tl.exp(x)", "+ tl.exp(x) * 2"), 2)
    c.save(other)
    row("after the timeout: a save elsewhere → diagnostics", ms(await c.first("diagnostics", t,
                                                                         lambda p: p.uri == other)))
    await c.stop()


async def bad_files(root: str, env) -> None:
    c = Client()
    await c.start(root, env=env)
    latin = "# caf\xe9\n" + BIG.replace("BLOCK=8192, num_warps=1", "BLOCK=128, num_warps=4")
    path, uri = write(root, "latin1.py", latin.encode("latin-1"))
    t = c.open(uri, latin)
    got = await c.idle(t, 120)
    row("non-UTF-8 file on disk (latin-1): open → idle", ms(got),
        f"{len(c.diagnostics.get(uri, []))} diagnostics")
    path, uri = write(root, "gone.py", BIG.replace("BLOCK=8192, num_warps=1", "BLOCK=64, num_warps=4"))
    os.remove(path)
    t = c.open(uri, BIG.replace("BLOCK=8192, num_warps=1", "BLOCK=64, num_warps=4"))
    got = await c.idle(t, 120)
    row("file deleted on disk before open: open → idle", ms(got), f"{len(c.diagnostics.get(uri, []))} diagnostics")
    dt, h = await c.hover(uri, 8, 8)
    row("hover still answers afterwards", ms(dt), "with content" if h else "empty")
    await c.stop()


async def close_during(root: str, env) -> None:
    c = Client()
    await c.start(root, env=env)
    path, uri = write(root, "twenty.py", TWENTY)
    t = c.open(uri, TWENTY)
    await asyncio.sleep(1.0)
    c.close(uri)
    closed = time.perf_counter()
    await asyncio.sleep(8)
    late = [p for tt, k, p in c.events if k == "diagnostics" and tt > closed + 0.05 and p.uri == uri]
    row("didClose during a compile: publishes after the close", str(len(late)),
        "last one empty" if not late or not late[-1].diagnostics else "STALE DIAGNOSTICS")
    await c.stop()


async def exit_while(root: str, env) -> None:
    sleeping = {**OPTIONS, "moduleExecution": "full", "compileTimeout": 600}

    async def gone(c: Client) -> float:
        t = time.perf_counter()
        try:
            await asyncio.wait_for(c.proc.wait(), 30)
        except asyncio.TimeoutError:
            c.proc.kill()
            return float("inf")
        finally:
            c.lc._stop_event.set()
        return time.perf_counter() - t

    async def sigterm(c: Client) -> float:
        c.proc.terminate()
        return await gone(c)

    async def eof(c: Client) -> float:
        c.proc.stdin.close()
        return await gone(c)

    for label, how, options, text in (("shutdown+exit, 20 kernels queued", Client.stop, OPTIONS, TWENTY),
                                      ("shutdown+exit, module sleeping 600 s", Client.stop, sleeping, HANG),
                                      ("SIGTERM, module sleeping 600 s", sigterm, sleeping, HANG),
                                      ("client gone (stdin closed), module sleeping 600 s", eof, sleeping, HANG)):
        c = Client()
        await c.start(root, options, env=env)
        path, uri = write(root, "exit.py", text)
        c.open(uri, text)
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline and len(c.tree()) < 2:
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.0)
        kids = c.tree()
        dt = await how(c)
        await asyncio.sleep(0.5)
        left = alive(kids)
        row(f"{label} → process gone", ms(dt),
            f"{len(kids)} children before, {len(left)} alive after")
        for p in left:
            try:
                os.kill(p, 9)
            except OSError:
                pass


CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(REPO, "..", "shared", "corpus")


async def captured(root: str, env) -> None:
    """Liger-Kernel's cross_entropy.py, whose kernel has 134 captured specs (its own tests on an H200): the editor
    compiles a representative set; a saved edit of the kernel, once workers are warm, and an unchanged save."""
    src = os.path.join(CORPUS, "liger-kernel", "src")
    if not os.path.isdir(os.path.join(src, ".tritonlens")):
        row("captured specs", "skipped", f"no corpus at {os.path.normpath(src)} (TRITONLENS_CORPUS)")
        return
    ws = os.path.join(root, "src")
    shutil.copytree(src, ws, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _, files in os.walk(ws):  # the corpus is read-only; the copy is edited
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    c = Client()
    await c.start(ws, env=env)
    path = os.path.join(ws, "liger_kernel", "ops", "cross_entropy.py")
    uri = "file://" + path
    text = open(path).read()
    t = c.open(uri, text)
    row("cross_entropy.py (134 captured specs) cold: open → first diagnostics", ms(await c.first("diagnostics", t)))
    row("cross_entropy.py cold: open → idle", ms(await c.idle(t, timeout=600)),
        f"RSS server+workers {rss_mb([c.proc.pid] + c.tree()):.0f} MB")
    line = "    program_id = tl.program_id(0).to(tl.int64)"
    assert line in text, "cross_entropy.py changed: pick another line of the kernel to edit"
    edited = text.replace(line, line + "  # edited", 1)
    write(ws, os.path.join("liger_kernel", "ops", "cross_entropy.py"), edited)
    c.change(uri, edited, 2)
    t = c.save(uri)
    row("cross_entropy.py warm workers, kernel edited: didSave → first diagnostics", ms(await c.first("diagnostics", t)))
    row("cross_entropy.py warm workers, kernel edited: didSave → idle", ms(await c.idle(t, timeout=600)))
    await asyncio.sleep(0.5)
    t = c.save(uri)
    row("cross_entropy.py unchanged: didSave → diagnostics", ms(await c.first("diagnostics", t)))
    await asyncio.sleep(3)
    # a check run (status "compiling") is started on every save; its compiles are cache hits (captures_scale.py
    # counts the compile jobs of an unchanged re-check: 0)
    row("cross_entropy.py unchanged save: check runs started", str(c.compiles_started(t)))
    await c.stop()


CASES = {"matmul": matmul, "big": big, "typing": typing, "twenty": twenty, "hang": hang, "badfiles": bad_files,
         "close": close_during, "exit": exit_while, "captured": captured}


async def main(names: list[str]) -> None:
    for name, case in CASES.items():
        if names and not any(n in name for n in names):
            continue
        root = tempfile.mkdtemp(prefix="tritonlens-bench-")
        cache = tempfile.mkdtemp(prefix="tritonlens-bench-cache-")
        with open(os.path.join(root, "pyproject.toml"), "w") as f:
            f.write("[project]\nname = 'bench'\n")
        env = {**os.environ, "TRITONLENS_CACHE_DIR": cache}
        print(f"[{name}]", flush=True)
        try:
            await case(root, env)
        except Exception as exc:  # noqa: BLE001
            row(name, f"FAILED: {type(exc).__name__}: {exc}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(cache, ignore_errors=True)
    width = max(len(c) for c, _, _ in ROWS)
    vwidth = max(len(v) for _, v, _ in ROWS)
    print()
    print(f"| {'case'.ljust(width)} | {'result'.ljust(vwidth)} | note |")
    print(f"|{'-' * (width + 2)}|{'-' * (vwidth + 2)}|------|")
    for case, value, note in ROWS:
        print(f"| {case.ljust(width)} | {value.ljust(vwidth)} | {note} |")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
