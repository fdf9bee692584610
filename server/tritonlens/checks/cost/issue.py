"""Instruction time: the PTX instructions of each source line × the trips of the loops around it × warps × programs,
at PTX_PER_CLOCK per SM clock on the SMs the grid keeps busy.
"""
from __future__ import annotations

from typing import Any

PTX_PER_CLOCK = 6.0  # PTX instructions an SM retires per clock, fitted (four schedulers; a PTX line is often fewer
# SASS instructions, and predicated-off paths cost little)


def issue_us(c: Any) -> float:
    rate = PTX_PER_CLOCK * c.gpu.clock_mhz * 1e6 * c.gpu.sms
    return c.warp_instrs / (rate * c.sm_share) * 1e6 if rate else 0.0  # an idle SM issues nothing

