"""Compile workers are bounded in resident memory as well as time: a compile past the bound is tritonlens's limit —
an SRC007 info that names it, never an SRC001 error, never exit 1 — the worker is replaced, and the other kernels of
the file compile. What an import only reserves (address space) is not bounded."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tritonlens.cli import main as cli_main
from tritonlens.compiler.cache import ArtifactCache
from tritonlens.compiler.pool import CompileService
from tritonlens.model import OWN_FAILURES
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory bound reads /proc (Linux)")

# `add_kernel` needs TABLE from a helper module whose import allocates 3 GB (a giant lookup table built at import);
# `copy_kernel`'s slice imports no TABLE and must compile all the same.
HELPER = "import triton.language as tl\n\nTABLE = tl.constexpr(len(bytearray(3 << 30)))\n"
GREEDY = textwrap.dedent('''\
    import triton
    import triton.language as tl

    from greedy_table import TABLE


    # tritonlens: BLOCK=1024
    @triton.jit
    def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + TABLE, mask=offs < n)


    # tritonlens: BLOCK=1024
    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    ''')


@pytest.fixture()
def bounded(tmp_path):
    service = CompileService(1, memory_mb=1024)
    with Checker(Settings(target="cuda:90", max_workers=1, compile_memory_mb=1024), service=service,
                 cache=ArtifactCache(str(tmp_path / "cache"))) as checker:
        yield checker
    service.shutdown()


def _greedy_workspace(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "greedy_table.py").write_text(HELPER)
    path = tmp_path / "greedy.py"
    path.write_text(GREEDY)
    return path


def test_a_compile_past_the_memory_bound_is_a_finding_naming_it(tmp_path, bounded):
    path = _greedy_workspace(tmp_path)
    report = bounded.check_file(str(path))
    by_kernel = {k.kernel.name: k for k in report.kernels}
    assert not [f for f in by_kernel["add_kernel"].findings if f.code == "SRC001"], by_kernel["add_kernel"].findings
    greedy = [f for f in by_kernel["add_kernel"].findings if f.code == "SRC007"]
    assert greedy, by_kernel["add_kernel"].findings
    assert greedy[0].severity == "info" and greedy[0].line == 9  # the def line
    assert "past tritonlens's bound of 1024 MB" in evidence(greedy[0]) and "compileMemoryMB" in evidence(greedy[0])
    assert "not an error in the kernel" in evidence(greedy[0])
    assert greedy[0].data["kind"] == "MemoryLimit"
    assert bounded.service.restarts == 1  # the worker that hit the bound was replaced
    copied = by_kernel["copy_kernel"]
    assert not [f for f in copied.findings if f.code == "SRC001"]
    assert copied.compiled and all(cs.artifacts is not None and cs.artifacts.ok for cs in copied.compiled)
    # never cached: raising the bound must compile again, not replay the failure
    assert not bounded.cache.get(bounded.cache.key("x", "add_kernel", "y"))
    again = bounded.check_file(str(path))
    assert any(f.data.get("kind") == "MemoryLimit" for k in again.kernels for f in k.findings)


def test_check_reports_the_bound_as_its_own_limit_and_exits_0(tmp_path, capsys):
    """`tritonlens check --memory-mb 1024`: the kernel past the bound is an info naming the bound; exit 0."""
    path = _greedy_workspace(tmp_path)
    # (--select SRC: copy_kernel's narrow loads, a warning of their own, would set exit 1)
    code = cli_main(["check", str(path), "--target", "cuda:90", "--workers", "1", "--memory-mb", "1024",
                     "--format", "json", "--select", "SRC"])
    findings = json.loads(capsys.readouterr().out)
    mine = [f for f in findings if f["kernel"] == "add_kernel"]
    assert [(f["code"], f["severity"], f["line"]) for f in mine] == [("SRC007", "info", 9)], findings
    mine_text = "\n".join([mine[0]["message"], *mine[0]["details"]])
    assert "--memory-mb" in mine_text and "1024 MB" in mine_text
    assert code == 0, findings
    # with the bound off the same kernel compiles (the 3 GB table fits on this machine)
    code = cli_main(["check", str(path), "--target", "cuda:90", "--workers", "1", "--memory-mb", "0", "--format",
                     "json", "--select", "SRC"])
    assert code == 0 and not [f for f in json.loads(capsys.readouterr().out) if f["code"] == "SRC007"]


def test_the_bound_is_a_setting():
    assert Settings().compile_memory_mb == 8192
    assert Settings.from_dict({"compileMemoryMB": 2048}).compile_memory_mb == 2048
    bad = Settings.from_dict({"compileMemoryMB": "lots"})
    assert bad.compile_memory_mb == 8192 and bad.problems
    assert {"MemoryLimit", "Timeout", "WorkerCrash", "MissingTool"} <= OWN_FAILURES


# A helper whose import reserves 6 GB of address space it never touches, as CUDA initialisation and a torch +
# transformers import do on a GPU machine (`import torch` alone reached 4 GB of address space, 0.8 GB resident, there).
RESERVING = "import mmap\n\nimport triton.language as tl\n\n_RESERVED = mmap.mmap(-1, 6 << 30)\nSCALE = tl.constexpr(2)\n"


def test_what_an_import_only_reserves_is_not_bounded(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "reserving.py").write_text(RESERVING)
    path = tmp_path / "scaled.py"
    path.write_text(GREEDY.replace("from greedy_table import TABLE", "from reserving import SCALE")
                    .replace("+ TABLE", "* SCALE"))
    # an address-space cap of 4096 MB, as the workers had, fails that import
    capped = subprocess.run([sys.executable, "-c", "import resource; resource.setrlimit(resource.RLIMIT_AS, "
                             "(4 << 30, 4 << 30)); import reserving"], cwd=tmp_path, capture_output=True, text=True)
    assert capped.returncode != 0 and "Error" in capped.stderr, capped.stderr
    with Checker(Settings(target="cuda:90", max_workers=1), service=CompileService(1),
                 cache=ArtifactCache(str(tmp_path / "cache"))) as checker:
        report = checker.check_file(str(path))
        checker.service.shutdown()
    assert checker.service.memory_mb == 8192
    by_kernel = {k.kernel.name: k for k in report.kernels}
    assert by_kernel["add_kernel"].compiled and all(cs.artifacts.ok for cs in by_kernel["add_kernel"].compiled), \
        by_kernel["add_kernel"].findings


# A 65,536-element sort on one warp: LLVM's resident memory grows far past 600 MB; the pool stops the worker and says
# so. `small` compiles.
SORTS = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: x_ptr=*fp32, BLOCK=65536, num_warps=1
    @triton.jit
    def big(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


    # tritonlens: x_ptr=*fp32, BLOCK=128, num_warps=1
    @triton.jit
    def small(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.sort(tl.load(x_ptr + offs)))
    ''')


def test_a_compiler_growing_past_the_bound_is_the_bound(tmp_path):
    path = tmp_path / "sorts.py"
    path.write_text(SORTS)
    with Checker(Settings(target="cuda:90", max_workers=1), service=CompileService(1, memory_mb=600),
                 cache=ArtifactCache(str(tmp_path / "cache"))) as checker:
        report = checker.check_file(str(path))
        checker.service.shutdown()
    by_kernel = {k.kernel.name: k for k in report.kernels}
    big = [f for f in by_kernel["big"].findings if f.code == "SRC007"]
    assert big and big[0].data["kind"] == "MemoryLimit" and "bound of 600 MB" in evidence(big[0]), big
    assert by_kernel["small"].compiled and all(cs.artifacts.ok for cs in by_kernel["small"].compiled)


def test_a_broken_installation_is_not_a_clean_check(tmp_path, monkeypatch, capsys):
    """Workers whose triton does not import (a broken or shadowed install): SRC007 InternalError, never SRC001, and
    `check` exits 2 — the check is incomplete, not clean."""
    shadow = tmp_path / "shadow" / "triton"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('this triton is broken')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shadow"))  # the workers' triton, not this process's
    path = _greedy_workspace(tmp_path)
    code = cli_main(["check", str(path), "--target", "cuda:90", "--workers", "1", "--format", "json"])
    captured = capsys.readouterr()
    findings = json.loads(captured.out)
    assert {(f["code"], f["severity"]) for f in findings} == {("SRC007", "info")}, findings
    assert {f["kernel"] for f in findings} == {"add_kernel", "copy_kernel"}
    assert all(f["message"].startswith(f"{f['kernel']} not compiled here: internal error") for f in findings), findings
    assert code == 2 and "the check is incomplete" in captured.err


def test_a_missing_compiler_tool_is_tritonlens_s_failure():
    from tritonlens.compiler.worker import _error_from_exception

    err = _error_from_exception(RuntimeError("Cannot find ptxas"), None, "/ws/k.py")
    assert err.kind == "MissingTool" and err.ours and "tritonlens doctor" in err.message
