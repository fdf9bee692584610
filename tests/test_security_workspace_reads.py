"""Every file tritonlens reads from a workspace is a regular file inside it, opened without following a link out of
it and without blocking, and bounded in size (`reads`). The attacks of a repository nobody vetted, against the real
CLI and language server: a committed link in `.tritonlens/baseline/` to a secret (printed as the baseline's side of
`diff --stage`), to `/dev/zero` (read until memory ran out) or a FIFO; a source linked to `/proc/self/fd/0` (the
check, and the server, read their own stdin and hung; the server then ignored `exit`). And a scan that no module
reads a file but through `reads`, a short list of files that are not the workspace's aside."""
from __future__ import annotations

import ast
import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import pytest_lsp
import tritonlens
from conftest import EXAMPLES
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import SERVER, by_code, open_doc, settled, start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="links to /proc/self/fd are Linux's")

TRITONLENS = [sys.executable, "-m", "tritonlens"]
CUDA = ["--target", "cuda:90", "--workers", "1"]
SECRET = "TRITONLENS-TEST-SECRET-7f3a9c"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "k.py")
    return ws


def _run(ws: Path, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([*TRITONLENS, *argv], cwd=ws, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_diff_stage_reads_no_baseline_file_through_a_link_out_of_the_workspace(tmp_path):
    """The baseline's PTX of the spec replaced by a link to a secret outside the workspace, to /dev/zero, and by a
    FIFO: `diff --stage ptx` ends at once, says which file it did not read and why, and prints none of it."""
    ws = _workspace(tmp_path)
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    saved = _run(ws, "baseline", "save", "k.py", *CUDA)
    assert saved.returncode == 0, saved.stderr
    ptx = next((ws / ".tritonlens" / "baseline").rglob("*.ptx"))
    k = ws / "k.py"
    k.write_text(k.read_text().replace("n_elements=i32%16", "n_elements=i32"))  # the spec changes: its PTX is shown
    for target, why in ((tmp_path / "secret.txt", "is outside the workspace"),
                        ("/dev/zero", "is outside the workspace"), (None, "not a regular file")):
        ptx.unlink()
        if target is None:
            os.mkfifo(ptx)
        else:
            ptx.symlink_to(target)
        t0 = time.monotonic()
        run = _run(ws, "diff", "k.py", "--stage", "ptx", *CUDA, timeout=120)
        out = run.stdout + run.stderr
        assert run.returncode == 0, out
        assert SECRET not in out and "MemoryError" not in out
        assert f"the baseline's ptx text of this spec is not read: {ptx}" in out and why in out, out
        assert time.monotonic() - t0 < 60


def test_check_never_reads_its_stdin_through_a_source_file(tmp_path):
    """A kernel file's helper module linked to /proc/self/fd/0, and a FIFO named like a module, with the check's
    stdin a pipe held open (as a CI runner's may be): the check ends with a clear message for each and checks the
    rest."""
    ws = _workspace(tmp_path)
    text = (ws / "k.py").read_text()
    (ws / "k.py").write_text(text.replace("import triton.language as tl\n",
                                          "import triton.language as tl\nfrom helpers import SCALE  # noqa\n"))
    (ws / "helpers.py").symlink_to("/proc/self/fd/0")
    os.mkfifo(ws / "pipe.py")
    with open(tmp_path / "out.txt", "w+") as out:
        proc = subprocess.Popen([*TRITONLENS, "check", ".", *CUDA], cwd=ws, stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
        try:
            code = proc.wait(timeout=180)
        finally:
            proc.kill()
            proc.stdin.close()
        out.seek(0)
        said = out.read()
    assert code in (0, 1), said
    assert f"{ws / 'helpers.py'} is outside the workspace ({ws}); not read" in said, said
    assert f"{ws / 'pipe.py'}: not a regular file; not read" in said, said
    assert "k.py::add_kernel" in said, said  # the kernel itself is checked


# ---------------------------------------------------------------- the language server
@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    server = lsp_client._server  # the server's process, as pytest-lsp keeps it
    if server is not None and server.returncode is None:
        server.kill()  # a server that ignored `exit` (the test has failed): not left behind


async def test_the_server_never_reads_its_stdin_through_a_workspace_file(client: LanguageClient, tmp_path):
    """The server's stdin is its JSON-RPC stream: a helper module linked to /proc/self/fd/0 read it, the server hung
    and ignored `exit`. Now the kernel is compiled, a hover is answered, and `shutdown` then `exit` end the
    process."""
    ws = _workspace(tmp_path)
    text = (ws / "k.py").read_text().replace("import triton.language as tl\n",
                                             "import triton.language as tl\nfrom helpers import SCALE  # noqa\n")
    (ws / "k.py").write_text(text)
    (ws / "helpers.py").symlink_to("/proc/self/fd/0")
    uri = (ws / "k.py").as_uri()
    await start(client, ws)
    open_doc(client, uri, text)
    diags = await settled(client, uri, timeout=90)
    assert not by_code(diags, "SRC001"), diags
    load = next(n for n, ln in enumerate(text.split("\n")) if "tl.load(x_ptr" in ln)
    hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(load, 10))), 30)
    assert hover is not None and "tt.load" in hover.contents.value
    await asyncio.wait_for(client.shutdown_session(), 30)  # shutdown, exit, and the process ends
    assert client._server.returncode == 0


# ---------------------------------------------------------------- every read goes through reads
PACKAGE = Path(tritonlens.__file__).parent

# (module, function) -> why the file it reads is not a workspace file; everything else reads through `reads`
NOT_THE_WORKSPACE = {
    ("reads.py", "open_file"): "the helper itself",
    ("writes.py", "_folder"): "the helper of writes: a folder descriptor",
    ("writes.py", "_read"): "the helper of writes: a file it is about to replace, through its checked folder",
    ("checks/registry.py", "rule_doc"): "the package's own rule pages",
    ("report/html.py", "load_grammars"): "the package's own grammars",
    ("report/html.py", "_asset"): "the package's own scripts and styles",
    ("doctor.py", "torch_cuda_version"): "the installed torch's version file",
    ("compiler/cache.py", "_read"): "tritonlens's artefact cache (the user's cache folder)",
    ("compiler/cache.py", "add_text"): "tritonlens's artefact cache",
    ("compiler/cache.py", "get_analysis"): "tritonlens's artefact cache",
    ("compiler/pool.py", "descendants"): "/proc of the compile workers",
    ("compiler/pool.py", "resident_bytes"): "/proc of the compile workers",
    ("compiler/pool.py", "left_behind"): "/proc of the compile workers",
    ("compiler/sandbox.py", "allow"): "a folder descriptor for the sandbox's rules",
    ("compiler/sandbox.py", "site_paths"): "the interpreter's own .pth files",
    ("compiler/worker.py", "read_trail"): "a worker's trail file in tritonlens's temporary folder",
    ("compare/envs.py", "_ready"): "compare's environments in the user's cache",
    ("compare/envs.py", "_launcher"): "compare's environments in the user's cache",
    ("compare/envs.py", "verify"): "the Triton wheel compare installed in the user's cache",
    ("gpu/autocapture.py", "_read"): "the outcome file of a run, in tritonlens's temporary folder",
    ("gpu/autocapture.py", "_tail"): "the log of a run, in tritonlens's temporary folder",
    ("gpu/bench.py", "_child_main"): "the job file the parent wrote",
    ("gpu/profile.py", "run_ncu"): "the log ncu wrote for the parent",
    ("gpu/profile.py", "_replay_main"): "the job file the parent wrote",
    ("gpu/trials.py", "__init__"): "the plan file the parent wrote",
    ("gpu/trials.py", "read_events"): "the events file the parent named for the run",
}
_WRITES = ("w", "a", "x", "+", "O_WRONLY", "O_RDWR", "O_CREAT")


def file_reads(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of each call that opens a file to read: `open()`, `io.open`, `os.open` without a
    write flag, and a `.open()`, `.read_text()` or `.read_bytes()` method (pathlib's) — not the helpers' own."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, fn: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                f = child.func
                mode = child.args[1] if len(child.args) > 1 else next(
                    (k.value for k in child.keywords if k.arg in ("mode", "flags")), None)
                writes = mode is not None and any(w in ast.unparse(mode) for w in _WRITES)
                if isinstance(f, ast.Name) and f.id == "open" and not writes:
                    found.append((fn, child.lineno))
                elif isinstance(f, ast.Attribute) and f.attr in ("open", "read_text", "read_bytes"):
                    owner = ast.unparse(f.value)
                    if owner in ("os", "io") and f.attr == "open" and not writes:
                        found.append((fn, child.lineno))
                    elif owner not in ("os", "io", "reads", "webbrowser"):
                        found.append((fn, child.lineno))
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            visit(child, name)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "<module>")
    return found


def test_every_file_read_goes_through_reads():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for fn, line in file_reads(path):
            if (rel, fn) not in NOT_THE_WORKSPACE:
                found.setdefault(rel, []).append(f"{fn}:{line}")
    assert found == {}, f"files read without reads.open_file/read_bytes/read_text (or source.read_source): {found}"


def test_the_scan_sees_each_kind_of_read(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text(textwrap.dedent("""\
        import io, os, pathlib
        def a(p): return open(p).read()
        def b(p): return pathlib.Path(p).read_text()
        def c(p): return os.open(p, os.O_RDONLY)
        def d(p): return io.open(p, "rb")
        def e(p): return pathlib.Path(p).open()
        def fine(p): return open(p, "w"), os.open(p, os.O_WRONLY | os.O_CREAT), reads.read_text(p)
        """))
    assert [fn for fn, _ in file_reads(mod)] == ["a", "b", "c", "d", "e"]
