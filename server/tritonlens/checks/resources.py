"""SASS001 register spills, RES001 shared memory over the per-block limit, RES002 low occupancy: findings from the
resource usage ptxas / the AMD backend report, anchored on the kernel's def line (a spill once, its lines as related places)."""
from __future__ import annotations

import ast
from collections import Counter
from functools import lru_cache

from .registry import rule
from ..device.limits import Limits, limits_for, target_limits
from ..model import Related
from ._common import def_span, finding, in_kernel_file, related
from .facts import MAX_BLOCK_THREADS, whole_row
from ..units import fmt_bytes, fmt_us

# ---------------------------------------------------------------- per-target limits


LOW_OCCUPANCY_WARPS = 8  # fewer resident warps per SM than this leaves each scheduler < 2 warps to switch between
WHOLE_ROW_VALUES = 32  # values of a whole row each thread holds from which the row is the spill's cause
SMALL_SPILL_BYTES = 64  # a few spilled values: reported, at info level
LOOP_FREE_SPILL_BYTES = 256  # spills up to this size whose code is outside every loop: info too


def gpu_limits(ctx) -> Limits | None:
    """The limits of the GPU the check stands for (ctx.gpu) on the spec's target (device/limits.py)."""
    return limits_for(ctx.gpu, ctx.spec.target)


def occupancy(ctx) -> dict | None:
    """Resident warps per SM (CU) and what limits them, from registers, shared memory and the warp count."""
    lim = gpu_limits(ctx)
    res = ctx.artifacts.resources
    warps = int(ctx.spec.options.get("num_warps") or ctx.artifacts.metadata.get("num_warps") or 4)
    if lim is None or not warps:
        return None
    caps: dict[str, int] = {"warps": lim.max_warps // warps, "blocks": lim.max_blocks}
    regs = res.registers or 0
    if ctx.hip:
        if regs:
            # each SIMD holds 512 VGPRs per lane, allocated in granules of 8; a CU has 4 SIMDs, 8 waves each
            per_simd = min(8, 512 // (-(-regs // lim.reg_granule) * lim.reg_granule))
            caps["registers"] = (per_simd * 4) // warps
    elif regs:
        per_warp = -(-regs * 32 // lim.reg_granule) * lim.reg_granule
        caps["registers"] = (lim.regs_per_sm // per_warp) // warps
    shared = res.shared or 0
    if shared:
        reserved = 0 if ctx.hip else 1024  # the driver reserves 1 KB per block
        caps["shared"] = lim.shared_per_sm // (shared + reserved)
    blocks = min(caps.values())
    limiter = min(caps, key=lambda k: (caps[k], k not in ("warps", "blocks")))
    resident = blocks * warps
    return {"blocks": blocks, "warps": resident, "max_warps": lim.max_warps,
            "occupancy": round(resident / lim.max_warps, 3), "limiter": limiter, "caps": caps,
            "registers": regs, "shared": shared, "num_warps": warps}


# ---------------------------------------------------------------- SASS001
@rule("SASS001", "register-spill", "warning", cost_cause="spill", fixes=("spill", "config"),
      profile_metrics=("local_loads", "local_stores"))
def register_spill(ctx):
    """Registers spilled to local memory (ptxas spill bytes; LDL/STL in the SASS). A stack frame alone is not a spill."""
    res = ctx.artifacts.resources
    spilled = res.spill_stores + res.spill_loads
    if spilled <= 0:
        return
    hip = ctx.hip
    stage = "amdgcn" if hip else "sass"
    if hip:
        instrs = [(i.ir_line, i.loc, i.opcode, "st" if i.kind == "st.local" else "ld")
                  for i in ctx.amdgcn.instrs if i.kind in ("ld.local", "st.local")]
    else:
        instrs = [(i.ir_line, i.loc, i.opcode, "st" if i.kind == "stl" else "ld") for i in ctx.local_accesses]
    per_line: dict[int, Counter] = {}
    first_ir: dict[int, list] = {}
    for ir_line, loc, opcode, kind in instrs:
        if not in_kernel_file(ctx, loc):
            continue
        per_line.setdefault(loc.line, Counter())[kind] += 1
        first_ir.setdefault(loc.line, []).append((ir_line, opcode))
    regs = res.registers
    warps = ctx.spec.options.get("num_warps")
    st_name, ld_name = ("scratch_store", "scratch_load") if hip else ("STL", "LDL")
    data = {"registers": regs, "spill_stores": res.spill_stores, "spill_loads": res.spill_loads,
            "stack": res.stack, "num_warps": warps, "lines": {str(k): dict(v) for k, v in sorted(per_line.items())},
            "merge_key": "SASS001:def"}
    top = sorted(per_line.items(), key=lambda kv: -sum(kv[1].values()))
    where = ", ".join(f"line {ln} ({c['st']} {st_name}, {c['ld']} {ld_name})" for ln, c in top[:3])
    looped = sorted(ln for ln in per_line if _in_loop(ctx, ln))
    data["in_loop"] = looped
    row = whole_row(ctx)
    if row is not None and row.per_thread >= WHOLE_ROW_VALUES:
        # the row itself fills the registers: no launch option removes it, a loop over the row does (say_rewrite)
        data["whole_row"] = row.to_data()
        extent = f" = {row.extent}" if row.extent else ""
        avoid = (f" — one program holds a whole row ({row.bound}{extent} in a block of {row.block}): loop over it in "
                 "chunks, no launch option removes it")
    else:
        avoid = " — fewer elements per thread (smaller BLOCK or more num_warps) or fewer live values avoid it"
    message = (f"registers spill: {res.spill_stores} B spill stores and {res.spill_loads} B spill loads at "
               f"{regs if regs is not None else '?'} registers per thread"
               + (f"; spill code on {where}" if where else "")
               + (f"{' and' if where else ';'} {len(top) - 3} more line{'s' if len(top) > 4 else ''}"
                  if len(top) > 3 else "")
               + (", inside a loop" if looped else ", outside loops" if per_line else "")
               + avoid)
    # One finding per cause, on the def line: every spilling line is a related place (the source line, then the
    # first spill instruction of it in the IR when the SASS text has one; a cubin-read access has none).
    rel = []
    for ln, c in top:
        rel.append(Related(path=ctx.path, line=ln, message=f"spill code from this line: {c['st']} {st_name} / "
                                                          f"{c['ld']} {ld_name}"))
        ir_line, opcode = first_ir[ln][0]
        if ir_line > 0:
            rel.append(related(ctx, stage, ir_line, f"{opcode} (line {ln})"))
    # What a spill costs is the traffic it makes: a few bytes outside loops run once per program and are cheap.
    small = spilled < SMALL_SPILL_BYTES or (spilled <= LOOP_FREE_SPILL_BYTES and not looped)
    severity = "info" if small else ""
    data["small"] = small
    cause = (f": one program holds a whole row ({row.bound}{extent})" if "whole_row" in data else "")
    where_short = (f" in the loop at line {looped[0]}" if len(looped) == 1 else f" in loops (lines {looped[0]}–{looped[-1]})"
                   if looped else "")
    short = (f"spills {fmt_bytes(res.spill_stores)} a thread ({fmt_bytes(res.spill_loads)} reloaded){where_short}, "
             f"{regs if regs is not None else '?'} registers{cause}")
    yield finding(ctx, def_span(ctx), "SASS001", message, severity=severity, data=data, related_info=rel[:24],
                  short=short)


def say_rewrite(findings: list) -> None:
    """A spill whose cause is a whole row in one program (`data["whole_row"]`, see facts.WholeRow) has no fix in the
    kernel's knobs: it gets the rewrite that removes it — a loop over the row in chunks, two passes or one online
    pass — with what the cost model estimates the spill costs, which is what the rewrite would save
    (`data["rewrite"]`, and a related place on the row's line). Run once the cost model has weighed the findings."""
    for f in findings:
        row = f.data.get("whole_row")
        if f.code != "SASS001" or not isinstance(row, dict):
            continue
        extent = f" = {row['extent']}" if row.get("extent") else ""
        gain, launch = f.data.get("est_gain_us"), f.data.get("est_launch_us")
        saves = (f"estimated to save ~{fmt_us(gain)} of {fmt_us(launch)} a launch ({f.data.get('est_share', 0):.0%}, "
                 "what the cost model prices the spill at)" if gain is not None and launch
                 else "not estimated: no captured launch to price the spill on")
        f.data["rewrite"] = (
            f"one program holds a whole row: {row['bound']}{extent} values in a block of {row['block']}, "
            f"{row['per_thread']} a thread ({row['per_thread_at_most']} even at {MAX_BLOCK_THREADS} threads), all "
            f"live at the reduction on line {row['reduce_line']}, so no num_warps or num_stages removes the spill. "
            "Loop over the row in chunks of a few thousand columns instead: two passes (the max and the sum of exp "
            "over the chunks, then normalize chunk by chunk) or one online pass (a running max, and a running sum "
            f"rescaled by exp(old max - new max), as online softmax / logsumexp); {saves}")
        f.add_detail(f"rewrite: {f.data['rewrite']}", replacing="rewrite: ")
        if not any(r.line == row["line"] and r.message.startswith("one program holds") for r in f.related):
            f.related = [Related(path=f.path, line=int(row["line"]), message=f.data["rewrite"]), *f.related]


def _in_loop(ctx, line: int) -> bool:
    """Whether `line` of the kernel's file lies inside a `for`/`while` of the kernel (or of a helper there)."""
    from ._common import source_index

    return any(a <= line <= b for a, b in _loops(source_index(ctx).lines))


@lru_cache(maxsize=64)
def _loops_of(text: str) -> tuple[tuple[int, int], ...]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    return tuple((n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While)))


def _loops(lines: list[str]) -> tuple[tuple[int, int], ...]:
    return _loops_of("\n".join(lines))


# ---------------------------------------------------------------- RES001
@rule("RES001", "shared-memory-over-limit", "error", fixes=("resources", "config"))
def shared_over_limit(ctx):
    """Shared memory per block over the target's limit: the launch fails with OutOfResources."""
    lim = gpu_limits(ctx)
    shared = ctx.artifacts.resources.shared or int(ctx.artifacts.metadata.get("shared") or 0)
    if lim is None or shared <= lim.shared_per_block:
        return
    stages = ctx.spec.options.get("num_stages")
    allocs = [op for op in ctx.ttgir.ops if op.name == "ttg.local_alloc" and in_kernel_file(ctx, op.loc)]
    rel = [related(ctx, "ttgir", op.ir_line, f"ttg.local_alloc {op.result_type or ''} (line {op.loc.line})")
           for op in allocs[:8]]
    loops = _loop_stages(ctx)
    if loops:
        # `tl.range(..., num_stages=N)` pipelines its loop with N whatever the launch option says
        now = "; ".join(f"tl.range(..., num_stages={v}) on line {ln}" for ln, v in loops[:3])
    else:
        now = f"now {stages}" if stages is not None else ""
    message = (f"needs {shared} B ({shared / 1024:.1f} KB) of shared memory per block; {lim.name} allows "
               f"{lim.shared_per_block} B ({lim.shared_per_block / 1024:.0f} KB): the launch fails with "
               f"OutOfResources — smaller BLOCK sizes or fewer num_stages" + (f" ({now})" if now else ""))
    data = {"shared": shared, "limit": lim.shared_per_block, "target": target_limits(ctx.spec.target).name,
            "gpu": ctx.gpu.key,
            "num_stages": stages,
            "allocs": [op.loc.line for op in allocs], "merge_key": "RES001"}
    short = (f"needs {fmt_bytes(shared)} of shared memory a block, {lim.name} allows "
             f"{fmt_bytes(lim.shared_per_block)}: the launch fails")
    yield finding(ctx, def_span(ctx), "RES001", message, data=data, related_info=rel, short=short)


def _loop_stages(ctx) -> list[tuple[int, str]]:
    """(line, value) of the kernel's `tl.range(..., num_stages=...)` loops: their stage count beats the option's."""
    import ast

    from ._common import source_index

    k = ctx.kernel
    out = []
    for sites in source_index(ctx).by_stamp.values():
        for s in sites:
            v = s.kw.get("num_stages")
            if s.name == "range" and v is not None and k.def_line <= s.node.lineno <= k.end_line:
                item = (s.node.lineno, repr(v.value) if isinstance(v, ast.Constant) else ast.unparse(v))
                if item not in out:
                    out.append(item)
    return sorted(out)


# ---------------------------------------------------------------- RES002
@rule("RES002", "low-occupancy", "hint", cost_cause="occupancy", fixes=("resources", "config"),
      profile_metrics=("achieved_occupancy_pct",))
def low_occupancy(ctx):
    """Registers or shared memory cap the resident warps per SM below a useful level."""
    occ = occupancy(ctx)
    if occ is None or occ["limiter"] not in ("registers", "shared") or occ["warps"] >= LOW_OCCUPANCY_WARPS:
        return
    lim = gpu_limits(ctx)
    if occ["blocks"] == 0:
        return  # does not fit at all: RES001 (or a launch error) says so
    from ._common import threads

    hip = ctx.hip
    sm = "CU" if hip else "SM"
    if occ["limiter"] == "registers":
        why = f"{occ['registers']} registers per thread × {threads(ctx)} threads"
    else:
        why = f"{occ['shared']} B of {'LDS' if hip else 'shared memory'} per block ({lim.shared_per_sm} B per {sm})"
    message = (f"occupancy {occ['warps']} of {occ['max_warps']} {'wavefronts' if hip else 'warps'} per {sm} "
               f"of the {lim.name} ({occ['occupancy']:.0%}): "
               f"{occ['limiter']} allow {occ['blocks']} block(s) of {occ['num_warps']} warps — {why}")
    data = {**occ, "merge_key": f"RES002:{occ['limiter']}"}
    short = (f"occupancy {occ['occupancy']:.0%} ({occ['warps']} of {occ['max_warps']} "
             f"{'wavefronts' if hip else 'warps'} per {sm}), capped by {occ['limiter']}")
    yield finding(ctx, def_span(ctx), "RES002", message, data=data, short=short)
