"""The dots: time 2·M·N·K per dot per loop trip per program (ir/counts), at the tensor-core rate of its operand type (fp8,
bf16/fp16, tf32) when it is lowered to mma/wgmma, else at the FP32 FMA rate; DOT_EFF of the peak, on the share of
the SMs the grid occupies.

Pipeline overlap (GEMMs): the copies a K loop keeps in flight — its stages less one — cover the copy latency
PIPE_LATENCY_US only when that many trips of one program's dots last as long: a trip's dot FLOPs at the SM's
share of its operand type's rate (DOT_EFF), shared with the programs resident beside it; and the first stages
less one of each tile's trips wait for their copies whatever the depth (a K loop of 4 trips in 3 stages hides
half). The share not hidden of the smaller of memory, dot and instruction time is added to the largest.
Measured: 2-stage grouped GEMMs ran at the sum of their parts, a 4-trip batched GEMM halfway, 3-stage GEMMs
over long K at their largest part.
"""
from __future__ import annotations

import ast
import math
from typing import Any

from .latency import PIPE_LATENCY_US

DOT_EFF = 0.70  # share of its operand type's peak FLOP rate a tiled dot reaches (fitted on the suite's GEMMs: bf16
# 0.66-0.79 of 989 TFLOP/s, fp8 0.51-0.58 of 1979, bench/results/cost-by-class.md)
# operand kind (ir.counts.Dot.operand_kind) -> the GPU's peak_flops key it runs at on tensor cores
RATE_KEY = {"fp8": "fp8", "int8": "fp8", "fp4": "fp8", "bf16": "bf16", "fp16": "fp16", "tf32": "tf32",
            "fp32": "tf32", "fp64": "fp32"}


def peak_rate(gpu: Any, kind: str) -> float:
    """The GPU's peak FLOP rate for dots of an operand kind on tensor cores (0 when the GPU model has none)."""
    peaks = gpu.peak_flops
    return peaks.get(RATE_KEY.get(kind, "tf32")) or peaks.get("tf32") or peaks.get("fp32") or 0


def dot_us(c: Any) -> float:
    """The dots at their operand type's tensor-core rate (or the FP32 FMA rate off tensor cores), DOT_EFF of the
    peak, on the SMs the grid occupies."""
    peaks = c.gpu.peak_flops
    fp32 = peaks.get("fp32") or 0
    t = 0.0
    if c.tc_flops or c.fma_by_kind:
        for kind, f in c.tc_flops.items():
            rate = peak_rate(c.gpu, kind) or fp32
            t += f / (rate * DOT_EFF) if rate else 0.0
        t += sum(c.fma_by_kind.values()) / (fp32 * DOT_EFF) if fp32 else 0.0
        return t / c.sm_share * 1e6
    tc = peaks.get("tf32") or fp32
    if c.fma_flops and fp32:
        t += c.fma_flops / (fp32 * DOT_EFF)
    if c.flops - c.fma_flops > 0 and tc:
        t += (c.flops - c.fma_flops) / (tc * DOT_EFF)
    return t / c.sm_share * 1e6


def pipeline_overlap(ctx, k: Any, ir_trips, programs: int) -> float:
    """The share of a GEMM's memory and instruction time its software pipeline hides under the dots, from the IR and
    the launch: the K loop (the loop of the most dot FLOPs) keeps `stages - 1` copies in flight; they hide the copy
    latency (PIPE_LATENCY_US) when that many trips of one program's dots last as long — a trip's FLOPs at the SM's
    share of the operand type's tensor-core rate, divided among the programs resident on the SM (as many as the grid
    puts there) — and each tile's
    first `stages - 1` trips wait for their copies whatever the depth. 1 when the IR does not say."""
    if k.counts is None or ir_trips is None or not k.counts.dots:
        return 1.0
    per_loop: dict = {}
    for d in k.counts.dots:
        if d.loop is not None:
            per_loop.setdefault(d.loop, []).append(d)
    if not per_loop:
        return 1.0
    loop, dots = max(per_loop.items(), key=lambda kv: sum(d.flops for d in kv[1]) * ir_trips.of(kv[0]))
    stages = _stages_of(ctx, k.counts.loops[loop].line if loop < len(k.counts.loops) else 0)
    if stages is None:
        return 1.0
    parent = k.counts.loops[loop].parent if loop < len(k.counts.loops) else None
    outer = ir_trips.of(parent) if parent is not None else 1.0
    trips = ir_trips.of(loop) / outer if outer > 0 else ir_trips.of(loop)  # a tile's K trips
    if trips <= 0 or stages < 2:
        return 0.0
    gpu = ctx.gpu
    beside = max(1, min(k.resident, math.ceil(programs / max(1, gpu.sms))))
    trip_s = 0.0
    for d in dots:
        rate = peak_rate(gpu, d.operand_kind)
        if rate:
            trip_s += d.flops / (rate * DOT_EFF / max(1, gpu.sms) / beside)
    ahead = stages - 1
    hidden = min(1.0, ahead * trip_s / (PIPE_LATENCY_US * 1e-6)) if trip_s > 0 else 1.0
    steady = max(0.0, trips - ahead) / trips
    return hidden * steady


def _stages_of(ctx, line: int) -> int | None:
    """The software-pipeline depth of the loop on `line`: its `tl.range(..., num_stages=N)`, else the launch's
    num_stages option; None when neither says."""
    from .._common import source_index

    if line:
        for sites in source_index(ctx).by_stamp.values():
            for site in sites:
                v = site.kw.get("num_stages")
                if site.name == "range" and site.node.lineno == line and isinstance(v, ast.Constant) \
                        and isinstance(v.value, int):
                    return v.value
    stages = (ctx.spec.options or {}).get("num_stages")
    return int(stages) if isinstance(stages, int) else None
