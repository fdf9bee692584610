"""Launch sites `kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)` in the workspace, read from the AST.

Literal arguments (also through local and module constants and simple arithmetic) become values a spec can use;
the rest are kept as expression text so a missing-value finding can show what the launch passes.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

_UNKNOWN = object()


@dataclass
class LaunchSite:
    path: str
    line: int
    col: int
    positional: list[tuple[Any, str]] = field(default_factory=list)  # (value or UNKNOWN, source text)
    keywords: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def bind(self, param_names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
        """(literal values, expression texts of the non-literal ones) keyed by parameter / option name."""
        values: dict[str, Any] = {}
        exprs: dict[str, str] = {}
        pairs = list(zip(param_names, self.positional)) + list(self.keywords.items())
        for name, (value, text) in pairs:
            if value is _UNKNOWN:
                exprs[name] = text
            else:
                values[name] = value
        return values, exprs

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def is_unknown(value: Any) -> bool:
    return value is _UNKNOWN


def find_launches(kernel_name: str, files: dict[str, str]) -> list[LaunchSite]:
    """Every `kernel_name[grid](...)` (also `mod.kernel_name[grid](...)`) in `files` (path -> text)."""
    sites: list[LaunchSite] = []
    short = kernel_name.rsplit(".", 1)[-1]
    for path, text in files.items():
        if short not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        module_env = _constants(tree.body, {})
        _Finder(path, text, short, module_env, sites).visit(tree)
    return sites


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, text: str, name: str, module_env: dict[str, Any], out: list[LaunchSite]):
        self.path, self.text, self.name, self.out = path, text, name, out
        self.envs = [module_env]
        self.texts: list[dict[str, str]] = [{}]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.envs.append(_constants(node.body, self.envs[-1]))
        self.texts.append(self._assigned_texts(node.body))
        self.generic_visit(node)
        self.envs.pop()
        self.texts.pop()

    def _assigned_texts(self, body: list[ast.stmt]) -> dict[str, str]:
        """Single assignments as text: `block = triton.next_power_of_2(n)` -> {"block": "triton.next_power_of_2(n)"}."""
        texts: dict[str, str] = {}
        twice: set[str] = set()
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                if name in texts:
                    twice.add(name)
                texts[name] = ast.get_source_segment(self.text, stmt.value) or name
        return {k: v for k, v in texts.items() if k not in twice}

    def _text(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and node.id in self.texts[-1]:
            return self.texts[-1][node.id]
        return ast.get_source_segment(self.text, node) or ""

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Subscript):
            target = f.value
            tail = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) \
                else None
            if tail == self.name:
                env = self.envs[-1]
                site = LaunchSite(self.path, node.lineno, node.col_offset + 1)
                for a in node.args:
                    if isinstance(a, ast.Starred):
                        break
                    site.positional.append((evaluate(a, env), self._text(a)))
                for kw in node.keywords:
                    if kw.arg:
                        site.keywords[kw.arg] = (evaluate(kw.value, env), self._text(kw.value))
                self.out.append(site)
        self.generic_visit(node)


def _constants(body: list[ast.stmt], outer: dict[str, Any]) -> dict[str, Any]:
    """Names assigned exactly once in a block to something that evaluates to a constant."""
    env = dict(outer)
    counts: dict[str, int] = {}
    for stmt in body:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if counts.get(name) == 1:
                value = evaluate(stmt.value, env)
                if value is not _UNKNOWN:
                    env[name] = value
                else:
                    env.pop(name, None)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = evaluate(stmt.value, env)
            if value is not _UNKNOWN and counts.get(stmt.target.id) == 1:
                env[stmt.target.id] = value
    for name, n in counts.items():
        if n > 1:
            env.pop(name, None)
    return env


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.LShift: lambda a, b: a << b,
           ast.RShift: lambda a, b: a >> b, ast.Div: lambda a, b: a / b}


def evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    """A constant value, or the UNKNOWN marker. Pure: literals, known names, arithmetic, next_power_of_2/cdiv."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError):
        pass
    if isinstance(node, ast.Name):
        return env.get(node.id, _UNKNOWN)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = evaluate(node.left, env), evaluate(node.right, env)
        if a is _UNKNOWN or b is _UNKNOWN or not all(isinstance(v, (int, float)) for v in (a, b)):
            return _UNKNOWN
        if isinstance(node.op, ast.Pow) or (isinstance(node.op, ast.LShift) and b > 64):
            return _UNKNOWN
        try:
            return _BINOPS[type(node.op)](a, b)
        except ArithmeticError:
            return _UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = evaluate(node.operand, env)
        return -v if isinstance(v, (int, float)) else _UNKNOWN
    if isinstance(node, ast.Call) and not node.keywords:
        fname = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id \
            if isinstance(node.func, ast.Name) else ""
        args = [evaluate(a, env) for a in node.args]
        if any(a is _UNKNOWN or not isinstance(a, int) for a in args):
            return _UNKNOWN
        if fname == "next_power_of_2" and len(args) == 1:
            return 1 if args[0] <= 1 else 1 << (args[0] - 1).bit_length()
        if fname == "cdiv" and len(args) == 2 and args[1]:
            return -(-args[0] // args[1])
        if fname in ("min", "max") and args:
            return (min if fname == "min" else max)(args)
        if fname == "int" and len(args) == 1:
            return args[0]
        if fname == "log2" and len(args) == 1 and args[0] > 0:
            return math.log2(args[0])
    return _UNKNOWN
