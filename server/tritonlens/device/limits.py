"""What a GPU allows a kernel, per target and per GPU: shared memory per block and per SM, registers, resident warps
and blocks. The one table of device limits: the arch's facts here, the GPU's own numbers from its model
(virtual_gpu), both read by the rules (RES001, RES002, occupancy), the baseline and the release comparison."""
from __future__ import annotations

from dataclasses import dataclass

from .virtual_gpu import GpuModel


@dataclass(frozen=True)
class Limits:
    name: str
    shared_per_block: int  # bytes a block may opt in to
    shared_per_sm: int  # bytes per SM (per CU on AMD)
    regs_per_sm: int  # 32-bit registers per SM (per SIMD lane x SIMDs on AMD: see occupancy())
    max_warps: int  # resident warps (wavefronts) per SM / CU
    max_blocks: int
    reg_granule: int = 256  # registers are allocated per warp in units of this many


_CUDA = {
    80: Limits("sm_80", 166912, 167936, 65536, 64, 32),
    86: Limits("sm_86", 101376, 102400, 65536, 48, 16),
    87: Limits("sm_87", 166912, 167936, 65536, 48, 16),
    89: Limits("sm_89", 101376, 102400, 65536, 48, 24),
    90: Limits("sm_90", 232448, 233472, 65536, 64, 32),
    100: Limits("sm_100", 232448, 233472, 65536, 64, 32),
    120: Limits("sm_120", 101376, 102400, 65536, 48, 24),
}
_HIP = {"gfx942": Limits("gfx942", 65536, 65536, 512, 32, 32, 8), "gfx90a": Limits("gfx90a", 65536, 65536, 512, 32, 32, 8),
        "gfx950": Limits("gfx950", 163840, 163840, 512, 32, 32, 8)}


def target_limits(target: str) -> Limits | None:
    backend, _, arch = target.partition(":")
    if backend == "hip":
        return _HIP.get(arch) or (_HIP["gfx942"] if arch.startswith("gfx9") else None)
    try:
        a = int(arch)
    except ValueError:
        return None
    if a in _CUDA:
        return _CUDA[a]
    lower = [k for k in _CUDA if k <= a]
    return _CUDA[max(lower)] if lower else None


def limits_for(gpu: GpuModel, target: str) -> Limits | None:
    """The limits of `gpu` on `target`: its shared memory per block and per SM and its resident warps, with the
    arch's facts (blocks per SM, register granule, AMD's register file), named `H100 SXM (sm_90)`. The arch's table
    alone when that GPU is not of the target (an arch no GPU of the table has)."""
    arch = target_limits(target)
    if arch is None or gpu.target.rstrip("a") != target.rstrip("a"):
        return arch
    return Limits(f"{gpu.short_name} ({arch.name})", gpu.shared_per_block_optin, gpu.shared_per_sm,
                  gpu.regs_per_sm if gpu.is_cuda else arch.regs_per_sm, gpu.max_threads_per_sm // gpu.warp_size,
                  arch.max_blocks, arch.reg_granule)
