"""What the cost of every launch of a spec reads from its compile alone, once per spec (`KernelFacts`): the kernel's
loops and accesses, its tiles, dots, conversions, spill sites and PTX; what class of kernel the IR says it is
(`kernel_class`, as the calibration groups kernels); the tensor each global access addresses.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .._common import dtype_bits, in_kernel_file, numel, tensor_shape_dtype, threads
from ..facts import callee, kernel_def, pointer_param, tensor_accesses as ttgir_accesses
from ..resources import occupancy
from .trips import Loop, kernel_loops

_DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")
_LOAD_OPS = ("tt.load", "ttg.async_copy_global_to_local", "tt.descriptor_load", "ttng.async_tma_copy_global_to_local")
_ASYNC_LOADS = ("ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local")


def _line_of(op) -> int:
    return op.loc.line if op.loc is not None else 0


@dataclass
class KernelFacts:
    """What the cost of every launch of a spec reads from its compile alone, read once per spec (a spec holds up to
    16 recorded launches): the kernel's loops and accesses, its tiles, dots, conversions, spill sites and PTX."""

    fn: ast.FunctionDef | None
    loops: list[Loop]
    resident: int
    n_threads: int
    warps: int
    in_flight: float  # bytes one program's loads request per loop trip (the TTGIR loads' tiles)
    dots: list[tuple[int, float, bool]]  # (line, 2·M·N·K of one dot, on FMA units)
    converts: list[tuple[int, float]]  # (line, bytes one conversion moves through shared memory, both ways)
    spill_per_thread: int
    spill_lines: list[int]
    instr_lines: dict[int, int]  # PTX instructions per source line (0: no line)
    access_bits: dict[int, float]  # bits per thread of the global accesses of each line (PTX)
    narrow_lines: set[int]  # lines whose accesses are all narrower than 128 bits though their runs allow 128
    tiles: list[tuple[int, int, int, float]]  # (line, col, elem bits, bytes of the tile) of each TTGIR global access
    counts: Any = None  # ir.counts.IrCounts of the TTIR (else the TTGIR): loops with their bounds, dots, accesses
    fma_lines: set[int] = field(default_factory=set)  # lines of the dots lowered to FMA (TTGIR)
    async_in_flight: float = 0.0  # bytes a software pipeline keeps in flight ahead of its loop (its prologue's
    # asynchronous copies, one per stage ahead); 0 when the loads are not pipelined
    shared_lines: set[int] | None = None  # lines whose PTX goes through shared memory (st.shared and ld.shared);
    # None without PTX
    kernel_class: str = ""
    straight_lines: set[int] = field(default_factory=set)  # lines whose PTX is in no loop of the PTX: the loops
    # around them were unrolled, so their PTX counts are already per program (not to be multiplied by trips)
    mio_lines: dict[int, int] = field(default_factory=dict)  # what each line's PTX takes of the memory-I/O pipe, in
    # wavefronts (a shared access's bank conflicts, ir/banks.py) and one per shuffle or barrier

    @classmethod
    def of(cls, ctx) -> "KernelFacts":
        from ...ir.mlir import layout_kind, layout_of

        gpu = ctx.gpu
        fn = kernel_def(ctx)
        occ = occupancy(ctx)
        n_threads = threads(ctx)
        in_flight = 0.0
        async_in_flight = 0.0
        async_in_loop = False
        dots: list[tuple[int, float, bool]] = []
        converts: list[tuple[int, float]] = []
        for op in ctx.ttgir.ops:
            if not in_kernel_file(ctx, op.loc):
                continue
            if op.name in _LOAD_OPS:
                type_str = op.operand_types[0] if op.name.startswith("ttg.async") and op.operand_types \
                    else op.result_type
                sd = tensor_shape_dtype(type_str)
                if sd:
                    nbytes = numel(sd[0]) * (dtype_bits(sd[1]) or 32) / 8
                    in_flight += nbytes
                    if op.name in _ASYNC_LOADS:
                        if op.loop_depth == 0:
                            async_in_flight += nbytes
                        else:
                            async_in_loop = True
            elif op.name in _DOT_OPS:
                res = tensor_shape_dtype(op.result_type)
                a = tensor_shape_dtype(op.operand_types[0] if op.operand_types else None)
                if res and a and len(res[0]) >= 2 and len(a[0]) >= 2:
                    fma = op.name == "tt.dot" and layout_kind(layout_of(op.result_type), ctx.ttgir.layouts) != "mma"
                    dots.append((_line_of(op), 2.0 * res[0][-2] * res[0][-1] * a[0][-1], fma))
            elif op.name == "ttg.convert_layout":
                sd = tensor_shape_dtype(op.result_type)
                if sd:
                    converts.append((_line_of(op), 2 * numel(sd[0]) * (dtype_bits(sd[1]) or 32) / 8))
        res = ctx.artifacts.resources
        spill = (res.spill_stores or 0) + (res.spill_loads or 0)
        spill_lines = [i.loc.line for i in ctx.local_accesses if i.loc is not None] if spill > 0 else []
        instr_lines: dict[int, int] = {}
        mio_lines: dict[int, int] = {}
        access_bits: dict[int, float] = {}
        widest: dict[int, int] = {}
        if ctx.artifacts.asm.get("ptx") and not ctx.hip:  # AMDGCN has no widths here
            from ...ir.banks import shared_wavefronts

            waves = shared_wavefronts(ctx.ptx.instrs)  # a shared access's wavefronts, its bank conflicts included
            for i in ctx.ptx.kernel_instrs():
                ln = i.loc.line if i.loc is not None else 0
                instr_lines[ln] = instr_lines.get(ln, 0) + 1
                if i.kind in ("ld.shared", "st.shared", "bar") or i.opcode.startswith("shfl") or \
                        (i.kind in ("atom", "red") and ".shared" in i.opcode):
                    mio_lines[ln] = mio_lines.get(ln, 0) + waves.get(i.ir_line, 1)
                if i.kind in ("ld.global", "st.global", "cp.async") and ln and i.bits:
                    access_bits[ln] = access_bits.get(ln, 0.0) + i.bits
                    widest[ln] = max(widest.get(ln, 0), i.bits)
        tiles, narrow = [], set()
        for store in (False, True):
            for acc in ttgir_accesses(ctx, store).values():
                tiles.append((acc.line, acc.col, acc.elem_bits, acc.per_thread * n_threads * acc.elem_bits / 8))
                if widest and acc.per_thread * acc.elem_bits >= 128 and 0 < widest.get(acc.line, 128) < 128:
                    narrow.add(acc.line)
        shared_lines = None
        if ctx.artifacts.asm.get("ptx") and not ctx.hip:
            kinds: dict[int, set] = {}
            for i in ctx.ptx.kernel_instrs():
                if i.loc is not None and i.kind in ("st.shared", "ld.shared"):
                    kinds.setdefault(i.loc.line, set()).add(i.kind)
            shared_lines = {ln for ln, ks in kinds.items() if len(ks) == 2}
        counts = _ir_counts(ctx)
        fma_lines = {ln for ln, _, fma in dots if fma}
        return cls(fn, kernel_loops(fn), occ["blocks"] if occ and occ.get("blocks") else 1, n_threads,
                   max(1, n_threads // max(1, gpu.warp_size)), in_flight, dots, converts, spill, spill_lines,
                   instr_lines, access_bits, narrow, tiles, counts, fma_lines,
                   async_in_flight if async_in_loop else 0.0, shared_lines, kernel_class(counts),
                   set(instr_lines) - ctx.ptx.looped_lines() if instr_lines else set(), mio_lines)


def _ir_counts(ctx):
    """The loops, dots and accesses of the compile, from its TTIR (loops as written, before the pipeliner adds
    prologue copies), else its TTGIR; None when neither reads."""
    from ...ir.counts import count_ir

    for stage in ("ttir", "ttgir"):
        text = ctx.artifacts.asm.get(stage)
        if isinstance(text, str) and text:
            try:
                return count_ir(text, getattr(ctx, stage))
            except Exception:  # noqa: BLE001 — an IR this reader does not know: the AST's trips stand
                import logging

                logging.getLogger(__name__).exception("counting the %s of %s failed", stage, ctx.kernel.name)
    return None


def kernel_class(counts) -> str:
    """What the IR says a kernel is, as the calibration groups kernels: "attention" (a dot in a loop that consumes
    another dot's result of the same trip: P·V after softmax(Q·Kᵀ); two independent dots of a gated GEMM are a GEMM),
    "gemm-fp8" / "gemm" (dots), "gemm-scaled" (block-scaled dots), "atomic" (it accumulates with atomics), "rows"
    (loops over its data), "elementwise" (one pass, no loop), "" when unread."""
    if counts is None:
        return ""
    if any(d.op in ("tt.dot_scaled", "ttng.tc_gen5_mma_scaled") for d in counts.dots):
        return "gemm-scaled"
    if counts.dots:
        if any(d.chained and d.loop is not None for d in counts.dots):
            return "attention"
        return "gemm-fp8" if any(d.operand_kind == "fp8" for d in counts.dots) else "gemm"
    if any(a.kind == "atomic" for a in counts.accesses):
        return "atomic"
    return "rows" if counts.loops else "elementwise"


def unsized(ctx, launch: dict[str, Any]) -> int:
    """Tensor-descriptor parameters of the spec whose launch records no tensor shape: the bytes they move are
    unknown (the memory term leaves them out)."""
    args = launch.get("args") or {}
    return sum(1 for name, ty in (ctx.spec.signature or {}).items()
               if str(ty).startswith("tensordesc") and not isinstance((args.get(name) or {}).get("tensor"), dict))


def launch_accesses(ctx, k: KernelFacts, tensors: dict[str, Any]) -> list[tuple[int, int, str, float, tuple | None]]:
    """(line, column, the tensor argument it addresses, bytes of its tile, its call's (line, 1-based column)) of each
    TTGIR global access in the kernel's file whose pointer the kernel's AST traces to a tensor argument of the launch:
    the call Triton stamped the access with, so that a line of several accesses
    (`tl.store(o + i, tl.load(x + i) + tl.load(y + i))`) gives each its own tensor; where no call has the stamp, the
    first call of the line (a call spread over lines is on its pointer's line too, where the IR places it)."""
    from .._common import source_index, stamped_call

    if k.fn is None:
        return []
    idx = source_index(ctx)
    pointers = set(tensors)
    by_line: dict[int, str] = {}
    for node in ast.walk(k.fn):
        if isinstance(node, ast.Call) and callee(node) in ("load", "store") and node.args:
            p = pointer_param(node.args[0], pointers, idx)
            if p:
                for ln in (node.lineno, node.args[0].lineno):
                    by_line.setdefault(ln, p)
    out = []
    for line, col, _, tile in k.tiles:
        site = stamped_call(ctx, line, col, ("load", "store"))
        p = pointer_param(site.args[0], pointers, idx) if site is not None and site.args else by_line.get(line)
        if p:
            out.append((line, col, p, tile, (site.node.lineno, site.node.col_offset + 1) if site is not None else None))
    return out
