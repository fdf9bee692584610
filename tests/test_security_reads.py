"""What module code may read while a worker imports it.

A checked repository's code runs at import, and whatever it reads can come back in its error messages, which land in
the check's JSON, SARIF and HTML. In CI the token `actions/checkout` leaves sits in `.git/config`; on a laptop the
keys sit in `~/.ssh`. A confined worker reads only the interpreter, its import roots, the system's libraries and the
workspace without its dotfiles; each attempt below must fail, and nothing of the secrets may reach the output."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

TOKEN = "ghp_tritonlensTestToken0123456789"
KEY = "-----BEGIN TRITONLENS TEST KEY-----"
DOTFILE = "TRITONLENS_TEST_DOTFILE_SECRET=hunter2"
TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")

KERNEL = '''\
import triton
import triton.language as tl
from leak import SCALE  # a helper module of the repository: it runs at import

# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''


def hostile_workspace(tmp_path):
    """A workspace whose helper module reads the checkout's token, a key outside the workspace (through its path
    and through a committed link to it), a dotfile and a link to `.git/config`, and raises what it read."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_x").write_text(KEY + "\n")
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text(f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n')
    (ws / ".env").write_text(DOTFILE + "\n")
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (ws / "keys").symlink_to(home / ".ssh")
    (ws / "pkg").mkdir()
    (ws / "pkg" / "cfg").symlink_to(ws / ".git" / "config")
    nested = ws / "third_party" / "cutlass" / ".git"  # a repository checked out inside the workspace
    nested.mkdir(parents=True)
    (nested / "config").write_text(f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n')
    (ws / "third_party" / "cutlass" / "README").write_text("cutlass\n")
    targets = [ws / ".git" / "config", home / ".ssh" / "id_x", ws / ".env", ws / "keys" / "id_x", ws / "pkg" / "cfg",
               nested / "config"]
    (ws / "leak.py").write_text(textwrap.dedent(f'''\
        import os
        seen = []
        for path in {[str(t) for t in targets]!r}:
            try:
                with open(path) as f:
                    seen.append(" ".join(f.read().split()))
            except OSError as exc:
                seen.append(type(exc).__name__)
        try:
            seen.append(str(os.listdir(os.path.dirname({str(home / ".ssh")!r}))))
        except OSError as exc:
            seen.append(type(exc).__name__)
        # the workspace's own files stay readable: a repository's data and configs
        seen.append(open(os.path.join(os.path.dirname(__file__), "pyproject.toml")).read().split()[0])
        raise RuntimeError("read: " + " | ".join(seen))
        '''))
    path = ws / "k.py"
    path.write_text(KERNEL)
    return ws, home, path


def check(ws, home, path, fmt: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([TRITONLENS, "check", str(path), "--target", "cuda:90", "--workers", "1", "--format", fmt],
                          cwd=ws, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HOME": str(home), **env})


def test_module_code_reads_neither_git_config_nor_keys_nor_dotfiles(confined, tmp_path):
    ws, home, path = hostile_workspace(tmp_path)
    cache = {"TRITONLENS_CACHE_DIR": str(tmp_path / "cache")}
    done = check(ws, home, path, "json", cache)
    findings = json.loads(done.stdout)
    messages = " ".join(evidence(f) for f in findings)
    assert "read: PermissionError | PermissionError | PermissionError | PermissionError | PermissionError | " \
           "PermissionError |" in messages, (findings, done.stderr)
    assert "[project]" in messages  # the import ran, and read the workspace's own file
    sarif = check(ws, home, path, "sarif", cache)
    assert json.loads(sarif.stdout)["runs"][0]["results"], sarif.stdout
    for out in (done.stdout + done.stderr, sarif.stdout + sarif.stderr):
        for secret in (TOKEN, KEY, DOTFILE, "id_x"):
            assert secret not in out, secret


def test_unconfined_the_same_module_reads_them_all(tmp_path):
    """The attack is real: without the sandbox every read succeeds and the secrets reach the output."""
    ws, home, path = hostile_workspace(tmp_path)
    done = check(ws, home, path, "json", {"TRITONLENS_NO_SANDBOX": "1",
                                          "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    messages = " ".join(evidence(f) for f in json.loads(done.stdout))
    assert TOKEN in messages and KEY in messages and DOTFILE in messages, messages


def test_reads_are_the_interpreter_the_import_roots_and_the_workspace_without_dotfiles(tmp_path):
    """The rules themselves: a workspace gets one rule per top-level entry that is not a dotfile or a link, and a
    workspace inside an import root keeps its dotfiles closed too."""
    from tritonlens.compiler.sandbox import read_rules

    ws, home, _ = hostile_workspace(tmp_path)
    trees, listings = read_rules([str(ws)], [str(tmp_path)])
    real = os.path.realpath
    assert {real(ws / "leak.py"), real(ws / "pkg"), real(ws / "k.py")} <= set(trees)
    assert real(ws) in listings and real(tmp_path) in listings  # listed, not read whole
    for closed in (ws / ".git", ws / ".env", ws / "keys", ws, tmp_path, ws / "third_party",
                   ws / "third_party" / "cutlass", ws / "third_party" / "cutlass" / ".git"):
        assert real(closed) not in trees, closed
    # a repository checked out below the top level: walked, its files read, its `.git` closed
    assert real(ws / "third_party" / "cutlass" / "README") in trees and real(ws / "third_party") in listings
    # an import root of the user's (PYTHONPATH=~) is read without its top-level dotfiles too
    trees, listings = read_rules([], [str(home)])
    assert real(home) in listings and not any(t.startswith(real(home)) for t in trees), trees
    assert real(sys.base_prefix) in trees and real(sys.prefix) in trees


def test_a_worker_reads_each_workspace_it_compiles_for(confined, tmp_path):
    """Its reads are fixed when it starts: a file of another workspace (an editor with two folders open, one
    `check` over two repositories) restarts it with that workspace readable too, and both compile."""
    paths = []
    for name in ("one", "two"):
        ws = tmp_path / name
        ws.mkdir()
        (ws / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
        (ws / "scale.txt").write_text("2\n")
        (ws / "leak.py").write_text("import os\nimport triton.language as tl\n"
                                    "SCALE = tl.constexpr(int(open(os.path.join(os.path.dirname(__file__), "
                                    "'scale.txt')).read()))\n")
        (ws / "k.py").write_text(KERNEL)
        paths.append(str(ws / "k.py"))
    done = subprocess.run([TRITONLENS, "check", *paths, "--target", "cuda:90", "--workers", "1", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0 and json.loads(done.stdout) == [], (done.stdout, done.stderr)


def test_a_venvs_site_packages_is_found_whatever_the_vendors_site_module_answers(tmp_path, monkeypatch):
    """Debian's and Ubuntu's Python patch `site.getsitepackages` to answer `dist-packages` folders, which a virtual
    environment made with that Python does not have: the worker, started with -S, must still find the venv's
    `site-packages` (Triton's tools are there: without it ptxas is not among the programs it may run, and every
    compile fails with PermissionError — found on a GPU machine whose image is such a venv)."""
    import site

    from tritonlens.compiler import sandbox

    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    sp = venv / "lib" / version / "site-packages"
    (sp / "triton" / "backends" / "nvidia" / "bin").mkdir(parents=True)
    (sp / "triton" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python3"))
    debian = [str(venv / "lib" / "python3" / "dist-packages")]
    monkeypatch.setattr(site, "getsitepackages", lambda prefixes=None: debian)
    dirs = sandbox._site_dirs()
    assert str(sp) in dirs
    assert str(sp / "triton" / "backends" / "nvidia" / "bin") in sandbox.programs(None, False, dirs)
