"""The physical floor of a launch, which the model checks its own estimate against: no launch runs faster than its
GEMMs' FLOPs at the tensor cores' peak for their operand type (fp8 2x bf16 2x tf32) or than the bytes of the tensors
it reads and writes, once each, at the DRAM's peak.

Both come from the captured launch, never from the model's trip counts (what the model missed, the floor must not
miss too): a GEMM's M·N·K from the shapes of the tensors its dot's operands are loaded from (ir/counts traces each
operand's loads to the kernel's arguments), the bytes from the tensors the IR loads from or stores to. An estimate
below the floor has missed trips or bytes: it is shown as unknown, never clamped up to the floor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...units import fmt_bytes, fmt_flops, fmt_us
from .dots import peak_rate
from .tensors import tensor_bytes


@dataclass(frozen=True)
class Floor:
    """Times in µs, without the launch's own latency (`us` adds it)."""

    launch_us: float
    flops: float = 0.0  # the largest GEMM's FLOPs from its tensors' shapes
    kind: str = ""  # its operand type (fp8, bf16, ...)
    dot_us: float = 0.0  # ... at that type's tensor-core peak
    bytes: int = 0  # the tensors the kernel loads from or stores to, once each
    bytes_us: float = 0.0  # ... at the DRAM peak

    @property
    def us(self) -> float:
        return self.launch_us + max(self.dot_us, self.bytes_us)

    def text(self) -> str:
        """`558.6 µs for 1.1 TFLOP at fp8 peak`, or for the bytes at the DRAM peak."""
        if self.dot_us >= self.bytes_us and self.flops:
            return f"{fmt_us(self.us)} for {fmt_flops(self.flops)} at {self.kind} peak"
        return f"{fmt_us(self.us)} for {fmt_bytes(self.bytes)} at the DRAM peak"


def gemm_flops(a: list[int], b: list[int]) -> float | None:
    """2·M·N·K of a GEMM whose operands are read from tensors of shapes `a` and `b` (their last two axes a matrix,
    leading axes a batch or experts), the least the shapes allow: K is the largest axis the two matrices share; with
    a batch of weights (an MoE's experts) only one of them meets each row, so the product is taken over one operand's
    rows and the other's columns, whichever is smaller. None when the shapes share no axis (a packed operand)."""
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    common = {a[-2], a[-1]} & {b[-2], b[-1]}
    if not common:
        return None
    k = max(common)
    numel_a, numel_b = _numel(a), _numel(b)
    rows_a, cols_b = a[-2] * a[-1] // k, b[-2] * b[-1] // k
    return 2.0 * min(numel_a * cols_b, numel_b * rows_a)


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def physical_floor(counts: Any, tensors: dict[str, dict[str, Any]], gpu: Any, launch_us: float) -> Floor | None:
    """The floor of a launch from the IR's counts (ir/counts.IrCounts) and the launch's captured tensors by argument
    name; None when the IR was not read. A dot's operand computed from another dot's result (attention's P·V) is
    left out: its shape is no tensor's."""
    if counts is None:
        return None
    shapes = {name: [int(x) for x in t.get("shape") or []] for name, t in tensors.items()}

    def tensor_of(args: tuple) -> str | None:
        # of the arguments an operand's loads trace to (a gathered row's index tensor beside its data), the largest
        known = [a for a in args if a in tensors]
        return max(known, key=lambda a: tensor_bytes(tensors[a])) if known else None

    flops, kind, dot_us = 0.0, "", 0.0
    for d in counts.dots:
        a, b = tensor_of(d.a_args), tensor_of(d.b_args)
        if d.on_dot or a is None or b is None:
            continue
        f = gemm_flops(shapes[a], shapes[b])
        rate = peak_rate(gpu, d.operand_kind)
        if f and rate and f / rate * 1e6 > dot_us:  # GEMMs in alternatives or sharing operands: the largest
            flops, kind, dot_us = f, d.operand_kind, f / rate * 1e6
    touched = {a for acc in counts.accesses for a in acc.args if a in tensors}
    nbytes = sum(tensor_bytes(tensors[a]) for a in touched)
    return Floor(launch_us, flops, kind, dot_us, nbytes, nbytes / gpu.memory_bandwidth * 1e6)
