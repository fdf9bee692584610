"""Find the Triton kernels of a file from its AST alone — the file is never imported or run.

Names are resolved through the file's imports (and through re-exporting modules of the workspace, read as text),
so `@jit` is a Triton kernel only when `jit` really is `triton.jit`; `cute.jit`, `numba.jit`, `torch.jit` are not.
Autotune configs built by code are evaluated in a sealed process of their own (config_eval), never by importing."""
from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, field

from ..device.config_eval import ConfigEvaluator
from .hints import hint_lines_above
from ..model import Finding, KernelInfo, Param
from ..source import is_main_guard, parse_module, split_lines
from .config_code import config_program, evaluate_configs, reads_module
from .params import infer_params
from .scope import AUTOTUNE, HEURISTICS, JIT, ModuleScope, call_arg, decorator_kind


@dataclass
class DiscoverResult:
    kernels: list[KernelInfo] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)

    def kernel(self, name: str) -> KernelInfo | None:
        return next((k for k in self.kernels if k.name == name or k.qualname == name), None)


# ---------------------------------------------------------------- discovery
@dataclass(frozen=True)
class _Evaluation:
    """How autotune configs built by code are evaluated: the device they see, and the evaluator that runs them."""

    target: str
    gpu: str | None = None
    evaluator: ConfigEvaluator | None = None
    env: dict[str, str] | None = None


def discover(path: str, text: str, workspace_root: str | None = None, target: str = "cuda:90",
             gpu: str | None = None, evaluator: ConfigEvaluator | None = None,
             env: dict[str, str] | None = None) -> DiscoverResult:
    """Kernels of one file. A syntax error gives one SRC001 finding and no kernels; nothing raises.

    `target` (and `gpu`, the key of the run's GPU for it: device/run.py) is what device queries in config-building
    code answer while autotune configs are evaluated, by `evaluator` (config_eval.shared() when None), with `env`
    added to the environment they read.
    """
    result = DiscoverResult()
    evaluation = _Evaluation(target, gpu, evaluator, env)
    try:
        tree = parse_module(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        end_line = getattr(exc, "end_lineno", None) or line
        end_col = getattr(exc, "end_offset", None) or col + 1
        if end_line == line and end_col <= col:
            end_col = col + 1
        result.errors.append(Finding(path, line, col, end_line, end_col, "SRC001", "error",
                                     f"SyntaxError: {exc.msg}"))
        return result
    except ValueError as exc:  # e.g. null bytes
        result.errors.append(Finding(path, 1, 1, 1, 2, "SRC001", "error", f"cannot parse: {exc}"))
        return result
    scope = ModuleScope(path, text, tree, workspace_root)
    lines = split_lines(text)
    module_defs = scope.defs
    for stmt, branch, defs in _module_statements(scope, tree.body, (), module_defs):
        # Inside a branch, a helper called by name is the one that branch defines (`if HAS_TLE: def h ... else:
        # def h ...`), which is also what the compile of that branch's kernel sees.
        scope.defs = defs
        try:
            if _rewrap(scope, stmt, result.kernels, evaluation):
                continue
            found = _kernels_of_stmt(scope, stmt, lines, evaluation)
            for k in found:
                k.branch = " > ".join(branch) or None
            result.kernels.extend(found)
        except Exception as exc:  # a discovery bug must not hide the rest of the file
            result.errors.append(Finding(path, stmt.lineno, stmt.col_offset + 1, stmt.lineno, stmt.col_offset + 2,
                                         "SRC001", "error", f"tritonlens could not read this statement: {exc!r}"))
        finally:
            scope.defs = module_defs
    result.errors.extend(_kernels_out_of_reach(scope, tree, path))
    return result


def _kernels_out_of_reach(scope: ModuleScope, tree: ast.Module, path: str) -> list[Finding]:
    """@jit functions defined inside a function body: they exist only when that function runs, so there is nothing
    to import and compile. Say so on each, rather than report a file with no kernels."""
    out: list[Finding] = []

    def visit(node: ast.AST, outer: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if outer is not None and any(_looks_like_jit(scope, d) for d in child.decorator_list):
                    out.append(Finding(
                        path, child.lineno, child.col_offset + 1, child.lineno, child.col_offset + 4, "SRC005", "info",
                        f"kernel `{child.name}` is defined inside `{outer}()`, so it exists only when that function "
                        "runs: tritonlens compiles module-level kernels (and static methods) only — define it at "
                        "module level to see what the compiler does with it", kernel=child.name))
                visit(child, child.name)
            elif isinstance(child, ast.ClassDef):
                visit(child, outer)
            else:
                visit(child, outer)

    visit(tree, None)
    return out


def _looks_like_jit(scope: ModuleScope, deco: ast.expr) -> bool:
    """`@triton.jit` / `@jit(...)` even when the import sits inside the enclosing function (unresolvable here)."""
    if decorator_kind(scope, deco) == JIT:
        return True
    func = deco.func if isinstance(deco, ast.Call) else deco
    return isinstance(func, ast.Attribute) and func.attr == "jit" and isinstance(func.value, ast.Name) and \
        func.value.id in ("triton", "tl")


def _module_statements(scope: ModuleScope, stmts: list[ast.stmt], branch: tuple[str, ...],
                       defs: dict[str, ast.FunctionDef]):
    """Module-level statements in source order, looking inside top-level `if`/`elif`/`else` and
    `try`/`except`/`else`/`finally` blocks (never function bodies, never `if __name__ == "__main__":`). Yields
    (statement, the branch labels around it, the defs visible from it by name)."""
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            if is_main_guard(stmt):
                continue
            yield from _if_statements(scope, stmt, branch, defs, "if")
        elif isinstance(stmt, ast.Try):
            parts = [("try:", stmt.body)]
            for h in stmt.handlers:
                what = f"except {_one_line(scope.segment(h.type))}" if h.type is not None else "except"
                parts.append((f"{what}:", h.body))
            parts += [("else: (of try:)", stmt.orelse), ("finally:", stmt.finalbody)]
            for label, block in parts:
                yield from _module_statements(scope, block, branch + (label,), _with_defs(defs, block))
        else:
            yield stmt, branch, defs


def _if_statements(scope: ModuleScope, node: ast.If, branch: tuple[str, ...], defs: dict[str, ast.FunctionDef],
                   keyword: str):
    header = f"{keyword} {_one_line(scope.segment(node.test))}:"
    yield from _module_statements(scope, node.body, branch + (header,), _with_defs(defs, node.body))
    orelse = node.orelse
    if len(orelse) == 1 and isinstance(orelse[0], ast.If) and split_lines(scope.text)[orelse[0].lineno - 1][
            orelse[0].col_offset:].lstrip().startswith("elif"):
        yield from _if_statements(scope, orelse[0], branch, defs, "elif")
    elif orelse:
        yield from _module_statements(scope, orelse, branch + (f"else: (of {header})",), _with_defs(defs, orelse))


def _with_defs(defs: dict[str, ast.FunctionDef], block: list[ast.stmt]) -> dict[str, ast.FunctionDef]:
    local = {s.name: s for s in block if isinstance(s, ast.FunctionDef)}
    return {**defs, **local} if local else defs


def _one_line(text: str) -> str:
    return " ".join(text.split())


def helpers_of(kernel: KernelInfo) -> list[str]:
    """Same-file functions the kernel calls (transitively) and workspace modules it calls into."""
    return list(kernel.helpers)


def _kernels_of_stmt(scope: ModuleScope, stmt: ast.stmt, lines: list[str],
                     evaluation: _Evaluation) -> list[KernelInfo]:
    if isinstance(stmt, ast.FunctionDef):
        k = _from_def(scope, stmt, lines, evaluation)
        return [k] if k else []
    if isinstance(stmt, ast.ClassDef):
        found = []
        for s in stmt.body:
            if isinstance(s, ast.FunctionDef):
                k = _from_def(scope, s, lines, evaluation, class_name=stmt.name)
                if k:
                    found.append(k)
        return found
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        k = _from_call(scope, stmt, lines, evaluation)
        return [k] if k else []
    return []


def _rewrap(scope: ModuleScope, stmt: ast.stmt, found: list[KernelInfo], evaluation: _Evaluation) -> bool:
    """`k = triton.heuristics({...})(k)` / `k = triton.autotune(...)(k)` on a kernel bound earlier in the file: the
    wrappers belong to that kernel (the module's `k` is the wrapped one from here on)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    wrappers: list[tuple[str, ast.expr]] = []
    node: ast.expr = stmt.value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and len(node.args) == 1:
        kind = decorator_kind(scope, node.func)
        if kind not in (AUTOTUNE, HEURISTICS):
            return False
        wrappers.append((kind, node.func))
        node = node.args[0]
    if not wrappers or not isinstance(node, ast.Name):
        return False
    k = next((k for k in reversed(found) if k.name == node.id and k.class_name is None), None)
    if k is None:
        return False
    if k.name != stmt.targets[0].id:
        return False  # a second, differently named kernel object; its specs would need their own entry
    _apply_wrappers(scope, k, wrappers, evaluation)
    fn = scope.defs.get(k.func_name)
    if isinstance(fn, ast.FunctionDef):
        k.source_hash = _hash(scope, fn, k)
    return True


def _from_def(scope: ModuleScope, fn: ast.FunctionDef, lines: list[str], evaluation: _Evaluation,
              class_name: str | None = None) -> KernelInfo | None:
    kinds = [decorator_kind(scope, d) for d in fn.decorator_list]
    if JIT not in kinds:
        return None
    jit_deco = fn.decorator_list[kinds.index(JIT)]
    wrappers = [(k, d) for k, d in zip(kinds, fn.decorator_list) if k in (AUTOTUNE, HEURISTICS)]
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    qual = f"{class_name}.{fn.name}" if class_name else fn.name
    return _build(scope, fn, fn.name, qual, class_name, jit_deco, wrappers, first, lines, evaluation)


def _from_call(scope: ModuleScope, stmt: ast.Assign, lines: list[str],
               evaluation: _Evaluation) -> KernelInfo | None:
    """`k = triton.jit(f)`, `k = triton.autotune(...)(triton.jit(f))`, `k = triton.heuristics({...})(triton.jit(f))`."""
    wrappers: list[tuple[str, ast.expr]] = []
    node: ast.expr = stmt.value
    while isinstance(node, ast.Call):
        kind = decorator_kind(scope, node.func) if isinstance(node.func, ast.Call) else None
        if kind in (AUTOTUNE, HEURISTICS) and len(node.args) == 1:
            wrappers.append((kind, node.func))
            node = node.args[0]
            continue
        if kind == JIT and len(node.args) == 1:  # triton.jit(do_not_specialize=[...])(f)
            jit_deco: ast.expr = node.func
            inner = node.args[0]
            break
        if scope.resolve(node.func) == JIT and len(node.args) == 1:
            jit_deco = node
            inner = node.args[0]
            break
        return None
    else:
        return None
    if not isinstance(inner, ast.Name) or inner.id not in scope.defs:
        return None
    fn = scope.defs[inner.id]
    if not isinstance(fn, ast.FunctionDef):
        return None
    name = stmt.targets[0].id  # type: ignore[attr-defined]
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    k = _build(scope, fn, name, name, None, jit_deco, wrappers, first, lines, evaluation)
    if not k.hints:
        k.hints = hint_lines_above(lines, stmt.lineno, [p.name for p in k.params], k.constexpr_names)
        k.source_hash = _hash(scope, fn, k)
    return k


def _build(scope: ModuleScope, fn: ast.FunctionDef, name: str, qualname: str, class_name: str | None,
           jit_deco: ast.expr, wrappers: list[tuple[str, ast.expr]], first_line: int, lines: list[str],
           evaluation: _Evaluation) -> KernelInfo:
    params = infer_params(scope, fn)
    k = KernelInfo(name=name, func_name=fn.name, path=scope.path, def_line=fn.lineno, decorator_line=first_line,
                   end_line=fn.end_lineno or fn.lineno, col=fn.col_offset + 1, params=params,
                   class_name=class_name, qualname=qualname)
    if isinstance(jit_deco, ast.Call):
        for kw in jit_deco.keywords:
            if kw.arg in ("do_not_specialize", "do_not_specialize_on_alignment"):
                names = _param_list(kw.value, params)
                if kw.arg == "do_not_specialize":
                    k.do_not_specialize = names
                else:
                    k.do_not_specialize_on_alignment = names
    _apply_wrappers(scope, k, wrappers, evaluation)
    k.returns_value = _returns_value(fn)
    k.hints = hint_lines_above(lines, first_line, [p.name for p in params], k.constexpr_names)
    k.helpers = _helpers(scope, fn)
    k.source_hash = _hash(scope, fn, k)
    return k


def _apply_wrappers(scope: ModuleScope, k: KernelInfo, wrappers: list[tuple[str, ast.expr]],
                    evaluation: _Evaluation) -> None:
    """Record what `@triton.autotune(...)` / `@triton.heuristics(...)` (as decorators or calls) add to a kernel."""
    for kind, deco in wrappers:
        if not isinstance(deco, ast.Call):
            continue
        if kind == AUTOTUNE:
            configs = call_arg(deco, "configs", 0)
            key = call_arg(deco, "key", 1)
            if key is not None:
                try:
                    k.autotune_key = [str(x) for x in ast.literal_eval(key)]
                except (ValueError, SyntaxError, TypeError):
                    pass
            if configs is not None:
                k.autotune_configs, k.autotune_error = evaluate_configs(scope, configs, evaluation.target,
                                                                        evaluation.gpu, evaluation.evaluator,
                                                                        evaluation.env)
        elif kind == HEURISTICS:
            values = call_arg(deco, "values", 0)
            if isinstance(values, ast.Dict):
                for key_node, val in zip(values.keys, values.values):
                    if isinstance(key_node, ast.Constant) and isinstance(key_node.value, str):
                        k.heuristics[key_node.value] = scope.segment(val)
                        program = config_program(scope, val)
                        if reads_module(program):
                            k.heuristic_programs[key_node.value] = program


def _returns_value(fn: ast.FunctionDef) -> bool:
    """Whether the function's own body (not nested defs or lambdas) has `return <value>`. A written-out `return None`
    counts: Triton refuses it in a kernel ("cannot convert None to tensor"), so only a device function has it (a
    fallback helper that returns nothing); a bare `return` is a kernel's early exit."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _param_list(node: ast.expr, params: list[Param]) -> list[str]:
    try:
        items = ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return []
    names = []
    for it in items if isinstance(items, (list, tuple)) else [items]:
        if isinstance(it, int) and 0 <= it < len(params):
            names.append(params[it].name)
        elif isinstance(it, str):
            names.append(it)
    return names


def _helpers(scope: ModuleScope, fn: ast.FunctionDef) -> list[str]:
    names: list[str] = []
    modules: list[str] = []
    todo = [fn]
    seen = {fn.name}
    while todo:
        cur = todo.pop()
        for node in ast.walk(cur):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in scope.defs and f.id not in seen:
                seen.add(f.id)
                names.append(f.id)
                todo.append(scope.defs[f.id])  # type: ignore[arg-type]
                continue
            root = f
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in scope.imports:
                target = scope.imports[root.id]
                if target.startswith("ws:"):
                    mod = _module_name(target[3:].split(":")[0], scope.workspace_root)
                    if mod not in modules:
                        modules.append(mod)
    return names + modules


def _module_name(file: str, root: str | None) -> str:
    base = os.path.abspath(root) if root else os.path.dirname(file)
    rel = os.path.relpath(file, base)
    rel = rel[:-3] if rel.endswith(".py") else rel
    parts = rel.replace(os.sep, ".").split(".")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p and p != "..") or os.path.basename(file)


def _hash(scope: ModuleScope, fn: ast.FunctionDef, k: KernelInfo) -> str:
    lines = split_lines(scope.text)
    h = hashlib.sha256()
    h.update("\n".join(lines[k.decorator_line - 1:k.end_line]).encode())
    for name in k.helpers:
        helper = scope.defs.get(name)
        if helper is not None:
            h.update(b"\0" + scope.segment(helper).encode())
    for hint in k.hints:
        h.update(b"\0" + hint.text.encode())
    h.update(b"\0" + repr(k.autotune_configs).encode() + repr(k.autotune_error).encode())
    for name in sorted(k.heuristic_programs):  # the module code a heuristic reads: its values follow it
        h.update(b"\0" + k.heuristic_programs[name].digest().encode())
    return h.hexdigest()
