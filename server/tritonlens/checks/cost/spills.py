"""Spill time: ptxas's spill bytes per thread × threads × programs × the trips of the loops around the spill code,
through the cache hierarchy at SPILL_BW of the DRAM bandwidth.
"""
from __future__ import annotations

from typing import Any

SPILL_BW = 1.3  # spill traffic's bandwidth as a multiple of the DRAM peak (most stays in L1/L2), fitted on a softmax
SPILL_BW_LOOP = 4.0  # ... of spill code inside a loop, whose slots stay in L1 from trip to trip (fitted on Liger's
# cross entropy under two releases: 24 B and 240 B spilled in its loops measured 841 and 975 µs on an H200)


def spill_us(c: Any) -> float:
    bw = SPILL_BW_LOOP if c.spill_in_loop else SPILL_BW
    return c.spill_bytes / (bw * c.gpu.memory_bandwidth) * 1e6

