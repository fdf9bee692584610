"""A program fix for narrow accesses whose mask is the cause (PTX001 / PTX002 with cause "mask"): the kernel gets a
mask-free path for full blocks and keeps the masked code for the last, partial block.

    offs = pid * BLOCK + tl.arange(0, BLOCK)          if (pid + 1) * BLOCK <= n:  # a full block
    mask = offs < n                            →          x = tl.load(x_ptr + offs)
    x = tl.load(x_ptr + offs, mask=mask)              else:  # the last, partial block
                                                          x = tl.load(x_ptr + offs, mask=mask)

and for a loop over blocks, `for start in range(0, n, BLOCK)` becomes `range(0, n - n % BLOCK, BLOCK)` without masks,
then `range(n - n % BLOCK, n, BLOCK)` (at most one iteration) with them.

Only where it is sound, read from the AST: the mask is exactly `offs < bound` with `offs = start + tl.arange(0,
BLOCK)`, every name it depends on is assigned once (so the guard sees the values the mask saw), and the mask is used
for nothing but the `mask=` of loads and stores — there it is dropped (with `other=`: on a full block no lane reads
it); a mask combined with another condition, used in `tl.where` or a sum, or any doubt gives no candidate. The edit
replaces only the lines of the statements it duplicates, re-indented by the body's own unit. Whether it helps is the
re-compile's to say (`TailCandidate.outcome`): the finding's access must come out 128-bit on the fast path; with
captured launches the title counts the programs (or iterations) that take it, and one none takes is not preferred.

No `tl.multiple_of(n, 16)` / `tl.assume(n % 16 == 0)` edit is offered: on a scalar argument neither changes Triton
3.6's compile (the mask stays unaligned, measured on examples/bad/vector_add_unaligned.py), and the one form that does
(`n = n // 16 * 16`) drops elements on any launch where it is false. What a launch guarantees is a specialization:
a capture records it, a hint states it ("Tell tritonlens: …").
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterator

from ..checks.registry import fix_strategies
from ..model import Finding, KernelReport
from ..report.irviews import SpecView, compiled_specs
from ..source import parse_module, split_lines
from .edit import Edit, apply_edits

_ACCESS = {"load": 1, "store": 2}  # the positional index of `mask` in tl.load / tl.store
_KIND = {"load": ("ld.global", "loads"), "store": ("st.global", "stores")}  # a narrow finding's `access`
_FULL_BITS = 128


# ---------------------------------------------------------------- reading the kernel
def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _access_kind(call: ast.Call) -> str | None:
    """'load' / 'store' for `tl.load(...)` / `tl.store(...)` (any module alias), else None."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.attr in _ACCESS:
        return f.attr
    return None


def _mask_arg(call: ast.Call, kind: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "mask":
            return kw.value
    i = _ACCESS[kind]
    return call.args[i] if len(call.args) > i else None


def _names(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


@dataclass
class _Mask:
    """`mask = offs < bound` with `offs = start + tl.arange(0, block)`."""

    name: str | None  # the mask variable; None when the access writes the comparison inline
    compare: ast.Compare
    offs: str
    start: ast.expr | None  # None: offs is the arange itself
    block: ast.expr
    bound: ast.expr
    stmts: list[ast.stmt]  # the statements that define offs (and the mask)
    watched: set[str]  # the names its value depends on, which must not change before the guard reads them


def _offs_parts(value: ast.expr, reaching) -> tuple[ast.expr | None, ast.expr, str | None] | None:
    """(start, block, the name holding the arange if any) of `start + tl.arange(0, block)` (either order, the
    arange maybe through a name: `idx = start + offs` with `offs = tl.arange(0, BLOCK)`) or of `tl.arange(0, block)`."""
    def arange_block(e: ast.expr) -> tuple[ast.expr, str | None] | None:
        name = None
        if isinstance(e, ast.Name):
            d = reaching(e.id)
            if not isinstance(d, ast.Assign):
                return None
            name, e = e.id, d.value
        if _call_name(e) == "arange" and len(e.args) == 2 and not e.keywords \
                and isinstance(e.args[0], ast.Constant) and e.args[0].value == 0:
            return e.args[1], name
        return None

    got = arange_block(value)
    if got is not None and got[1] is None:
        return None, got[0], None
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        for start, other in ((value.left, value.right), (value.right, value.left)):
            got = arange_block(other)
            if got is not None and not any(_call_name(n) == "arange" for n in ast.walk(start)):
                return start, got[0], got[1]
    return None


def _as_compare(expr: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """(offs, bound) of `offs < bound` or `bound > offs`."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        if isinstance(expr.ops[0], ast.Lt):
            return expr.left, expr.comparators[0]
        if isinstance(expr.ops[0], ast.Gt):
            return expr.comparators[0], expr.left
    return None


_PURE_CALLS = ("program_id", "num_programs", "cdiv")  # calls the guard may evaluate again: same value each time


def _bound_in(node: ast.AST) -> set[str]:
    """Names a statement binds anywhere inside it (assignments, loop targets, walrus, with)."""
    out: set[str] = set()
    for n in ast.walk(node):
        targets: list[ast.AST] = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)):
            targets = [n.target]
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            targets = [n.optional_vars]
        out.update(x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name))
    return out


class _Scope:
    """Which binding of a name reaches a point of the kernel: the nearest statement before it, in its own block or
    an enclosing one — followed only where that is certain (no binding later in an enclosing loop's body, which a
    later iteration would see)."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.fn = fn
        self.params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        self.parent: dict[int, ast.AST] = {}
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node

    def reaching(self, node: ast.AST, name: str) -> ast.Assign | ast.For | str | None:
        """The plain `name = value` (or the `for name in ...`) that gives `name` its value at `node`; None when
        nothing in the kernel binds it before (a parameter or a global); a reason when it is not certain."""
        cur = node
        while cur is not self.fn:
            parent = self.parent.get(id(cur))
            if parent is None:
                return "outside the kernel"
            if isinstance(parent, ast.For) and isinstance(parent.target, ast.Name) and parent.target.id == name \
                    and any(x is cur for x in parent.body):
                if any(name in _bound_in(st) for st in parent.body):
                    return f"the loop variable `{name}` is assigned in its loop"
                return parent
            for block in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody")):
                if not isinstance(block, list) or not any(x is cur for x in block):
                    continue
                i = next(k for k, x in enumerate(block) if x is cur)
                for before in reversed(block[:i]):
                    if name in _bound_in(before):
                        if isinstance(before, ast.Assign) and len(before.targets) == 1 \
                                and isinstance(before.targets[0], ast.Name) and before.targets[0].id == name:
                            return before
                        return f"`{name}` is bound on line {before.lineno} in a way this does not follow"
                if isinstance(parent, (ast.For, ast.While)) and block is parent.body \
                        and any(name in _bound_in(x) for x in block[i:]):
                    return f"`{name}` is bound later in the loop, so a later iteration sees another value"
            cur = parent
        return None


_PURE_CALLS = ("program_id", "num_programs", "cdiv")  # calls the guard may evaluate again: same value each time


def _read_mask(scope: _Scope, access: ast.Call, expr: ast.expr) -> _Mask | str:
    """The mask of an access, or why it is not one this fix can drop on full blocks."""
    name = None
    stmts: list[ast.stmt] = []
    at: ast.AST = access
    if isinstance(expr, ast.Name):
        a = scope.reaching(access, expr.id)
        if not isinstance(a, ast.Assign):
            return a if isinstance(a, str) else f"the mask `{expr.id}` is not made by an assignment in the kernel"
        name, expr, at = expr.id, a.value, a
        stmts.append(a)
    parts = _as_compare(expr)
    if parts is None:
        return "the mask is not a single `offs < bound` (combined with another condition, 2-D, or another test)"
    if not isinstance(parts[0], ast.Name):
        return "the mask compares an expression, not an offsets variable, with its bound"
    offs, bound = parts[0].id, parts[1]
    a = scope.reaching(at, offs)
    if not isinstance(a, ast.Assign):
        return a if isinstance(a, str) else f"the offsets `{offs}` are not made by an assignment in the kernel"
    got = _offs_parts(a.value, lambda n: scope.reaching(a, n))
    if got is None:
        return f"the offsets `{offs}` are not `start + tl.arange(0, BLOCK)`"
    start, block, arange_name = got
    stmts.append(a)
    for n in _names(bound) | _names(block) | (_names(start) if start is not None else set()):
        if isinstance(scope.reaching(at, n), str):
            return scope.reaching(at, n)
        if scope.reaching(at, n) is None and n not in scope.params and n not in ("tl", "triton"):
            return f"the mask depends on `{n}`, a global"  # fine in principle, but not worth the doubt
    for part in (bound, start):
        if part is not None and any(isinstance(n, ast.Call) and _call_name(n) not in _PURE_CALLS
                                    for n in ast.walk(part)):
            return "the mask's start or bound calls a function (a load?) that the guard would call again"
    assert isinstance(expr, ast.Compare)
    watched = {offs} | ({name} if name else set()) | _names(bound) | _names(block) | (
        _names(start) if start is not None else set()) | ({arange_name} if arange_name else set())
    return _Mask(name, expr, offs, start, block, bound, stmts, watched)


def _rebound(stmts: list[ast.stmt], mask: _Mask) -> str | None:
    """Why the guard could see other values than the mask saw: a name the mask depends on bound again in `stmts`
    (its own definitions excepted)."""
    for st in stmts:
        if any(st is d for d in mask.stmts):
            continue
        hit = sorted(_bound_in(st) & mask.watched)
        if hit:
            return f"`{hit[0]}`, which the mask depends on, is assigned again on line {st.lineno}"
    return None


@dataclass
class Plan:
    """The edit: statements [first, last] (1-based lines) replaced by `new_lines`; where each old line went."""

    first: int
    last: int
    new_lines: list[str]
    fast: dict[int, int]  # old line -> its line in the unmasked copy
    tail: dict[int, int]  # old line -> its line in the masked copy
    dropped: list[tuple[str, int]]  # (load|store, old line) of each access whose mask the fast path drops
    form: str  # "grid" | "loop"
    guard: str  # the fast path's condition, as written
    # How to count the fast path's share of a captured launch: (how, BLOCK's name or value, the bound's name); how is
    # "blocks" (program i is full when (i + 1) * BLOCK <= bound), "all" (every program or none: BLOCK <= bound) or
    # "iterations" (n // BLOCK of ceil(n / BLOCK) per program). None when the guard is not that simple.
    share: tuple[str, str | int, str] | None = None

    @property
    def shift(self) -> int:
        return len(self.new_lines) - (self.last - self.first + 1)

    def old_line(self, new_line: int) -> int | None:
        """The old line a line of the new text came from (None for the lines the edit added)."""
        if new_line < self.first:
            return new_line
        if new_line > self.first + len(self.new_lines) - 1:
            return new_line - self.shift
        for table in (self.fast, self.tail):
            for old, new in table.items():
                if new == new_line:
                    return old
        return None


def _function(tree: ast.Module, def_line: int) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == def_line), None)


def _enclosing_for(fn: ast.FunctionDef, stmt: ast.stmt) -> ast.For | None:
    """The `for` whose body holds `stmt` directly."""
    for node in ast.walk(fn):
        if isinstance(node, ast.For) and any(s is stmt for s in node.body):
            return node
    return None


def _drops(region: list[ast.stmt], mask: _Mask) -> list[tuple[ast.Call, str]] | str:
    """The loads/stores in `region` whose mask is this one (by name, or the same comparison inline); why not, when
    the mask variable is used in any other way (tl.where, a sum, combined with another condition)."""
    calls: list[tuple[ast.Call, str]] = []
    used_as_mask: set[int] = set()
    for stmt in region:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            kind = _access_kind(node)
            m = _mask_arg(node, kind) if kind else next((k.value for k in node.keywords if k.arg == "mask"), None)
            if m is None:
                continue
            if (isinstance(m, ast.Name) and m.id == mask.name) or _same(m, mask.compare):
                used_as_mask.add(id(m))
                if kind is not None:
                    calls.append((node, kind))
                # any other masked op (an atomic) keeps its mask: keeping one is always sound
    for stmt in region:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == mask.name and id(node) not in used_as_mask:
                return f"the mask `{mask.name}` is used on line {node.lineno} for more than a load's or store's mask"
            if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
                return f"a `{type(node).__name__.lower()}` on line {node.lineno}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno != node.lineno:
                return "a multi-line string, which re-indenting would change"
    return calls


class _Text:
    """The file's lines and UTF-8 column conversion (ast columns count bytes)."""

    def __init__(self, text: str) -> None:
        self.lines = split_lines(text, keepends=True)
        self.newline = "\r\n" if "\r\n" in text else "\n"

    def char(self, line: int, byte_col: int) -> int:
        raw = self.lines[line - 1].encode() if 0 < line <= len(self.lines) else b""
        return len(raw[:byte_col].decode(errors="replace"))

    def seg(self, node: ast.AST) -> str:
        (l0, c0), (l1, c1) = self.start(node), self.end(node)
        if l0 == l1:
            return self.lines[l0 - 1][c0:c1]
        return self.lines[l0 - 1][c0:] + "".join(self.lines[l0:l1 - 1]) + self.lines[l1 - 1][:c1]

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.char(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self.char(node.end_lineno, node.end_col_offset)


def _deletions(t: _Text, call: ast.Call, kind: str) -> list[tuple[tuple[int, int], tuple[int, int]]] | None:
    """Spans to delete from `call` to drop its mask (and `other=`): from the end of the argument before each to its
    end, so `, mask=mask` goes with its comma. None for a positional form this does not handle."""
    i = _ACCESS[kind]
    items: list[ast.AST] = [*call.args, *call.keywords]
    items.sort(key=lambda n: (n.lineno, n.col_offset))
    drop: list[ast.AST] = [kw for kw in call.keywords if kw.arg in ("mask", "other")]
    if len(call.args) > i:
        if len(call.args) > i + (2 if kind == "load" else 1):
            return None  # boundary_check and later given by position
        drop += call.args[i:]
    spans = []
    for node in drop:
        k = next(j for j, n in enumerate(items) if n is node)
        if k == 0:
            return None
        spans.append((t.end(items[k - 1]), t.end(node)))
    return spans


def _all_deletions(t: _Text, calls: list[tuple[ast.Call, str]]) -> list | None:
    spans = []
    for c, kind in calls:
        got = _deletions(t, c, kind)
        if got is None:
            return None
        spans += got
    return spans


def _splice(t: _Text, first: int, last: int, spans, node: ast.AST, text: str) -> list[str]:
    """Lines first..last with `spans` deleted and `node` (before every span) replaced by `text`."""
    block = "".join(_cut(t, first, last, [*spans, (t.start(node), t.end(node))]))
    line, col = t.start(node)
    at = sum(len(x) for x in t.lines[first - 1:line - 1]) + col
    return split_lines(block[:at] + text + block[at:], keepends=True)


def _cut(t: _Text, first: int, last: int, spans) -> list[str]:
    """Lines first..last with `spans` deleted (spans inside those lines, non-overlapping)."""
    block = "".join(t.lines[first - 1:last])
    starts = [0]
    for ln in t.lines[first - 1:last]:
        starts.append(starts[-1] + len(ln))

    def off(p: tuple[int, int]) -> int:
        return starts[p[0] - first] + p[1]
    for a, b in sorted(spans, key=lambda s: off(s[0]), reverse=True):
        block = block[:off(a)] + block[off(b):]
    return split_lines(block, keepends=True)


def _indent(lines: list[str], unit: str) -> list[str]:
    return [unit + ln if ln.strip() else ln for ln in lines]


def _unit(t: _Text, fn: ast.FunctionDef) -> str:
    body = t.lines[fn.body[0].lineno - 1]
    head = t.lines[fn.lineno - 1]
    b = re.match(r"[ \t]*", body).group(0)
    h = re.match(r"[ \t]*", head).group(0)
    unit = b[len(h):] if b.startswith(h) else ""
    return unit or "    "


def _paren(t: _Text, node: ast.expr) -> str:
    s = t.seg(node)
    simple = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript)
    return s if isinstance(node, simple) else f"({s})"


_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def _operand(t: _Text, node: ast.expr, comparison: bool) -> str:
    """`node`'s text as the left of `+ 1` (arithmetic binds it already) or a side of `<=` (any binary operator
    does), parenthesized otherwise (`a if c else b`, `x | y + 1`)."""
    s = t.seg(node)
    if isinstance(node, (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript)):
        return s
    if isinstance(node, ast.BinOp) and (comparison or isinstance(node.op, _ARITH)):
        return s
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return s
    return f"({s})"


def _guard(t: _Text, mask: _Mask) -> str:
    block, bound = _paren(t, mask.block), _operand(t, mask.bound, True)
    if mask.start is None:
        return f"{block} <= {bound}"
    s = mask.start
    if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult):
        for pid, blk in ((s.left, s.right), (s.right, s.left)):
            if _same(blk, mask.block):
                return f"({_operand(t, pid, False)} + 1) * {block} <= {bound}"
    return f"{_operand(t, s, False)} + {block} <= {bound}"


def plan(text: str, def_line: int, line: int) -> Plan | None:
    """The edit that gives the kernel defined at `def_line` an unmasked path for the access on `line`, or None when
    that is not (provably) sound or not a form handled here."""
    got = planned(text, def_line, line)
    return got if isinstance(got, Plan) else None


def planned(text: str, def_line: int, line: int) -> Plan | str:
    """`plan`, or why there is none (a phrase: "the mask `m` is used on line 12 for more than ...")."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return "the file does not parse"
    fn = _function(tree, def_line)
    if fn is None:
        return "no kernel definition there"
    scope = _Scope(fn)
    access = next(((n, _access_kind(n)) for n in ast.walk(fn) if isinstance(n, ast.Call) and _access_kind(n)
                   and n.lineno <= line <= n.end_lineno and _mask_arg(n, _access_kind(n)) is not None), None)
    if access is None:
        return "no masked load or store on that line"
    mask = _read_mask(scope, access[0], _mask_arg(*access))
    if isinstance(mask, str):
        return mask
    t = _Text(text)
    loop = _loop_form(fn, mask)
    if loop is not None:
        made = _rebound(loop.body, mask) or _plan_loop(t, fn, mask, loop, access[0])
    elif not all(any(s is b for b in fn.body) for s in mask.stmts):
        return ("the offsets or the mask are made inside a loop or branch that is not `for start in range(0, "
                "bound, BLOCK)`")
    else:
        first_def = min(fn.body.index(s) for s in mask.stmts)
        made = _rebound(fn.body[first_def:], mask) or _plan_grid(t, fn, mask, access[0])
    if isinstance(made, Plan):
        made.share = _share(mask, scope, loop is not None)
    return made


def _is_pid0(e: ast.expr, scope: _Scope, at: ast.AST) -> bool:
    """`tl.program_id(0)` / `tl.program_id(axis=0)`, directly or through the name assigned it (`.to(...)` kept)."""
    if isinstance(e, ast.Name):
        a = scope.reaching(at, e.id)
        return isinstance(a, ast.Assign) and _is_pid0(a.value, scope, a)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "to":
        return _is_pid0(e.func.value, scope, at)
    if _call_name(e) != "program_id":
        return False
    axis = e.args[0] if e.args else next((k.value for k in e.keywords if k.arg == "axis"), None)
    return isinstance(axis, ast.Constant) and axis.value == 0


def _share(mask: _Mask, scope: _Scope, loop: bool) -> tuple[str, str | int, str] | None:
    block = mask.block.id if isinstance(mask.block, ast.Name) else mask.block.value \
        if isinstance(mask.block, ast.Constant) and isinstance(mask.block.value, int) else None
    if block is None or not isinstance(mask.bound, ast.Name):
        return None
    if loop:
        return "iterations", block, mask.bound.id
    if mask.start is None:
        return "all", block, mask.bound.id
    start, at = mask.start, mask.stmts[-1]
    if isinstance(start, ast.Name):
        d = scope.reaching(at, start.id)
        if isinstance(d, ast.Assign):
            start, at = d.value, d  # block_start = pid * BLOCK
    if isinstance(start, ast.BinOp) and isinstance(start.op, ast.Mult):
        for pid, blk in ((start.left, start.right), (start.right, start.left)):
            if _same(blk, mask.block) and _is_pid0(pid, scope, at):
                return "blocks", block, mask.bound.id
    return None


def fast_share(p: Plan, specs) -> tuple[int, int, str] | None:
    """(blocks or iterations that take the fast path, of how many, what they are) over the captured launches of
    `specs` — what the edit is worth at run time, by the launches the user recorded. None without such launches."""
    if p.share is None:
        return None
    how, block_ref, bound = p.share
    full = total = 0
    for spec in specs:
        block = block_ref if isinstance(block_ref, int) else spec.constants.get(block_ref)
        for rec in spec.launch_records or []:
            n = (rec.get("args", {}).get(bound) or {}).get("value")
            grid = rec.get("grid") or []
            if not isinstance(block, int) or block <= 0 or not isinstance(n, int) or not grid:
                continue
            others = 1
            for g in grid[1:]:
                others *= g
            if how == "blocks":
                full += min(grid[0], max(0, n // block)) * others
                total += grid[0] * others
            elif how == "all":
                full += grid[0] * others if block <= n else 0
                total += grid[0] * others
            else:
                full += max(0, n // block) * grid[0] * others
                total += max(0, -(-n // block)) * grid[0] * others
    if not total:
        return None
    return full, total, "iterations" if how == "iterations" else "programs"


def _loop_form(fn: ast.FunctionDef, mask: _Mask) -> ast.For | None:
    """The `for start in range(0, bound, BLOCK)` whose target is the offsets' start, when the mask is made in its
    body."""
    if not isinstance(mask.start, ast.Name):
        return None
    offs_stmt = mask.stmts[-1]
    loop = _enclosing_for(fn, offs_stmt)
    if loop is None or not isinstance(loop.target, ast.Name) or loop.target.id != mask.start.id or loop.orelse:
        return None
    it = loop.iter
    if _call_name(it) not in ("range",) or not (isinstance(it.func, ast.Name) or
                                                 (isinstance(it.func, ast.Attribute) and it.func.attr == "range")):
        return None
    if len(it.args) != 3 or not (isinstance(it.args[0], ast.Constant) and it.args[0].value == 0):
        return None
    if not _same(it.args[1], mask.bound) or not _same(it.args[2], mask.block):
        return None
    if not all(any(s is b for b in loop.body) for s in mask.stmts):
        return None
    return loop


_POSITIONAL = "a load or store gives arguments after the mask by position"


def _plan_grid(t: _Text, fn: ast.FunctionDef, mask: _Mask, access: ast.Call) -> Plan | str:
    defs = max(fn.body.index(s) for s in mask.stmts)
    rest = fn.body[defs + 1:]
    calls = _drops(rest, mask)
    if isinstance(calls, str):
        return calls
    if not any(c is access for c, _ in calls):
        return "the access is not after the statements that make its mask"
    first_i = next(i for i, s in enumerate(rest) if any(n is c for c, _ in calls for n in ast.walk(s)))
    region = rest[first_i:]
    first, last = region[0].lineno, region[-1].end_lineno
    guard = _guard(t, mask)
    if any(isinstance(n, ast.If) and ast.unparse(n.test) == ast.unparse(ast.parse(guard, mode="eval").body)
           for s in region for n in ast.walk(s)):
        return "the kernel has its full-block path already: this is the masked tail's access"
    spans = _all_deletions(t, calls)
    if spans is None:
        return _POSITIONAL
    unit = _unit(t, fn)
    ind = re.match(r"[ \t]*", t.lines[first - 1]).group(0)
    nl = t.newline
    orig = t.lines[first - 1:last]
    fast = _indent(_cut(t, first, last, spans), unit)
    if not fast[-1].endswith(("\n", "\r")):
        fast[-1] += nl  # the file's last line: the copy is followed by the else
    new = [f"{ind}if {guard}:  # a full block: every lane is in bounds, no mask{nl}", *fast,
           f"{ind}else:  # the last, partial block{nl}", *_indent(orig, unit)]
    n = last - first + 1
    return Plan(first, last, new, fast={first + k: first + 1 + k for k in range(n)},
                tail={first + k: first + 2 + n + k for k in range(n)},
                dropped=[(kind, c.lineno) for c, kind in calls], form="grid", guard=f"if {guard}:")


def _plan_loop(t: _Text, fn: ast.FunctionDef, mask: _Mask, loop: ast.For, access: ast.Call) -> Plan | str:
    defs = max(loop.body.index(s) for s in mask.stmts)
    calls = _drops(loop.body[defs + 1:], mask)
    if isinstance(calls, str):
        return calls
    if not any(c is access for c, _ in calls):
        return "the access is not after the statements that make its mask"
    first, last = loop.lineno, loop.end_lineno
    stop, step = loop.iter.args[1], loop.iter.args[2]
    split = f"{_paren(t, stop)} - {_paren(t, stop)} % {_paren(t, step)}"
    spans = _all_deletions(t, calls)
    if spans is None:
        return _POSITIONAL
    fast = _splice(t, first, last, spans, stop, split)  # range(0, split, BLOCK), no masks
    tail = _splice(t, first, last, [], loop.iter.args[0], split)  # range(split, n, BLOCK), as written
    if not fast[-1].endswith(("\n", "\r")):
        fast[-1] += t.newline
    n = last - first + 1
    return Plan(first, last, fast + tail, fast={first + k: first + k for k in range(n)},
                tail={first + k: first + n + k for k in range(n)},
                dropped=[(kind, c.lineno) for c, kind in calls], form="loop",
                guard=f"range(0, {split}, {t.seg(step)})")


def apply_plan(text: str, p: Plan) -> tuple[list[Edit], str]:
    """The edit over the replaced lines and the new text."""
    lines = split_lines(text, keepends=True)
    old = lines[p.last - 1]
    if old.endswith(("\n", "\r")):
        edit = Edit.replace(p.first - 1, 0, p.last, 0, "".join(p.new_lines))
    else:
        edit = Edit.replace(p.first - 1, 0, p.last - 1, len(old), "".join(p.new_lines).rstrip("\r\n"))
    return [edit], apply_edits(text, [edit])


# ---------------------------------------------------------------- the candidate and its proof
class TailCandidate:
    """The kernel edit of a `Plan`, proven by re-compiling the edited file: the fast path's accesses must be 128-bit.
    `group`: a program edit (FixSearch offers the first of a group that works, and may prefer it)."""

    group = "kernel:tail"

    def __init__(self, plan: Plan, finding: Finding) -> None:
        self.plan, self.finding = plan, finding
        self.label = ("Add an unmasked path for full blocks" if plan.form == "grid"
                      else "Split the loop: full blocks unmasked, the last one masked")
        self.values: dict[str, str] = {}
        self.edits: list[Edit] = []
        self.new_text = ""
        self.shift = 0  # the kernel's def line does not move

    def apply(self, text: str) -> tuple[list[Edit], str, int]:
        edits, new_text = apply_plan(text, self.plan)
        return edits, new_text, 0

    def outcome(self, old: KernelReport, new: KernelReport | None, f: Finding, settings: Any
                ) -> tuple[str, bool] | None:
        """(what the re-compile showed, whether something else got worse), or None when it does not help: the
        finding is still on the fast path's copy of its line, an access there is still narrow, or the compile broke."""
        pair = _spec_pair(old, new, f)
        if pair is None:
            return None
        before, after = pair
        p = self.plan
        if any(g.code == f.code and g.line == p.fast.get(f.line) for g in new.findings):
            return None
        old_view, new_view = SpecView(old, before, settings), SpecView(new, after, settings)

        def wide(line: int, kind: str) -> bool:
            bits = _bits(new_view, [p.fast[line]], kind)
            return bool(bits) and min(bits) >= _FULL_BITS

        own = f.data.get("access") if f.data.get("access") in _KIND else "load"
        if not wide(f.line, _KIND[own][0]):
            return None  # the access this fix is for is not 128-bit on the fast path
        shown, narrow = [], 0
        for access in sorted(_KIND, key=lambda a: a != own):  # the finding's own kind first
            kind, noun = _KIND[access]
            lines = [ln for k, ln in p.dropped if k == access]
            widened = [ln for ln in lines if wide(ln, kind)]
            narrow += len(lines) - len(widened)
            was = _bits(old_view, widened, kind)
            if was and min(was) < _FULL_BITS:
                shown.append(f"{noun} {min(was)} → {_FULL_BITS}-bit")
        if not shown:
            return None
        said = f"{' and '.join(shown)} on the fast path (re-compiled)"
        if narrow:
            said += (f", {narrow} of the {len(p.dropped)} accesses it unmasks stay narrow for another cause "
                     f"(their own findings say which)")
        one_block = p.share is not None and p.share[0] == "all"
        if one_block:  # offsets tl.arange(0, BLOCK) alone: one block per program, full only when bound >= BLOCK
            said += (f"; the fast path runs only where {p.guard[3:-1]} — a kernel that sizes BLOCK as the next "
                     f"power of two above the bound takes the masked path whenever the bound is not a power of two")
        else:
            said += f"; {'the last block stays masked' if p.form == 'grid' else 'the last iteration stays masked'}"
        # what it is worth at run time, by the captured launches the finding holds in
        keys = set(f.data.get("specs") or [])
        held = [cs.spec for cs in compiled_specs(old) if cs.spec.key() in keys] or [before.spec]
        share = fast_share(p, held)
        unused = (share is not None and share[0] == 0) or (share is None and one_block)
        if share is not None:
            said += (f"; but no captured launch it is narrow in takes the fast path (0 of {share[1]} {share[2]})"
                     if share[0] == 0 else f"; the captured launches it is narrow in take it in {share[0]} of "
                     f"{share[1]} {share[2]}")
        worse = _worse(old, new, p)
        if worse:
            said += "; but adds " + ", ".join(f"{c} on line {ln}" for c, ln in worse[:3])
        return said, bool(worse) or unused


def _spec_pair(old: KernelReport, new: KernelReport | None, f: Finding):
    """(the old compiled spec the finding holds in, the same spec in the re-compile) — None when the edited kernel
    no longer compiles."""
    if new is None or any(g.code == "SRC001" for g in new.findings):
        return None
    keys = set(f.data.get("specs") or [])
    olds = compiled_specs(old)
    before = next((cs for cs in olds if cs.spec.key() in keys), olds[0] if olds else None)
    if before is None:
        return None
    after = next((cs for cs in compiled_specs(new) if cs.spec.key() == before.spec.key()), None)
    return (before, after) if after is not None else None


def _bits(view: SpecView, lines: list[int], kind: str) -> list[int]:
    stage = "ptx" if view.module("ptx") is not None else "amdgcn"
    mod = view.module(stage)
    if mod is None:
        return []
    wanted = {i for ln in lines for i in view.ir_lines(stage, ln)}
    return [i.bits for i in mod.instrs if i.ir_line in wanted and i.kind == kind and i.bits]


def _worse(old: KernelReport, new: KernelReport, p: Plan) -> list[tuple[str, int]]:
    """Warnings and errors of the re-compile that the old text did not have (lines mapped back)."""
    had = {(g.code, g.line) for g in old.findings}
    out = set()
    for g in new.findings:
        if g.severity not in ("warning", "error"):
            continue
        line = p.old_line(g.line)
        if line is None or (g.code, line) not in had:
            out.add((g.code, g.line))
    return sorted(out)


def candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[TailCandidate]:
    """The kernel edit for a narrow access whose mask is the cause; nothing when the edit would not be sound."""
    if "tail" not in fix_strategies(f.code) or f.data.get("cause") != "mask":
        return
    p = plan(text, kr.kernel.def_line, f.line)
    if p is not None:
        yield TailCandidate(p, f)
