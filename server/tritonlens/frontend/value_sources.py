"""Where a launch value is set in the source: the place a quick fix edits, or points at when no edit can be proven.

A kernel's `num_warps` or `BLOCK_SIZE` reaches a launch from one of these places (read from the AST, nothing runs):

- `launch`: a literal keyword of the launch call (`num_warps=4`), or no keyword at all (Triton's default applies and
  a fix adds it there);
- `constant`: a name bound once to a constant (`BLOCK = 1024` at module level or in the launching function) and
  passed as `BLOCK_SIZE=BLOCK`; `shared` when other code reads the name too (then the launch keyword is edited);
- `heuristics`: an entry of the kernel's `@triton.heuristics({...})`, which overrides what the launch passes; its
  lambda returns a constant (`literal`) or computes from `args`;
- `helper`: a value a function call computes at run time (`BLOCK_SIZE, num_warps = calculate_settings(n_cols)`),
  with the helper's own line that sets it when the helper is found in the workspace;
- `computed`: any other expression (`min(MAX_FUSED_SIZE, next_power_of_2(n))`, a parameter of the caller).
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Any

from ..source import parse_module, read_source, split_lines
from .launches import evaluate, is_unknown

Span = tuple[int, int, int, int]  # 0-based line, character; end line, end character (a TextEdit's range)


@dataclass
class ValueSource:
    kind: str  # launch | constant | heuristics | helper | computed
    name: str  # the option or constexpr
    path: str  # the file of `line`
    line: int  # 1-based line that sets the value (the keyword, the assignment, the heuristics entry)
    span: Span | None = None  # the expression a fix replaces (a literal keyword, a constant's value, a lambda body)
    text: str = ""  # that expression's text ("calculate_settings(n_cols)", "triton.next_power_of_2(args['n'])")
    literal: bool = False  # the expression is a plain number
    shared: bool = False  # a constant other code reads too
    local: str | None = None  # the launch passes this name (`num_warps=num_warps`): a conditional can read it
    helper: str | None = None  # the called function's name, for `helper`
    helper_at: tuple[str, int] | None = None  # (file, line) in the helper that sets the value, when found
    value: Any = None  # the constant's value, for `constant`

    def where(self, root: str | None = None) -> str:
        path = os.path.relpath(self.path, root) if root else os.path.basename(self.path)
        return f"{path}:{self.line}"


class _Text:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)

    def char(self, line: int, byte_col: int) -> int:  # ast columns are UTF-8 byte offsets
        raw = self.lines[line - 1].encode() if 0 < line <= len(self.lines) else b""
        return len(raw[:byte_col].decode(errors="replace"))

    def span(self, node: ast.AST) -> Span:
        return (node.lineno - 1, self.char(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                node.end_lineno - 1, self.char(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""


def _tail(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def heuristics_entry(tree: ast.Module, def_line: int, name: str) -> ast.expr | None:
    """The value of `name` in the `@triton.heuristics({...})` above the kernel defined on `def_line`."""
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno == def_line), None)
    for deco in fn.decorator_list if fn is not None else []:
        if isinstance(deco, ast.Call) and _tail(deco.func) == "heuristics" and deco.args and \
                isinstance(deco.args[0], ast.Dict):
            for key, value in zip(deco.args[0].keys, deco.args[0].values):
                if isinstance(key, ast.Constant) and key.value == name:
                    return value
    return None


def _launch_call(tree: ast.Module, kernel: str, line: int) -> tuple[ast.Call, list[ast.AST]] | None:
    """The `kernel[grid](...)` call on `line` and the function defs around it (innermost last)."""
    found: list[tuple[ast.Call, list[ast.AST]]] = []

    def visit(node: ast.AST, outer: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Subscript) and \
                    _tail(child.func.value) == kernel and child.lineno == line:
                found.append((child, outer))
            visit(child, outer + [child] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else outer)

    visit(tree, [])
    return found[0] if found else None


def _assignments(body: list[ast.stmt], name: str) -> list[ast.stmt]:
    """Statements of a block (nested blocks too, not nested defs) that bind `name`."""
    out = []
    for stmt in _walk_statements(body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)] \
                if not isinstance(stmt, ast.With) else [i.optional_vars for i in stmt.items]
            if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                   for t in targets if t is not None for n in ast.walk(t)):
                out.append(stmt)
    return out


def _walk_statements(body: list[ast.stmt]):
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field_name in ("body", "orelse", "finalbody"):
            yield from _walk_statements(getattr(stmt, field_name, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _walk_statements(handler.body)


def _reads_elsewhere(tree: ast.AST, name: str, kernel: str, binding: ast.stmt,
                     allowed: tuple[int, int] | None = None) -> bool:
    """Whether `name` is read anywhere but in launch calls of `kernel`, the statement that binds it and the read at
    `allowed` (1-based line, column: one Config entry)."""
    inside: set[int] = set()
    if allowed is not None:
        inside.update(id(n) for n in ast.walk(tree) if isinstance(n, ast.Name)
                      and (n.lineno, n.col_offset) == allowed)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and _tail(node.func.value) == kernel:
            inside.update(id(n) for n in ast.walk(node))
    inside.update(id(n) for n in ast.walk(binding))
    for fn in ast.walk(tree):  # a function whose parameter or local has the name reads its own, not this one
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and fn is not tree:
            a = fn.args
            if name in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} or \
                    (not isinstance(fn, ast.Lambda) and _assignments(fn.body, name)):
                inside.update(id(n) for n in ast.walk(fn))
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in inside
               for n in ast.walk(tree))


def where_set(path: str, text: str, kernel: str, def_line: int, name: str, call_line: int | None,
              root: str | None = None) -> ValueSource | None:
    """Where the value of option or constexpr `name` of `kernel` is set, for its launch on `call_line` (None when
    the launch is not known: then only a heuristics entry can be named)."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return None
    src = _Text(text)
    entry = heuristics_entry(tree, def_line, name)
    if entry is not None:  # Triton's heuristics override what the launch passes
        body = entry.body if isinstance(entry, ast.Lambda) else entry
        literal = isinstance(body, ast.Constant) and isinstance(body.value, int) and not isinstance(body.value, bool)
        return ValueSource("heuristics", name, path, entry.lineno, src.span(body), src.segment(body), literal)
    if call_line is None:
        return None
    found = _launch_call(tree, kernel.rsplit(".", 1)[-1], call_line)
    if found is None:
        return None
    call, defs = found
    kw = next((k for k in call.keywords if k.arg == name), None)
    if kw is None:
        return ValueSource("launch", name, path, call.lineno)  # Triton's default: the fix adds the keyword
    value = kw.value
    if isinstance(value, ast.Constant):
        return ValueSource("launch", name, path, value.lineno, src.span(value), src.segment(value),
                           isinstance(value.value, int))
    if not isinstance(value, ast.Name):
        return ValueSource("computed", name, path, value.lineno, src.span(value), src.segment(value))
    local = value.id
    fn = defs[-1] if defs else None
    if fn is not None:
        args = fn.args  # type: ignore[attr-defined]
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        bound = [s for s in _assignments(fn.body, local) if s.lineno < call.lineno]  # type: ignore[attr-defined]
        if local in params and not bound:
            return ValueSource("computed", name, path, fn.lineno, src.span(value), f"the parameter {local}",
                               local=local)
        if bound:
            return _from_binding(path, src, tree, fn, kernel, name, local, bound, root)
    module = _assignments(tree.body, local)
    if module:
        return _from_binding(path, src, tree, tree, kernel, name, local, module, root)
    return ValueSource("computed", name, path, value.lineno, src.span(value), local, local=local)


def config_constant(path: str, text: str, kernel: str, name: str, read_at: tuple[int, int]) -> ValueSource | None:
    """The module constant `name` that a `triton.Config` entry of `kernel` reads at `read_at` (1-based line, 0-based
    column): `shared` when anything else reads it (another Config entry, another kernel's launch)."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return None
    bound = _assignments(tree.body, name)
    if not bound:
        return None
    src = _from_binding(path, _Text(text), tree, tree, kernel, name, name, bound, None, read_at)
    return src if src.kind == "constant" else None


def _from_binding(path: str, src: _Text, tree: ast.Module, scope: ast.AST, kernel: str, name: str, local: str,
                  bound: list[ast.stmt], root: str | None, allowed: tuple[int, int] | None = None) -> ValueSource:
    stmt = bound[-1]
    if len(bound) == 1 and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name):
        value = evaluate(stmt.value, {})
        if not is_unknown(value) and isinstance(value, int) and not isinstance(value, bool):
            shared = _reads_elsewhere(scope, local, kernel.rsplit(".", 1)[-1], stmt, allowed)
            return ValueSource("constant", name, path, stmt.lineno, src.span(stmt.value), src.segment(stmt.value),
                               isinstance(stmt.value, ast.Constant), shared=shared, local=local, value=value)
    call = stmt.value if isinstance(stmt, ast.Assign) else None
    if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)) and len(bound) == 1:
        helper = _tail(call.func) or ""
        target = stmt.targets[0]  # type: ignore[union-attr]
        index = next((i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == local), None) \
            if isinstance(target, (ast.Tuple, ast.List)) else None
        if helper not in ("next_power_of_2", "cdiv", "min", "max", "int"):
            return ValueSource("helper", name, path, stmt.lineno, src.span(call), src.segment(call), local=local,
                               helper=helper, helper_at=_helper_line(path, tree, helper, index, root))
    return ValueSource("computed", name, path, stmt.lineno, src.span(stmt.value) if isinstance(
        stmt, ast.Assign) else None, src.segment(stmt.value) if isinstance(stmt, ast.Assign) else local, local=local)


def _helper_line(path: str, tree: ast.Module, helper: str, index: int | None,
                 root: str | None) -> tuple[str, int] | None:
    """(file, line) where `helper` sets the value it returns at position `index` (its whole return when None): the
    first assignment of that returned name in the helper, else its def line. Followed into the workspace file an
    absolute or relative `from X import helper` names."""
    where, text = path, None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == helper), None)
    if fn is None:
        imp = next((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and any(a.name == helper and a.asname is None for a in n.names)), None)
        if imp is None:
            return None
        parts = (imp.module or "").split(".")
        base = os.path.dirname(path) if imp.level else (root or os.path.dirname(path))
        for _ in range(max(0, imp.level - 1)):
            base = os.path.dirname(base)
        where = os.path.join(base, *parts) + ".py" if imp.module else ""
        if not os.path.isfile(where):
            return None
        text, _ = read_source(where)  # bounded (source.MAX_SOURCE_BYTES)
        if text is None:
            return None
        try:
            other = parse_module(text)
        except (SyntaxError, ValueError):
            return None
        fn = next((n for n in other.body if isinstance(n, ast.FunctionDef) and n.name == helper), None)
        if fn is None:
            return None
    ret = next((s for s in _walk_statements(fn.body) if isinstance(s, ast.Return) and s.value is not None), None)
    value = ret.value if ret is not None else None
    if index is not None and isinstance(value, ast.Tuple) and index < len(value.elts):
        value = value.elts[index]
    if isinstance(value, ast.Name):
        sets = _assignments(fn.body, value.id)
        if sets:
            return where, sets[0].lineno
    return where, fn.lineno


def whole_row_blocks(text: str, def_line: int) -> set[str]:
    """Constexprs a kernel needs at least as large as a run-time length: `tl.arange(0, BLOCK)` masked against a bound,
    with no loop stepping by BLOCK (a one-block-per-row reduction). Halving such a block drops data."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return set()
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.lineno == def_line), None)
    if fn is None:
        return set()
    aranged: set[str] = set()
    stepped: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "arange" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Name):
            aranged.add(node.args[1].id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("range",
                                                                                                "static_range"):
            stepped.update(a.id for a in node.args[2:3] if isinstance(a, ast.Name))
    return aranged - stepped
