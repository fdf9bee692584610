"""What runs before the sandbox is up, and what the sandbox must still let real imports do.

A repository's file named like a standard module (`textwrap.py` at its root, where `tritonlens check` and the editor
start) would run with the checking process's rights and secrets if any process that imports the workspace's code
started with the workspace on sys.path: the compile workers, doctor's probe and the replays start isolated, in a
folder of their own, and confine themselves before anything of the workspace can load. And a library whose import
uses multiprocessing (POSIX semaphores and shared memory under /dev/shm) compiles as it does unconfined."""
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

SECRET = "tritonlens-test-secret-81d4e0"
TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")  # the console script, as CI runs it

KERNEL = '''\
import triton
import triton.language as tl
{imports}

# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024
@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''


def run(cwd, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([TRITONLENS, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def check(cwd, path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[dict], str]:
    done = run(cwd, "check", str(path), "--target", "cuda:90", "--workers", "1", "--format", "json", *args, env=env)
    return done.returncode, json.loads(done.stdout or "[]"), done.stderr


# standard modules the worker and the probe import on their way up, each shadowed by a file of the workspace
SHADOWED = ("textwrap", "json", "ast", "tempfile", "shutil", "ctypes", "typing", "dataclasses", "hashlib",
            "linecache", "traceback", "threading", "contextlib", "importlib_metadata", "sitecustomize",
            "usercustomize", "landlock", "pyseccomp")


def shadowing_workspace(tmp_path, marks):
    """A repository whose root holds a `textwrap.py` (and the rest of SHADOWED) that writes, beside itself, a marker
    with the checking process's secret in it."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    for name in SHADOWED:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(f'''\
            import os
            try:
                with open({str(marks / (name + ".marker"))!r}, "w") as f:
                    f.write(os.environ.get("TRITONLENS_TEST_TOKEN", "no secret"))
            except OSError:
                pass
            '''))
    path = tmp_path / "k.py"
    path.write_text(KERNEL.format(imports="SCALE = tl.constexpr(2)"))
    return path


def test_a_workspace_textwrap_never_runs_unconfined(confined, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    path = shadowing_workspace(tmp_path, marks)
    code, findings, err = check(tmp_path, path, env={"TRITONLENS_TEST_TOKEN": SECRET})
    assert code == 0 and findings == [], (findings, err)
    assert sorted(os.listdir(marks)) == [], "ran unconfined: " + ", ".join(sorted(os.listdir(marks)))
    # the same from the editor's start: the server's doctor probes the import in the workspace
    # (its `import triton` meets the empty modules, confined, and fails as `python -c "import triton"` there would)
    doctor = run(tmp_path, "doctor", "--format", "json", env={"TRITONLENS_TEST_TOKEN": SECRET})
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert "import" in checks["triton"]["detail"], checks["triton"]  # the probe ran
    assert sorted(os.listdir(marks)) == [], "the probe ran unconfined: " + ", ".join(sorted(os.listdir(marks)))
    assert SECRET not in doctor.stdout + doctor.stderr


def test_module_code_sees_the_workspace_as_its_working_directory(confined, tmp_path):
    """Started in a folder of its own, a worker still gives the imports the checking process's working directory
    and its folder first on sys.path, as `python -m` there did: a helper found only from there still imports, and
    a relative read still reads the workspace's file."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "scale.txt").write_text("3\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "scaling.py").write_text("SCALE = int(open('scale.txt').read())\n")
    (tmp_path / "kernels").mkdir()
    path = tmp_path / "kernels" / "k.py"
    path.write_text(KERNEL.format(imports="import sys\nsys.path.append('helpers')\nfrom scaling import SCALE as _S\n"
                                          "SCALE = tl.constexpr(_S)"))
    code, findings, err = check(tmp_path, path, "--module-execution", "full")
    assert code == 0 and findings == [], (findings, err)


MULTIPROCESSING_HELPER = '''\
import multiprocessing as mp
from multiprocessing import shared_memory

import torch.multiprocessing as tmp

# what operator libraries do at import to find their backend: locks, queues, shared memory, another context
_LOCK = mp.Lock()
_QUEUE = mp.Queue()
_QUEUE.put("probe")
_SHM = shared_memory.SharedMemory(create=True, size=1 << 16)
_SHM.buf[:5] = b"hello"
_SPAWN_LOCK = mp.get_context("spawn").Lock()
_TORCH_LOCK = tmp.get_context("spawn").Semaphore(2)
_EVENT = mp.Event()
SCALE = 2 if _QUEUE.get(timeout=10) == "probe" else 0
_SHM.close()
_SHM.unlink()
'''


def test_a_library_that_uses_multiprocessing_at_import_compiles(confined, tmp_path):
    """POSIX semaphores (/dev/shm/sem.*) and shared memory at import: compiled finding-free, as unconfined, and
    in a /dev/shm of the worker's own where the platform allows one (the machine's stays untouched)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "mplib.py").write_text(MULTIPROCESSING_HELPER)
    path = tmp_path / "k.py"
    path.write_text(KERNEL.format(imports="from mplib import SCALE as _S\nSCALE = tl.constexpr(_S)"))
    before = set(os.listdir("/dev/shm"))
    # each run with a cache of its own: an unconfined run's artefacts must not stand in for the sandboxed compile
    code, findings, err = check(tmp_path, path, env={"TRITONLENS_CACHE_DIR": str(tmp_path / "cache-sandboxed")})
    assert code == 0 and findings == [], (findings, err)
    if confined.get("shm") == "private":
        assert set(os.listdir("/dev/shm")) - before == set(), "the worker's /dev/shm was the machine's"
    unconfined = check(tmp_path, path, env={"TRITONLENS_NO_SANDBOX": "1",
                                            "TRITONLENS_CACHE_DIR": str(tmp_path / "cache-unconfined")})
    assert unconfined[:2] == (code, findings)


def test_the_sandbox_says_where_dev_shm_is(confined):
    described = sandbox.describe(confined)
    if confined.get("shm") == "private":
        assert "its own /dev/shm" in described, described
    else:
        assert "/dev/shm is the machine's" in described, described


@pytest.mark.gpu
def test_a_replayed_kernel_runs_sandboxed_with_its_gpu(confined, tmp_path, monkeypatch, capsys):
    """`tritonlens bench` (the editor's "Time this kernel") imports the kernel's module to replay its captured
    launches: module code there is confined like a worker's (no writes, no programs, no secrets), and the GPU it
    times still works."""
    from tritonlens.device.targets import has_local_gpu
    from tritonlens.gpu import bench

    if not has_local_gpu():
        pytest.skip("needs a local NVIDIA GPU")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (tmp_path / "examples").mkdir()
    text = open(os.path.join(repo, "examples", "vector_add.py"), encoding="utf-8").read()
    (tmp_path / "examples" / "vector_add.py").write_text(text.replace(
        "import triton.language as tl\n", "import triton.language as tl\nimport replay_helper  # noqa: F401\n", 1))
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "examples" / "replay_helper.py").write_text(textwrap.dedent(f'''\
        import os
        try:
            with open({str(marks / "written")!r}, "w") as f:
                f.write(os.environ.get("TRITONLENS_TEST_TOKEN", "no secret"))
        except OSError:
            pass
        os.system("touch {marks / "ran"}")
        '''))
    (tmp_path / ".tritonlens").mkdir()
    with open(os.path.join(repo, "bench", "results", "h200-examples-captures-v2.jsonl"), encoding="utf-8") as f:
        (tmp_path / ".tritonlens" / "captures.jsonl").write_text(
            "".join(ln for ln in f if '"examples/vector_add.py"' in ln))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITONLENS_TEST_TOKEN", SECRET)
    assert bench.main(["examples/vector_add.py::add_kernel", "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results and all(r["measured"] and r["error"] is None for r in results), results
    assert sorted(os.listdir(marks)) == [], "the replay ran unconfined: " + ", ".join(os.listdir(marks))


ESCAPER = '''\
import ctypes
import os
import time

import triton.language as tl

MARK = {mark!r}
r, w = os.pipe()
for call in ("setsid", "setpgid"):
    if os.fork() == 0:  # a child that tries to leave the worker's group, then waits for ever
        try:
            os.setsid() if call == "setsid" else os.setpgid(0, 0)
            outcome = "left the group"
        except OSError as exc:
            outcome = type(exc).__name__
        try:
            os.write(w, f"{{call}}: {{outcome}};".encode())
            ctypes.CDLL(None).prctl(15, MARK.encode(), 0, 0, 0)  # PR_SET_NAME: found by it in /proc
            time.sleep(600)
        finally:
            os._exit(0)
time.sleep(0.5)
SCALE = tl.constexpr(2)
raise RuntimeError(os.read(r, 4096).decode())
'''


def _alive(mark: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if comm == mark and state != "Z":
            found.append(int(pid))
    return found


def test_a_child_cannot_leave_the_workers_group(confined, tmp_path):
    """A child of module code that starts a session (or a group) of its own would outlive the group kill, and with
    it the worker's time-out and memory bound: both calls are refused, and once the check is done the children are
    gone with their worker."""
    import time

    mark = f"tl{os.getpid() % 100000}esc"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "escaper.py").write_text(ESCAPER.format(mark=mark))
    path = tmp_path / "k.py"
    path.write_text(KERNEL.format(imports="from escaper import SCALE"))
    try:
        code, findings, err = check(tmp_path, path, env={"TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
        messages = " ".join(evidence(f) for f in findings)
        assert "setsid: PermissionError;" in messages and "setpgid: PermissionError;" in messages, (findings, err)
        assert code == 1 and any(f["code"] == "SRC006" for f in findings)  # the check went on to its report
        deadline = time.monotonic() + 10
        while _alive(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(mark) == [], "a child of the worker outlived it"
    finally:
        import signal

        for pid in _alive(mark):
            os.kill(pid, signal.SIGKILL)


def _marks(marks) -> str:
    """Which processes ran the site: each mark's pid, its parent and its command line (what the secret was)."""
    return "; ".join(f"{n}: {(marks / n).read_text().replace(SECRET, '<secret>')}" for n in sorted(os.listdir(marks)))


def _workspace_with_a_venv(tmp_path):
    """A workspace with a committed `.venv` whose site runs code at start: it marks which process ran it (a file
    `pid-N` in `marks`, with the secret it saw) and sets `builtins.TL_SITE_RAN`."""
    import triton

    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")], check=True, timeout=120)
    python = ws / ".venv" / "bin" / "python"
    site_dir = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    marks = tmp_path / "marks"
    marks.mkdir()
    with open(os.path.join(site_dir, "deps.pth"), "w") as f:  # this environment's packages (triton, torch)
        f.write(os.path.dirname(os.path.dirname(triton.__file__)) + "\n")
    with open(os.path.join(site_dir, "evil.pth"), "w") as f:
        f.write(f"import os, builtins; builtins.TL_SITE_RAN = 1; open(os.path.join({str(marks)!r}, "
                f"'pid-%d' % os.getpid()), 'w').write(os.environ.get('TRITONLENS_TEST_TOKEN', 'none') + "
                f"' ppid=%d ' % os.getppid() + open('/proc/self/cmdline', 'rb').read().replace(bytes(1), b' ')"
                f".decode(errors='replace'))\n")
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    return ws, python, marks


def test_a_committed_venvs_site_code_runs_only_confined_in_the_workers(confined, tmp_path):
    """A trusted workspace may bring its interpreter (`tritonlens.interpreter`, a committed `.venv/bin/python`):
    the checking process (the language server) then runs that interpreter's own start-up code unconfined — that is
    the user's choice of program, said in docs/security.md. Its compile workers start with `-S` and load the
    interpreter's site (`.pth` code, sitecustomize) only once confined: nothing they run there writes outside."""
    ws, python, marks = _workspace_with_a_venv(tmp_path)
    (ws / "sitecheck.py").write_text("import builtins\nimport triton.language as tl\n\n"
                                     "SCALE = tl.constexpr(2 if getattr(builtins, 'TL_SITE_RAN', 0) else 'no site')\n")
    path = ws / "k.py"
    path.write_text(KERNEL.format(imports="from sitecheck import SCALE"))
    repo_server = sandbox.PACKAGE_ROOT
    proc = subprocess.Popen([str(python), "-m", "tritonlens", "check", str(path), "--target", "cuda:90", "--workers",
                             "1", "--format", "json"], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": repo_server, "TRITONLENS_TEST_TOKEN": SECRET,
                                            "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and json.loads(out) == [], (out, err)  # the workers loaded the site, confined
    assert sorted(os.listdir(marks)) == [f"pid-{proc.pid}"], "a worker ran the site unconfined: " + _marks(marks)


def test_a_committed_venvs_site_code_runs_only_confined_in_the_auto_capture(confined, tmp_path):
    """The same interpreter runs the file's own launch code (the automatic no-GPU capture): that run too starts with
    `-S` and loads the site only once confined, so the `.pth` code it runs writes nothing outside."""
    ws, python, marks = _workspace_with_a_venv(tmp_path)
    path = ws / "k.py"
    path.write_text(KERNEL.replace("# tritonlens: x_ptr=*fp32, n=i32%16, BLOCK=1024\n", "").format(
        imports="SCALE = tl.constexpr(2)") + textwrap.dedent('''

        if __name__ == "__main__":
            import builtins
            import torch

            assert getattr(builtins, "TL_SITE_RAN", 0), "the site did not load in the launch run"
            x = torch.ones(1000, device="cuda")
            block = 1024
            add_kernel[(1,)](x, x.numel(), BLOCK=block)
        '''))
    proc = subprocess.Popen([str(python), "-m", "tritonlens", "check", str(path), "--target", "cuda:90", "--workers",
                             "1", "--format", "json"], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": sandbox.PACKAGE_ROOT,
                                            "TRITONLENS_TEST_TOKEN": SECRET,
                                            "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    out, err = proc.communicate(timeout=300)
    findings = json.loads(out)
    assert not [f for f in findings if f["code"] in ("SRC002", "SRC006", "SRC008")], (findings, err)
    assert any("`__main__` block of this file" in evidence(f) for f in findings), json.dumps(findings)  # it ran
    assert sorted(os.listdir(marks)) == [f"pid-{proc.pid}"], "a process ran the site unconfined: " + _marks(marks)
