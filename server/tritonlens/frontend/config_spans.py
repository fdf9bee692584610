"""Where each literal `triton.Config(...)` of a kernel's autotune list sits in the text: the spans quick fixes edit."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..source import parse_module, split_lines
from .scope import AUTOTUNE, ModuleScope, call_arg, decorator_kind


# ---------------------------------------------------------------- autotune config spans (for quick fixes)
Span = tuple[int, int, int, int]  # 1-based lines, 0-based character columns, end exclusive


@dataclass
class ConfigSource:
    """Where one literal `triton.Config(...)` of a kernel's `@triton.autotune(configs=[...])` sits in the text."""

    index: int  # 1-based, the order `autotune config N/M` labels use
    call: Span
    close_paren: tuple[int, int]  # (line, col) of the call's `)`: where a missing option is inserted
    remove: Span  # the call with its separating comma: deleting it leaves a valid list
    options: dict[str, Span] = field(default_factory=dict)  # num_warps / num_stages / ... -> keyword value
    kwargs: dict[str, Span] = field(default_factory=dict)  # constexpr name -> value in the kwargs dict
    values: dict[str, Any] = field(default_factory=dict)  # literal values of those options and kwargs
    names: dict[str, str] = field(default_factory=dict)  # kwargs whose value is a name (`{"BLOCK_N": BN}`) -> it


def config_sources(path: str, text: str, def_line: int) -> list[ConfigSource] | None:
    """The Config calls of the autotune decorator above the kernel defined on `def_line`, when `configs=` is a list
    or tuple literal of `triton.Config(...)` calls (directly or through one module-level name bound to such a
    literal). None when the configs are built by code (a comprehension, a function), so no edit can be offered."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return None
    scope = ModuleScope(path, text, tree, None)
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno == def_line), None)
    if fn is None:
        return None
    deco = next((d for d in fn.decorator_list
                 if isinstance(d, ast.Call) and decorator_kind(scope, d) == AUTOTUNE), None)
    configs = call_arg(deco, "configs", 0) if deco is not None else None
    if isinstance(configs, ast.Name):
        bound = scope.assigns.get(configs.id, [])
        if len(bound) != 1 or not isinstance(bound[0], ast.Assign) or len(bound[0].targets) != 1:
            return None
        configs = bound[0].value
    if not isinstance(configs, (ast.List, ast.Tuple)) or not configs.elts:
        return None
    calls = configs.elts
    if not all(isinstance(c, ast.Call) and scope.resolve(c.func) == "triton.Config" for c in calls):
        return None
    lines = split_lines(text)

    def col(line: int, byte_col: int) -> int:
        raw = lines[line - 1].encode() if 0 < line <= len(lines) else b""
        return len(raw[:byte_col].decode(errors="replace"))

    def span(node: ast.AST) -> Span:
        return (node.lineno, col(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                node.end_lineno, col(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    out: list[ConfigSource] = []
    for i, call in enumerate(calls):
        assert isinstance(call, ast.Call)
        s = span(call)
        if i + 1 < len(calls):
            nxt = span(calls[i + 1])
            remove = (s[0], s[1], nxt[0], nxt[1])
        elif i > 0:
            prev = span(calls[i - 1])
            remove = (prev[2], prev[3], s[2], s[3])
        else:
            remove = s
        src = ConfigSource(index=i + 1, call=s, close_paren=(s[2], s[3] - 1), remove=remove)
        kw_dict = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "kwargs"), None)
        if isinstance(kw_dict, ast.Dict):
            for key, value in zip(kw_dict.keys, kw_dict.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    src.kwargs[key.value] = span(value)
                    if isinstance(value, ast.Constant):
                        src.values[key.value] = value.value
                    elif isinstance(value, ast.Name):
                        src.names[key.value] = value.id
        for kw in call.keywords:
            if kw.arg and kw.arg != "kwargs":
                src.options[kw.arg] = span(kw.value)
                if isinstance(kw.value, ast.Constant):
                    src.values[kw.arg] = kw.value.value
        out.append(src)
    return out
