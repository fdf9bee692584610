"""Everything a check starts ends with it and counts against its bounds.

Module code that double-forks leaves a grandchild whose parent is gone: re-parented to init, it once left the
worker's memory count (a 1.25 GB grandchild, no finding) and outlived its compile until the server exited, and an
automatic capture's grandchild held 1.4 GB 28 s after the check. A confined process is now its descendants'
subreaper and a job ends with them. The tests run the real compile pool (as the editor keeps it, alive between
compiles) and the real `tritonlens check` with its automatic capture; a grandchild is found in /proc by the name it
gives itself."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tritonlens.compiler.pool import CompileJob, CompileService
from tritonlens.model import Spec
from conftest import evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and the sandbox are Linux's")

TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")

# A module whose import double-forks: the child exits at once, its child (named MARK in /proc) allocates ALLOC_MB
# and sleeps. The import itself waits WAIT_S, then the module defines the kernel's constant.
DOUBLE_FORK = '''\
import ctypes
import os
import time

import triton.language as tl

if os.fork() == 0:
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, {mark!r}.encode(), 0, 0, 0)  # PR_SET_NAME: how the test finds it
        held = b"x" * ({alloc_mb} << 20)  # written, so resident
        time.sleep(120)
    os._exit(0)
time.sleep({wait_s})
SCALE = tl.constexpr(2)
'''

KERNEL = '''\
import triton
import triton.language as tl
from forker import SCALE


@triton.jit
def k(x_ptr):
    tl.store(x_ptr + tl.arange(0, 128), 1.0 * SCALE)
'''


def alive(mark: str) -> list[int]:
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


def gone_within(mark: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while alive(mark) and time.monotonic() < end:
        time.sleep(0.1)
    return not alive(mark)


@pytest.fixture
def mark():
    name = f"tl{os.getpid() % 100000}gc"
    yield name
    for pid in alive(name):  # a failed test leaves nothing running either
        os.kill(pid, signal.SIGKILL)


def _workspace(tmp_path, mark: str, alloc_mb: int, wait_s: float):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "forker.py").write_text(DOUBLE_FORK.format(mark=mark, alloc_mb=alloc_mb, wait_s=wait_s))
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    return path


def _job(path, timeout: float = 120.0) -> CompileJob:
    spec = Spec(signature={"x_ptr": "*fp32"}, constants={}, attrs={"x_ptr": {"divisibility": 16}},
                options={"num_warps": 4}, target="cuda:90")
    return CompileJob(path=str(path), text=path.read_text(), qualname="k", spec=spec.to_json(),
                      workspace_root=str(path.parent), timeout=timeout)


def test_a_double_forked_grandchild_ends_with_its_compile(confined, tmp_path, mark):
    """The editor's pool stays up between compiles: a grandchild that module code double-forked is gone within
    2 s of its compile's answer, not at the server's exit."""
    path = _workspace(tmp_path, mark, alloc_mb=16, wait_s=0.5)
    with CompileService(max_workers=1, memory_mb=2048) as service:
        art = service.submit(_job(path)).result(timeout=300)
        assert art.error is None, art.error
        assert gone_within(mark, 2.0), f"a grandchild outlived its compile: {alive(mark)}"
        # the pool goes on: the next compile runs (on a fresh worker)
        again = service.submit(_job(path)).result(timeout=300)
        assert again.error is None, again.error


def test_a_double_forked_grandchild_counts_against_the_memory_bound(confined, tmp_path, mark):
    """A grandchild re-parented away from the worker still counts: one holding 900 MB against a 600 MB bound ends
    the compile with the memory finding."""
    path = _workspace(tmp_path, mark, alloc_mb=900, wait_s=20)
    with CompileService(max_workers=1, memory_mb=600) as service:
        art = service.submit(_job(path)).result(timeout=300)
        assert art.error is not None and art.error.kind == "MemoryLimit", art.error
        assert "past tritonlens's bound of 600 MB" in art.error.message, art.error.message
        assert gone_within(mark, 2.0), f"the grandchild outlived the stopped worker: {alive(mark)}"


def test_a_double_forked_grandchild_of_the_automatic_capture_ends_with_the_check(confined, tmp_path, mark):
    """The file's own launch code (the automatic capture, run sandboxed) double-forks a grandchild and ends
    normally: the grandchild is gone within 2 s of `tritonlens check` returning."""
    pytest.importorskip("torch", reason="the launch code allocates torch tensors")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = tmp_path / "launched.py"
    path.write_text(textwrap.dedent(f'''\
        import triton
        import triton.language as tl


        @triton.jit
        def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


        if __name__ == "__main__":
            import ctypes
            import os
            import time

            import torch

            if os.fork() == 0:
                if os.fork() == 0:
                    ctypes.CDLL(None).prctl(15, {mark!r}.encode(), 0, 0, 0)
                    held = b"x" * (64 << 20)
                    time.sleep(120)
                os._exit(0)
            x = torch.ones(1000, device="cuda")
            add_kernel[(1,)](x, x.numel(), BLOCK=1024)
        '''))
    done = subprocess.run([TRITONLENS, "check", str(path), "--target", "cuda:90", "--workers", "1", "--format",
                           "json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")})
    findings = json.loads(done.stdout or "[]")
    assert any("`__main__` block of this file" in evidence(f) for f in findings), (findings, done.stderr)
    assert gone_within(mark, 2.0), f"a grandchild of the automatic capture outlived the check: {alive(mark)}"


def _real_bytes(folder) -> int:
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            st = os.lstat(os.path.join(base, name))
            total += max(st.st_size, st.st_blocks * 512) if not os.path.islink(os.path.join(base, name)) else 0
    return total


def test_a_sparse_capture_file_is_not_copied_into_the_cache(confined, tmp_path):
    """The file's launch code leaves its capture file as a 3 GB sparse file (a few blocks on disk): the cache gets
    none of it — the copy is bounded by the bytes the file holds, and the check says the run's file was not kept."""
    pytest.importorskip("torch", reason="the launch code allocates torch tensors")
    (tmp_path / "ws").mkdir()
    ws = tmp_path / "ws"
    (ws / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    path = ws / "launched.py"
    path.write_text(textwrap.dedent('''\
        import triton
        import triton.language as tl


        @triton.jit
        def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


        if __name__ == "__main__":
            import os

            import torch

            x = torch.ones(1000, device="cuda")
            add_kernel[(1,)](x, x.numel(), BLOCK=1024)
            with open(os.environ["TRITONLENS_CAPTURE_FILE"], "ab") as f:
                f.truncate(3 << 30)
        '''))
    cache = tmp_path / "cache"
    done = subprocess.run([TRITONLENS, "check", str(path), "--target", "cuda:90", "--workers", "1", "--format",
                           "json"], cwd=ws, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITONLENS_CACHE_DIR": str(cache)})
    findings = json.loads(done.stdout or "[]")
    assert _real_bytes(cache / "autocapture") < 1 << 20, _real_bytes(cache / "autocapture")
    assert any(f["code"] == "SRC008" and "capture file was not kept" in evidence(f) and "over the 32 MB" in
               evidence(f) for f in findings), (findings, done.stderr)
