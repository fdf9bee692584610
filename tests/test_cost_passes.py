"""How many times a launch moves each tensor through DRAM, read from the compile (checks/costmodel.py): every access
gets its own tensor even when one line has several, alternatives a program takes one of (an early return) count
once, two halves of one tensor read in one loop are one pass, and a second loop over a row is a second pass.
Compiled for real (cuda:90 on the CPU), priced for an H200."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

SOURCE = '''\
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
             mask=offs < n)


@triton.jit
def scale_or_zero(x_ptr, y_ptr, out_ptr, n_cols, ignore, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    label = tl.load(y_ptr + row)
    if label == ignore:
        for i in range(0, n_cols, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            tl.store(x_ptr + row * n_cols + offs, 0.0, mask=offs < n_cols)
        return
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols)
        tl.store(out_ptr + row * n_cols + offs, x * 2.0, mask=offs < n_cols)


@triton.jit
def gate_up(w_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        gate = tl.load(w_ptr + row * n_cols + offs)
        up = tl.load(w_ptr + (row + n_rows) * n_cols + offs)
        acc += gate * up
    tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def two_pass(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs)
    mean = tl.sum(acc) / n_cols
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(
            x_ptr + row * n_cols + offs,
        )
        tl.store(out_ptr + row * n_cols + offs, x - mean)
'''

ROWS, COLS = 8192, 65536  # 2 GiB of fp32 a tensor: what the running programs re-read does not fit in L2


def _tensor(n: int, dtype: str = "float32") -> dict:
    return {"tensor": {"shape": [n], "stride": [1], "dtype": dtype, "align16": True}}


def _record(kernel: str, signature: dict, constants: dict, grid: list, args: dict) -> dict:
    ptrs = {a: {"divisibility": 16} for a, t in signature.items() if t.startswith("*")}
    return {"version": 1, "path": "passes.py", "kernel": kernel, "signature": signature, "constants": constants,
            "attrs": ptrs, "options": {"num_warps": 4, "num_stages": 1}, "target": "cuda:90",
            "triton_version": "3.6.0", "launch": {"grid": grid, "args": args}}


@pytest.fixture(scope="module")
def costs(tmp_path_factory):
    root = tmp_path_factory.mktemp("passes")
    (root / "passes.py").write_text(SOURCE)
    (root / ".tritonlens").mkdir()
    n = 1 << 26
    block = {"BLOCK": 1024}
    records = [
        _record("add", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                block, [n // 1024], {"x_ptr": _tensor(n), "y_ptr": _tensor(n), "out_ptr": _tensor(n),
                                     "n": {"value": n}, "BLOCK": {"value": 1024}}),
        _record("scale_or_zero", {"x_ptr": "*fp32", "y_ptr": "*i64", "out_ptr": "*fp32", "n_cols": "i32",
                                  "ignore": "i32", "BLOCK": "constexpr"},
                block, [ROWS], {"x_ptr": _tensor(ROWS * COLS), "y_ptr": _tensor(ROWS, "int64"),
                                "out_ptr": _tensor(ROWS * COLS), "n_cols": {"value": COLS},
                                "ignore": {"value": -100}, "BLOCK": {"value": 1024}}),
        _record("gate_up", {"w_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32",
                            "BLOCK": "constexpr"},
                block, [ROWS, 2], {"w_ptr": _tensor(2 * ROWS * COLS), "out_ptr": _tensor(ROWS * 1024),
                                "n_rows": {"value": ROWS}, "n_cols": {"value": COLS}, "BLOCK": {"value": 1024}}),
        _record("two_pass", {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"},
                block, [ROWS], {"x_ptr": _tensor(ROWS * COLS), "out_ptr": _tensor(ROWS * COLS),
                                "n_cols": {"value": COLS}, "BLOCK": {"value": 1024}}),
    ]
    (root / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with Checker(Settings(target="cuda:90", gpu="h200", all_captures=True, max_workers=2)) as checker:
        report = checker.check_file(str(root / "passes.py"))
    out = {}
    for kr in report.kernels:
        for cs in kr.compiled:
            errors = [f.message for f in cs.findings if f.severity == "error"]
            assert cs.artifacts is not None and not errors, errors
            [lc] = (cs.metrics or {}).get("launch_costs") or [None]
            assert lc is not None, f"no launch cost for {kr.kernel.name}: {cs.metrics.get('analysis_error')}"
            out[kr.kernel.name] = lc
    return out


def test_each_access_of_a_line_moves_its_own_tensor(costs):
    """`tl.store(out, tl.load(x) + tl.load(y))`: three tensors once each, no second pass charged to one of them."""
    lc = costs["add"]
    assert lc["dram_bytes"] == 3 * 4 * (1 << 26) and lc["l2_bytes"] == 0, lc


def test_an_early_return_and_the_main_path_are_alternatives(costs):
    """The row a program zeroes when its label is ignored and the row it reads otherwise: one pass over x, not two."""
    lc = costs["scale_or_zero"]
    row_bytes = ROWS * COLS * 4
    assert lc["dram_bytes"] == 2 * row_bytes + ROWS * 8 and lc["l2_bytes"] == 0, lc


def test_two_halves_of_a_tensor_in_one_loop_are_one_pass(costs):
    """A gated projection's gate and up rows of one weight, read in one loop by two programs each (the weight is
    re-read from L2 by the second): each half is DRAM traffic once, the weight once."""
    lc = costs["gate_up"]
    assert lc["dram_bytes"] == 2 * ROWS * COLS * 4 + ROWS * 1024 * 4 and lc["l2_bytes"] == 0, lc


def test_a_second_loop_over_the_row_is_a_second_pass(costs):
    """A norm's normalizing loop reads the row again (a `tl.load(` spread over lines, which the IR places on its
    pointer's line): what the running programs re-read does not fit in L2 here, so it is DRAM traffic again."""
    lc = costs["two_pass"]
    row_bytes = ROWS * COLS * 4
    assert lc["dram_bytes"] + lc["l2_bytes"] == 3 * row_bytes, lc


STRIDED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "results", "cost",
                       "strided-captures-timed.jsonl")
SUITE = os.path.join(os.path.dirname(STRIDED), "..", "..", "cost_kernels", "suite.py")


def test_lanes_a_row_apart_that_walk_the_row_cost_the_l1_not_8x_the_dram(tmp_path):
    """A lane per row and a loop over the row's columns (`suite.row_walk_lanes`), timed on an H200: 270 µs for
    256 MB. Each request touches 32 sectors for 128 B used, but the next 7 trips read the rest of those sectors from
    L1: DRAM moves the bytes once, and the time is the L1's 32 wavefronts a request. Charged as 8× the DRAM bytes it
    was estimated at 1,002 µs (3.7×)."""
    shutil.copy(SUITE, tmp_path / "suite.py")
    (tmp_path / ".tritonlens").mkdir()
    shutil.copy(STRIDED, tmp_path / ".tritonlens" / "captures.jsonl")
    with Checker(Settings(target="cuda:90", gpu="h200", all_captures=True, max_workers=2)) as checker:
        report = checker.check_file(str(tmp_path / "suite.py"))
    [kr] = [k for k in report.kernels if k.kernel.name == "row_walk_lanes"]
    [f] = [f for f in kr.findings if f.code == "LAUNCH003"]
    assert (f.data["inflation"], f.data["reuse"], f.data["dram_inflation"], f.data["wavefronts"]) == (8, 8, 1, 32)
    assert "read the rest of those sectors from L1" in evidence(f)
    costs = [lc for cs in kr.compiled for lc in (cs.metrics or {}).get("launch_costs") or []]
    assert len(costs) == 2
    for lc in costs:
        assert lc["bound"] == "l1-bound" and lc["dram_bytes"] <= 1.01 * (256 << 20), lc
        assert 1 / 1.5 <= lc["est_us"] / lc["measured_us"] <= 1.5, lc
