"""The dots: the tensor-core rate of each operand type (fp8 2x bf16 2x tf32)."""
from __future__ import annotations

from typing import Any

# operand kind (ir.counts.Dot.operand_kind) -> the GPU's peak_flops key it runs at on tensor cores
RATE_KEY = {"fp8": "fp8", "int8": "fp8", "fp4": "fp8", "bf16": "bf16", "fp16": "fp16", "tf32": "tf32",
            "fp32": "tf32", "fp64": "fp32"}


def peak_rate(gpu: Any, kind: str) -> float:
    """The GPU's peak FLOP rate for dots of an operand kind on tensor cores (0 when the GPU model has none)."""
    peaks = gpu.peak_flops
    return peaks.get(RATE_KEY.get(kind, "tf32")) or peaks.get("tf32") or peaks.get("fp32") or 0
