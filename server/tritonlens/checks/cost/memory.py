"""Memory time: each tensor's footprint once per pass that walks it — the accesses of one loop (and arm) of the
kernel, at most its footprint (programs re-reading the same data hit L2; a gated GEMM's gate and up halves of one
weight are one pass); of alternatives a program takes one of (an early `return`, the arms of an `if`), the
largest; a second pass over what the running programs just read at L2's bandwidth when it fits there
(L2_BW, L2_FIT), the bytes an uncoalesced access walks (LAUNCH003) times its sectors per byte used, at the DRAM
bandwidth the access width reaches (EFF_WIDE / EFF_NARROW of the peak; EFF_SECTOR for a tensor whose load tiles
hold under a 128-byte line of each of rows a line apart: its requests take a sector or two of many lines, which
DRAM serves at half its peak) — or at what the grid's programs can keep
in flight, when fewer than the GPU needs are running: each program moves `in_flight` bytes per loop trip and waits
LATENCY_US plus the time its warps take to issue them (Little's law), or, when a software pipeline keeps
asynchronous copies in flight stages ahead, PIPE_LATENCY_US for them; a grid of one program on a 132-SM GPU runs at
one program's rate, however large the data.

Tile time: the bytes every program's tiles move between L2 and the SMs, each program's own copy of data it shares
with others included (a GEMM's A and B tiles, fetched again by every program of a row or column of output tiles:
programs · K · (BLOCK_M + BLOCK_N) · element bytes), at L2_BW of the DRAM peak on the SMs the grid occupies. It is
what makes small tiles slow at large shapes (a 64×32 tile moves 5× the bytes of a 128×256 one), which the DRAM
traffic, counted once per tensor, cannot see.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .kernel import launch_accesses

EFF_WIDE = 0.90  # share of the DRAM peak a streaming kernel reaches with 128-bit accesses
EFF_NARROW = 0.80  # ... with 32-bit (or narrower) coalesced accesses
EFF_SECTOR = 0.50  # ... with loads whose tiles hold under a 128-byte line of each of rows a line or more apart (a
# sector or two of each of many lines a request; coalescing.ShortRun): fitted on 12 such launches of a row walk on an
# H200 (16-64 bytes of each row a trip, 1 and 4 KB rows, 1-8 warps a program: 2.0-3.3 TB/s, ncu's DRAM throughput
# 39-68% of peak for the same bytes), bench/results/cost/strided-sweep.md
L2_BW = 2.5  # the L2's bandwidth as a multiple of the DRAM peak: re-reads of data that stays in L2 move at it
L2_FIT = 0.5  # share of the L2 a launch's re-read working set may fill and still be re-read from it


@dataclass
class Traffic:
    """What a launch moves: through DRAM (per tensor, uncoalesced inflation included), again from L2, between L2 and
    the SMs (every program's tiles), and the L1 wavefronts of uncoalesced requests."""

    per_tensor: dict[str, float]
    inflation: dict[str, float]
    l2: float
    sector: float
    tile_bytes: float
    strided_waves: dict[str, float] = field(default_factory=dict)

    @property
    def dram(self) -> float:
        return sum(self.per_tensor.values())


def traffic(ctx, launch: dict[str, Any], k: Any, bytes_of: dict[str, int], trips: Callable[[int], float],
            programs: int, concurrent: int) -> Traffic:
    """The bytes a launch moves (see the module's text), from the kernel's accesses (`k`: cost/kernel.KernelFacts),
    the runs of each source line per program (`trips`) and the tensors' bytes (`bytes_of`)."""
    from ..coalescing import lane_strides, short_runs

    gpu = ctx.gpu

    inflation: dict[str, float] = {}
    strided = [acc for acc in lane_strides(ctx, launch, k.fn, k.tiles) if acc.pointer and acc.pointer in bytes_of]
    for acc in strided:
        if acc.dram_inflation > 1:
            inflation[acc.pointer] = max(inflation.get(acc.pointer, 1.0), acc.dram_inflation)
    # Alternatives a program takes one of (an early return's row zeroing and the row's real passes) count their
    # largest.
    def one_path(items: list[tuple[tuple[int, int], float]]) -> float:
        return k.counts.most_on_one_path(items) if k.counts is not None else sum(w for _, w in items)

    # Each tensor moves its footprint once per pass that walks it, and at most that a pass: programs re-reading the
    # same data (a weight vector per row) hit L2. A pass is what the accesses of one loop (and arm) move of it: a
    # gated GEMM's gate and up tiles are two halves of one weight in one pass, a norm's second loop over the row
    # another.
    traffic = {p: float(b) for p, b in bytes_of.items()}
    passes: dict[str, dict[tuple, list]] = {}
    accesses = launch_accesses(ctx, k, bytes_of)
    for line, col, p, tile, _ in accesses:
        where = k.counts.placement((line, col)) if k.counts is not None else None
        one = passes.setdefault(p, {}).setdefault(where or (line, col), [(line, col), 0.0])  # unplaced: its own
        one[1] += tile * trips(line) * programs
    walked = {p: one_path([(pos, min(w, float(bytes_of[p]))) for pos, w in groups.values()])
              for p, groups in passes.items()}
    # what the programs' tiles move between L2 and the SMs, each program's re-reads included
    tile_bytes = one_path([((line, col), tile * trips(line) * programs) for line, col, _, tile, _ in accesses])
    # An uncoalesced request takes the L1 a wavefront for each 128-byte line it touches (a coalesced one, one): what
    # a loop that walks the sectors a few bytes a trip costs, its DRAM traffic being the bytes once.
    strided_waves: dict[str, float] = {}
    for acc in strided:
        moved = sum(tile * trips(line) * programs for line, _, _, tile, at in accesses if at == (acc.line, acc.col))
        if acc.lines > 1 and moved:
            strided_waves[acc.pointer] = strided_waves.get(acc.pointer, 0.0) + moved / acc.useful * acc.lines
    for p, w in walked.items():
        traffic[p] = max(traffic[p], w)
    # An uncoalesced access fetches whole sectors for the bytes it reads: the bytes it walks times its inflation (a
    # column read of a row-major matrix fetches each sector once per column; a stride-2 walk fetches the whole span
    # for half of it).
    for p, f in inflation.items():
        traffic[p] = walked.get(p, float(bytes_of[p])) * f
    # A second pass over data a program just read (a row's normalizing pass after its statistics) finds it in L2 when
    # what the running programs re-read fits there: costed at L2's bandwidth, not DRAM's.
    l2 = 0.0
    for p, w in walked.items():
        again = traffic[p] - float(bytes_of[p])
        if p not in inflation and again > 0 and \
                bytes_of[p] / programs * concurrent <= L2_FIT * gpu.l2_bytes:
            traffic[p] -= again
            l2 += again
    # A tensor read in pieces under a line of each row (8 fp32 columns of rows 4 KB apart a trip): DRAM serves its
    # sectors at EFF_SECTOR of its peak
    sector = sum(traffic[p] for p in {r.pointer for r in short_runs(ctx, launch, k.fn)}
                 if p in traffic and p not in inflation)
    return Traffic(traffic, inflation, l2, sector, tile_bytes, strided_waves)


def memory_bw(c: Any) -> float:
    bw = c.gpu.memory_bandwidth
    eff = EFF_WIDE
    if c.dram_bytes:
        sector = min(c.sector_bytes, c.dram_bytes)
        rest = c.dram_bytes - sector  # of which narrow accesses move their share
        narrow = c.narrow_bytes * rest / c.dram_bytes
        eff = (EFF_SECTOR * sector + EFF_WIDE * (rest - narrow) + EFF_NARROW * narrow) / c.dram_bytes
    return min(bw * eff, c.concurrent * c.program_rate)


def memory_us(c: Any) -> float:
    t = c.dram_bytes / c.memory_bw * 1e6 if c.dram_bytes else 0.0
    if c.l2_bytes:
        t += c.l2_bytes / (L2_BW * c.gpu.memory_bandwidth * c.sm_share) * 1e6
    return t


def tile_us(c: Any) -> float:
    """The programs' tiles through the L2 at L2_BW of the DRAM peak, on the SMs the grid occupies: each program
    fetches its own copy of the data it shares with others (a GEMM's tiles of A and B, re-read by every program
    of a row or column of output tiles), which the DRAM traffic counts once."""
    if not c.tile_bytes:
        return 0.0
    return c.tile_bytes / (L2_BW * c.gpu.memory_bandwidth * c.sm_share) * 1e6

