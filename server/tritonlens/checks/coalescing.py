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
LINE = 128
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
    reuse: int = 1  # trips of the loop around it that read the same sectors (it walks them a few bytes a trip)
    loop_line: int = 0  # that loop's line

    @property
    def sectors(self) -> int:
        """DRAM sectors one warp request touches."""
        span = WARP_LANES * self.stride * self.elem_bytes
        return max(1, min(WARP_LANES, -(-span // SECTOR)))

    @property
    def lines(self) -> int:
        """128-byte lines one warp request touches: the wavefronts the L1 takes for it."""
        span = WARP_LANES * self.stride * self.elem_bytes
        return max(1, min(WARP_LANES, -(-span // LINE)))

    @property
    def dram_inflation(self) -> float:
        """Bytes moved from DRAM per byte used over the loop: the sectors a request fetched serve the next `reuse`
        trips from L1 (a warp's 32 sectors, 1 KB, stay there while it walks them)."""
        return max(1.0, self.inflation / self.reuse)

    @property
    def useful(self) -> int:
        return WARP_LANES * self.elem_bytes

    @property
    def inflation(self) -> float:
        """Bytes moved from DRAM per byte used."""
        return self.sectors * SECTOR / self.useful


def _scope(ctx, launch: dict[str, Any], fn: ast.FunctionDef | None):
    """What reading a kernel's accesses in a launch needs: its def, the source index, the launch's values and the
    pointer parameters; None without a def."""
    fn = fn or kernel_def(ctx)
    if fn is None:
        return None
    sig = ctx.spec.signature if isinstance(ctx.spec.signature, dict) else {}
    pointers = {k for k, v in sig.items() if isinstance(v, str) and v.startswith("*")}
    return fn, source_index(ctx), launch_env(ctx, launch), pointers


def lane_strides(ctx, launch: dict[str, Any], fn: ast.FunctionDef | None = None,
                 tiles: list[tuple[int, int, int, float]] | None = None) -> list[LaneStride]:
    """Global accesses of the kernel whose neighbouring lanes are more than one element apart in `launch`. `fn` and
    `tiles` ((line, col, element bits, tile bytes) of the TTGIR accesses): what the cost model read of the compile
    already, for each of a spec's launches."""
    scope = _scope(ctx, launch, fn)
    if scope is None:
        return []
    fn, idx, env, pointers = scope
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
        reuse, loop_line = _trip_reuse(idx, ptr, loops_around(fn, node), env, elem)
        out.append(LaneStride(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                              (node.end_col_offset or node.col_offset) + 1, pointer_param(ptr, pointers, idx),
                              ast.unparse(mults[k]), abs(strides[k]), elem, callee(node) == "store", reuse, loop_line))
    return out


@dataclass
class ShortRun:
    """A coalesced load whose tile holds less than a 128-byte line of each row, the rows a line or more apart
    (`x + rows[:, None] * n_cols + cols[None, :]` with 8 fp32 columns): each warp request reads a sector or two from
    each of many lines, and DRAM serves such pieces at a fraction of its peak (the cost model's EFF_SECTOR)."""
    line: int
    col: int
    pointer: str
    run_bytes: int  # bytes of each row the tile holds
    row_bytes: int  # bytes between its rows


def short_runs(ctx, launch: dict[str, Any], fn: ast.FunctionDef | None = None) -> list[ShortRun]:
    """The loads of the kernel, in `launch`, whose TTGIR tile holds under a line of each row (facts.Access.run along
    the layout's fastest axis) of rows at least a line apart (the multiplier of the pointer's other axis)."""
    scope = _scope(ctx, launch, fn)
    if scope is None:
        return []
    fn, idx, env, pointers = scope
    runs: dict[tuple[int, int], tuple[int, int]] = {}  # the stamped call -> (bytes of a row its tile holds, element
    # bytes)
    for acc in tensor_accesses(ctx, False).values():
        site = stamped_call(ctx, acc.line, acc.col, ("load",))
        if site is not None and acc.run and acc.elem_bits >= 8:
            key = (site.node.lineno, site.node.col_offset)
            runs[key] = max(runs.get(key, (0, 0)), (acc.run * acc.elem_bits // 8, acc.elem_bits // 8))
    out: list[ShortRun] = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and callee(node) == "load" and node.args):
            continue
        run, elem = runs.get((node.lineno, node.col_offset), (0, 0))
        if not 0 < run < LINE:
            continue
        terms = lane_terms(idx, node.args[0])
        if contiguous(terms) is not True:
            continue  # lanes a stride apart: lane_strides's case
        strides = [eval_int(t, env) for t in terms if t is not None]
        if not strides or any(v is None for v in strides):
            continue  # a row stride this launch does not tell: no claim
        row_bytes = min(abs(v) for v in strides if v is not None) * elem
        if row_bytes >= LINE:
            out.append(ShortRun(node.lineno, node.col_offset + 1, pointer_param(node.args[0], pointers, idx),
                                run, row_bytes))
    return out


def loops_around(fn: ast.AST, node: ast.AST) -> list[ast.For]:
    """The `for` loops of `fn` whose body holds `node`, innermost first."""
    out: list[ast.For] = []
    for loop in ast.walk(fn):
        if isinstance(loop, ast.For) and loop is not node and any(n is node for n in ast.walk(loop)):
            out.append(loop)
    return sorted(out, key=lambda lp: -lp.lineno)


def _trip_reuse(idx, ptr: ast.expr, loops: list[ast.For], env: dict[str, int], elem: int) -> tuple[int, int]:
    """(trips that share a request's sectors, the loop's line): the innermost loop the pointer moves with, when a
    trip moves it fewer bytes than a sector (`x + rows * n_cols + c` over `for c in range(n_cols)`: 4 B a trip,
    8 trips a sector); (1, 0) otherwise."""
    for loop in loops:
        if not (isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)
                and callee(loop.iter) in ("range", "static_range") and loop.iter.args):
            continue
        coeff = linear_coeff(idx, ptr, loop.target.id, env)
        if coeff == 0:
            continue  # the pointer does not move with this loop: look further out
        step = eval_int(loop.iter.args[2], env) if len(loop.iter.args) > 2 else 1
        if coeff is None or step is None:
            return 1, 0
        moved = abs(coeff * step) * elem
        return (SECTOR // moved, loop.lineno) if 0 < moved < SECTOR else (1, 0)
    return 1, 0


def linear_coeff(idx, expr: ast.expr, var: str, env: dict[str, int], depth: int = 6) -> int | None:
    """How many elements `expr` moves when `var` grows by one (0 when it does not depend on it); None when that is not
    a known integer (a product of two terms that move, a stride the launch does not tell)."""
    if depth <= 0:
        return None
    if isinstance(expr, ast.Name):
        if expr.id == var:
            return 1
        values = idx.assigns.get(expr.id, [])
        found = {linear_coeff(idx, v, var, env, depth - 1) for v in values[:4]}
        return 0 if not found else found.pop() if len(found) == 1 else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        a, b = linear_coeff(idx, expr.left, var, env, depth), linear_coeff(idx, expr.right, var, env, depth)
        return None if a is None or b is None else a + b if isinstance(expr.op, ast.Add) else a - b
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        a, b = linear_coeff(idx, expr.left, var, env, depth), linear_coeff(idx, expr.right, var, env, depth)
        if a == 0 and b == 0:
            return 0
        if a is None or b is None or (a and b):
            return None
        factor = eval_int(expr.right if a else expr.left, env)
        return None if factor is None else (a or b) * factor
    if isinstance(expr, ast.Subscript):
        return linear_coeff(idx, expr.value, var, env, depth)
    if isinstance(expr, ast.Call):
        if callee(expr) in ("multiple_of", "max_contiguous") and expr.args:
            return linear_coeff(idx, expr.args[0], var, env, depth)
        if callee(expr) == "arange":
            return 0
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return 0 if var not in names and not any(var in idx.names_reaching(frozenset({n})) for n in names) else None


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
        if acc.reuse > 1:
            message = message.replace(
                f"({wasted:.0%} of every sector fetched is wasted, {acc.inflation:.0f}× the bytes)",
                f"({acc.lines} L1 wavefronts where a coalesced request takes 1; the next {acc.reuse - 1} trips of "
                f"the loop on line {acc.loop_line} read the rest of those sectors from L1, so DRAM moves the bytes "
                f"about once)")
        data = {"stride": acc.stride, "sectors": acc.sectors, "useful": acc.useful, "inflation": round(acc.inflation, 2),
                "dram_inflation": round(acc.dram_inflation, 2), "reuse": acc.reuse, "wavefronts": acc.lines,
                "pointer": acc.pointer, "threads": threads(ctx), "merge_key": f"LAUNCH003:{acc.stride}"}
        short = (f"uncoalesced {what}: lanes {acc.stride * acc.elem_bytes:,} B apart, {acc.sectors} sectors for "
                 f"{acc.useful} B used" + (f" ({wasted:.0%} wasted)" if acc.reuse <= 1 else " (L1 reuses the rest)"))
        yield finding(ctx, Span(acc.line, acc.col, acc.end_line, acc.end_col), "LAUNCH003", message, data=data,
                      short=short)
