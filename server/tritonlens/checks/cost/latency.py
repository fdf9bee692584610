"""Few programs: what one program keeps in flight and how long it waits for it. When fewer programs run than the GPU
needs to reach its DRAM bandwidth, each moves `in_flight` bytes a loop trip and waits LATENCY_US plus the time its
warps take to issue them (Little's law), or, when a software pipeline keeps asynchronous copies in flight stages
ahead, PIPE_LATENCY_US for them: a grid of one program on a 132-SM GPU runs at one program's rate, however large the
data. And the waves of resident programs a grid makes, PROGRAM_US each at least.
"""
from __future__ import annotations

import math
from typing import Any

from .memory import EFF_WIDE

LATENCY_US = 0.074  # a loop trip's fixed wait (DRAM latency not hidden by the trip's own requests), fitted
WARP_ISSUE_BPS = 2.7e9  # bytes per second one warp keeps in flight at most, fitted
PIPE_LATENCY_US = 1.5  # a software-pipelined loop's wait for the copies it keeps in flight (cp.async / TMA: the
# stages ahead), fitted on the decode GEMMs (64 programs moving 64-128 MB at 2.4-3.4 TB/s)
PROGRAM_US = 1.5  # the shortest life of a program (its loads' round trip, its stores): a wave of resident programs
# takes at least this (49,152 one-row programs of a norm: a flat 33 µs whatever they move)


def program_rate(c: Any) -> float:
    """Bytes per second one program moves: what it has in flight over a trip's latency and issue time (a
    pipelined loop's copies are in flight stages ahead, without its warps waiting on each)."""
    if c.in_flight <= 0:
        return math.inf
    if c.pipelined:
        return c.in_flight / (PIPE_LATENCY_US * 1e-6)
    issue = c.in_flight / (WARP_ISSUE_BPS * max(1, c.warps))
    return c.in_flight / (LATENCY_US * 1e-6 + issue)


def program_us(c: Any) -> float:
    """The waves of programs the grid makes, each at least PROGRAM_US long."""
    waves = math.ceil(c.programs / max(1, c.gpu.sms * max(1, c.resident)))
    return waves * PROGRAM_US


def latency_bound(c: Any) -> bool:
    """A software-pipelined loop whose programs cannot keep enough copies in flight to reach the DRAM bandwidth
    (too few programs: a decode GEMM's): its memory time is already the copies' latency, stages ahead, and a trip's
    dots and instructions run while those copies are in flight — nothing of them is added."""
    if not c.pipelined or not c.dram_bytes:
        return False
    return c.concurrent * c.program_rate < EFF_WIDE * c.gpu.memory_bandwidth

