"""One captured launch's estimate: the compile's facts (cost/kernel) and the launch's values (grid, scalars, tensors)
made into a Cost, each of its parts counted by its mechanism's module."""
from __future__ import annotations

from typing import Any

from ...model import timing_reliable
from .._common import numel
from ..facts import launch_env
from . import memory
from .dots import pipeline_overlap
from .floor import physical_floor
from .kernel import KernelFacts, unsized
from .launch import LAUNCH_US, Cost
from .tensors import launch_tensors, tensor_bytes
from .trips import launch_trips, loop_trips


def estimate(ctx, launch: dict[str, Any], facts: KernelFacts | None = None) -> Cost | None:
    """The cost of one captured launch of the spec; None when the launch or the compile says too little. `facts`:
    what the spec's compile says (KernelFacts.of), when the caller estimates several launches."""
    gpu = ctx.gpu
    programs = numel([int(g) for g in launch.get("grid") or []])
    if programs <= 0:
        return None
    k = facts or KernelFacts.of(ctx)
    concurrent = min(programs, gpu.sms * k.resident)
    env = launch_env(ctx, launch)
    ir_trips = launch_trips(k.counts, env, launch, programs, concurrent)
    by_line = k.counts.line_trips(ir_trips) if ir_trips is not None else {}

    def trips(line: int) -> float:
        """Runs of a source line per program: from the IR's loops where the IR has the line, else the AST's."""
        if not line:
            return 1
        if line in by_line:
            return by_line[line]
        return loop_trips(k.loops, line, env)

    bytes_of: dict[str, int] = {}
    for name, a in (launch.get("args") or {}).items():
        if isinstance(a, dict) and isinstance(a.get("tensor"), dict):
            bytes_of[name] = tensor_bytes(a["tensor"])

    moved = memory.traffic(ctx, launch, k, bytes_of, trips, programs, concurrent)
    dram = moved.dram

    # narrow accesses: the share of the accesses' bits moved by lines narrower than 128 bits where the run allows 128
    total_access = sum(k.access_bits.values())
    narrow_share = sum(b for ln, b in k.access_bits.items() if ln in k.narrow_lines) / total_access \
        if total_access else 0.0

    per_program = dram / programs
    in_flight = k.in_flight if 0 < k.in_flight <= per_program else per_program

    tc_flops: dict[str, float] = {}
    fma_by_kind: dict[str, float] = {}
    if k.counts is not None and k.counts.dots and ir_trips is not None:
        for d in k.counts.dots:
            into = fma_by_kind if d.line in k.fma_lines else tc_flops
            into[d.operand_kind] = into.get(d.operand_kind, 0.0) + d.flops * ir_trips.of(d.loop) * programs
        flops = sum(tc_flops.values()) + sum(fma_by_kind.values())
        fma = sum(fma_by_kind.values())
    else:
        flops = sum(f * trips(ln) for ln, f, _ in k.dots) * programs
        fma = sum(f * trips(ln) for ln, f, on_fma in k.dots if on_fma) * programs
    spill_trips = max((trips(ln) for ln in k.spill_lines), default=1)
    spill = k.spill_per_thread * k.n_threads * programs * spill_trips
    # a conversion whose line's PTX never goes through shared memory permutes registers: it costs nothing here
    convert = sum(b * trips(ln) for ln, b in k.converts
                  if k.shared_lines is None or ln in k.shared_lines) * programs
    # instructions and the memory-I/O pipe's wavefronts: the PTX of each source line, run by every warp of every program
    # as often as the loops around it that the PTX still has (an unrolled loop's copies are all in the PTX already)
    def ptx_trips(line: int) -> float:
        return 1 if line in k.straight_lines else trips(line)

    warp_instrs = float(sum(n * ptx_trips(ln) for ln, n in k.instr_lines.items())) * k.warps * programs
    mio = float(sum(n * ptx_trips(ln) for ln, n in k.mio_lines.items())) * k.warps * programs

    overlap = pipeline_overlap(ctx, k, ir_trips, programs) if tc_flops else 1.0
    pipelined = k.async_in_flight > 0
    if pipelined:
        in_flight = min(k.async_in_flight, per_program) if per_program > 0 else k.async_in_flight
    raw = launch.get("time_us") if isinstance(launch.get("time_us"), (int, float)) else None
    measured = raw if raw is not None and timing_reliable(launch) else None
    return Cost(programs, concurrent, sum(bytes_of.values()), dram, dram * narrow_share, in_flight, k.warps, flops,
                fma, spill, convert, gpu, warp_instrs, spill_trips > 1, moved.inflation, measured, resident=k.resident,
                tensor_bytes_of={p: int(t) for p, t in moved.per_tensor.items()}, l2_bytes=moved.l2, tc_flops=tc_flops,
                fma_by_kind=fma_by_kind, pipelined=pipelined, kernel_class=k.kernel_class,
                unknown_trips=len(ir_trips.unknown) if ir_trips is not None else 0, measured_raw_us=raw,
                timed=int(launch.get("timed") or 0), overlap=overlap, tile_bytes=moved.tile_bytes,
                unsized=unsized(ctx, launch), mio_instrs=mio, strided_waves=moved.strided_waves, sector_bytes=moved.sector,
                floor=physical_floor(k.counts, launch_tensors(launch), gpu, LAUNCH_US),
                unknown_lines=tuple(k.counts.loops[i].line for i in sorted(ir_trips.unknown))
                if ir_trips is not None else ())
