"""Every rule on kernels Triton really compiles here (cuda:90, cuda:80, hip:gfx942): the finding appears with its
code on the expected line of a bad kernel (examples/bad/) and is absent from a fixed version of the same kernel."""
import os
import textwrap
import re

import pytest

from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = os.path.join(REPO, "examples", "bad")
GOOD = os.path.join(REPO, "examples")


def bad(name: str) -> str:
    return os.path.join(BAD, name)


def findings(checker: Checker, path: str, code: str | None = None):
    report = checker.check_file(path)
    assert not report.problems, report.problems
    found = report.all_findings()
    assert not [f for f in found if f.code == "SRC001"], [f.message for f in found if f.code == "SRC001"]
    return [f for f in found if code is None or f.code == code]


def variant(tmp_path, name: str, src_name: str, *edits: tuple[str, str]) -> str:
    """A copy of an examples/bad kernel with text replaced (the fixed version), written into tmp_path."""
    with open(bad(src_name)) as f:
        text = f.read()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def lines(found) -> set[int]:
    return {f.line for f in found}


# ---------------------------------------------------------------- PTX001 / PTX002
@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
def test_narrow_loads_and_stores_on_unaligned_length(checkers, target):
    c = checkers(target)
    loads = findings(c, bad("vector_add_unaligned.py"), "PTX001")
    stores = findings(c, bad("vector_add_unaligned.py"), "PTX002")
    assert lines(loads) == {13, 14}
    assert lines(stores) == {15}
    first = next(f for f in loads if f.line == 13)
    assert (first.column, first.end_column) == (9, 16)  # the `tl.load` token
    assert first.severity == "warning"
    assert first.data["cause"] == "mask" and first.data["params"] == ["n_elements"]
    assert first.data["widths"] == {"32": 8}
    assert "vectorization fell 4 → 1" in evidence(first) and "n_elements" in first.message
    assert first.message.startswith("32-bit loads, not 128-bit") and len(first.message) <= 120
    assert "n_elements=i32" in first.config and target in first.config and first.config in evidence(first)
    assert first.related and first.related[0].message.startswith("ld.global.b32")
    assert stores[0].column == 5 and stores[0].data["cause"] == "mask"


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_no_narrow_access_when_length_is_a_multiple_of_16(checkers, target):
    c = checkers(target)
    found = findings(c, os.path.join(GOOD, "vector_add.py"))
    assert not [f for f in found if f.code in ("PTX001", "PTX002")]


def test_narrow_loads_on_hip(checkers):
    c = checkers("hip:gfx942")
    loads = findings(c, bad("vector_add_unaligned.py"), "PTX001")
    assert lines(loads) == {13, 14}
    assert loads[0].data["widths"] == {"32": 4} and loads[0].data["cause"] == "mask"
    assert lines(findings(c, bad("vector_add_unaligned.py"), "PTX002")) == {15}


def test_unaligned_pointer_is_the_cause(checkers, tmp_path):
    path = variant(tmp_path, "ptr.py", "vector_add_unaligned.py",
                   ("x_ptr=*fp32, y_ptr", "x_ptr=*fp32%1, y_ptr"), ("n_elements=i32,", "n_elements=i32%16,"))
    loads = findings(checkers("cuda:90"), path, "PTX001")
    assert lines(loads) == {13}
    assert loads[0].data["cause"] == "pointer" and loads[0].data["params"] == ["x_ptr"]


# ---------------------------------------------------------------- TTGIR002 / REM001
def _fp16_matmul(tmp_path):
    return variant(tmp_path, "mm16.py", "matmul_fp32_ieee.py", ("a_ptr=*fp32, b_ptr=*fp32, c_ptr=*fp32",
                   "a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32"), (', input_precision="ieee"', ""))


@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
def test_ieee_fp32_dot_runs_on_fma(checkers, tmp_path, target):
    c = checkers(target)
    dots = findings(c, bad("matmul_fp32_ieee.py"), "TTGIR002")
    assert lines(dots) == {23}
    d = dots[0]
    assert (d.column, d.end_column) == (15, 21)  # `tl.dot`
    assert d.data["cause"] == "ieee" and d.data["lowering"] == "fma" and d.data["fma"] > 0
    assert not findings(c, _fp16_matmul(tmp_path), "TTGIR002")


def test_mma_v3_remark_passed_through(checkers, tmp_path):
    c = checkers("cuda:90")
    rem = findings(c, bad("matmul_fp32_ieee.py"), "REM001")
    assert lines(rem) == {23} and rem[0].severity == "info"
    assert "MMA version 3" in rem[0].message
    assert not findings(c, _fp16_matmul(tmp_path), "REM001")
    # the vectorization remarks are PTX001/PTX002's evidence, not REM001's
    assert not findings(c, bad("vector_add_unaligned.py"), "REM001")


# ---------------------------------------------------------------- TTGIR001
@pytest.mark.parametrize("target", ["cuda:90", "cuda:80"])
def test_convert_layout_in_loop(checkers, tmp_path, target):
    c = checkers(target)
    storm = findings(c, bad("transpose_storm.py"), "TTGIR001")
    assert lines(storm) == {18}
    s = storm[0]
    assert s.severity == "warning" and s.data["in_loop"] and s.data["shared"]
    assert "through shared memory" in s.message and "bar.sync" in evidence(s)
    fixed = variant(tmp_path, "nostorm.py", "transpose_storm.py", ("        acc += tl.trans(x)\n", ""))
    assert not findings(c, fixed, "TTGIR001")


def test_storm_threshold_setting(tmp_path):
    with Checker(Settings(target="cuda:90", storm_threshold=1, max_workers=1)) as c:
        storm = findings(c, bad("transpose_storm.py"), "TTGIR001")
    assert storm and storm[0].data["threshold"] == 1


# ---------------------------------------------------------------- SASS001
def test_register_spill(checkers, tmp_path):
    c = checkers("cuda:90")
    spills = findings(c, bad("matmul_spill.py"), "SASS001")
    by_line = {f.line: f for f in spills}
    assert 10 in by_line  # the def line, with totals
    total = by_line[10]
    assert total.severity == "warning"
    assert total.data["spill_stores"] > 0 and total.data["registers"] == 255
    assert re.search(r"\d+ B spill stores", evidence(total)) and re.match(r"spills \d+ B a thread", total.message)
    # one finding per cause: the lines whose SASS holds STL/LDL are its related places, not findings of their own
    assert list(by_line) == [10]
    spill_lines = {r.line: r.message for r in total.related if r.path == total.path}
    assert 20 in spill_lines and spill_lines[20].startswith("spill code from this line: 44 STL")
    assert "inside a loop" in evidence(total) and "in loops (lines 20" in total.message and 20 in total.data["in_loop"]
    fixed = variant(tmp_path, "nospill.py", "matmul_spill.py", ("num_warps=4", "num_warps=8"))
    assert not findings(c, fixed, "SASS001")


def test_stack_frame_alone_is_not_a_spill(checkers, tmp_path):
    path = tmp_path / "sin.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        "# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n=i32%16, BLOCK=1024, num_warps=4\n"
        "@triton.jit\ndef sin_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n)\n"
        "    tl.store(out_ptr + offs, tl.sin(x) * tl.cos(x), mask=offs < n)\n")
    report = checkers("cuda:90").check_file(str(path))
    cs = report.kernels[0].compiled[0]
    assert cs.artifacts.resources.stack > 0  # libdevice sin/cos keep a local array
    assert not [f for f in report.all_findings() if f.code in ("SASS001", "PTX001", "PTX002")]


# ---------------------------------------------------------------- RES001 / RES002
@pytest.mark.parametrize("target,limit", [("cuda:90", 232448), ("cuda:80", 166912)])
def test_shared_memory_over_limit(checkers, tmp_path, target, limit):
    c = checkers(target)
    over = findings(c, bad("matmul_big_shared.py"), "RES001")
    assert lines(over) == {10} and over[0].severity == "error"
    assert over[0].data["limit"] == limit and over[0].data["shared"] > limit
    fixed = variant(tmp_path, "fits.py", "matmul_big_shared.py",
                    ("BLOCK_K=128, num_warps=8, num_stages=4", "BLOCK_K=32, num_warps=8, num_stages=3"))
    assert not findings(c, fixed, "RES001")


def test_shared_memory_over_limit_under_assumed_pointer_types_is_an_info_naming_them(checkers, tmp_path):
    """The same over-limit tile with the operands' element types left to tritonlens (`*fp32` assumed): the real
    launch may pass fp16 and need half — about tritonlens's guess, not the user's code, until a hint or capture says
    so: an info (never a warning or an error) that names the values and how to settle them."""
    c = checkers("cuda:90")
    assumed = variant(tmp_path, "assumed.py", "matmul_big_shared.py",
                      ("a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, ", ""))
    (f,) = findings(c, assumed, "RES001")
    assert f.severity == "info" and f.data["assumed"] == ["a_ptr", "b_ptr", "c_ptr"]
    assert f.data["decided_by"] == "evidence"
    verdict = next(d for d in f.details if d.startswith("verdict: "))  # the verdict's reason, one step away
    assert "compiled with a_ptr=*fp32, b_ptr=*fp32, c_ptr=*fp32 assumed" in verdict
    assert "a hint or a capture makes this certain" in verdict


def test_low_occupancy_from_shared_memory(checkers, tmp_path):
    c = checkers("cuda:90")
    low = variant(tmp_path, "occ4.py", "matmul_big_shared.py", ("BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_warps=8, "
                  "num_stages=4", "BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=4, num_stages=3"))
    occ = findings(c, low, "RES002")
    assert lines(occ) == {10} and occ[0].severity == "hint"
    assert occ[0].data["limiter"] == "shared" and occ[0].data["warps"] == 4
    ok = variant(tmp_path, "occ8.py", "matmul_big_shared.py", ("BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_warps=8, "
                 "num_stages=4", "BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=8, num_stages=3"))
    assert not findings(c, ok, "RES002")


# ---------------------------------------------------------------- the good examples, settings, metrics
@pytest.mark.parametrize("target", ["cuda:90", "cuda:80", "hip:gfx942"])
def test_good_examples_have_no_warnings(checkers, target):
    c = checkers(target)
    for name in sorted(os.listdir(GOOD)):
        if name.endswith(".py"):
            loud = [f for f in findings(c, os.path.join(GOOD, name)) if f.severity in ("error", "warning")]
            assert not loud, [(name, f.code, f.line, f.message) for f in loud]


def test_select_and_severity_settings(tmp_path):
    with Checker(Settings(target="cuda:90", max_workers=1, rules={"PTX002": "off", "PTX001": "error"}),
                 select={"PTX"}) as c:
        found = findings(c, bad("vector_add_unaligned.py"))
    assert {f.code for f in found} == {"PTX001"}
    assert all(f.severity == "error" for f in found)


def test_metrics(checkers):
    report = checkers("cuda:90").check_file(bad("vector_add_unaligned.py"))
    m = report.kernels[0].compiled[0].metrics
    assert m["global_widths"]["ld.global"] == {"32": 16}
    assert m["global_widths"]["st.global"] == {"32": 8}
    assert m["occupancy"]["warps"] == 64 and m["spill_bytes"] == 0
    mm = checkers("cuda:90").check_file(os.path.join(GOOD, "matmul.py")).kernels[0].compiled[0].metrics
    assert mm["wgmma"] > 0 and mm["local_alloc"] >= 2 and mm["convert_layout"] >= 1


def test_a_gather_is_narrow_by_nature_an_info_not_a_warning(checkers, tmp_path):
    """Loads whose addresses come from loaded indices (an embedding gather, MoE routing) cannot be vectorized by any
    compiler: PTX001 says so at info level, with the line the indices were loaded on — while the contiguous load of
    the indices themselves, made narrow by an unaligned bound, stays a warning."""
    path = tmp_path / "gather.py"
    path.write_text(textwrap.dedent('''\
        import triton
        import triton.language as tl


        # tritonlens: idx_ptr=*i32, n=i32, BLOCK=1024
        @triton.jit
        def gather(idx_ptr, src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            rows = tl.load(idx_ptr + offs, mask=offs < n)
            vals = tl.load(src_ptr + rows, mask=offs < n)
            tl.store(dst_ptr + offs, vals, mask=offs < 1024)
        '''))
    found = findings(checkers("cuda:90"), str(path), "PTX001")
    by_line = {f.line: f for f in found}
    assert by_line[10].severity == "info" and by_line[10].data["cause"] == "gather"
    assert "values loaded on line 9" in evidence(by_line[10])
    assert by_line[9].severity == "warning" and by_line[9].data["cause"] == "mask"


def test_findings_of_an_indented_kernel_land_on_their_token(checkers, tmp_path):
    """A kernel defined under a module-level `if` (or as a static method) is indented; Triton stamps columns on the
    dedented source, so they are the indent short of the file's. PTX001 still lands on the `tl.load` and names the
    cause's parameter (its quick fix needs it)."""
    path = tmp_path / "branch.py"
    path.write_text(textwrap.dedent('''\
        import triton
        import triton.language as tl

        HAS_FAST_PATH = True

        if HAS_FAST_PATH:
            # tritonlens: n=i32, BLOCK=1024
            @triton.jit
            def scale(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n)
                tl.store(x_ptr + offs, x * 2, mask=offs < n)
        '''))
    (load,) = findings(checkers("cuda:90"), str(path), "PTX001")
    assert (load.line, load.column, load.end_column) == (11, 13, 20)  # `tl.load`
    assert load.data["params"] == ["n"]
