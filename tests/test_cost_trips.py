"""Trip counts of a persistent GEMM in the flattened form of Triton's persistent-matmul tutorial
(bench/cost_kernels/persistent_matmul.py): one loop of `k_tiles * tiles_per_SM` trips, `tiles_per_SM` one more for
the first `num_tiles % NUM_SMS` programs (an `if` on the program id, an scf.if result in the IR), the tile advanced
and stored in `if`s on a counter the loop carries. Launched at 8192³ on 132 programs and recorded with
`tritonlens capture --no-gpu`, compiled for real on the CPU; the virtual GPU is the H100 the capture answered as.
And a loop whose trips nothing gives: no estimate, anywhere, only what is unknown."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import require_module, evidence

from tritonlens.checks.costmodel import mean_launch_us
from tritonlens.cli import main as cli_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = os.path.join(REPO, "bench", "cost_kernels", "persistent_matmul.py")
FP8_PEAK = 1979e12  # the virtual H100's dense fp8 tensor-core rate (device/virtual_gpu.py)

require_module("torch", "the driver makes torch CPU tensors (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def persistent(tmp_path_factory):
    """The tutorial kernel's workspace with the 8192³ fp8 launch `capture --no-gpu` recorded."""
    ws = tmp_path_factory.mktemp("persistent")
    shutil.copy(KERNEL, ws / "persistent_matmul.py")
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--no-gpu", "--workspace", str(ws), "--",
                           sys.executable, str(ws / "persistent_matmul.py"), "8192", "8192", "8192", "fp8"],
                          capture_output=True, text=True, timeout=300, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    return ws


def _cost(capsys, path, fmt="json"):
    capsys.readouterr()
    assert cli_main(["cost", "--target", "cuda:90", "--gpu", "h100", "--workers", "1", "--format", fmt,
                     str(path)]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if fmt == "json" else out


def test_the_flattened_loop_counts_the_busiest_programs_tiles(persistent):
    """The loop's bound goes through the `if start_pid < num_tiles % NUM_SMS` (an scf.if result): 2048 tiles over
    132 programs, 16 for programs 0-67 and 15 for the others, 64 K tiles each; the store runs once in 64 trips."""
    from tritonlens.ir import parse_mlir
    from tritonlens.ir.counts import count_ir

    rc = subprocess.run([sys.executable, "-m", "tritonlens", "ir", "persistent_matmul.py::matmul_kernel_persistent",
                         "--stage", "ttir", "--target", "cuda:90"], capture_output=True, text=True, timeout=300,
                        cwd=persistent)
    assert rc.returncode == 0, rc.stderr
    ttir = rc.stdout.split("\n", 1)[1]
    counts = count_ir(ttir, parse_mlir(ttir))
    [loop] = counts.loops
    [dot] = counts.dots
    assert dot.operand_kind == "fp8" and (dot.a_args, dot.b_args) == (("a_ptr",), ("b_ptr",))
    args = {"M": 8192, "N": 8192, "K": 8192, "stride_am": 8192, "stride_bn": 8192, "stride_cm": 8192}
    trips = counts.trips(args, [132])
    assert not trips.unknown
    assert trips.most_of(loop.index) == 16 * 64  # the busiest program: pid 0
    assert trips.of(loop.index) == pytest.approx(2048 * 64 / 132, rel=0.01)  # the programs' mean
    [store] = [a for a in counts.accesses if a.kind == "store"]
    assert counts.line_trips(trips)[store.line] == pytest.approx(trips.of(loop.index) / 64)


def test_the_estimate_is_known_and_at_or_above_the_tensor_core_floor(persistent, capsys):
    [row] = _cost(capsys, persistent / "persistent_matmul.py")
    assert row["grid"] == [132] and row["unknown_trips"] == 0 and row.get("unknown") is None
    assert row["confidence"] == "estimated" and row["class"] == "gemm-fp8"
    # one wave of 132 programs ends with the busiest: each priced at its 16 tiles of 128x256, K = 8192
    assert row["flops"] == pytest.approx(132 * 16 * 2 * 128 * 256 * 8192, rel=1e-6)
    floor = 3.0 + 2 * 8192 ** 3 / FP8_PEAK * 1e6  # the launch, and 8192³ at the fp8 peak: ~559 µs
    assert row["floor_us"] == pytest.approx(floor, rel=0.01)
    assert floor <= row["est_us"] <= 2 * floor, row
    assert row["bound"] == "compute-bound"


LOADED_BOUND = '''import triton
import triton.language as tl


@triton.jit
def gemm_loaded_k(a_ptr, b_ptr, c_ptr, k_tiles_ptr, stride_am, stride_bk, stride_cm, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
    rm, rn = tl.program_id(0) * BM + tl.arange(0, BM), tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    k_tiles = tl.load(k_tiles_ptr)
    for k in range(0, k_tiles):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BK + rk)[None, :])
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * stride_bk + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.bfloat16))
'''


def loaded_bound_workspace(path, grid) -> str:
    """A workspace of LOADED_BOUND with one launch on 8192² bf16 matrices, its bound's tensor captured without its
    contents; the kernel file's path."""
    (path / "k.py").write_text(LOADED_BOUND)
    (path / ".tritonlens").mkdir()
    n = 8192

    def matrix():
        return {"tensor": {"shape": [n, n], "stride": [n, 1], "dtype": "bfloat16", "align16": True}}

    launch = {"grid": grid, "args": {
        "a_ptr": matrix(), "b_ptr": matrix(), "c_ptr": matrix(),
        "k_tiles_ptr": {"tensor": {"shape": [1], "stride": [1], "dtype": "int32"}},
        "stride_am": {"value": n}, "stride_bk": {"value": n}, "stride_cm": {"value": n},
        "BM": {"value": 128}, "BN": {"value": 128}, "BK": {"value": 64}}}
    rec = {"version": 2, "path": "k.py", "kernel": "gemm_loaded_k",
           "signature": {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "k_tiles_ptr": "*i32",
                         "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "BM": "constexpr",
                         "BN": "constexpr", "BK": "constexpr"},
           "constants": {"BM": 128, "BN": 128, "BK": 64},
           "attrs": {p: {"divisibility": 16} for p in ("a_ptr", "b_ptr", "c_ptr", "stride_am", "stride_bk",
                                                       "stride_cm")},
           "options": {"num_warps": 8, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
           "launch": launch}
    (path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(rec) + "\n")
    return str(path / "k.py")


def test_a_loop_of_unknown_trips_gives_no_estimate_anywhere(tmp_path, capsys):
    """A K loop bounded by a value loaded from a tensor whose contents the capture did not keep: the model cannot
    count it; `cost` says unknown and why (the loop's line, and that counted once the launch would be below the
    tensor cores' floor) instead of a time."""
    loaded_bound_workspace(tmp_path, [64, 64])
    [row] = _cost(capsys, tmp_path / "k.py")
    assert row["est_us"] is None and row["bound"] is None and row["confidence"] == "unknown"
    assert row["unknown_trips"] == 1
    assert row["unknown"].startswith("the trips of 1 loop (line 12) unknown")
    assert "at bf16 peak" in row["unknown"]  # 8192³ bf16 from the tensors' shapes, not from the loop
    # what a fix or a release comparison sets side by side: no mean over the launches the model could price
    assert mean_launch_us({"launch_costs": [row, dict(row, est_us=10.0, unknown=None)]}) is None
    text = _cost(capsys, tmp_path / "k.py", "text")
    [line] = [ln for ln in text.splitlines() if ln.startswith("gemm_loaded_k  ")]
    assert line.split()[4] == "unknown", line
    assert "gemm_loaded_k 64x64: no estimate, the trips of 1 loop (line 12) unknown" in text


def test_launch005_says_the_model_has_no_estimate_of_a_launch_of_unknown_trips(tmp_path):
    """The tutorial matmul's autotuner timings on an H200 (tests/data/autotune/h200-captures.jsonl) with its K loop
    written as a `while` (an scf.while: no bounds to evaluate): LAUNCH005 gives no estimate beside the measured time,
    it says what is unknown."""
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / "bench" / "autotune").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "tests", "data", "autotune", "h200-captures.jsonl"),
                tmp_path / ".tritonlens" / "captures.jsonl")
    with open(os.path.join(REPO, "bench", "autotune", "tutorial_matmul.py"), encoding="utf-8") as f:
        src = f.read()
    src = src.replace("    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):\n",
                      "    k = 0\n    while k < tl.cdiv(K, BLOCK_SIZE_K):\n", 1)
    src = src.replace("        b_ptrs += BLOCK_SIZE_K * stride_bk\n", "        b_ptrs += BLOCK_SIZE_K * stride_bk\n        k += 1\n", 1)
    path = tmp_path / "bench" / "autotune" / "tutorial_matmul.py"
    path.write_text(src)
    with Checker(Settings(target="cuda:90", gpu="h200")) as checker:
        kr = checker.check_file(str(path)).kernels[0]
    [tuning] = [f for f in kr.findings if f.code == "LAUNCH005"]
    assert "the cost model estimates" not in evidence(tuning)
    assert ("key (16, 8192, 8192, float16, float16, float16): the cost model has no estimate of the chosen config's "
            "launch (the trips of 1 loop (line 55) unknown), the autotuner measured 65.3 µs") in evidence(tuning)
