"""The physical floor the cost model checks its estimate against: a GEMM's M·N·K from the captured tensors' shapes at
its operand type's own tensor-core peak (fp8 2x fp16), the tensors' bytes at the DRAM peak; and a launch the model
cannot price weighs no finding: the finding says the cost is unknown and why, and keeps the rule's severity.

Kernels compile for real on the CPU (cuda:90); the launches are recorded with `tritonlens capture --no-gpu` or
written as a capture would record them; the virtual GPU is the H100."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import require_module

from tritonlens.checks.cost.floor import gemm_flops
from tritonlens.cli import main as cli_main
from tritonlens.units import fmt_us

from test_cost_trips import loaded_bound_workspace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = os.path.join(REPO, "bench", "cost_kernels", "persistent_matmul.py")
PEAK = {"fp8": 1979e12, "fp16": 989.5e12}  # the virtual H100's dense tensor-core rates (device/virtual_gpu.py)


def test_gemm_flops_from_operand_shapes():
    assert gemm_flops([8192, 4096], [4096, 2048]) == 2 * 8192 * 4096 * 2048
    assert gemm_flops([4096, 8192], [2048, 8192]) == 2 * 4096 * 2048 * 8192  # B stored N×K (K-major)
    assert gemm_flops([8, 512, 64], [8, 64, 256]) == 2 * 8 * 512 * 256 * 64  # a batch
    # an MoE's tokens against 64 experts' weights: each row meets one expert, not all 64
    assert gemm_flops([32768, 4096], [64, 14336, 4096]) == 2 * 32768 * 14336 * 4096
    assert gemm_flops([4096, 512], [4096 * 8, 1]) is None  # a packed operand: no axis in common, no floor
    assert gemm_flops([4096], [4096, 128]) is None


@pytest.mark.parametrize("dtype,kind", [("fp8", "fp8"), ("bf16", "fp16")])
def test_the_floor_is_the_operand_types_own_peak(tmp_path, capsys, dtype, kind):
    """The tutorial's persistent GEMM at 8192³, fp8 and fp16 (its driver's 'bf16' case): the floor is the FLOPs the
    operand tensors' shapes give at that type's peak, fp16's twice fp8's; the estimate is at or above it."""
    require_module("torch", "the driver makes torch CPU tensors (pip install -e '.[test]')")
    shutil.copy(KERNEL, tmp_path / "persistent_matmul.py")
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--no-gpu", "--workspace", str(tmp_path),
                           "--", sys.executable, str(tmp_path / "persistent_matmul.py"), dtype],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    capsys.readouterr()
    assert cli_main(["cost", "--target", "cuda:90", "--gpu", "h100", "--workers", "1", "--format", "json",
                     str(tmp_path / "persistent_matmul.py")]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert list(row["dot_flops"]) == [kind]
    assert row["floor_us"] == pytest.approx(3.0 + 2 * 8192 ** 3 / PEAK[kind] * 1e6, rel=0.01)
    assert row["est_us"] is not None and row["est_us"] >= row["floor_us"], row
    # the spec's line in `check` (and the editor's lens) gives the same floor, not the bytes' alone
    assert cli_main(["check", "--target", "cuda:90", "--gpu", "h100", "--workers", "1",
                     str(tmp_path / "persistent_matmul.py")]) in (0, 1)
    [line] = [ln for ln in capsys.readouterr().out.splitlines()
              if ln.startswith("  ") and "persistent_matmul.py::matmul_kernel_persistent [" in ln]
    assert line.endswith(f"; ≥ {fmt_us(row['floor_us'])} for 1.1 TFLOP at {kind} peak (H100 SXM; a physical floor, "
                         "not measured)"), line


def test_a_finding_on_a_launch_the_model_cannot_price_says_so(tmp_path, capsys):
    """One program of a GEMM whose K loop is bounded by a value in memory the capture did not keep: LAUNCH002 (the
    idle SMs) carries no estimated cost, says what is unknown, and keeps its own severity."""
    kernel = loaded_bound_workspace(tmp_path, [1, 1])
    capsys.readouterr()
    cli_main(["check", "--target", "cuda:90", "--gpu", "h100", "--workers", "1", "--format", "json",
              kernel])
    findings = json.loads(capsys.readouterr().out)
    [grid] = [f for f in findings if f["code"] == "LAUNCH002"]
    assert grid["message"].endswith(" — cost unknown"), grid
    assert "cost: unknown — the trips of 1 loop (line 12) unknown" in grid["details"], grid["details"]
    assert "~" not in grid["message"] and grid["severity"] == "info"
