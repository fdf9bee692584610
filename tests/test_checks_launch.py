"""LAUNCH001 (masked-lane waste) and LAUNCH002 (grid underfill) on real compiles with captured launches: kernels of our
own with hand-written capture records, and Liger-Kernel's layer norm and SwiGLU with the launches its test suite made
on an H200 (the corpus beside the checkout; skipped with the reason when it is absent). Nothing fires without launch
data."""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import missing, evidence

from tritonlens.model import clean_launch
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

from test_corpus import LIGER, _skip_reason  # where the corpus is, and why its tests skip


KERNELS = '''import triton
import triton.language as tl


@triton.jit
def row_scale(x_ptr, y_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * 2, mask=mask)


@triton.jit
def tiled_add(x_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n_elements)
    tl.store(x_ptr + offs, x + 1, mask=offs < n_elements)


@triton.jit
def looped_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))
'''

_OPTIONS = {"num_warps": 4, "num_stages": 3}


def _tensor(shape):
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * shape[i + 1]
    return {"tensor": {"shape": shape, "stride": stride, "dtype": "float32", "align16": True}}


def _record(kernel, signature, constants, attrs, grid, args, **extra):
    return {"version": 1, "path": "rows.py", "kernel": kernel, "signature": signature, "constants": constants,
            "attrs": attrs, "options": dict(_OPTIONS), "target": "cuda:90", "triton_version": "3.6.0",
            "launch": {"grid": grid, "args": args}, **extra}


def _row_scale(n_cols, rows, **extra):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr"}
    attrs = {"x_ptr": {"divisibility": 16}, "y_ptr": {"divisibility": 16}}
    args = {"x_ptr": _tensor([rows, n_cols]), "y_ptr": _tensor([rows, n_cols]), "stride": {"value": n_cols},
            "n_cols": {"value": n_cols}, "BLOCK_SIZE": {"value": 2048}}
    return _record("row_scale", sig, {"BLOCK_SIZE": 2048}, attrs, [rows], args, **extra)


def _workspace(tmp_path, records) -> str:
    (tmp_path / "rows.py").write_text(KERNELS)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(tmp_path / "rows.py")


@pytest.fixture(scope="module")
def checker():
    # The rules' own severities (rare launches milder, ...); what a launch's cost does to them: test_costmodel.py.
    with Checker(Settings(target="cuda:90", max_workers=2, severity_from_cost=False)) as c:
        yield c


def _launch_findings(checker, path, code=None):
    report = checker.check_file(path)
    found = report.all_findings()
    assert not [f for f in found if f.code == "SRC001"], [f.message for f in found if f.code == "SRC001"]
    return [f for f in found if f.code.startswith("LAUNCH") and (code is None or f.code == code)]


def test_row_block_wider_than_the_row_and_too_few_programs(checker, tmp_path):
    # two capture lines of one compile (recorded under two targets' names): their launches merge into one spec
    path = _workspace(tmp_path, [_row_scale(1500, 8), _row_scale(1100, 8, target="cuda:80")])
    found = _launch_findings(checker, path)
    lanes = [f for f in found if f.code == "LAUNCH001"]
    assert [(f.line, f.column, f.severity) for f in lanes] == [(9, 12, "warning")]  # `cols < n_cols`
    msg = evidence(lanes[0])
    # the worst of the two launches: 1100 of 2048 lanes are used -> 46% idle; both pass the 25% threshold
    assert "n_cols = 1100 of BLOCK_SIZE = 2048: 46% of each program's lanes idle" in msg, msg
    assert lanes[0].message.startswith("46% of the lanes idle at n_cols = 1100 (BLOCK_SIZE = 2048)"), lanes[0].message
    assert "2 accesses: lines 10, 11" in msg and "in 2 of 2 captured launches" in msg, msg
    assert "a loop over 3 blocks of 512 leaves 28% idle" not in msg  # 1100 -> 3 × 512 = 1536 is no good fit
    assert "a loop over 5 blocks of 256 leaves 14% idle" not in msg
    assert "a loop over 9 blocks of 128 leaves 5% idle" in msg, msg
    assert "one flat range" in msg
    assert lanes[0].data["useful"] == 1100 and lanes[0].data["lanes"] == 2048 and lanes[0].data["launches"] == 2

    grid = [f for f in found if f.code == "LAUNCH002"]
    assert [(f.line, f.severity) for f in grid] == [(6, "info")]  # the def line
    g = grid[0]
    assert g.details[0].startswith("8 programs on 132 SMs (H100 SXM, cuda:90): 124 SMs idle (94%)"), g.message
    assert g.data["programs"] == 8 and g.data["sms"] == 132 and g.data["resident"] >= 1 and g.data["gpu"] == "h100"


def test_a_last_wave_mostly_empty(checker, tmp_path):
    # BLOCK_SIZE=2048 at 4 warps compiles to 33-40 registers per thread: 12 programs per SM, 1584 at once on 132
    # SMs; 1679 programs make a second wave of 95 programs, 6% full
    path = _workspace(tmp_path, [_row_scale(2048, 1679)])
    found = _launch_findings(checker, path)
    assert not [f for f in found if f.code == "LAUNCH001"]  # 2048 of 2048: no lane idle
    (g,) = [f for f in found if f.code == "LAUNCH002"]
    assert g.data["resident"] == 12 and g.data["capacity"] == 1584 and g.data["waves"] == 2
    assert "1679 programs, 1584 resident at a time on H100 SXM, cuda:90 (132 SMs × 12 per SM, limited by " \
           "registers)" \
        ": a second wave 6% full — 47% of the program slots over 2 waves idle" in evidence(g), evidence(g)


def test_program_tiled_and_looped_masks_idle_only_their_last_block(checker, tmp_path):
    tiled = _record("tiled_add", {"x_ptr": "*fp32", "n_elements": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024},
                    {"x_ptr": {"divisibility": 16}}, [1],
                    {"x_ptr": _tensor([100]), "n_elements": {"value": 100}, "BLOCK": {"value": 1024}})
    looped = _record("looped_sum", {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"},
                     {"BLOCK": 1024}, {"x_ptr": {"divisibility": 16}, "out_ptr": {"divisibility": 16}}, [132],
                     {"x_ptr": _tensor([1500]), "out_ptr": _tensor([1]), "n_cols": {"value": 1500},
                      "BLOCK": {"value": 1024}})
    path = _workspace(tmp_path, [tiled, looped])
    lanes = {f.kernel: f for f in _launch_findings(checker, path, "LAUNCH001")}
    t = lanes["tiled_add"]
    assert t.line == 18 and "n_elements = 100 over 1 program × BLOCK = 1024 (1024 lanes): 90% of the lanes idle, " \
        "in the last block" in evidence(t), evidence(t)
    assert "same mask on lines 18, 19" in evidence(t)  # the inline masks of the load and the store: one finding
    lp = lanes["looped_sum"]
    # 1500 over 2 trips of 1024 = 2048 lanes: 27% idle, all in the second trip
    assert lp.line == 27 and "n_cols = 1500 over 2 loop trips × BLOCK = 1024 (2048 lanes): 27% of the lanes idle" \
        in evidence(lp), evidence(lp)
    # 132 programs on 132 SMs: every SM busy, all at once -> no LAUNCH002
    assert not [f for f in _launch_findings(checker, path, "LAUNCH002") if f.kernel == "looped_sum"]


def test_nothing_without_launch_data(checker, tmp_path):
    rec = _row_scale(1500, 8)
    del rec["launch"]
    found = _launch_findings(checker, _workspace(tmp_path, [rec]))
    assert found == []


def test_thresholds_are_settings(tmp_path):
    path = _workspace(tmp_path, [_row_scale(1500, 8)])
    s = Settings.from_dict({"maskedLaneThreshold": 0.5, "gridFillThreshold": 0.05, "target": "cuda:90",
                            "maxWorkers": 1})
    assert not s.problems
    with Checker(s) as c:
        assert _launch_findings(c, path) == []  # 27% < 50%; 8 of 132 SMs = 6% > 5%
    with Checker(Settings.from_dict({"smCount": 114, "target": "cuda:90", "maxWorkers": 1})) as c:
        (g,) = _launch_findings(c, path, "LAUNCH002")  # an H100 PCIe: 114 SMs
        assert g.details[0].startswith("8 programs on 114 SMs (tritonlens.smCount): 106 SMs idle (93%)"), g.message
    bad = Settings.from_dict({"maskedLaneThreshold": 25, "smCount": -1})
    assert bad.masked_lane_threshold == 0.25 and bad.sm_count == 0 and len(bad.problems) == 2


def test_launch_records_are_validated():
    assert clean_launch({"grid": [4, 1, 1], "args": {"n": {"value": 5}}}) == {"grid": [4, 1, 1],
                                                                               "args": {"n": {"value": 5}}}
    assert clean_launch({"grid": "4"}) is None and clean_launch({"grid": [1, 2, 3, 4]}) is None
    assert clean_launch({"grid": [True]}) is None and clean_launch(["grid"]) is None
    got = clean_launch({"grid": [2], "args": {"a": {"value": [1]}, "b": {"tensor": {"shape": ["x"], "dtype": 3,
                                                                                   "stride": [1]}},
                                              "c": {"value": float("nan")}, "d": 7}})
    assert got == {"grid": [2], "args": {"b": {"tensor": {"stride": [1]}}}}


# ---------------------------------------------------------------- the real corpus
@pytest.fixture(scope="module")
def liger(tmp_path_factory, checker):
    reason = _skip_reason()
    if reason:
        missing("corpus", reason)
    root = tmp_path_factory.mktemp("corpus") / "liger-kernel"
    shutil.copytree(LIGER, root)
    src = root / "src" / "liger_kernel" / "ops"
    return {name: checker.check_file(str(src / name)) for name in ("layer_norm.py", "swiglu.py")}


def test_liger_layer_norm_captured_1500_wide_rows_in_2048_blocks(liger):
    found = {(f.code, f.line): f for f in liger["layer_norm.py"].all_findings() if f.code.startswith("LAUNCH")}
    fwd = found[("LAUNCH001", 51)]  # `mask = col_offsets < n_cols` of _layer_norm_forward_kernel
    assert fwd.kernel == "_layer_norm_forward_kernel" and fwd.column == 12
    assert "n_cols = 1500 of BLOCK_SIZE = 2048: 27% of each program's lanes idle on every masked access " \
           "(4 accesses: lines 54, 55, 66, 86)" in evidence(fwd), evidence(fwd)
    assert "a loop over 3 blocks of 512 leaves 2% idle" in evidence(fwd)
    bwd = found[("LAUNCH001", 120)]
    assert "n_cols = 1500 of BLOCK_SIZE = 2048: 27%" in evidence(bwd)
    # the forward's captured grids are 1 to 64 rows: most of 132 SMs idle
    grid = found[("LAUNCH002", 27)]
    assert grid.data["sms"] == 132 and grid.data["programs"] < 132
    assert f"{grid.data['programs']} program" in grid.message and "SMs idle" in grid.message


def test_liger_swiglu_rows_that_fit_their_block_are_not_reported(liger):
    # captured: n_cols = 431 of BLOCK_SIZE = 512 (16% idle, under the 25% threshold) and 512 of 512
    lanes = [f for f in liger["swiglu.py"].all_findings() if f.code == "LAUNCH001"]
    assert lanes == []
