"""TTGIR001 convert-layout storm and TTGIR002 dot off tensor cores: findings from the TTGIR layouts, confirmed by
the PTX (or AMDGCN) of the same source line."""
from __future__ import annotations

from collections import Counter

from .registry import rule
from ._common import anchor, cuda_arch, finding, in_kernel_file, related, tensor_shape_dtype
from ..model import one_line

_DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")
_WORK_OPS = set(_DOT_OPS) | {"tt.load", "tt.descriptor_load", "ttg.async_copy_global_to_local",
                             "ttng.async_tma_copy_global_to_local", "amdg.buffer_load", "amdg.buffer_load_to_local", "amdgpu.buffer_load",
                             "amdgpu.buffer_load_to_local"}


def _machine(ctx):
    """(stage, instructions) of the lowest text layer: PTX for CUDA, AMDGCN for HIP."""
    if ctx.hip:
        return "amdgcn", ctx.amdgcn.instrs
    return "ptx", ctx.ptx.instrs


def _short(layout: str | None, layouts: dict[str, str]) -> str:
    if not layout:
        return "?"
    if layout.startswith("#") and "<" not in layout:
        return layout
    return layout.split("<", 1)[0]  # an inline layout: its kind (#ttg.dot_op, #ttg.slice)


# ---------------------------------------------------------------- TTGIR001
@rule("TTGIR001", "convert-layout-storm", "warning", cost_cause="convert",
      profile_metrics=("shared_bank_conflicts_ld", "shared_bank_conflicts_st", "barrier_stall_ratio"))
def convert_layout_storm(ctx):
    """Layout conversions (`ttg.convert_layout`) that shuffle registers, often through shared memory."""
    from ..ir.mlir import convert_layout_info

    mod = ctx.ttgir
    convs = [op for op in mod.ops if op.name == "ttg.convert_layout" and in_kernel_file(ctx, op.loc)]
    if not convs:
        return
    total = len(convs)
    threshold = max(1, int(ctx.settings.storm_threshold or 3))
    storm = total >= threshold
    by_line: dict[int, list] = {}
    for op in convs:
        by_line.setdefault(op.loc.line, []).append(op)
    # A persistent kernel's tile loop holds the K loop: a conversion in the tile loop but outside the K loop (the
    # epilogue's accumulator → store layout) runs once per tile, like a plain kernel's epilogue, not per K step.
    work_depth = max((op.loop_depth for op in mod.ops if op.name in _WORK_OPS and in_kernel_file(ctx, op.loc)),
                     default=0)
    stage, instrs = _machine(ctx)
    for line, ops in sorted(by_line.items()):
        depth = max(op.loop_depth for op in ops)
        in_loop = depth > 0
        outer = in_loop and depth < work_depth
        if not (storm or (in_loop and not outer)):
            continue
        pairs: Counter = Counter()
        kinds: Counter = Counter()
        for op in ops:
            info = convert_layout_info(op, mod.layouts)
            if info is None:
                continue
            pairs[(_short(info.src, mod.layouts), _short(info.dst, mod.layouts))] += 1
            kinds[(info.src_kind or "?", info.dst_kind or "?")] += 1
        stamps = {(op.loc.line, op.loc.col) for op in ops}
        line_instrs = [i for i in instrs if i.loc is not None and in_kernel_file(ctx, i.loc) and i.loc.line == line]
        own = [i for i in line_instrs if (i.loc.line, i.loc.col) in stamps] or line_instrs
        mem = Counter(i.kind for i in own if i.kind in ("st.shared", "ld.shared", "bar"))
        shared = bool(mem["st.shared"] and mem["ld.shared"])
        if not storm and not shared and set(kinds) <= {("mma", "dot_op")}:
            # an accumulator reused as the next dot's operand (attention's P @ V) is permuted in registers:
            # the expected lowering, not a storm
            continue
        count = len(ops)
        conv_text = ", ".join(f"{a} → {b}" + (f" ×{n}" if n > 1 else "") for (a, b), n in pairs.most_common(4))
        kind_text = ", ".join(f"{a}→{b}" for (a, b) in kinds)
        where = ("in an outer loop, outside the inner loop that does the work" if outer else
                 "inside a loop" if in_loop else "outside loops")
        if shared:
            bar_name = "s_barrier" if stage == "amdgcn" else "bar.sync"
            path_text = (f"through shared memory ({stage.upper()} of this line: st.shared ×{mem['st.shared']}, "
                         f"ld.shared ×{mem['ld.shared']}, {bar_name} ×{mem['bar']})")
        else:
            path_text = "in registers (no shared-memory round trip in the " + stage.upper() + " of this line)"
        noun = "layout conversion" if count == 1 else "layout conversions"
        message = (f"{count} {noun} ({conv_text}; {kind_text}) {where}, {path_text}; the kernel has {total} "
                   f"(threshold {threshold})")
        # Severity from cost: a shared-memory round trip (stores, a barrier, loads) in the loop that does the work, or
        # several of them on one line, is the cost a storm means; a permutation in registers (warp shuffles, or none)
        # and a single round trip outside the work loop are cheap and informative.
        severity = "warning" if shared and (count > 1 or (in_loop and not outer)) else "info"
        op0 = ops[0]
        span, _ = anchor(ctx, line, op0.loc.col)
        rel = []
        for op in ops[:6]:
            info = convert_layout_info(op, mod.layouts)
            text = f"{_short(info.src, mod.layouts)} → {_short(info.dst, mod.layouts)}" if info else ""
            rel.append(related(ctx, "ttgir", op.ir_line, f"ttg.convert_layout {text}".strip()))
        for i in [i for i in own if i.kind in ("st.shared", "ld.shared", "bar")][:4]:
            rel.append(related(ctx, stage, i.ir_line, i.opcode))
        data = {"count": count, "total": total, "threshold": threshold, "in_loop": in_loop, "outer_loop": outer,
                "shared": shared,
                "conversions": [{"from": a, "to": b, "n": n} for (a, b), n in pairs.items()],
                "kinds": [f"{a}->{b}" for a, b in kinds], "machine": dict(mem),
                "merge_key": f"TTGIR001:{count}:{in_loop}:{shared}"}
        short = (f"{count} {noun} {where}" + (" through shared memory" if shared else " in registers")
                 + f" ({total} in the kernel)")
        yield finding(ctx, span, "TTGIR001", message, severity=severity, data=data, related_info=rel,
                      short=one_line(short))


# ---------------------------------------------------------------- TTGIR002
_TC_DTYPES = {"f16", "bf16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ"}


def _dot_shapes(op):
    res = tensor_shape_dtype(op.result_type)
    a = tensor_shape_dtype(op.operand_types[0]) if op.operand_types else None
    b = tensor_shape_dtype(op.operand_types[1]) if len(op.operand_types) > 1 else None
    if res is None or a is None or len(res[0]) < 2 or len(a[0]) < 2:
        return None
    m, n = res[0][-2], res[0][-1]
    k = a[0][-1]
    return m, n, k, a[1], (b[1] if b else a[1]), res[1]


def _mma_version(layout_text: str) -> int | None:
    pos = layout_text.find("versionMajor = ")
    if pos < 0:
        return None
    j = pos + len("versionMajor = ")
    k = j
    while k < len(layout_text) and layout_text[k].isdigit():
        k += 1
    return int(layout_text[j:k]) if k > j else None


@rule("TTGIR002", "dot-off-tensor-cores", "warning", cost_cause="fma")
def dot_off_tensor_cores(ctx):
    """A `tl.dot` lowered without tensor cores (FMA), or on sm_90+ without wgmma where the shapes allow it."""
    from ..ir.mlir import layout_kind, layout_of

    mod = ctx.ttgir
    arch = cuda_arch(ctx)
    stage, instrs = _machine(ctx)
    seen: set[tuple[int, int]] = set()
    for op in mod.ops:
        if op.name not in _DOT_OPS or not in_kernel_file(ctx, op.loc):
            continue
        key = (op.loc.line, op.loc.col)
        if key in seen:
            continue
        seen.add(key)
        shapes = _dot_shapes(op)
        layout = layout_of(op.result_type)
        kind = layout_kind(layout, mod.layouts)
        layout_text = mod.layouts.get(layout or "", layout or "")
        line_instrs = [i for i in instrs if i.loc is not None and in_kernel_file(ctx, i.loc)
                       and (i.loc.line, i.loc.col) == key]
        ops_count = Counter(i.opcode.split(".")[0] for i in line_instrs)
        fma = ops_count.get("fma", 0) + sum(n for o, n in ops_count.items() if o.startswith("v_fma"))
        mma = sum(1 for i in line_instrs if i.kind in ("mma", "wgmma"))
        span, _ = anchor(ctx, op.loc.line, op.loc.col, ("dot", "dot_scaled"))
        m = n = k = None
        a_t = b_t = acc_t = "?"
        if shapes:
            m, n, k, a_t, b_t, acc_t = shapes
        shape_text = f"{m}×{n}×{k} {a_t}·{b_t}→{acc_t}" if shapes else "unknown shape"
        rel = [related(ctx, "ttgir", op.ir_line, f"{op.name} → {_short(layout, mod.layouts)}")]
        if kind != "mma" and op.name in ("tt.dot", "tt.dot_scaled"):
            cause, why = _fma_cause(op, shapes)
            fma_rel = [i for i in line_instrs if i.opcode.startswith(("fma", "v_fma"))][:2]
            rel += [related(ctx, stage, i.ir_line, i.opcode) for i in fma_rel]
            message = (f"tl.dot runs on FMA units, not tensor cores: {shape_text} lowered with layout "
                       f"{_short(layout, mod.layouts)} (no mma layout; {fma} fma / {mma} mma instructions on this "
                       f"line) — {why}")
            data = {"cause": cause, "lowering": "fma", "m": m, "n": n, "k": k, "a": a_t, "b": b_t, "acc": acc_t,
                    "fma": fma, "mma": mma, "merge_key": f"TTGIR002:fma:{cause}"}
            yield finding(ctx, span, "TTGIR002", message, data=data, related_info=rel,
                          short=f"tl.dot {shape_text} runs on FMA units, not tensor cores ({fma} fma, {mma} mma)")
            continue
        if arch is not None and 90 <= arch < 100 and op.name == "tt.dot" and kind == "mma":
            version = _mma_version(layout_text)
            if version is not None and version >= 3:
                continue
            allows, reasons = _wgmma_allowed(ctx, op, shapes)
            if not allows:
                continue
            message = (f"tl.dot uses mma.sync (MMA v{version or 2}) on sm_{arch}, not wgmma, though {shape_text} "
                       f"fits wgmma ({'; '.join(reasons)}); {mma} mma instructions on this line")
            data = {"cause": "no-wgmma", "lowering": f"mma_v{version or 2}", "m": m, "n": n, "k": k, "a": a_t,
                    "b": b_t, "acc": acc_t, "mma": mma, "merge_key": "TTGIR002:no-wgmma"}
            yield finding(ctx, span, "TTGIR002", message, data=data, related_info=rel,
                          short=f"tl.dot {shape_text} uses mma.sync (MMA v{version or 2}), not wgmma, on sm_{arch}")


def _fma_cause(op, shapes) -> tuple[str, str]:
    if shapes is None:
        return "unknown", "Triton picked no tensor-core layout for this dot"
    m, n, k, a_t, b_t, _ = shapes
    if a_t == "f32" and b_t == "f32" and "tf32" not in op.text:
        return "ieee", ("fp32 operands with input_precision=\"ieee\" have no tensor-core instruction; use fp16/bf16 "
                        "operands or input_precision=\"tf32\"")
    if a_t.startswith(("i", "f64")) and a_t != "i8":
        return "dtype", f"{a_t} operands have no tensor-core instruction here"
    if min(m, n) < 16 or k < 16:
        return "shape", f"M, N or K below 16 ({m}×{n}×{k}) is too small for an mma instruction"
    return "unknown", "Triton picked no tensor-core layout for this dot"


def _wgmma_allowed(ctx, op, shapes) -> tuple[bool, list[str]]:
    if shapes is None:
        return False, []
    m, n, k, a_t, b_t, _ = shapes
    warps = int(ctx.spec.options.get("num_warps") or 4)
    tf32 = a_t == "f32" and b_t == "f32" and "ieee" not in op.text
    dtypes_ok = (a_t in _TC_DTYPES and b_t in _TC_DTYPES) or tf32
    if warps % 4 or not dtypes_ok:
        return False, []
    if m < 64 or n % 8 or k < 16:
        return False, []
    return True, [f"M={m} ≥ 64 per warpgroup", f"N={n} a multiple of 8", f"K={k} ≥ 16",
                  f"{a_t}/{b_t} operands", f"num_warps={warps} is whole warpgroups"]
