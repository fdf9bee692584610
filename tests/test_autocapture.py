"""Specs from the code that launches a kernel, run without a GPU: what `check` compiles when a file has no capture and
no hint but launches its own kernels (its tests, its `__main__` block, the workspace's tests that import it), what the
run may not do (the compile workers' sandbox), and the float scalars a launch site passes. Real Triton compiles on the
CPU for cuda:90; the launch code really runs (torch on the CPU, answered as the virtual GPU)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tritonlens.frontend.discover import discover
from tritonlens.frontend.launchers import find_launchers
from tritonlens.frontend.launches import find_launches
from tritonlens.frontend.specs import build_specs, origin_kind
from conftest import evidence

pytest.importorskip("torch", reason="the launch code allocates torch tensors")

UPDATE = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def update_fn_kernel(p_ptr, grad_ptr, lr, wd, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        p = tl.load(p_ptr + offs, mask=mask)
        g = tl.load(grad_ptr + offs, mask=mask)
        tl.store(p_ptr + offs, p * (1 - lr * wd) - lr * g, mask=mask)


    def update_fn(p, grad, lr, wd):
        n = p.numel()
        block = triton.next_power_of_2(min(n, 1024))
        update_fn_kernel[(triton.cdiv(n, block),)](p, grad, lr, wd, n, BLOCK_SIZE=block)


    def test_update_fn():
        p = torch.randn(4096, device="cuda", dtype=torch.float16)
        g = torch.randn(4096, device="cuda", dtype=torch.float16)
        update_fn(p, g, lr=0.01, wd=0.1)
    ''')

# A kernel module with no launch code of its own; the workspace's test imports it. Its test also tries to write
# outside its sandbox folder (into the workspace): the write must fail, the launch still be recorded.
OPS = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, n_elements, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n_elements)
        tl.store(x_ptr + offs, x * 2, mask=offs < n_elements)


    def scale(x):
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)
    ''')

TEST_OPS = textwrap.dedent('''\
    import os

    import torch

    from pkg.ops import scale


    def test_scale():
        try:
            with open(os.path.join(os.path.dirname(__file__), "..", "escaped.txt"), "w") as f:
                f.write("out of the box")
        except OSError:
            pass
        scale(torch.ones(1000, device="cuda", dtype=torch.bfloat16))
    ''')


def _check(root, *args: str) -> list[dict]:
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "tritonlens", "check", "--target", "cuda:90", "--format", "json",
                          "--workers", "1", *args], capture_output=True, text=True, cwd=root, env=env, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_check_compiles_what_the_files_own_test_launches(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "update.py").write_text(UPDATE)
    off = _check(tmp_path, "update.py", "--no-auto-capture")
    assert [f["code"] for f in off if f["code"] == "SRC002"], off  # from the file's text alone: no BLOCK_SIZE
    on = _check(tmp_path, "update.py")
    assert not [f for f in on if f["code"] in ("SRC002", "SRC001", "SRC008")], on
    assert all("BLOCK_SIZE=1024" in f["config"] for f in on if f["kernel"] == "update_fn_kernel"), on


def test_workspace_test_that_imports_the_module_is_run_sandboxed(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(TEST_OPS)
    found = find_launchers(str(tmp_path / "pkg" / "ops.py"), OPS, str(tmp_path))
    assert [(x.kind, os.path.basename(x.path)) for x in found] == [("tests", "test_ops.py")]
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
        report = checker.check_file(str(tmp_path / "pkg" / "ops.py"), workspace_root=str(tmp_path))
    assert report.auto is not None and report.auto.outcome == "ok", report.auto
    (kr,) = report.kernels
    spec = kr.compiled[0].spec
    assert spec.signature["x_ptr"] == "*bf16" and spec.constants["BLOCK"] == 256, spec
    assert "launched by `test_scale` in `test_ops.py`, no GPU" in spec.label, spec.label
    assert origin_kind(spec.origins["x_ptr"]) == "auto-capture", spec.origins
    assert kr.compiled[0].artifacts.ok and not kr.findings or all(f.code != "SRC001" for f in kr.findings)
    assert not (tmp_path / "escaped.txt").exists()  # no write outside the run's own folder


def test_a_crashing_launch_is_an_info_on_its_line(tmp_path):
    crash = UPDATE.replace('    p = torch.randn(4096', '    raise RuntimeError("boom")\n    p = torch.randn(4096')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "update.py").write_text(crash)
    found = _check(tmp_path, "update.py")
    # pytest ran the test, which failed before launching: what ran is said once, not as the file's error
    (info,) = [f for f in found if f["code"] == "SRC008"]
    assert info["severity"] == "info" and info["line"] == crash.splitlines().index("def test_update_fn():") + 1
    assert not [f for f in found if f["severity"] == "error"], found


def test_float_scalars_at_a_launch_site_are_fp32():
    src = textwrap.dedent('''\
        import math
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, alpha, scale, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * alpha * scale, mask=offs < n)


        def run(x, alpha: float, n):
            k[(1,)](x, alpha, 1.0 / math.sqrt(n), n, BLOCK=128)
        ''')
    (kernel,) = discover("f.py", src, ".").kernels
    (spec,), _ = build_specs(kernel, "cuda:90", launches=find_launches("k", {"f.py": src}))
    assert spec.signature["alpha"] == "fp32" and spec.signature["scale"] == "fp32", spec.signature
    assert spec.signature["n"] == "i32" and origin_kind(spec.origins["n"]) == "assumed", spec.origins


def test_arithmetic_on_a_tensor_is_a_tensor_not_a_float():
    """unsloth's fp8 GEMM check builds its scales as `torch.rand(M, 4) + 0.5`: a tensor passed as a pointer. Taken
    for a float, the kernel's `tl.load(As + offs * stride)` did not compile."""
    src = textwrap.dedent('''\
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def scale_rows(a_ptr, As, out_ptr, stride_As_m, alpha, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            s = tl.load(As + offs * stride_As_m)
            tl.store(out_ptr + offs, tl.load(a_ptr + offs) * s * alpha)


        def run(M=1024):
            a = torch.randn(M, device="cuda")
            As = torch.rand(M, 4, device="cuda") + 0.5
            out = torch.exp(a) / 2
            scale_rows[(M // 128,)](a, As, out, As.stride(-2), 0.5 * 2, BLOCK=128)
        ''')
    (kernel,) = discover("f.py", src, ".").kernels
    (spec,), _ = build_specs(kernel, "cuda:90", launches=find_launches("scale_rows", {"f.py": src}))
    assert spec.signature["As"].startswith("*") and spec.signature["out_ptr"].startswith("*"), spec.signature
    assert spec.signature["alpha"] == "fp32", spec.signature


def test_floats_the_files_own_test_passes_through_a_wrapper_are_fp32():
    (kernel,) = discover("update.py", UPDATE, ".").kernels
    specs, _ = build_specs(kernel, "cuda:90", launches=find_launches("update_fn_kernel", {"update.py": UPDATE}))
    assert {s.signature["lr"] for s in specs} == {"fp32"} and {s.signature["wd"] for s in specs} == {"fp32"}


def test_a_workspace_test_runs_for_the_module_its_package_reexports_not_a_backend_copy(tmp_path):
    kernel = "import triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\nclass NormFunction:\n    pass\n"
    for folder in ("lib", "lib/ops", "lib/ops/backends", "lib/ops/backends/npu"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "lib/ops/__init__.py").write_text("from lib.ops.norm import NormFunction  # noqa: F401\n")
    (tmp_path / "lib/ops/backends/npu/__init__.py").write_text("from .norm import NormFunction  # noqa: F401\n")
    for p in ("lib/ops/norm.py", "lib/ops/backends/npu/norm.py", "lib/ops/other.py"):
        (tmp_path / p).write_text(kernel)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_norm.py").write_text("from lib.ops import NormFunction\n\n\ndef test_norm():\n    pass\n")

    def runs(rel: str) -> list[str]:
        return [os.path.basename(x.path) for x in find_launchers(str(tmp_path / rel), kernel, str(tmp_path))]

    assert runs("lib/ops/norm.py") == ["test_norm.py"]
    assert runs("lib/ops/backends/npu/norm.py") == []  # defines the name too, but lib.ops takes it from elsewhere
    assert runs("lib/ops/other.py") == []


# A tutorial as Triton publishes them: its test function takes arguments no test runner gives, and the file calls it
# at the top level through an autograd Function and an alias (`layer_norm = LayerNorm.apply`).
TUTORIAL = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl

    DEVICE = triton.runtime.driver.active.get_active_torch_device()


    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty_like(x)
            scale_kernel[(triton.cdiv(x.numel(), 512),)](x, y, x.numel(), BLOCK=512)
            return y


    scale = Scale.apply


    def test_scale(n, dtype, device=DEVICE):
        x = torch.randn(n, dtype=dtype, device=device)
        scale(x)


    test_scale(3000, torch.float16)
    ''')


def test_a_tutorial_that_calls_its_own_test_at_the_top_level_runs_as_a_script(tmp_path):
    (tmp_path / "tut.py").write_text(TUTORIAL)
    found = find_launchers(str(tmp_path / "tut.py"), TUTORIAL, str(tmp_path))
    assert [(x.kind, os.path.basename(x.path)) for x in found] == [("script", "tut.py")]
    # a module that only names its launcher at the top level (and makes itself callable) launches nothing there
    quiet = TUTORIAL.replace("test_scale(3000, torch.float16)\n", textwrap.dedent('''\
        def _callable():
            class _M:
                def __call__(self, x):
                    return scale(x)
            return _M


        _callable()
        '''))
    assert [x.kind for x in find_launchers(str(tmp_path / "tut.py"), quiet, str(tmp_path))] == ["tests"]


def test_the_tests_of_a_wrapper_module_run_for_the_kernel_module_it_imports(tmp_path):
    kernel = ("import triton\n\n\n@triton.jit\ndef quant_kernel(x_ptr):\n    pass\n\n\n"
              "def quant_launcher(x):\n    pass\n")
    for folder in ("lib", "lib/kernels", "lib/ops", "tests"):
        (tmp_path / folder).mkdir()
    (tmp_path / "lib/__init__.py").write_text("")  # lib/kernels and lib/ops are namespace packages
    (tmp_path / "lib/kernels/fp8.py").write_text(kernel)
    (tmp_path / "lib/ops/fp8.py").write_text("from lib.kernels.fp8 import quant_launcher\n\n\n"
                                             "def scaled_quant(x):\n    return quant_launcher(x)\n")
    (tmp_path / "lib/ops/other.py").write_text("from ..kernels import fp8 as kernels_fp8  # relative\n\n\n"
                                               "def other_quant(x):\n    return kernels_fp8.quant_launcher(x)\n")
    (tmp_path / "tests/fp8_quant_kernels_test.py").write_text(
        "from lib.ops.fp8 import scaled_quant\n\n\ndef test_quant():\n    pass\n")
    (tmp_path / "tests/other_test.py").write_text(
        "from lib.ops.other import other_quant\n\n\ndef test_o():\n    pass\n")
    found = find_launchers(str(tmp_path / "lib/kernels/fp8.py"), kernel, str(tmp_path))
    assert sorted(os.path.basename(x.path) for x in found) == ["fp8_quant_kernels_test.py", "other_test.py"]
    assert {x.kind for x in found} == {"tests"}


TINY = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def scale_rows_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols)
        tl.store(y_ptr + row * stride + cols, x * 2, mask=cols < n_cols)


    def scale_rows(x):
        y = torch.empty_like(x)
        scale_rows_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=4096)
        return y


    def test_scale_rows():
        x = torch.randn(4, 100, device="cuda")
        torch.testing.assert_close(scale_rows(x), x * 2)
    ''')

ROW_SUM = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))


    def row_sum(x):
        out = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=1024)
        return out


    def test_row_sum():
        x = torch.randn(2, 1 << 22, device="cuda")
        torch.testing.assert_close(row_sum(x), x.sum(1))
    ''')


def test_findings_on_test_sized_launches_are_infos_that_say_so(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "rows.py").write_text(ROW_SUM)
    # the same two-row launch from a script's `__main__` block: no test's shape, its grid is weighed as it is
    (tmp_path / "rows_main.py").write_text(ROW_SUM.replace("def test_row_sum():", 'if __name__ == "__main__":'))
    found = _check(tmp_path, "tiny.py", "rows.py", "rows_main.py")
    tiny = [f for f in found if f["path"].endswith("tiny.py")]
    # a 4-row launch of a 100-column tile: lanes idle, narrow accesses, a grid of 4 — all bound by the launch itself
    assert {f["code"] for f in tiny} >= {"LAUNCH001", "LAUNCH002"}
    assert all(f["severity"] == "info" for f in tiny), tiny
    for f in tiny:
        assert "a test-sized launch:" in evidence(f) and "bound by the launch itself" in evidence(f), evidence(f)
        assert "`test_scale_rows` in this file" in evidence(f)
    (grid,) = [f for f in found if f["path"].endswith("/rows.py") and f["code"] == "LAUNCH002"]
    assert grid["severity"] == "info"
    assert "the shape of a test's launch (`test_row_sum` in this file)" in evidence(grid)
    (main_grid,) = [f for f in found if f["path"].endswith("rows_main.py") and f["code"] == "LAUNCH002"]
    after_account = " ".join(d for d in main_grid["details"] if d.startswith(("cost:", "verdict:", "in ")))
    assert main_grid["severity"] == "warning" and "test" not in after_account, main_grid["details"]


# OPS whose block size is the caller's
SCALE_BY = OPS.replace("def scale(x):", "def scale(x, block):").replace("256", "block")


def test_a_change_to_conftest_alone_runs_the_tests_again(tmp_path):
    """The block size comes from a fixture in `tests/conftest.py`: changing only that file (or pytest's
    configuration) gives a new automatic capture, not the cached one."""
    from tritonlens.gpu.autocapture import config_files_of_tests
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "ops.py").write_text(SCALE_BY)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(
        "import torch\nfrom pkg.ops import scale\n\n\ndef test_scale(block):\n"
        "    scale(torch.ones(1000, device='cuda'), block)\n")
    conftest = tmp_path / "tests" / "conftest.py"

    def block_of_the_capture(block: int) -> int:
        conftest.write_text(f"import pytest\n\n\n@pytest.fixture\ndef block():\n    return {block}\n")
        with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
            report = checker.check_file(str(tmp_path / "pkg" / "ops.py"), workspace_root=str(tmp_path))
        assert report.auto is not None and report.auto.outcome == "ok", report.auto
        return report.kernels[0].compiled[0].spec.constants["BLOCK"]

    assert block_of_the_capture(256) == 256
    assert block_of_the_capture(512) == 512  # only conftest.py changed
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow\n")  # pytest's configuration, read too
    keyed = config_files_of_tests(str(tmp_path / "tests" / "test_ops.py"), str(tmp_path))
    assert sorted(os.path.relpath(p, tmp_path) for p in keyed) == \
        ["pyproject.toml", "pytest.ini", os.path.join("tests", "conftest.py")]
