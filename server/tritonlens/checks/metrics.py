"""Per (kernel, spec) numbers for hovers and code lenses: registers, spills, shared memory, occupancy, and counts of
the IR constructs the rules look at. Picked up by `compute_metrics`."""
from __future__ import annotations

from collections import Counter

from .resources import occupancy


def _widths(instrs, kinds) -> dict[str, dict[str, int]]:
    out: dict[str, Counter] = {}
    for i in instrs:
        if i.kind in kinds and i.bits:
            out.setdefault(i.kind, Counter())[str(i.bits)] += 1
    return {k: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for k, v in out.items()}


def metrics(ctx) -> dict:
    res = ctx.artifacts.resources
    out: dict = {"registers": res.registers, "spill_bytes": res.spill_stores + res.spill_loads,
                 "spill_stores": res.spill_stores, "spill_loads": res.spill_loads, "stack": res.stack,
                 "shared": res.shared}
    occ = occupancy(ctx)
    if occ is not None:
        out["occupancy"] = {k: occ[k] for k in ("warps", "max_warps", "occupancy", "blocks", "limiter")}
    ops = Counter(op.name for op in ctx.ttgir.ops)
    out["convert_layout"] = ops.get("ttg.convert_layout", 0)
    out["local_alloc"] = ops.get("ttg.local_alloc", 0)
    out["dots"] = sum(ops.get(n, 0) for n in ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma"))
    if ctx.hip:
        instrs = ctx.amdgcn.instrs
        out["bar"] = sum(1 for i in instrs if i.kind == "bar")
        out["mma"] = sum(1 for i in instrs if i.kind == "mma")
        out["wgmma"] = 0
        out["fma"] = sum(1 for i in instrs if i.opcode.startswith(("v_fma", "v_pk_fma")))
        out["global_widths"] = _widths(instrs, ("ld.global", "st.global"))
    else:
        instrs = ctx.ptx.kernel_instrs()
        out["bar"] = sum(1 for i in instrs if i.kind == "bar")
        out["mma"] = sum(1 for i in instrs if i.kind == "mma")
        out["wgmma"] = sum(1 for i in instrs if i.kind == "wgmma" and i.opcode.startswith("wgmma.mma_async"))
        out["fma"] = sum(1 for i in instrs if i.opcode.startswith("fma."))
        out["global_widths"] = _widths([i for i in instrs if not i.likely_library],
                                       ("ld.global", "st.global", "cp.async"))
        r = ctx.artifacts.resources
        # Local loads/stores exist only with spills, a stack frame or local memory: without any, SASS (made on
        # demand, see ir.sass.LazyAsm) need not be disassembled to count zero.
        if r.spill_stores or r.spill_loads or r.stack or r.local or dict.__contains__(ctx.artifacts.asm, "sass"):
            local = ctx.local_accesses
            out["ldl"] = sum(1 for i in local if i.kind == "ldl")
            out["stl"] = sum(1 for i in local if i.kind == "stl")
        else:
            out["ldl"] = out["stl"] = 0
    return out
