"""LAUNCH001 masked-lane waste, LAUNCH002 grid underfill: what the captured launches (grid, argument values) say about
the kernel's blocks and grid. No IR holds this — the launch does: a block sized for the data the kernel never sees,
or a grid that leaves SMs idle.

LAUNCH001 reads the kernel's AST: a load/store mask `offs < bound` (through locals, `&`, `[:, None]`) where `offs` is
`tl.arange(a, b)` plus, optionally, a constant, `tl.program_id(axis) * BLOCK` or a `range(0, n, BLOCK)` loop variable;
the block and the bound are evaluated with the spec's constexprs and the launch's scalar values — a value that is not
known keeps the rule silent. LAUNCH002 divides the grid by the SMs and the programs each SM holds at once (RES002's
occupancy estimate).

Both judge the launches that run: when the capture kept its launch distribution (each distinct launch with its
count), a finding says how many of the spec's counted launches it holds in, shows the most launched of the affected
launches, and when only rare launches are affected (under RARE_SHARE of the counted launches: a test's edge shape,
a validation launch) it is one step milder than the rule's default (a warning becomes an info, an info a hint) and
says so. Without counts (an older capture) every recorded launch weighs the same, as the message says.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..source import parse_module
from .registry import rule
from ._common import Span, def_span, finding, plural
from .facts import callee, eval_int, kernel_def, launch_env
from .resources import occupancy

_ACCESS_MASK_POS = {"load": 1, "store": 2}  # tl.load(ptr, mask, ...), tl.store(ptr, value, mask, ...)
_DEPTH = 8
RARE_SHARE = 0.10  # affected launches below this share of the spec's counted launches: a milder finding
_MILDER = {"error": "warning", "warning": "info", "info": "hint", "hint": "hint"}


# ---------------------------------------------------------------- the kernel's masks
@dataclass
class _Lanes:
    """`start + tl.arange(a, b)` along one axis: `kind` "block" (a constant start: the same lanes every program),
    "grid" (`tl.program_id(axis) * BLOCK`) or "loop" (a `range(0, stop, BLOCK)` variable)."""

    arange: ast.Call
    kind: str = "block"
    start: ast.expr | None = None  # constant offset ("block")
    axis: int = 0  # "grid"
    loop: ast.Call | None = None  # the range(...) call ("loop")


@dataclass
class _Mask:
    compare: ast.Compare
    lanes: _Lanes
    bound: ast.expr
    inclusive: bool  # `<=`: the bound itself is a valid lane
    accesses: list[int] = field(default_factory=list)  # lines of the loads/stores it masks


class _Kernel:
    """Assignments and loop variables of one kernel body, resolved by position (the nearest assignment above)."""

    def __init__(self, fn: ast.FunctionDef):
        self.fn = fn
        self.assigns: dict[str, list[tuple[int, ast.expr]]] = {}
        self.loops: dict[str, list[tuple[int, ast.Call]]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigns.setdefault(node.targets[0].id, []).append((node.lineno, node.value))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                # `x += d` rebinds x to something this analysis does not follow
                self.assigns.setdefault(node.target.id, []).append((node.lineno, ast.Constant(None)))
            elif (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call)
                  and callee(node.iter) in ("range", "static_range")):
                self.loops.setdefault(node.target.id, []).append((node.lineno, node.iter))

    def value_of(self, name: str, line: int) -> ast.expr | None:
        """The expression `name` holds on `line`: its nearest assignment above (or on) that line; None for a
        parameter, a loop variable or a name bound closer by a loop."""
        before = [(ln, v) for ln, v in self.assigns.get(name, []) if ln <= line]
        loops = [ln for ln, _ in self.loops.get(name, []) if ln <= line]
        if not before or (loops and max(loops) >= max(before, key=lambda x: x[0])[0]):
            return None
        return max(before, key=lambda x: x[0])[1]

    def loop_of(self, name: str, line: int) -> ast.Call | None:
        loops = [(ln, it) for ln, it in self.loops.get(name, []) if ln <= line]
        assigned = [ln for ln, _ in self.assigns.get(name, []) if ln <= line]
        if not loops or (assigned and max(assigned) > max(loops, key=lambda x: x[0])[0]):
            return None
        return max(loops, key=lambda x: x[0])[1]

    # ------------------------------------------------ masks of loads and stores
    def masks(self) -> list[_Mask]:
        found: dict[int, _Mask] = {}
        for node in ast.walk(self.fn):
            if not isinstance(node, ast.Call) or callee(node) not in _ACCESS_MASK_POS:
                continue
            pos = _ACCESS_MASK_POS[callee(node)]
            expr = next((k.value for k in node.keywords if k.arg == "mask"), None)
            if expr is None and len(node.args) > pos:
                expr = node.args[pos]
            if expr is None:
                continue
            for cmp_node, line in self._compares(expr, node.lineno, _DEPTH):
                m = found.get(id(cmp_node))
                if m is None:
                    m = self._mask(cmp_node, line)
                    if m is None:
                        continue
                    found[id(cmp_node)] = m
                if node.lineno not in m.accesses:
                    m.accesses.append(node.lineno)
        return sorted(found.values(), key=lambda m: (m.compare.lineno, m.compare.col_offset))

    def _compares(self, expr: ast.expr, line: int, depth: int):
        if depth <= 0:
            return
        if isinstance(expr, ast.Name):
            value = self.value_of(expr.id, line)
            if value is not None:
                yield from self._compares(value, getattr(value, "lineno", line), depth - 1)
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitAnd):
            yield from self._compares(expr.left, line, depth - 1)
            yield from self._compares(expr.right, line, depth - 1)
        elif isinstance(expr, ast.Subscript):
            yield from self._compares(expr.value, line, depth - 1)
        elif isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            yield expr, line

    def _mask(self, node: ast.Compare, line: int) -> _Mask | None:
        op, left, right = node.ops[0], node.left, node.comparators[0]
        if isinstance(op, (ast.Gt, ast.GtE)):
            left, right = right, left
        elif not isinstance(op, (ast.Lt, ast.LtE)):
            return None
        lanes = self.lanes(left, line, _DEPTH)
        if lanes is None or self.lanes(right, line, _DEPTH) is not None:
            return None
        return _Mask(node, lanes, right, isinstance(op, (ast.LtE, ast.GtE)))

    def lanes(self, expr: ast.expr, line: int, depth: int) -> _Lanes | None:
        if depth <= 0:
            return None
        if isinstance(expr, ast.Call) and callee(expr) == "arange" and len(expr.args) == 2:
            return _Lanes(expr)
        if isinstance(expr, ast.Call) and callee(expr) == "to" and isinstance(expr.func, ast.Attribute):
            return self.lanes(expr.func.value, line, depth - 1)
        if isinstance(expr, ast.Subscript):
            return self.lanes(expr.value, line, depth - 1)
        if isinstance(expr, ast.Name):
            value = self.value_of(expr.id, line)
            return self.lanes(value, getattr(value, "lineno", line), depth - 1) if value is not None else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a, b = self.lanes(expr.left, line, depth - 1), self.lanes(expr.right, line, depth - 1)
            if (a is None) == (b is None):
                return None
            lanes, offset = (a, expr.right) if a is not None else (b, expr.left)
            if lanes.kind != "block" or lanes.start is not None:
                return None  # two offsets: not followed
            return self._offset(lanes, offset, line, depth - 1)
        return None

    def _offset(self, lanes: _Lanes, offset: ast.expr, line: int, depth: int) -> _Lanes | None:
        """Classify what is added to the arange: a program's block, a loop's block, or a constant."""
        if isinstance(offset, ast.Name):
            loop = self.loop_of(offset.id, line)
            if loop is not None:
                return _Lanes(lanes.arange, "loop", loop=loop)
            value = self.value_of(offset.id, line)
            if value is None:
                return _Lanes(lanes.arange, start=offset)  # a parameter: constant if it evaluates
            return self._offset(lanes, value, getattr(value, "lineno", line), depth - 1) if depth > 0 else None
        if isinstance(offset, ast.BinOp) and isinstance(offset.op, ast.Mult):
            for pid, _ in ((offset.left, offset.right), (offset.right, offset.left)):
                axis = self._program_id(pid, line, _DEPTH)
                if axis is not None:
                    return _Lanes(lanes.arange, "grid", axis=axis, start=offset)
        return _Lanes(lanes.arange, start=offset)

    def _program_id(self, expr: ast.expr, line: int, depth: int) -> int | None:
        if depth <= 0:
            return None
        if isinstance(expr, ast.Name):
            value = self.value_of(expr.id, line)
            return self._program_id(value, line, depth - 1) if value is not None else None
        if isinstance(expr, ast.Call) and callee(expr) == "to" and isinstance(expr.func, ast.Attribute):
            return self._program_id(expr.func.value, line, depth - 1)
        if isinstance(expr, ast.Call) and callee(expr) == "program_id":
            arg = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "axis"), None)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and not isinstance(arg.value, bool):
                return arg.value
        return None


_MASKS: dict[tuple, tuple[ast.Module, dict[tuple, list[_Mask]]]] = {}


def _mask_groups(ctx) -> dict[tuple, list[_Mask]]:
    """The kernel's masks grouped by (block, start, bound, `<=`, kind), once per kernel and source tree: they read
    only the AST, and a kernel with a hundred captured specs asked for them a hundred times."""
    try:
        tree = parse_module(ctx.source or "")
    except (SyntaxError, ValueError):
        return {}
    key = (ctx.kernel.def_line, ctx.kernel.func_name, id(tree))
    got = _MASKS.get(key)
    if got is not None and got[0] is tree:
        return got[1]
    fn = kernel_def(ctx)
    groups: dict[tuple, list[_Mask]] = {}
    for m in (_Kernel(fn).masks() if fn is not None else []):
        k = (ast.unparse(m.lanes.arange.args[1]), ast.unparse(m.lanes.arange.args[0]), ast.unparse(m.bound),
             m.inclusive, m.lanes.kind)
        groups.setdefault(k, []).append(m)
    if len(_MASKS) >= 256:
        _MASKS.clear()
    _MASKS[key] = (tree, groups)
    return groups


# ---------------------------------------------------------------- values of one launch
@dataclass
class _Idle:
    idle: float  # share of the lanes masked off
    useful: int
    lanes: int  # lanes launched along the axis (per program for "block", over the grid or loop otherwise)
    bound: int
    block: int
    blocks: int  # programs along the axis ("grid") or loop trips ("loop"); 1 for "block"


def _idle(m: _Mask, env: dict[str, int], grid: list[int]) -> _Idle | None:
    a, b = eval_int(m.lanes.arange.args[0], env), eval_int(m.lanes.arange.args[1], env)
    bound = eval_int(m.bound, env)
    if a is None or b is None or bound is None or b <= a:
        return None
    block = b - a
    valid = bound + (1 if m.inclusive else 0)
    if m.lanes.kind == "block":
        start = eval_int(m.lanes.start, env) if m.lanes.start is not None else 0
        if start is None:
            return None
        useful = min(max(valid - start - a, 0), block)
        return _Idle(1 - useful / block, useful, block, bound, block, 1)
    if m.lanes.kind == "grid":
        blocks = grid[m.lanes.axis] if m.lanes.axis < len(grid) else 1
        # the program offset must step by the block for the programs to tile the axis
        if m.lanes.start is None or not _steps_by(m.lanes.start, block, env):
            return None
    else:
        loop = m.lanes.loop
        assert loop is not None
        args = [eval_int(x, env) for x in loop.args[:3]]
        if len(args) != 3 or None in args or args[0] != 0 or args[2] != block:
            return None
        blocks = len(range(*args))  # type: ignore[arg-type]
    lanes = blocks * block
    if lanes <= 0:
        return None
    useful = min(max(valid - a, 0), lanes)
    return _Idle(1 - useful / lanes, useful, lanes, bound, block, blocks)


def _steps_by(expr: ast.expr, block: int, env: dict[str, int]) -> bool:
    """`pid * K` with K evaluating to the block."""
    if not isinstance(expr, ast.BinOp):
        return False
    return any(eval_int(side, env) == block for side in (expr.left, expr.right))


_MIN_BLOCK = 128  # smaller blocks than a warp group's worth of lanes are no fix worth proposing


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def _better_block(bound: int, block: int, now: float, threshold: float) -> tuple[int, int, float] | None:
    """The largest power-of-two block below `block` whose loop over `bound` leaves at most half the threshold idle
    (else the least idle one, when it improves on now): (block, trips, idle)."""
    best = None
    b = _pow2_floor(block - 1) if block > 1 else 0
    while b >= _MIN_BLOCK:
        trips = -(-bound // b)
        idle = 1 - bound / (trips * b)
        if idle <= threshold / 2:
            return b, trips, idle
        if idle < now and (best is None or idle < best[2] - 1e-9):
            best = (b, trips, idle)
        b //= 2
    return best


# ---------------------------------------------------------------- LAUNCH001
@rule("LAUNCH001", "masked-lane-waste", "warning", cost_cause="lanes")
def masked_lane_waste(ctx):
    """A captured launch's mask turns off a large share of a block's lanes: the block does not fit the data."""
    launches = ctx.launches
    if not launches or not ctx.source:
        return
    threshold = ctx.settings.masked_lane_threshold
    counted = counted_launches(ctx, launches)
    for masks in _mask_groups(ctx).values():
        first = masks[0]
        results = []
        for launch in launches:
            got = _idle(first, launch_env(ctx, launch), launch["grid"])
            if got is not None:
                results.append((launch, got))
        over = [lr for lr in results if lr[1].idle >= threshold]
        if not over:
            continue
        weight = _Weight.of(over, len(results), counted)
        # the launch shown: the most launched of those affected when counts are known, else the worst
        worst = max(over, key=lambda lr: (lr[0].get("count", 0) if counted else 0, lr[1].idle))[1]
        yield _lane_finding(ctx, masks, worst, weight, threshold)


@dataclass
class _Weight:
    """How many launches a finding holds in: `shapes` of the `recorded` distinct launches judged; with counts,
    `affected` of the spec's `counted` launches, `listed` of which are of the recorded shapes (the rest launched in
    shapes the capture did not list: a kernel launched with more distinct values than it keeps)."""

    shapes: int
    recorded: int
    affected: int | None = None
    counted: int | None = None
    listed: int | None = None

    @classmethod
    def of(cls, over: list[tuple[dict[str, Any], Any]], recorded: int,
           counted: tuple[int, int] | None) -> "_Weight":
        if counted is None:
            return cls(len(over), recorded)
        return cls(len(over), recorded, sum(launch.get("count", 0) for launch, _ in over), *counted)

    @property
    def rare(self) -> bool:
        """Under RARE_SHARE of the launches whose shapes are known: those not listed are not judged either way."""
        return self.listed is not None and self.affected is not None and self.affected < RARE_SHARE * self.listed

    def text(self) -> str:
        if self.counted is None or self.listed is None or self.affected is None:
            return f"in {self.shapes} of {self.recorded} captured {'launch' if self.recorded == 1 else 'launches'}"
        of = f"{self.counted:,} counted launch{'' if self.counted == 1 else 'es'}"
        if self.shapes == 1:
            out = f"in {self.affected:,} of {of}"
        else:
            share = self.affected / self.counted if self.counted else 0.0
            pct = "<1%" if 0 < share < 0.01 else f"{share:.0%}"
            out = f"in {self.shapes} launch shapes, {pct} of {of}"
        unlisted = self.counted - self.listed
        if unlisted > 0:
            out += f" ({unlisted:,} of them in shapes the capture did not list)"
        if self.rare:
            whose = "this spec's launches" if unlisted <= 0 else "the launches of listed shapes"
            out += f" (rare: under {RARE_SHARE:.0%} of {whose}, so milder than the rule's default)"
        return out

    def severity(self, default: str) -> str:
        return _MILDER[default] if self.rare else ""

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"launches_over": self.shapes, "launches": self.recorded}
        if self.counted is not None:
            out.update(count_over=self.affected, counted=self.counted, listed=self.listed, rare=self.rare)
        return out


def counted_launches(ctx, launches: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(the spec's counted launches, those of the listed shapes) when the capture kept its distribution (every
    record has a count); None for an older capture, whose records weigh the same."""
    if not launches or not all("count" in r for r in launches):
        return None
    listed = sum(r["count"] for r in launches)
    total = max(int(ctx.spec.launches or 0), listed)
    return (total, listed) if listed else None


def _lane_finding(ctx, masks: list[_Mask], worst: _Idle, weight: _Weight, threshold: float):
    first = masks[0]
    node = first.compare
    span = Span(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                (node.end_col_offset or node.col_offset) + 1)
    block_text = ast.unparse(first.lanes.arange.args[1])
    if not isinstance(first.lanes.arange.args[0], ast.Constant) or first.lanes.arange.args[0].value != 0:
        block_text = f"{block_text} - {ast.unparse(first.lanes.arange.args[0])}"
    bound_text = ast.unparse(first.bound)
    accesses = sorted({ln for m in masks for ln in m.accesses})
    lines = ", ".join(str(ln) for ln in accesses[:8]) + (" …" if len(accesses) > 8 else "")
    where = (f"{len(accesses)} {'access' if len(accesses) == 1 else 'accesses'}: "
             f"line{'s' if len(accesses) > 1 else ''} {lines}")
    pct = f"{worst.idle:.0%}"
    if first.lanes.kind == "block":
        head = (f"{bound_text} = {worst.bound} of {block_text} = {worst.block}: {pct} of each program's lanes "
                f"idle on every masked access ({where})")
    else:
        over = plural(worst.blocks, "program" if first.lanes.kind == "grid" else "loop trip")
        head = (f"{bound_text} = {worst.bound} over {over} × {block_text} = {worst.block} "
                f"({worst.lanes} lanes): {pct} of the lanes idle, in the last block ({where})")
    better = _better_block(worst.bound, worst.block, worst.idle, threshold)
    if better is None:
        fix = f"no power-of-two block of {_MIN_BLOCK} lanes or more fits {bound_text} = {worst.bound} better"
    elif first.lanes.kind == "block":
        b, trips, idle = better
        fix = (f"a loop over {trips} blocks of {b} leaves {idle:.0%} idle (a reduction over the row then keeps a "
               f"running sum or takes two passes)")
    else:
        b, trips, idle = better
        fix = f"{block_text} = {b} ({plural(trips, 'block')}) leaves {idle:.0%} idle"
    if first.lanes.kind == "block":
        fix += (f"; an elementwise kernel over contiguous rows can index rows × {bound_text} as one flat range, "
                f"idling only its last block")
    mask_lines = sorted({m.compare.lineno for m in masks})
    message = f"{head}, {weight.text()} — {fix}"
    if len(mask_lines) > 1:
        message += f"; same mask on lines {', '.join(map(str, mask_lines))}"
    data = {"idle": round(worst.idle, 4), "bound": worst.bound, "block": worst.block, "lanes": worst.lanes,
            "useful": worst.useful, "kind": first.lanes.kind, **weight.data(),
            "accesses": accesses, "mask_lines": mask_lines, "threshold": threshold,
            "merge_key": f"LAUNCH001:{worst.bound}/{worst.lanes}"}
    short = f"{pct} of the lanes idle at {bound_text} = {worst.bound} ({block_text} = {worst.block})"
    return finding(ctx, span, "LAUNCH001", message, severity=weight.severity("warning"), data=data, short=short)


# ---------------------------------------------------------------- LAUNCH002

def sm_count(ctx) -> tuple[int, str] | None:
    """(SMs, the GPU they are of) for the spec's target: the setting, the local GPU's driver, else the GPU the check
    stands for (tritonlens.gpu or the target's default, virtual_gpu)."""
    if ctx.settings.sm_count:
        return ctx.settings.sm_count, "tritonlens.smCount"
    gpu = ctx.gpu
    if ctx.gpu_sms:
        return ctx.gpu_sms, f"the local {gpu.short_name}"
    return gpu.sms, f"{gpu.short_name}, {ctx.spec.target}"


_ORDINAL = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}


@dataclass
class _Fill:
    programs: int
    fill: float  # busy share: of the SMs (fewer programs than SMs) or of the program slots over all waves
    waves: int
    last: float  # how full the last wave is


@rule("LAUNCH002", "grid-underfill", "info", cost_cause="grid")
def grid_underfill(ctx):
    """A captured grid cannot fill the target's SMs, or its last wave is mostly empty."""
    launches = ctx.launches
    sms = sm_count(ctx) if launches else None
    occ = occupancy(ctx) if sms else None
    if not launches or sms is None or occ is None or occ["blocks"] <= 0:
        return
    n_sms, where = sms
    unit = "CU" if ctx.hip else "SM"
    resident = occ["blocks"]
    capacity = n_sms * resident
    threshold = ctx.settings.grid_fill_threshold
    counted = counted_launches(ctx, launches)
    fills = []
    for launch in launches:
        programs = 1
        for g in launch["grid"]:
            programs *= g
        if programs <= 0:
            continue
        if programs < n_sms:
            fills.append((launch, _Fill(programs, programs / n_sms, 1, programs / capacity)))
        elif programs > capacity:
            waves = -(-programs // capacity)
            last = programs - (waves - 1) * capacity
            fills.append((launch, _Fill(programs, programs / (waves * capacity), waves, last / capacity)))
    over = [lf for lf in fills if lf[1].fill < threshold]
    if not over:
        return
    weight = _Weight.of(over, len(fills), counted)
    worst = max(over, key=lambda lf: (lf[0].get("count", 0) if counted else 0, -lf[1].fill))[1]
    per_sm = f"{n_sms} {unit}s × {resident} per {unit}, limited by {occ['limiter']}"
    if worst.waves == 1:
        idle = n_sms - worst.programs
        head = (f"{plural(worst.programs, 'program')} on {n_sms} {unit}s ({where}): {idle} {unit}s idle "
                f"({1 - worst.fill:.0%}); {capacity} programs fit at once ({per_sm})")
        fix = ("more programs: split each program's work (a smaller block, fewer rows per program) or a grid of at "
               f"least {n_sms}")
        short = f"{plural(worst.programs, 'program')} on {n_sms} {unit}s: {idle} {unit}s idle ({1 - worst.fill:.0%})"
    else:
        nth = _ORDINAL.get(worst.waves, f"{worst.waves}th")
        head = (f"{worst.programs} programs, {capacity} resident at a time on {where} ({per_sm}): a {nth} wave "
                f"{worst.last:.0%} full — {1 - worst.fill:.0%} of the program slots over {worst.waves} waves idle")
        fix = (f"a grid that is a multiple of {capacity}, a block size that changes the count, or a persistent kernel "
               f"that loops over the work with {capacity} programs")
        short = (f"{worst.programs} programs in {worst.waves} waves of {capacity}: the last {worst.last:.0%} full, "
                 f"{1 - worst.fill:.0%} of the slots idle")
    message = f"{head}, {weight.text()} — {fix}"
    data = {"programs": worst.programs, "sms": n_sms, "resident": resident, "capacity": capacity,
            "waves": worst.waves, "fill": round(worst.fill, 4), "last_wave": round(worst.last, 4),
            **weight.data(), "threshold": threshold, "gpu": ctx.gpu.key,
            "merge_key": f"LAUNCH002:{worst.programs}/{capacity}"}
    if worst.waves == 1:  # the advice, for checks/tuning to hold against what the autotuner measured
        data["advises"] = ["more_programs"]
    yield finding(ctx, def_span(ctx), "LAUNCH002", message, severity=weight.severity("info"), data=data, short=short)


# ---------------------------------------------------------------- LAUNCH004
_DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")
TILE_IDLE_THRESHOLD = 0.5  # "mostly beyond": at least half of the tile's rows (or columns) past the launch's extent
_MIN_MMA_DIM = 16  # the smallest tile dimension a tensor-core dot takes (mma.sync m16 / n8·2)


def _dot_tiles(ctx) -> list[tuple[Any, int, int]]:
    """(op, rows, columns) of each dot of the kernel's file, once per source position."""
    from ._common import in_kernel_file, tensor_shape_dtype

    out, seen = [], set()
    for op in ctx.ttgir.ops:
        if op.name not in _DOT_OPS or not in_kernel_file(ctx, op.loc) or (op.loc.line, op.loc.col) in seen:
            continue
        res = tensor_shape_dtype(op.result_type)
        if res and len(res[0]) >= 2:
            seen.add((op.loc.line, op.loc.col))
            out.append((op, res[0][-2], res[0][-1]))
    return out


def _axis(m: _Mask) -> int | None:
    """0 when the mask's lanes are used as rows (`offs[:, None]`), 1 as columns (`offs[None, :]`), None otherwise."""
    node = m.compare.left if m.lanes is not None else None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # offs.to(...)
        node = node.func.value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
        first = node.slice.elts[0]
        return 1 if isinstance(first, ast.Constant) and first.value is None else 0
    return None


@rule("LAUNCH004", "mma-tile-beyond-extent", "warning", fixes=("new_config",))
def mma_tile_beyond_extent(ctx):
    """A dot's tile has rows (or columns) mostly beyond the captured launch's extent: a decode-sized M in a tile
    sized for prefill, computing on rows the launch does not have."""
    launches = ctx.launches
    if not launches or not ctx.source:
        return
    tiles = _dot_tiles(ctx)
    if not tiles:
        return
    counted = counted_launches(ctx, launches)
    for masks in _mask_groups(ctx).values():
        first = masks[0]
        axis_hint = next((a for a in map(_axis, masks) if a is not None), None)
        results = []
        for launch in launches:
            env = launch_env(ctx, launch)
            a, b = eval_int(first.lanes.arange.args[0], env), eval_int(first.lanes.arange.args[1], env)
            bound = eval_int(first.bound, env)
            if a is None or b is None or bound is None or b <= a or bound <= 0:
                continue
            block = b - a
            for op, rows, cols in tiles:
                axis = 0 if block == rows and (block != cols or axis_hint != 1) else 1 if block == cols else None
                if axis is None:
                    continue
                valid = bound + (1 if first.inclusive else 0)
                tiles_along = -(-valid // block)
                idle = 1 - valid / (tiles_along * block)
                results.append((launch, (op, rows, cols, axis, block, valid, idle)))
                break
        if not results:
            continue
        over = [r for r in results if r[1][6] >= TILE_IDLE_THRESHOLD]
        if not over:
            continue
        weight = _Weight.of(over, len(results), counted)
        launch, (op, rows, cols, axis, block, valid, idle) = max(
            over, key=lambda r: (r[0].get("count", 0) if counted else 0, r[1][6]))
        yield _tile_finding(ctx, first, op, rows, cols, axis, block, valid, idle, weight)


def _tile_finding(ctx, mask: _Mask, op, rows: int, cols: int, axis: int, block: int, valid: int, idle: float,
                  weight: "_Weight"):
    from ._common import anchor

    name = ast.unparse(mask.lanes.arange.args[1])
    bound_text = ast.unparse(mask.bound)
    span, _ = anchor(ctx, op.loc.line, op.loc.col, ("dot", "dot_scaled"))
    what = "rows" if axis == 0 else "columns"
    fit = max(_MIN_MMA_DIM, 1 << max(0, (valid - 1).bit_length()))
    fit_text = (f"a tile of {fit} {what} ({name} = {fit}) fits it" if fit < block
                else f"no tile smaller than {block} {what} fits it better")
    message = (f"tl.dot computes a {rows}×{cols} tile, but {bound_text} = {valid} of its {name} = {block} {what}: "
               f"{idle:.0%} of the tile's {what} lie beyond the launch's extent (the mask on line "
               f"{mask.compare.lineno} drops them), {weight.text()} — {fit_text}")
    if fit < block:
        message += "; a config the kernel's autotune list may not have, proven by re-compiling before it is offered"
    data = {"rows": rows, "cols": cols, "axis": what, "name": name, "block": block, "extent": valid,
            "idle": round(idle, 4), "fit": fit if fit < block else None, "mask_line": mask.compare.lineno,
            **weight.data(), "merge_key": f"LAUNCH004:{name}:{valid}/{block}"}
    if fit < block:
        data["advises"] = [f"smaller:{name}:{fit}", f"smaller:{name}"]
    short = f"tile {what} {idle:.0%} idle at {bound_text} = {valid} ({name} = {block})"
    return finding(ctx, span, "LAUNCH004", message, data=data, short=short)  # rare launches: data["rare"], for the verdict
