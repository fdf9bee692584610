"""Facts about a kernel and one compile that several rules and the cost model read, in one public place: the
kernel's definition, a launch's integer values, the TTGIR's tensor accesses, and the lane strides of a pointer
expression along every axis of its tile. No rule imports another rule's helpers; they read these. Per-spec facts
are worked out once per check context (`tensor_accesses`), per-text facts once per parsed source."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..frontend.launches import evaluate
from ..ir.mlir import split_top
from ..source import parse_module
from ._common import dtype_bits, in_kernel_file, numel, tensor_shape_dtype, threads

# the AMD backend's buffer ops print as `amdg.` in triton 3.6 (`amdgpu.` in older releases)
LOAD_OPS = frozenset({"tt.load", "ttg.async_copy_global_to_local", "amdg.buffer_load", "amdg.buffer_load_to_local",
                      "amdgpu.buffer_load", "amdgpu.buffer_load_to_local"})
STORE_OPS = frozenset({"tt.store", "amdg.buffer_store", "amdgpu.buffer_store"})


# ---------------------------------------------------------------- the kernel's source
def callee(call: ast.Call) -> str:
    """The called attribute or name: `tl.load(...)` → "load"."""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def kernel_def(ctx) -> ast.FunctionDef | None:
    try:
        tree = parse_module(ctx.source or "")
    except (SyntaxError, ValueError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                 and n.lineno == ctx.kernel.def_line and n.name == ctx.kernel.func_name), None)


# ---------------------------------------------------------------- values of one launch
def eval_int(expr: ast.expr | None, env: dict[str, int]) -> int | None:
    """An integer expression of literals and known values (launches.evaluate: + - * // % <<, cdiv, min, max,
    next_power_of_2); None when any part is unknown or the value is not an integer."""
    value = evaluate(expr, env) if expr is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def launch_env(ctx, launch: dict[str, Any]) -> dict[str, int]:
    """Integer values of the kernel's parameters in one launch: the launch's scalars, the spec's constexprs over them."""
    env = {k: a["value"] for k, a in launch["args"].items()
           if "value" in a and isinstance(a["value"], int) and not isinstance(a["value"], bool)}
    env.update({k: v for k, v in ctx.spec.constants.items() if isinstance(v, int) and not isinstance(v, bool)})
    return env


# ---------------------------------------------------------------- the compile's tensor accesses
@dataclass
class Access:
    line: int
    col: int
    elem: str
    elem_bits: int
    per_thread: int  # elements each thread moves
    layout_kind: str | None = None
    ops: list = field(default_factory=list)
    run: int = 0  # elements of a 2-D (or higher) tile along its fastest axis, the blocked layout's order[0]: what a
    # program reads of each row at a time; 0 for a 1-D tile or another layout


def tensor_accesses(ctx, store: bool) -> dict[tuple[int, int], Access]:
    """TTGIR tensor loads (or stores) of the kernel's file, keyed by their stamped (line, col); once per context."""
    cache = ctx.__dict__.setdefault("_tensor_accesses", {})
    if store not in cache:
        cache[store] = _tensor_accesses(ctx, store)
    return cache[store]


def _tensor_accesses(ctx, store: bool) -> dict[tuple[int, int], Access]:
    from ..ir.mlir import blocked_order, layout_kind, layout_of

    names = STORE_OPS if store else LOAD_OPS
    out: dict[tuple[int, int], Access] = {}
    n_threads = threads(ctx)
    for op in ctx.ttgir.ops:
        if op.name not in names or not in_kernel_file(ctx, op.loc):
            continue
        type_str = op.operand_types[0] if (store or op.name.startswith("ttg.async")) and op.operand_types \
            else op.result_type
        sd = tensor_shape_dtype(type_str)
        if sd is None:
            continue  # a scalar access: one element, nothing to vectorize
        shape, elem = sd
        bits = dtype_bits(elem)
        if bits is None:
            continue
        key = (op.loc.line, op.loc.col)
        layout = layout_of(type_str)
        kind = layout_kind(layout, ctx.ttgir.layouts)
        order = blocked_order(layout, ctx.ttgir.layouts) if len(shape) >= 2 else None
        run = shape[order[0]] if order and 0 <= order[0] < len(shape) else 0
        acc = out.setdefault(key, Access(op.loc.line, op.loc.col, elem, bits, max(1, numel(shape) // n_threads),
                                         kind, run=run))
        acc.ops.append(op)
    return out


# ---------------------------------------------------------------- pointer expressions
def lane_varying(idx, expr, depth: int = 6) -> bool:
    """Whether an expression's value differs between neighbouring lanes: it varies with a `tl.arange` (directly, or
    through simple assignments, calls and loads) — but not through `// D` or `>> k`, the row of a linearized tile
    (constant over a run of consecutive lanes); `% D` and `& m` vary as their left side does."""
    if isinstance(expr, ast.Call):
        if callee(expr) == "arange":
            return True
        parts = [*expr.args, *(k.value for k in expr.keywords)]
        if isinstance(expr.func, ast.Attribute):
            parts.append(expr.func.value)  # `x.to(tl.int64)`
        return any(lane_varying(idx, p, depth) for p in parts)
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, (ast.FloorDiv, ast.RShift)):
            return False
        if isinstance(expr.op, (ast.Mod, ast.BitAnd)):
            return lane_varying(idx, expr.left, depth)
        return lane_varying(idx, expr.left, depth) or lane_varying(idx, expr.right, depth)
    if isinstance(expr, ast.Name):
        return depth > 0 and any(lane_varying(idx, v, depth - 1) for v in idx.assigns.get(expr.id, []))
    return any(lane_varying(idx, child, depth) for child in ast.iter_child_nodes(expr))


def pointer_param(expr: ast.expr, pointers: set[str], idx, depth: int = 6) -> str:
    """The pointer parameter a pointer expression is based on ("" when none is found), through assignments."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            if n.id in pointers:
                return n.id
            if depth > 0:
                for value in idx.assigns.get(n.id, []):
                    found = pointer_param(value, pointers, idx, depth - 1)
                    if found:
                        return found
    return ""


def lane_terms(idx, expr: ast.expr, depth: int = 6) -> list[ast.expr | None]:
    """What multiplies each lane-varying term (`lane_varying`) of a pointer expression, on every axis of the tile:
    None for a term with no multiplier (stride 1), the multiplying expression otherwise (`rows * stride_row` →
    stride_row, `offs_k[:, None] * stride_d` → stride_d; `(offs // D) * stride_r` is a row, no term). Names are
    followed through their assignments.

    The one answer to "are neighbouring lanes adjacent in memory": a tile with a stride-1 term on any axis is laid
    out with that axis fastest (Triton's contiguity analysis orders the layout by it), so it is contiguous whatever
    multiplies the other axes (`x + cols[None, :] * stride + rows[:, None]` is contiguous along its rows); only when
    every term has a multiplier are the lanes a stride apart (`contiguous`)."""
    if depth <= 0:
        return []
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return lane_terms(idx, expr.left, depth) + lane_terms(idx, expr.right, depth)
    if isinstance(expr, ast.Subscript):
        return lane_terms(idx, expr.value, depth)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        for this, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if lane_varying(idx, other) and not lane_varying(idx, this):
                return [this]
        return []
    if isinstance(expr, ast.Name) and expr.id in idx.assigns:
        out: list[ast.expr | None] = []
        for value in idx.assigns[expr.id][:4]:
            out += lane_terms(idx, value, depth - 1)
        return out
    if isinstance(expr, ast.Call) and callee(expr) in ("multiple_of", "max_contiguous") and expr.args:
        return lane_terms(idx, expr.args[0], depth)
    return [None] if lane_varying(idx, expr) else []


def contiguous(terms: list[ast.expr | None]) -> bool | None:
    """From `lane_terms`: True when some axis has stride 1, False when every term has a multiplier, None when the
    expression has no arange-derived term (a scalar or an index the source does not show)."""
    if not terms:
        return None
    return any(t is None for t in terms)


# ---------------------------------------------------------------- a whole row in one program
MAX_BLOCK_THREADS = 1024  # threads a block may have, CUDA and HIP alike (32 warps of 32, 16 wavefronts of 64)
_PASS_THROUGH = frozenset({"tt.expand_dims", "tt.broadcast", "ttg.convert_layout", "arith.extsi", "arith.extui",
                           "arith.trunci", "arith.index_cast", "tt.splat"})
_CMPI = re.compile(r"arith\.cmpi (\w+), (%[\w.$#-]+), (%[\w.$#-]+)")
_MAKE_RANGE = re.compile(r"end = (\d+) : i32, start = (\d+) : i32")
_FIRST_OPERAND = re.compile(r"=\s*\"?[\w.]+\"?\(?\s*(%[\w.$#-]+)")
_INT_TYPE = re.compile(r"i(?:8|16|32|64)")
_LOC_NAME = re.compile(r'loc\("([^"]+)"')
_AXIS = re.compile(r"axis = (\d+) : i32")
_LESS = {"slt": False, "ult": False, "sle": True, "ule": True}  # cols < n (False) or cols <= n (True)
_MORE = {"sgt": False, "ugt": False, "sge": True, "uge": True}  # n > cols, n >= cols


@dataclass(frozen=True)
class WholeRow:
    """A row one program holds whole: a reduction (`tl.max`, `tl.sum`) over a tile whose lanes along the reduced
    axis are `tl.arange(0, block)` masked against a kernel argument (`cols < n_cols`) with no offset — no loop walks
    the row, so a program's row is at most `block` long and every value of it is live at the reduction. At a large
    extent (a 128k vocabulary) no launch option makes that fit in registers; only a loop over the row in chunks does."""

    line: int  # the mask's source line
    reduce_line: int  # the reduction's source line
    block: int  # the tile's length along the reduced axis
    bound: str  # the kernel argument the mask compares with
    values: int  # values of the reduced tile (all its axes)
    per_thread: int  # of them each thread holds at the spec's warps
    extent: int | None = None  # the bound's value in the most launched captured launch (None: no launch says)

    @property
    def per_thread_at_most(self) -> int:
        """Values each thread holds even with the most threads a block may have."""
        return max(1, self.values // MAX_BLOCK_THREADS)

    def to_data(self) -> dict[str, Any]:
        return {"line": self.line, "reduce_line": self.reduce_line, "block": self.block, "bound": self.bound,
                "extent": self.extent, "per_thread": self.per_thread, "per_thread_at_most": self.per_thread_at_most}


def whole_row(ctx) -> WholeRow | None:
    """The reduction of the kernel over a whole row one program holds (see WholeRow), the one with the most values a
    thread holds; None when every reduction's row is walked by a loop (or the kernel reduces nothing). Read from the
    TTGIR: the reduced axis's lanes traced back to their `tt.make_range` and the mask's bound to a kernel argument."""
    cache = ctx.__dict__.setdefault("_whole_row", [])
    if not cache:
        cache.append(_whole_row(ctx))
    return cache[0]


def _int_args(func_text: str) -> dict[str, str]:
    """A `tt.func` line's integer arguments: SSA name -> the kernel's parameter name (its loc name)."""
    start = func_text.find("(")
    depth, end = 0, len(func_text)
    for i in range(start, len(func_text)):
        depth += {"(": 1, ")": -1}.get(func_text[i], 0)
        if depth == 0:
            end = i
            break
    out = {}
    for part in split_top(func_text[start + 1:end], ","):
        name, _, rest = part.partition(":")
        if _INT_TYPE.fullmatch(rest.strip().split(" ", 1)[0]):
            loc = _LOC_NAME.search(rest)
            out[name.strip()] = loc.group(1) if loc else name.strip().lstrip("%")
    return out


def _whole_row(ctx) -> WholeRow | None:
    ops = ctx.ttgir.ops
    defs = {r.split(":", 1)[0]: op for op in ops for r in op.results}
    func = next((op for op in ops if op.name == "tt.func" and "public" in op.text), None)
    int_args = _int_args(func.text) if func is not None else {}

    def source(name: str, depth: int = 8) -> tuple[str, Any] | None:
        """What an SSA value is made from through shape and layout changes: ("range", (start, end)) or ("arg", name)."""
        name = name.split("#", 1)[0]
        if name in int_args:
            return ("arg", int_args[name])
        op = defs.get(name)
        if op is None or depth <= 0:
            return None
        if op.name == "tt.make_range":
            m = _MAKE_RANGE.search(op.text)
            return ("range", (int(m.group(2)), int(m.group(1)))) if m else None
        if op.name in _PASS_THROUGH:
            m = _FIRST_OPERAND.search(op.text)
            return source(m.group(1), depth - 1) if m else None
        return None

    masks: dict[int, tuple[int, str]] = {}  # row length -> (source line, bound)
    for op in ops:
        if op.name != "arith.cmpi" or not in_kernel_file(ctx, op.loc):
            continue
        m = _CMPI.search(op.text)
        if m is None or (m.group(1) not in _LESS and m.group(1) not in _MORE):
            continue
        lanes, bound = (m.group(2), m.group(3)) if m.group(1) in _LESS else (m.group(3), m.group(2))
        a, b = source(lanes), source(bound)
        if a and b and a[0] == "range" and b[0] == "arg" and a[1][0] == 0:
            masks.setdefault(a[1][1], (op.loc.line, b[1]))
    if not masks:
        return None
    n_threads = threads(ctx)
    best: WholeRow | None = None
    for op in ops:
        if op.name != "tt.reduce" or not in_kernel_file(ctx, op.loc) or not op.operand_types:
            continue
        sd, axis = tensor_shape_dtype(op.operand_types[0]), _AXIS.search(op.text)
        if sd is None or axis is None or int(axis.group(1)) >= len(sd[0]):
            continue
        block = sd[0][int(axis.group(1))]
        if block not in masks:
            continue
        line, bound = masks[block]
        values = numel(sd[0])
        row = WholeRow(line, op.loc.line, block, bound, values, max(1, values // n_threads))
        if best is None or row.per_thread > best.per_thread:
            best = row
    if best is None:
        return None
    extents = [launch_env(ctx, launch).get(best.bound) for launch in ctx.launches]
    extent = next((e for e in extents if isinstance(e, int)), None)
    return replace(best, extent=extent)
