"""Severity from cost: the cost model weighs each finding of a spec with captured launches by what its cause costs in
those launches, and the severity follows.

The kernels are bench/cost_kernels/kernels.py, one per cause of lost time; the captures are those an H200 recorded
running bench/cost_kernels/driver.py under `tritonlens capture --time` (bench/results/cost/), each distinct launch
with the real run's median time. Everything here compiles for real on the CPU; nothing runs on a GPU. Measured on the
H200 (bench/results/cost-calibration.md): the one-program sum 26.4 ms against 86 µs for its many-program twin; the
column read 470 µs against 88 µs for torch.sum(dim=0); the spilling softmax 354 µs against 264 µs at 16 warps; the
rows of 4100 in blocks of 8192 68 µs against 66 µs flat; tiny launches 3.6 µs whatever the code.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(REPO, "bench", "cost_kernels", "kernels.py")
CAPTURES = os.path.join(REPO, "bench", "results", "cost", "cost-captures-timed.jsonl")


def _workspace(tmp_path, timed: bool = True) -> str:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    (tmp_path / ".tritonlens").mkdir()
    with open(CAPTURES, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not timed:  # the same launches as a capture without a GPU records them: no measured times
        for rec in lines:
            for lc in rec.get("launch_counts") or []:
                lc.pop("time_us", None)
                lc.pop("timed", None)
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(tmp_path / "kernels.py")


def _check(path, **settings):
    with Checker(Settings(target="cuda:90", gpu="h200", all_captures=True, max_workers=2, **settings)) as c:
        report = c.check_file(path)
    return report


def _by(report, kernel, code):
    return [f for k in report.kernels if k.kernel.name == kernel for f in k.findings if f.code == code]


@pytest.fixture(scope="module")
def estimated(tmp_path_factory):
    return _check(_workspace(tmp_path_factory.mktemp("estimated"), timed=False))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return _check(_workspace(tmp_path_factory.mktemp("measured"), timed=True))


def test_a_one_program_reduction_is_a_warning_with_its_cost(estimated):
    [f] = _by(estimated, "sum_one_program", "LAUNCH002")
    assert f.severity == "warning", f.message  # the rule's default is info
    assert f.data["est_share"] > 0.9 and f.data["est_bound"] == "parallelism-bound"
    assert "(est., H200)" in f.message and any(d.startswith("cost: ~") and "estimated" in d for d in f.details)
    # 256 MB at one program's rate: tens of milliseconds (26.4 ms measured), not the 60 µs the bytes alone would say
    assert 10_000 < f.data["est_launch_us"] < 50_000, f.data


def test_a_column_read_is_uncoalesced_and_its_twin_is_not(estimated):
    [f] = _by(estimated, "column_sum_strided", "LAUNCH003")
    assert f.severity == "warning" and (f.line, f.column) == (44, 16), f.message
    assert "32 sectors for 128 B used" in f.message
    assert "32 sectors of 32 B for 128 B used" in evidence(f) and "stride_row = 8,192 elements" in evidence(f)
    assert f.data["est_share"] > 0.5
    assert not _by(estimated, "column_sum_coalesced", "LAUNCH003")
    # the twin's own defect: 64 programs on 132 SMs, each looping over 8192 rows
    [grid] = _by(estimated, "column_sum_coalesced", "LAUNCH002")
    assert grid.severity == "warning", grid.message


def test_a_costly_spill_stays_a_warning(estimated):
    [f] = _by(estimated, "softmax_rows", "SASS001")
    assert f.severity == "warning" and f.data["est_share"] >= 0.15, f.message


def test_cheap_causes_are_infos_that_say_why(estimated):
    # rows of 4100 floats in blocks of 8192 and tiny launches: idle lanes move no bytes
    [lanes] = _by(estimated, "scale_rows", "LAUNCH001")
    assert lanes.severity == "info" and "verdict: an info:" in evidence(lanes), lanes.details
    # 32-bit but coalesced accesses of a memory-bound kernel
    for code in ("PTX001", "PTX002"):
        for f in _by(estimated, "scale_flat", code) + _by(estimated, "scale_rows", code):
            assert f.severity == "info", f.message
            assert "memory-bound" in evidence(f), f.details


def test_a_dot_on_fma_units_is_a_warning(estimated):
    [f] = _by(estimated, "matmul", "TTGIR002")
    assert f.severity == "warning" and f.data["est_bound"] == "compute-bound", f.message


def test_measured_times_replace_the_estimate(measured):
    [f] = _by(measured, "sum_one_program", "LAUNCH002")
    assert f.data["est_measured"] is True and "(measured, " in f.message
    assert f.data["est_launch_us"] == pytest.approx(26390.4, rel=1e-3)  # the capture's own time of the launch


def test_estimates_are_within_1_5x_of_the_measured_launches(measured):
    # the model against the H200's times of every launch of 20 µs or more (deterministic: the IR and the captures)
    pairs = [(lc["est_us"], lc["measured_us"]) for k in measured.kernels for cs in k.compiled
             for lc in cs.metrics.get("launch_costs", []) if (lc.get("measured_us") or 0) >= 20]
    assert len(pairs) >= 9
    within = [p for p in pairs if 1 / 1.5 <= p[0] / p[1] <= 1.5]
    assert len(within) >= 0.8 * len(pairs), pairs


def test_json_carries_the_cost(estimated):
    [f] = _by(estimated, "column_sum_strided", "LAUNCH003")
    out = f.to_json()
    assert set(out["cost"]) == {"gain_us", "share", "launch_us", "measured", "bound"}
    assert out["cost"]["gain_us"] > 100


def test_the_rules_own_severity_when_cost_is_off(tmp_path):
    report = _check(_workspace(tmp_path, timed=False), severity_from_cost=False)
    [f] = _by(report, "sum_one_program", "LAUNCH002")
    assert f.severity == "info" and "(est., H200)" in f.message  # the estimate is still said
    narrow = _by(report, "scale_flat", "PTX001")
    assert narrow and all(f.severity == "warning" for f in narrow)


def test_tiles_with_a_stride_one_axis_are_coalesced(estimated):
    # a[rm[:, None] * stride_am + (k + rk)[None, :]]: the lanes run along rk, whatever stride_am is
    assert not _by(estimated, "matmul", "LAUNCH003")
    assert not _by(estimated, "softmax_rows", "LAUNCH003")


INTERLEAVED = '''\
import triton
import triton.language as tl


@triton.jit
def real_part(z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    re = tl.load(z_ptr + offs * 2, mask=offs < n)
    tl.store(out_ptr + offs, re, mask=offs < n)
'''


# the same load written over three lines, as expert code often spells it: Triton stamps it on its pointer's line
INTERLEAVED_SPREAD = INTERLEAVED.replace("    re = tl.load(z_ptr + offs * 2, mask=offs < n)\n",
                                         "    re = tl.load(\n        z_ptr + offs * 2,\n        mask=offs < n)\n")


@pytest.mark.parametrize("source", [INTERLEAVED, INTERLEAVED_SPREAD], ids=["one-line", "spread"])
def test_a_stride_two_walk_is_uncoalesced_by_its_captured_shape(tmp_path, source):
    """The real parts of 16 M interleaved complex numbers: each warp request fetches twice the bytes it uses."""
    assert source.count("tl.load(") == 1
    n = 1 << 24
    (tmp_path / "interleaved.py").write_text(source)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "interleaved.py", "kernel": "real_part",
        "signature": {"z_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "constants": {"BLOCK": 1024}, "attrs": {"z_ptr": {"divisibility": 16}, "out_ptr": {"divisibility": 16},
                                                "n": {"divisibility": 16}},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
        "launch": {"grid": [n // 1024], "args": {
            "z_ptr": {"tensor": {"shape": [2 * n], "stride": [1], "dtype": "float32", "align16": True}},
            "out_ptr": {"tensor": {"shape": [n], "stride": [1], "dtype": "float32", "align16": True}},
            "n": {"value": n}, "BLOCK": {"value": 1024}}}}) + "\n")
    report = _check(str(tmp_path / "interleaved.py"))
    [f] = _by(report, "real_part", "LAUNCH003")
    assert (f.line, f.data["stride"], f.data["sectors"], f.data["inflation"]) == (8, 2, 8, 2.0), f.message
    assert "(50% wasted)" in f.message and "50% of every sector fetched is wasted" in evidence(f)
    # the input is half of the launch's bytes and half of it is wasted: a quarter of the time, a warning
    assert f.severity == "warning" and 0.15 <= f.data["est_share"] <= 0.5, f.message


TRANSPOSED = '''\
import triton
import triton.language as tl


@triton.jit
def transposed_tile(q_ptr, out_ptr, stride_tok, stride_d, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = q_ptr + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    qT = tl.load(qT_ptrs)
    tl.store(out_ptr + offs_m, tl.sum(qT, axis=0))
'''


def test_a_transposed_tile_with_a_stride_one_axis_is_not_uncoalesced(tmp_path):
    """An attention backward's `q^T` tile: its columns are a row apart, its rows (head dim, stride 1) contiguous —
    Triton lays the contiguous axis out fastest, so the lanes are coalesced and nothing is reported."""
    (tmp_path / "tq.py").write_text(TRANSPOSED)
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "tq.py", "kernel": "transposed_tile",
        "signature": {"q_ptr": "*fp16", "out_ptr": "*fp32", "stride_tok": "i32", "stride_d": "constexpr",
                      "BLOCK_M": "constexpr", "HEAD_DIM": "constexpr"},
        "constants": {"stride_d": 1, "BLOCK_M": 64, "HEAD_DIM": 64},
        "attrs": {"q_ptr": {"divisibility": 16}, "out_ptr": {"divisibility": 16}, "stride_tok": {"divisibility": 16}},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
        "launch": {"grid": [4096], "args": {
            "q_ptr": {"tensor": {"shape": [262144, 64], "stride": [64, 1], "dtype": "float16", "align16": True}},
            "out_ptr": {"tensor": {"shape": [262144], "stride": [1], "dtype": "float32", "align16": True}},
            "stride_tok": {"value": 64}, "stride_d": {"value": 1}}}}) + "\n")
    report = _check(str(tmp_path / "tq.py"))
    assert report.kernels and report.kernels[0].compiled, report.problems
    assert not _by(report, "transposed_tile", "LAUNCH003"), [f.message for k in report.kernels for f in k.findings]
