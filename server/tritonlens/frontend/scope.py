"""A module's names, resolved from its text alone: what each top-level name is bound to (imports, assignments,
definitions, `if`/`try` branches), so the front end can tell `triton.jit` from a local `jit` without running
anything."""
from __future__ import annotations

import ast
import os
import sys

from ..source import SourceText, is_main_guard, parse_module, read_source


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
                text, _ = read_source(path)  # bounded (source.MAX_SOURCE_BYTES): a larger helper is not read
                if text is None:
                    return None
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


def decorator_kind(scope: ModuleScope, deco: ast.expr) -> str | None:
    func = deco.func if isinstance(deco, ast.Call) else deco
    r = scope.resolve(func)
    if r in (JIT, AUTOTUNE, HEURISTICS):
        return r
    return None


def call_arg(call: ast.Call, name: str, index: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[index] if len(call.args) > index else None
