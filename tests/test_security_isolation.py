"""What a repository can run before the sandbox is up, by being on a process's import path.

A `src/` layout is checked with the workspace on PYTHONPATH, and the editor's server used to start with the workspace
as its working directory (`python -m` puts it first on sys.path): a file there named like a module that a process of
ours imports before it confines itself (the sandbox's own `pyseccomp`, `landlock`; the standard library) would run
with the checking process's rights. Every process that confines itself starts isolated and takes the sandbox's
modules from tritonlens's own environment; the language server starts isolated, outside the workspace. The tests
start the real processes: the CLI's compile workers, the automatic capture, and the server exactly as the VS Code
client starts it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tritonlens.compiler import sandbox
from conftest import evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

SECRET = "tritonlens-test-secret-5c27a1"
TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")  # the console script, as CI runs it

KERNEL = '''\
import triton
import triton.language as tl
{imports}

{hint}@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''
HINT = "# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024\n"

# the file's own launch code: what the automatic capture runs (no hint, so it is the file's only spec)
MAIN = '''

if __name__ == "__main__":
    import torch
{check}
    x = torch.ones(1000, device="cuda")
    add_kernel[(1,)](x, x.numel(), BLOCK=1024)
'''


def marker_module(marks, name: str) -> str:
    """A module's text that leaves, outside the workspace, a marker holding the secret the process it ran in saw."""
    return textwrap.dedent(f'''\
        import os
        try:
            with open(os.path.join({str(marks)!r}, "{name}-%d" % os.getpid()), "w") as f:
                f.write(os.environ.get("TRITONLENS_TEST_TOKEN", "no secret"))
        except OSError:
            pass
        ''')


def with_path(*folders) -> str:
    """PYTHONPATH: `folders` first, then what this test run has (a checkout under test)."""
    return os.pathsep.join([*map(str, folders), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def check(cwd, path, env: dict[str, str]) -> tuple[int, list[dict], str]:
    done = subprocess.run([TRITONLENS, "check", str(path), "--target", "cuda:90", "--workers", "1", "--format",
                           "json"], cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    return done.returncode, json.loads(done.stdout or "[]"), done.stderr


def _listing(marks) -> list[str]:
    return sorted(os.listdir(marks))


# ---------------------------------------------------------------- the sandbox's modules on PYTHONPATH
def test_sandbox_modules_on_pythonpath_never_run_unconfined(confined, tmp_path):
    """A repository checked as a `src/` layout (PYTHONPATH=src) whose `src` holds a `pyseccomp.py` and a `landlock`
    package: neither the compile workers nor the automatic capture load them before they confine (the sandbox's
    modules come from tritonlens's environment), and the check still runs sandboxed."""
    pytest.importorskip("torch", reason="the launch code allocates torch tensors")
    marks = tmp_path / "marks"
    marks.mkdir()
    ws = tmp_path / "ws"
    src = ws / "src"
    (src / "landlock").mkdir(parents=True)
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (src / "pyseccomp.py").write_text(marker_module(marks, "pyseccomp"))
    (src / "landlock" / "__init__.py").write_text(marker_module(marks, "landlock"))
    (ws / "hinted.py").write_text(KERNEL.format(imports="", hint=HINT))
    (ws / "launched.py").write_text(KERNEL.format(imports="", hint="") + MAIN.format(check=""))
    code, findings, err = check(ws, "hinted.py", {"PYTHONPATH": with_path(src), "TRITONLENS_TEST_TOKEN": SECRET,
                                                  "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    assert code == 0 and findings == [], (findings, err)
    code, findings, err = check(ws, "launched.py", {"PYTHONPATH": with_path(src), "TRITONLENS_TEST_TOKEN": SECRET,
                                                    "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    assert any("`__main__` block of this file" in evidence(f) for f in findings), (findings, err)  # it ran
    assert _listing(marks) == [], "ran before the sandbox was up: " + ", ".join(_listing(marks))
    assert "sandbox" not in err.lower(), err  # no worker said it ran without a part of its sandbox


# what a confined process may have loaded before it confined itself: the standard library and tritonlens's own
# environment; the test compares every file against the workspace and PYTHONPATH instead of trusting this list
def _outside(files: list[str], *roots) -> list[str]:
    real = [os.path.realpath(r) for r in roots]
    return [f for f in files if any(sandbox.within(os.path.realpath(f), r) for r in real)]


def _poisoned_path(tmp_path, monkeypatch):
    """A workspace that is this process's working directory, first on its sys.path and on PYTHONPATH, holding a
    module named like each one loaded before confinement (so the list is checked against a path that offers them)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("pyseccomp", "landlock", "json", "ctypes", "socket", "tempfile"):
        (ws / f"{name}.py").write_text("raise SystemExit('loaded from the workspace')\n")
    monkeypatch.chdir(ws)
    monkeypatch.setenv("PYTHONPATH", with_path(ws))
    monkeypatch.syspath_prepend(str(ws))
    return ws


def test_no_module_a_worker_loads_before_it_is_confined_comes_from_the_workspace(confined, tmp_path, monkeypatch):
    """The generated list: every module file a real compile worker had loaded when its sandbox came up (the worker
    reports it), checked against the workspace, the working directory and PYTHONPATH — with the workspace first on
    the checking process's own sys.path, as a server started in it had."""
    from tritonlens.compiler.pool import _Worker

    ws = _poisoned_path(tmp_path, monkeypatch)
    w = _Worker()
    try:
        w.start((str(ws),))
        state = w.sandbox or {}
    finally:
        w.kill()
    loaded = state.get("loaded_before") or []
    assert any(os.path.basename(f) == "pyseccomp.py" for f in loaded), loaded  # the list is the real one
    assert state.get("seccomp") and state.get("landlock"), state
    assert _outside(loaded, ws) == [], _outside(loaded, ws)


def test_no_module_the_auto_capture_loads_before_it_is_confined_comes_from_the_workspace(confined, tmp_path):
    """The same list in the automatic capture's process: its launch code (run confined) reads what was loaded
    before confinement and fails the run if any of it lies in the workspace or on PYTHONPATH."""
    pytest.importorskip("torch", reason="the launch code allocates torch tensors")
    ws = tmp_path / "ws"
    src = ws / "src"
    src.mkdir(parents=True)
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    # (only a name the checking process itself never imports: it runs with this PYTHONPATH, the user's choice)
    (src / "pyseccomp.py").write_text("raise SystemExit('loaded from the workspace')\n")
    probe = textwrap.indent(textwrap.dedent(f'''\
        from tritonlens.compiler import sandbox
        loaded = sandbox.STATE["loaded_before"]
        assert any(f.endswith("pyseccomp.py") for f in loaded), loaded
        bad = [f for f in loaded if f.startswith({str(ws)!r})]
        assert not bad, "loaded before confinement: " + ", ".join(bad)
        '''), "    ")
    (ws / "launched.py").write_text(KERNEL.format(imports="", hint="") + MAIN.format(check=probe))
    code, findings, err = check(ws, "launched.py", {"PYTHONPATH": with_path(src),
                                                    "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    assert any("`__main__` block of this file" in evidence(f) for f in findings), (findings, err)
    assert not [f for f in findings if f["code"] in ("SRC002", "SRC006", "SRC008")], (findings, err)


# ---------------------------------------------------------------- the language server, started as the client starts it
CLIENT_INTERPRETER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "client", "src",
                                  "interpreter.ts")


def client_server_command() -> tuple[list[str], str]:
    """(argv, cwd) of the server as the VS Code client starts it without a bundled server (client/src/interpreter.ts
    `serverCommand`): read from the client's source, so that this test follows it."""
    import re
    import tempfile

    with open(CLIENT_INTERPRETER, encoding="utf-8") as f:
        ts = f.read()
    isolated = re.search(r"export const ISOLATED = '([^']*)'", ts)
    cwd = re.search(r"export const NEUTRAL_CWD = ([^;]*);", ts)
    assert isolated and cwd and "['-m', 'tritonlens']" in ts, "the client's server command changed: update this test"
    assert cwd.group(1) == "os.tmpdir()", cwd.group(1)
    return [sys.executable, isolated.group(1), "-m", "tritonlens", "serve"], tempfile.gettempdir()


def handover_module(marks, name: str) -> str:
    """A standard module's stand-in: it leaves a marker (outside the workspace), then hands over to the real module
    — nothing visible, as a real attack would."""
    return marker_module(marks, name) + textwrap.dedent(f'''\
        import importlib, sys
        _here = os.path.dirname(os.path.abspath(__file__))
        _saved = sys.path[:]
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
        del sys.modules[{name!r}]
        try:
            sys.modules[{name!r}] = importlib.import_module({name!r})
        finally:
            sys.path[:] = _saved
        ''')


def test_the_language_server_started_as_the_client_starts_it_runs_nothing_of_the_workspace(confined, tmp_path):
    """The server, started exactly as the VS Code client starts it, opens and compiles a kernel of a workspace whose
    root holds `json.py`, `logging.py` and `typing.py` (standard modules the server imports): none of them runs,
    neither in the server nor in its workers, and the kernel still compiles with the workspace's own helper."""
    from test_lsp_output import RawClient

    marks = tmp_path / "marks"
    marks.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    for name in ("json", "logging", "typing"):
        (ws / f"{name}.py").write_text(handover_module(marks, name))
    (ws / "helper.py").write_text("import triton.language as tl\nSCALE = tl.constexpr(3)\n")
    path = ws / "k.py"
    # a length not known divisible by 16: narrow loads (PTX001), the finding that says the compile ran
    path.write_text(KERNEL.format(imports="from helper import SCALE", hint=HINT.replace("i32%16", "i32"))
                    .replace("* 2", "* SCALE"))
    argv, cwd = client_server_command()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TRITONLENS_TEST_TOKEN": SECRET,
           "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")}  # serverEnv: the editor's environment
    client = RawClient(cwd, argv, env)
    try:
        rid = client.request("initialize", {
            "processId": os.getpid(), "rootUri": ws.as_uri(), "workspaceFolders": [{"uri": ws.as_uri(), "name": "ws"}],
            "initializationOptions": {"target": "cuda:90", "maxWorkers": 1, "compileTimeout": 120},
            "capabilities": {}})
        client.wait_for(lambda m: m.get("id") == rid)
        client.send({"method": "initialized", "params": {}})
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}}})
        client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": path.as_uri()}}})
        diags = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == path.as_uri() and m["params"]["diagnostics"])
    finally:
        client.close()
    assert {d["code"] for d in diags["params"]["diagnostics"]} >= {"PTX001"}, diags  # compiled, with the helper
    assert _listing(marks) == [], "ran in the server: " + ", ".join(_listing(marks))


def test_a_src_layout_on_pythonpath_still_compiles_sandboxed(confined, tmp_path):
    """The documented way to check code that imports a `src/` layout, `PYTHONPATH=src`, still reaches the kernels'
    imports (the package's modules, one importing its sibling) once the worker is confined; without it they fail."""
    ws = tmp_path / "ws"
    pkg = ws / "src" / "mylib"
    pkg.mkdir(parents=True)
    (ws / "benchmarks").mkdir()
    (ws / "pyproject.toml").write_text("[project]\nname = 'mylib'\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("import triton.language as tl\n\nSCALE = tl.constexpr(3)\n")
    (pkg / "helpers.py").write_text("import triton\n\nfrom .consts import SCALE\n\n\n@triton.jit\n"
                                    "def scaled(x):\n    return x * SCALE\n")
    path = ws / "benchmarks" / "k.py"
    path.write_text(KERNEL.format(imports="from mylib.helpers import scaled", hint=HINT)
                    .replace("tl.load(x_ptr + offs, mask=offs < n) * 2", "scaled(tl.load(x_ptr + offs, mask=offs < n))"))
    env = {"TRITONLENS_CACHE_DIR": str(tmp_path / "cache")}
    code, findings, err = check(ws, path, {**env, "PYTHONPATH": with_path(ws / "src")})
    assert code == 0 and findings == [], (findings, err)
    assert "sandbox" not in err.lower(), err  # confined, as ever
    _, without, _ = check(ws, path, env)
    assert any("mylib" in evidence(f) for f in without), without  # PYTHONPATH is what found it
