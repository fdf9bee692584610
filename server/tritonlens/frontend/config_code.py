"""The code behind an autotune `configs=` list or a heuristics lambda: the module statements the expression depends on,
cut out as a `Program` for the config evaluator (device/config_eval) to run as the target's GPU."""
from __future__ import annotations

import ast
import re
from typing import Any

from ..device import config_eval
from ..device.config_eval import ConfigEvaluator, ModuleCode, Program
from ..source import is_main_guard
from .scope import ModuleScope


# ---------------------------------------------------------------- autotune configs
def evaluate_configs(scope: ModuleScope, expr: ast.expr, target: str, gpu: str | None = None,
                     evaluator: ConfigEvaluator | None = None,
                     env: dict[str, str] | None = None) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Evaluate an autotune `configs=` expression in the evaluator process (config_eval), with `triton.Config`
    recording and device queries answered as the virtual GPU of `target` (`gpu` names another).

    Only the module statements the expression depends on are sent (`config_program`). Returns (configs, None) or
    (None, reason)."""
    try:
        ast.literal_eval(expr)
        return None, "configs= is a literal that holds no triton.Config"
    except (ValueError, SyntaxError, TypeError):
        pass
    configs, error = (evaluator or config_eval.shared()).configs(config_program(scope, expr), target, gpu, env)
    missing = re.match(r"NameError: name '(\w+)' is not defined", error or "")
    if missing and missing.group(1) in scope.imports:
        name = missing.group(1)
        return None, (f"configs= calls into `{name}` (imported from {scope.resolve_name(name)}), which tritonlens "
                      "does not run")
    return configs, error


def config_program(scope: ModuleScope, expr: ast.expr) -> Program:
    """What evaluating `expr` needs: the module statements it depends on, transitively — functions, assignments,
    the `if`/`try` blocks around them and their conditions (`BLOCKS = [32, 64] if check_shared_mem() else [16]`,
    `if IS_HOPPER: CONFIGS = ...`), statements that fill a list it reads (`CONFIGS.append(...)`) — in this file and
    in the workspace modules whose names it imports (to MAX_IMPORT_DEPTH)."""
    modules: dict[str, ModuleCode] = {}
    asked: dict[str, set[str]] = {}  # file -> the names of it already followed

    def add(sc: ModuleScope, start: list[ast.AST], before: int | None = None) -> None:
        keep, names, attrs = _dependencies(sc, start, before)
        code = modules.setdefault(sc.path, ModuleCode(sc.path, sc.text))
        code.keep = sorted(set(code.keep) | keep)
        for local in sorted(names & set(sc.imports)):
            target = sc.imports[local]
            if not target.startswith("ws:"):
                dotted = sc.resolve_name(local)
                if dotted and not dotted.startswith(("ws:", "relative:")):
                    code.imports[local] = dotted
                continue
            file, _, attr = target[3:].partition(":")
            other = sc._scope_of(file)
            if other is None:
                continue
            code.imports[local] = (file, attr or None)
            wanted = ({attr} if attr else attrs.get(local, set())) - asked.get(file, set())
            if wanted:
                asked.setdefault(file, set()).update(wanted)
                add(other, [ast.Name(id=n, ctx=ast.Load()) for n in sorted(wanted)])

    add(scope, [expr], before=expr.lineno)  # the decorator runs where it stands: later bindings do not count
    return Program(main=scope.path, modules=modules, expression=scope.segment(expr), line=expr.lineno)


def reads_module(program: Program) -> bool:
    """Whether code needs more of its module than `triton`, `tl` and `torch`."""
    main = program.modules[program.main]
    return len(program.modules) > 1 or bool(main.keep) or any(
        dotted not in ("triton", "triton.language", "torch") for dotted in main.imports.values())


def _dependencies(scope: ModuleScope, start: list[ast.AST], before: int | None = None) -> tuple[
        set[tuple[int, int]], set[str], dict[str, set[str]]]:
    """(places of the module statements `start` depends on — those above line `before` when given — with the
    blocks around them; the names read; the attributes read of each name)."""
    bindings, mutators = _module_bindings(scope.tree, before)
    keep: set[tuple[int, int]] = set()
    names: set[str] = set()
    attrs: dict[str, set[str]] = {}
    todo: list[ast.AST] = list(start)

    def take(stmt: ast.stmt, parents: tuple[ast.stmt, ...]) -> None:
        if _place(stmt) in keep:
            return
        keep.add(_place(stmt))
        todo.append(stmt)
        for p in parents:
            if _place(p) not in keep:
                keep.add(_place(p))
                todo.extend([p.test] if isinstance(p, ast.If) else
                            [h.type for h in getattr(p, "handlers", []) if h.type is not None])

    while todo:
        while todo:
            for n in ast.walk(todo.pop()):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                    attrs.setdefault(n.value.id, set()).add(n.attr)
                if isinstance(n, ast.Name) and n.id not in names:
                    names.add(n.id)
                    for stmt, parents in bindings.get(n.id, []):
                        take(stmt, parents)
        for stmt, parents, changed in mutators:
            if _place(stmt) not in keep and changed & names:
                take(stmt, parents)
    return keep, names, attrs


def _place(stmt: ast.stmt) -> tuple[int, int]:
    return stmt.lineno, stmt.col_offset


def _module_bindings(tree: ast.Module, before: int | None = None):
    """Module-level statements, inside top-level `if`/`try` blocks too (never under `if __name__ == "__main__":`):
    {name: [(statement binding it, the blocks around it)]}, and [(statement, blocks, names it may change in place)]
    for those that change a module value without binding it (`CONFIGS.append(...)`, `TABLE[k] = v`)."""
    bindings: dict[str, list[tuple[ast.stmt, tuple[ast.stmt, ...]]]] = {}
    mutators: list[tuple[ast.stmt, tuple[ast.stmt, ...], set[str]]] = []

    def visit(stmts: list[ast.stmt], parents: tuple[ast.stmt, ...]) -> None:
        for s in stmts:
            if before is not None and s.lineno >= before:
                break
            if isinstance(s, ast.If):
                if not is_main_guard(s):
                    visit(s.body + s.orelse, parents + (s,))
                continue
            if isinstance(s, ast.Try):
                visit(s.body + [x for h in s.handlers for x in h.body] + s.orelse + s.finalbody, parents + (s,))
                continue
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
                bindings.setdefault(s.name, []).append((s, parents))
                continue
            bound = {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For)) and \
                    not (isinstance(s, ast.AnnAssign) and s.value is None):
                for name in bound:
                    bindings.setdefault(name, []).append((s, parents))
            changed = _changed_in_place(s)
            if changed and isinstance(s, (ast.Expr, ast.For, ast.While, ast.Assign, ast.AugAssign)):
                mutators.append((s, parents, changed))

    visit(tree.body, ())
    return bindings, mutators


def _changed_in_place(stmt: ast.stmt) -> set[str]:
    """Names whose value a statement may change without rebinding them: `X.append(...)`, `X[k] = v`, `X.a = v`."""
    out: set[str] = set()
    for n in ast.walk(stmt):
        node = n.func.value if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) else \
            n.value if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store) else None
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if isinstance(node, ast.Name):
            out.add(node.id)
    return out
