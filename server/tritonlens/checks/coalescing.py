"""LAUNCH003 uncoalesced global access: a load or store whose neighbouring lanes are a stride apart in memory, so that
each warp request touches more 32-byte DRAM sectors than the bytes it uses — a column read of a row-major matrix
(`x_ptr + rows * stride_row + col`), a stride-2 walk over interleaved data.

Evidence: the access's pointer expression in the kernel's AST (the index that varies along the tensor's fastest axis,
and the parameter or literal that multiplies it) with the captured launch's value of that stride; the element width
from the TTGIR access. The layout puts consecutive lanes along the fastest axis, so a lane stride of `s` elements of
`b` bytes makes 32 lanes touch min(32, ceil(32·s·b / 32)) sectors for 32·b useful bytes. The cost model (checks/cost)
weighs it: the extra sectors are DRAM traffic.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .registry import rule
from ._common import Span, finding, source_index, stamped_call, threads
from .facts import callee, contiguous, eval_int, kernel_def, lane_terms, launch_env, pointer_param, tensor_accesses

SECTOR = 32
WARP_LANES = 32
_ACCESS = {"load": 0, "store": 0}  # the pointer is the first argument of both


@dataclass
class LaneStride:
    line: int
    col: int
    end_line: int
    end_col: int
    pointer: str  # the pointer parameter the access is based on ("" when none is found)
    stride_text: str  # the expression multiplying the lane index
    stride: int  # elements between neighbouring lanes
    elem_bytes: int
    store: bool

    @property
    def sectors(self) -> int:
        """DRAM sectors one warp request touches."""
        span = WARP_LANES * self.stride * self.elem_bytes
        return max(1, min(WARP_LANES, -(-span // SECTOR)))

    @property
    def useful(self) -> int:
        return WARP_LANES * self.elem_bytes

    @property
    def inflation(self) -> float:
        """Bytes moved from DRAM per byte used."""
        return self.sectors * SECTOR / self.useful


def lane_strides(ctx, launch: dict[str, Any], fn: ast.FunctionDef | None = None,
                 tiles: list[tuple[int, int, int, float]] | None = None) -> list[LaneStride]:
    """Global accesses of the kernel whose neighbouring lanes are more than one element apart in `launch`. `fn` and
    `tiles` ((line, col, element bits, tile bytes) of the TTGIR accesses): what the cost model read of the compile
    already, for each of a spec's launches."""
    fn = fn or kernel_def(ctx)
    if fn is None:
        return []
    idx = source_index(ctx)
    env = launch_env(ctx, launch)
    sig = ctx.spec.signature if isinstance(ctx.spec.signature, dict) else {}
    pointers = {k for k, v in sig.items() if isinstance(v, str) and v.startswith("*")}
    if tiles is None:
        tiles = [(a.line, a.col, a.elem_bits, 0.0) for store in (False, True)
                 for a in tensor_accesses(ctx, store).values()]
    # each access's element bytes, on the call Triton stamped it with (a call spread over lines is stamped on its
    # pointer's line); else the first of its line
    by_call: dict[tuple[int, int], int] = {}
    by_line: dict[int, int] = {}
    for line, col, bits, _ in tiles:
        if bits >= 8:
            site = stamped_call(ctx, line, col, tuple(_ACCESS))
            if site is not None:
                by_call.setdefault((site.node.lineno, site.node.col_offset), bits // 8)
            by_line.setdefault(line, bits // 8)
    out: list[LaneStride] = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and callee(node) in _ACCESS and node.args):
            continue
        elem = by_call.get((node.lineno, node.col_offset)) or by_line.get(node.lineno) or \
            by_line.get(node.args[0].lineno)
        if not elem:
            continue  # a scalar access, or one the compiler dropped
        ptr = node.args[0]
        terms = lane_terms(idx, ptr)
        if contiguous(terms) is not False:
            continue  # a stride-1 axis is the tile's fastest (facts.lane_terms): coalesced; or nothing to tell
        values = [eval_int(t, env) for t in terms]
        if any(v is None for v in values):
            continue  # a stride this launch does not tell: no claim
        strides = [v for v in values if v is not None]
        mults = [t for t in terms if t is not None]
        if min(abs(v) for v in strides) <= 1:
            continue
        k = min(range(len(strides)), key=lambda i: abs(strides[i]))
        out.append(LaneStride(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                              (node.end_col_offset or node.col_offset) + 1, pointer_param(ptr, pointers, idx),
                              ast.unparse(mults[k]), abs(strides[k]), elem, callee(node) == "store"))
    return out


@rule("LAUNCH003", "uncoalesced-access", "warning", cost_cause="uncoalesced")
def uncoalesced_access(ctx):
    """Neighbouring lanes of a global access are a stride apart: each warp request touches more DRAM sectors than the
    bytes it uses."""
    launches = ctx.launches
    if not launches or not ctx.source:
        return
    launch = launches[0]
    for acc in lane_strides(ctx, launch):
        if acc.inflation < 2:
            continue
        wasted = 1 - 1 / acc.inflation
        what = "stores" if acc.store else "loads"
        message = (f"uncoalesced {what}: neighbouring lanes are {acc.stride_text} = {acc.stride:,} elements "
                   f"({acc.stride * acc.elem_bytes:,} B) apart, so each warp request touches {acc.sectors} sectors of "
                   f"{SECTOR} B for {acc.useful} B used ({wasted:.0%} of every sector fetched is wasted, "
                   f"{acc.inflation:.0f}× the bytes) in the captured launch — make the lanes run along the contiguous "
                   f"axis (index the tile so that the stride-1 index is the fastest, e.g. a block of columns per "
                   f"program and a loop over rows), or transpose the data once")
        data = {"stride": acc.stride, "sectors": acc.sectors, "useful": acc.useful, "inflation": round(acc.inflation, 2),
                "pointer": acc.pointer, "threads": threads(ctx), "merge_key": f"LAUNCH003:{acc.stride}"}
        yield finding(ctx, Span(acc.line, acc.col, acc.end_line, acc.end_col), "LAUNCH003", message, data=data)
