"""Compile workers are bounded in memory as well as time: a compile past the bound is a finding that names it, the
worker is replaced, and the other kernels of the file compile."""
from __future__ import annotations

import textwrap

import pytest

from tritonlens.compiler.cache import ArtifactCache
from tritonlens.compiler.pool import CompileService
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

# `add_kernel` needs TABLE from a helper module whose import allocates 3 GB (a giant lookup table built at import);
# `copy_kernel`'s slice imports no TABLE and must compile all the same.
HELPER = "TABLE = len(bytearray(3 << 30))\n"
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


def test_a_compile_past_the_memory_bound_is_a_finding_naming_it(tmp_path, bounded):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "greedy_table.py").write_text(HELPER)
    path = tmp_path / "greedy.py"
    path.write_text(GREEDY)
    report = bounded.check_file(str(path))
    by_kernel = {k.kernel.name: k for k in report.kernels}
    greedy = [f for f in by_kernel["add_kernel"].findings if f.code == "SRC001"]
    assert greedy, by_kernel["add_kernel"].findings
    assert "1024 MB memory limit" in greedy[0].message and "compileMemoryMB" in greedy[0].message
    assert greedy[0].data["kind"] == "MemoryLimit"
    assert bounded.service.restarts == 1  # the worker that hit the bound was replaced
    copied = by_kernel["copy_kernel"]
    assert not [f for f in copied.findings if f.code == "SRC001"]
    assert copied.compiled and all(cs.artifacts is not None and cs.artifacts.ok for cs in copied.compiled)
    # never cached: raising the bound must compile again, not replay the failure
    assert not bounded.cache.get(bounded.cache.key("x", "add_kernel", "y"))
    again = bounded.check_file(str(path))
    assert any(f.data.get("kind") == "MemoryLimit" for k in again.kernels for f in k.findings)


def test_the_bound_is_a_setting():
    assert Settings().compile_memory_mb == 4096
    assert Settings.from_dict({"compileMemoryMB": 2048}).compile_memory_mb == 2048
    bad = Settings.from_dict({"compileMemoryMB": "lots"})
    assert bad.compile_memory_mb == 4096 and bad.problems


# A 65,536-element sort on one warp: LLVM allocates far past 600 MB and aborts (an allocation failing in C++ is an
# abort, not an exception); the pool saw the worker's memory near the bound and says so. `small` compiles.
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


def test_an_abort_in_the_compiler_near_the_bound_is_the_bound(tmp_path):
    path = tmp_path / "sorts.py"
    path.write_text(SORTS)
    with Checker(Settings(target="cuda:90", max_workers=1), service=CompileService(1, memory_mb=600),
                 cache=ArtifactCache(str(tmp_path / "cache"))) as checker:
        report = checker.check_file(str(path))
        checker.service.shutdown()
    by_kernel = {k.kernel.name: k for k in report.kernels}
    big = [f for f in by_kernel["big"].findings if f.code == "SRC001"]
    assert big and big[0].data["kind"] == "MemoryLimit" and "600 MB memory limit" in big[0].message, big
    assert by_kernel["small"].compiled and all(cs.artifacts.ok for cs in by_kernel["small"].compiled)
