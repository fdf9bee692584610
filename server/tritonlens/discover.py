"""Find the Triton kernels of a file from its AST alone — the file is never imported or run.

Names are resolved through the file's imports (and through re-exporting modules of the workspace, read as text),
so `@jit` is a Triton kernel only when `jit` really is `triton.jit`; `cute.jit`, `numba.jit`, `torch.jit` are not.
Autotune configs built by code are evaluated in a sealed process of their own (config_eval), never by importing.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from . import config_eval
from .config_eval import ConfigEvaluator, ModuleCode, Program
from .hints import hint_lines_above
from .model import Finding, KernelInfo, Param
from .source import SourceText, is_main_guard, parse_module

MAX_IMPORT_DEPTH = 2

# What the names of triton's API resolve to, whichever module they were imported from.
_CANONICAL = {
    "triton.runtime.jit": "triton.jit",
    "triton.runtime.jit.jit": "triton.jit",
    "triton.runtime.autotune": "triton.autotune",
    "triton.runtime.autotuner.autotune": "triton.autotune",
    "triton.runtime.heuristics": "triton.heuristics",
    "triton.runtime.autotuner.heuristics": "triton.heuristics",
    "triton.runtime.Config": "triton.Config",
    "triton.runtime.autotuner.Config": "triton.Config",
    "triton.language.core.constexpr": "triton.language.constexpr",
}
JIT = "triton.jit"
AUTOTUNE = "triton.autotune"
HEURISTICS = "triton.heuristics"
_POINTER_FUNCS = {"load", "store", "make_block_ptr", "make_tensor_descriptor", "advance", "atomic_add", "atomic_max",
                  "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor",
                  "prefetch"}


@dataclass
class DiscoverResult:
    kernels: list[KernelInfo] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)

    def kernel(self, name: str) -> KernelInfo | None:
        return next((k for k in self.kernels if k.name == name or k.qualname == name), None)


# ---------------------------------------------------------------- name resolution
class ModuleScope:
    """The module-level names of one file: imports, defs, assignments (read as text)."""

    def __init__(self, path: str, text: str, tree: ast.Module, workspace_root: str | None, depth: int = 0,
                 cache: dict[str, "ModuleScope | None"] | None = None):
        self.path = path
        self.text = text
        self._source: SourceText | None = None
        self.tree = tree
        self.workspace_root = workspace_root
        self.depth = depth
        self.cache = cache if cache is not None else {}
        # local name -> dotted target; "ws:<file>" (a workspace module) or "ws:<file>:<name>" (a name in one)
        self.imports: dict[str, str] = {}
        self.defs: dict[str, ast.FunctionDef] = {}
        self.assigns: dict[str, list[ast.stmt]] = {}
        self._resolving: set[str] = set()
        for stmt in tree.body:
            self._collect(stmt)

    def _collect(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self._import(stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.defs[stmt.name] = stmt  # type: ignore[assignment]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.assigns.setdefault(n.id, []).append(stmt)
        elif isinstance(stmt, ast.Try):
            # `try: import triton / except ImportError: ...` — the first branch is what a working install sees.
            for s in stmt.body:
                self._collect(s)
            for s in [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.defs.setdefault(s.name, s)  # type: ignore[arg-type]
        elif isinstance(stmt, ast.If) and not is_main_guard(stmt):
            for s in stmt.body + stmt.orelse:
                if isinstance(s, (ast.Import, ast.ImportFrom)):
                    self._collect(s)
                elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.defs.setdefault(s.name, s)  # type: ignore[arg-type]
                elif isinstance(s, (ast.If, ast.Try)):
                    self._collect(s)

    def _import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                ws = self._find_workspace_module(a.name, 0)
                if a.asname:
                    self.imports[a.asname] = f"ws:{ws}" if ws else a.name
                else:
                    top = a.name.split(".")[0]
                    ws_top = self._find_workspace_module(top, 0)
                    self.imports.setdefault(top, f"ws:{ws_top}" if ws_top else top)
            return
        module = stmt.module or ""
        ws = self._find_workspace_module(module, stmt.level) if (stmt.level or module) else None
        for a in stmt.names:
            local = a.asname or a.name
            if a.name == "*":
                if module == "triton":
                    for n in ("jit", "autotune", "heuristics", "Config"):
                        self.imports.setdefault(n, f"triton.{n}")
                continue
            if ws:
                sub = self._find_workspace_module(f"{module}.{a.name}" if module else a.name, stmt.level)
                self.imports[local] = f"ws:{sub}" if sub else f"ws:{ws}:{a.name}"
            elif stmt.level:
                self.imports[local] = f"relative:{module}.{a.name}"
            else:
                self.imports[local] = f"{module}.{a.name}"

    def _find_workspace_module(self, dotted: str, level: int) -> str | None:
        """The file of a module in the workspace (relative import, or absolute under the root), else of an installed
        package on sys.path."""
        parts = [p for p in dotted.split(".") if p]
        bases: list[str] = []
        here = os.path.dirname(os.path.abspath(self.path))
        if level:
            base = here
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases.append(base)
        else:
            if not parts or parts[0] in ("triton", "torch", "numpy", "cutlass", "numba", "jax") or \
                    parts[0] in sys.stdlib_module_names:  # `import functools` is never the workspace's
                return None
            bases.append(here)
            if self.workspace_root:
                bases.append(os.path.abspath(self.workspace_root))
            # The folder above this file's top package: what `import pkg.mod` finds when the package is installed
            # (a src/ layout, or a workspace root with no marker file).
            package_root = here
            while os.path.isfile(os.path.join(package_root, "__init__.py")):
                package_root = os.path.dirname(package_root)
            if package_root not in bases:
                bases.append(package_root)
            # Installed packages (`from vllm.triton_utils import triton` with vllm in site-packages): their files are
            # read as text like the workspace's, never imported.
            bases.extend(p for p in sys.path if p and os.path.isdir(p) and p not in bases)
        for base in bases:
            cand = os.path.join(base, *parts)
            for f in (cand + ".py", os.path.join(cand, "__init__.py")):
                if parts and os.path.isfile(f):
                    return f
            if not parts and os.path.isfile(os.path.join(base, "__init__.py")):
                return os.path.join(base, "__init__.py")
        return None

    def _scope_of(self, path: str) -> "ModuleScope | None":
        if self.depth >= MAX_IMPORT_DEPTH:
            return None
        if path not in self.cache:
            self.cache[path] = None  # guards import cycles
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                self.cache[path] = ModuleScope(path, text, parse_module(text), self.workspace_root, self.depth + 1,
                                               self.cache)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                pass
        return self.cache[path]

    def resolve_name(self, name: str) -> str | None:
        if name in self.imports:
            target = self.imports[name]
            if target.startswith("ws:"):
                file, _, attr = target[3:].partition(":")
                if not attr:
                    return target
                scope = self._scope_of(file)
                got = scope.resolve_name(attr) if scope else None
                return got or f"ws:{file}:{attr}"
            return _CANONICAL.get(target, target)
        if name in self.assigns and name not in self._resolving and len(self.assigns[name]) == 1:
            stmt = self.assigns[name][0]
            value = stmt.value
            if value is not None and isinstance(value, (ast.Name, ast.Attribute)):
                self._resolving.add(name)
                try:
                    return self.resolve(value)
                finally:
                    self._resolving.discard(name)
        return None

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name an expression stands for (`tl.constexpr` -> `triton.language.constexpr`), or None."""
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            if base.startswith("ws:") and base.count(":") == 1:
                scope = self._scope_of(base[3:])
                got = scope.resolve_name(node.attr) if scope else None
                return got or f"{base}:{node.attr}"
            dotted = f"{base}.{node.attr}"
            return _CANONICAL.get(dotted, dotted)
        return None

    def segment(self, node: ast.AST) -> str:
        if self._source is None or self._source.text is not self.text:
            self._source = SourceText(self.text)
        return self._source.segment(node) or ""


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

    `target` (and `gpu`, a GPU of its arch: virtual_gpu) is what device queries in config-building code answer
    while autotune configs are evaluated, by `evaluator` (config_eval.shared() when None), with `env` added to the
    environment they read.
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
    lines = text.splitlines()
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
    if _kind(scope, deco) == JIT:
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
    if len(orelse) == 1 and isinstance(orelse[0], ast.If) and scope.text.splitlines()[orelse[0].lineno - 1][
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
        kind = _kind(scope, node.func)
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


def _kind(scope: ModuleScope, deco: ast.expr) -> str | None:
    func = deco.func if isinstance(deco, ast.Call) else deco
    r = scope.resolve(func)
    if r in (JIT, AUTOTUNE, HEURISTICS):
        return r
    return None


def _from_def(scope: ModuleScope, fn: ast.FunctionDef, lines: list[str], evaluation: _Evaluation,
              class_name: str | None = None) -> KernelInfo | None:
    kinds = [_kind(scope, d) for d in fn.decorator_list]
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
        kind = _kind(scope, node.func) if isinstance(node.func, ast.Call) else None
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
    params = _params(scope, fn)
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
            configs = _arg(deco, "configs", 0)
            key = _arg(deco, "key", 1)
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
            values = _arg(deco, "values", 0)
            if isinstance(values, ast.Dict):
                for key_node, val in zip(values.keys, values.values):
                    if isinstance(key_node, ast.Constant) and isinstance(key_node.value, str):
                        k.heuristics[key_node.value] = scope.segment(val)
                        program = config_program(scope, val)
                        if _reads_module(program):
                            k.heuristic_programs[key_node.value] = program


def _returns_value(fn: ast.FunctionDef) -> bool:
    """Whether the function's own body (not nested defs or lambdas) has `return <value>`."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _arg(call: ast.Call, name: str, index: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[index] if len(call.args) > index else None


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


def _params(scope: ModuleScope, fn: ast.FunctionDef) -> list[Param]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults: dict[str, ast.expr] = {}
    for arg, d in zip(positional[len(positional) - len(a.defaults):], a.defaults):
        defaults[arg.arg] = d
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        if d is not None:
            defaults[arg.arg] = d
    pointers = _pointer_params(scope, fn)
    descriptors = _descriptor_params(fn)
    int_pointees = _int_pointee_params(scope, fn, pointers | {n for n in (a.arg for a in positional + a.kwonlyargs)
                                                                if n.lower().endswith("ptr")})
    params = []
    for i, arg in enumerate(positional + a.kwonlyargs):
        ann = scope.segment(arg.annotation) if arg.annotation is not None else None
        p = Param(name=arg.arg, index=i, line=arg.lineno, col=arg.col_offset + 1,
                  end_col=arg.col_offset + 1 + len(arg.arg), annotation=ann)
        if arg.annotation is not None:
            resolved = scope.resolve(arg.annotation) or ""
            p.is_constexpr = resolved.endswith("constexpr") or "constexpr" in (ann or "")
            if not p.is_constexpr and ((ann or "").strip("'\"").startswith("*") or "pointer_type" in (ann or "")):
                p.is_pointer = True
        if arg.arg in defaults:
            node = defaults[arg.arg]
            p.has_default = True
            p.default_text = scope.segment(node)
            p.default_known, p.default = _literal(scope, node)
        if not p.is_constexpr and arg.arg in descriptors and arg.arg not in pointers:
            p.is_descriptor, p.is_pointer = True, False
        if p.is_pointer is None and not p.is_constexpr:
            if arg.arg in pointers or arg.arg.lower().endswith("ptr"):
                p.is_pointer = True
        if p.is_pointer and arg.arg in int_pointees:
            p.pointee = "i32"
        if p.is_pointer and arg.arg in pointers and not arg.arg.lower().endswith("ptr"):
            p.pointer_if = _pointer_guard(scope, fn, arg.arg)
        params.append(p)
    return params


def _literal(scope: ModuleScope, node: ast.expr) -> tuple[bool, Any]:
    """A default's value when it is a literal, `tl.constexpr(<literal>)`, or a module constant bound once to one
    of those (`MODE: tl.constexpr = tl.constexpr(3)`)."""
    if isinstance(node, ast.Name) and len(scope.assigns.get(node.id, [])) == 1:
        value = scope.assigns[node.id][0].value
        return _literal(scope, value) if value is not None and not isinstance(value, ast.Name) else (False, None)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
            (scope.resolve(node.func) or "").endswith("constexpr"):
        node = node.args[0]
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return False, None


_DESCRIPTOR_METHODS = {"load", "store", "gather", "scatter", "atomic_add", "atomic_min", "atomic_max", "atomic_and",
                       "atomic_or", "atomic_xor"}


def _descriptor_params(fn: ast.FunctionDef) -> set[str]:
    """Params whose own methods the kernel calls (`desc.load([off, 0])`): host `TensorDescriptor` arguments, which
    reach the kernel as `tensordesc<dtype[block]>`, not as pointers or ints."""
    param_names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    return {node.func.value.id for node in ast.walk(fn)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _DESCRIPTOR_METHODS and isinstance(node.func.value, ast.Name)
            and node.func.value.id in param_names}


def _pointer_params(scope: ModuleScope, fn: ast.FunctionDef) -> set[str]:
    """Params that flow into the base of tl.load / tl.store / make_block_ptr (through locals and `+`)."""
    param_names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    assigned: dict[str, list[ast.expr]] = {}
    bases: list[ast.expr] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(node.value)
        elif isinstance(node, ast.Call):
            r = scope.resolve(node.func) or ""
            if r.startswith("triton.language.") and r.rsplit(".", 1)[1] in _POINTER_FUNCS:
                base = _arg(node, "pointer", 0) or _arg(node, "base", 0)
                if base is not None:
                    bases.append(base)
    found: set[str] = set()
    seen: set[str] = set()

    def trace(e: ast.expr) -> None:
        if isinstance(e, ast.Name):
            if e.id in param_names:
                found.add(e.id)
            if e.id not in seen:
                seen.add(e.id)
                for v in assigned.get(e.id, []):
                    trace(v)
        elif isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            trace(e.left)
        elif isinstance(e, ast.IfExp):
            trace(e.body)
            trace(e.orelse)
        elif isinstance(e, ast.Call) and e.args and (scope.resolve(e.func) or "").endswith(".advance"):
            trace(e.args[0])

    for b in bases:
        trace(b)
    return found


def _pointer_guard(scope: ModuleScope, fn: ast.FunctionDef, name: str) -> tuple[str, bool] | None:
    """(FLAG, True) when every memory access through `name` sits under `if FLAG:` (False: under its `else:` or
    `if not FLAG:`) for one constexpr FLAG: the parameter is a pointer only in specializations that take that
    branch, and a plain int in the others (`SEQLEN_OFFSETS` as a tensor or a scalar, chosen by a flag)."""
    constexprs = {a.arg for a in fn.args.args + fn.args.kwonlyargs if a.annotation is not None
                  and (scope.resolve(a.annotation) or "").endswith("constexpr")}
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    derived = {name}  # locals computed from the parameter (`base = SEQLEN_OFFSETS + pid`)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                any(isinstance(n, ast.Name) and n.id in derived for n in ast.walk(node.value)):
            derived.add(node.targets[0].id)
    guards: set[tuple[str, bool] | None] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and (scope.resolve(node.func) or "").rsplit(".", 1)[-1] in _POINTER_FUNCS
                and (scope.resolve(node.func) or "").startswith("triton.language.")):
            continue
        base = _arg(node, "pointer", 0) or _arg(node, "base", 0)
        if base is None or not any(isinstance(n, ast.Name) and n.id in derived for n in ast.walk(base)):
            continue
        guard, child, up = None, node, parents.get(id(node))
        while up is not None and up is not fn:
            if isinstance(up, ast.If):
                test, positive = up.test, True
                if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    test, positive = test.operand, False
                if isinstance(test, ast.Name) and test.id in constexprs:
                    guard = (test.id, positive if child in up.body else not positive)
                    break
            child, up = up, parents.get(id(up))
        guards.add(guard)
    if len(guards) == 1:
        return next(iter(guards))
    return None


def _int_pointee_params(scope: ModuleScope, fn: ast.FunctionDef, pointers: set[str]) -> set[str]:
    """Pointer params whose loaded values the kernel uses as integers: as offsets of another access
    (`tl.load(kv_ptr + tl.load(block_table_ptr + i) * stride)`) or as loop bounds (`range(tl.load(cu_ptr + 1))`).
    A torch launch would pass an int tensor there; assuming `*fp32` would make a correct kernel fail to compile."""
    def is_load(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (scope.resolve(node.func) or "") == "triton.language.load"

    def pointer_of(call: ast.Call) -> set[str]:
        base = _arg(call, "pointer", 0)
        return {n.id for n in ast.walk(base) if isinstance(n, ast.Name) and n.id in pointers} if base else set()

    loaded: dict[str, set[str]] = {}  # local name -> pointer params it was loaded from
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
                value = value.func.value  # tl.load(...).to(tl.int64)
            if is_load(value):
                loaded.setdefault(node.targets[0].id, set()).update(pointer_of(value))
    # Values computed from loaded ones carry their origin: `n = tl.load(p + 1) - tl.load(p)`, `m = n * 2`.
    assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign))]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                continue
            origin: set[str] = set()
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Name) and sub.id in loaded and sub.id != targets[0].id:
                    origin |= loaded[sub.id]
                elif is_load(sub):
                    origin |= pointer_of(sub)
            if origin - loaded.get(targets[0].id, set()):
                loaded.setdefault(targets[0].id, set()).update(origin)
                changed = True

    found: set[str] = set()

    def mark_integer_uses(expr: ast.AST, skip: ast.AST | None = None) -> None:
        for sub in ast.walk(expr):
            if sub is skip:
                continue
            if isinstance(sub, ast.Name) and sub.id in loaded:
                found.update(loaded[sub.id])
            elif is_load(sub) and sub is not expr:
                found.update(pointer_of(sub))

    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = scope.resolve(node.func) or (node.func.id if isinstance(node.func, ast.Name) else "")
        if name in ("range", "builtins.range", "triton.language.range", "triton.language.static_range",
                    "triton.language.cdiv", "triton.cdiv"):  # tl.cdiv takes ints only (fp32 is a TypeError)
            for a in node.args:
                mark_integer_uses(a)
                if is_load(a):
                    found.update(pointer_of(a))
        elif name in ("triton.language.load", "triton.language.store", "triton.language.atomic_add"):
            base = _arg(node, "pointer", 0)
            if base is not None:
                mark_integer_uses(base)
            # Storing an explicitly integer value: `tl.store(counts_ptr + e, tl.zeros([E], tl.int32))`.
            value = _arg(node, "value", 1) if name != "triton.language.load" else None
            if value is not None and _is_int_typed(scope, value) and base is not None:
                found.update(n.id for n in ast.walk(base) if isinstance(n, ast.Name) and n.id in pointers)
    return found


_INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _is_int_typed(scope: ModuleScope, expr: ast.expr) -> bool:
    """`tl.zeros(shape, tl.int32)`, `tl.full(shape, 1, dtype=tl.int32)`, `x.to(tl.int64)`: an explicit int dtype."""
    if not isinstance(expr, ast.Call):
        return False
    dtype = next((kw.value for kw in expr.keywords if kw.arg == "dtype"), None)
    name = scope.resolve(expr.func) or ""
    if dtype is None and name in ("triton.language.zeros", "triton.language.full"):
        dtype = expr.args[-1] if len(expr.args) >= (2 if name.endswith("zeros") else 3) else None
    if dtype is None and isinstance(expr.func, ast.Attribute) and expr.func.attr == "to" and expr.args:
        dtype = expr.args[0]
    resolved = scope.resolve(dtype) if dtype is not None else None
    return bool(resolved) and resolved.rsplit(".", 1)[-1] in _INT_DTYPES


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
    lines = scope.text.splitlines()
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


def _reads_module(program: Program) -> bool:
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
    deco = next((d for d in fn.decorator_list if isinstance(d, ast.Call) and _kind(scope, d) == AUTOTUNE), None)
    configs = _arg(deco, "configs", 0) if deco is not None else None
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
    lines = text.splitlines()

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
        for kw in call.keywords:
            if kw.arg and kw.arg != "kwargs":
                src.options[kw.arg] = span(kw.value)
                if isinstance(kw.value, ast.Constant):
                    src.values[kw.arg] = kw.value.value
        out.append(src)
    return out
