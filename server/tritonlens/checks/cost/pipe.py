"""The SMs' shared-memory pipe (MIO): the wavefronts of shared-memory loads and stores (as many as their bank
conflicts make, ir/banks.py), shuffles and barriers, and the L1's wavefronts of uncoalesced global requests, at
MIO_PER_CLOCK on the SMs the grid keeps busy.

Conversion time: each `ttg.convert_layout` whose line's PTX goes through shared memory writes and reads its tensor
once per trip, at the SMs' shared-memory bandwidth (128 B per clock per SM); one that stays in registers is free.
"""
from __future__ import annotations

from typing import Any

SHARED_BYTES_PER_CLOCK = 128
MIO_PER_CLOCK = 1.0  # wavefronts an SM's memory-I/O pipe serves a clock (a shared-memory access takes one per
# bank conflict way, ir/banks.py; a shuffle or a barrier one): the pipe's peak, not fitted


def mio_us(c: Any) -> float:
    """The memory-I/O pipe's time: its wavefronts at MIO_PER_CLOCK on the SMs the grid keeps busy. A
    gather-and-reduce kernel whose cross-warp reductions store 16 words apart waits here (measured on an H200:
    L1/TEX throughput at 93%, DRAM at 5%, 8 wavefronts a shared instruction)."""
    rate = MIO_PER_CLOCK * c.gpu.clock_mhz * 1e6 * c.gpu.sms
    waves = c.mio_instrs + sum(c.strided_waves.values())
    return waves / (rate * c.sm_share) * 1e6 if rate and waves else 0.0


def convert_us(c: Any) -> float:
    rate = SHARED_BYTES_PER_CLOCK * c.gpu.clock_mhz * 1e6 * c.gpu.sms
    return c.convert_bytes / rate * 1e6 if rate else 0.0

