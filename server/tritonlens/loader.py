"""Turn a kernel file into something a worker can import safely.

`moduleExecution = definitions` (the default) builds a dependency-sliced copy of the module: the imports the kernels
need (with their try/except fallbacks), the kernels, their helpers and decorators, and the module-level assignments
they reference. Everything else — `if __name__ == "__main__":`, launches, tests, prints, file reads — is blanked out.
Lines keep their numbers, so Triton's locations point into the user's file.

Pure: no import of triton, no execution. The worker executes the text this module returns.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
from dataclasses import dataclass, field

# Statements that only bind names and whose right-hand side we accept to evaluate at import.
_BINDING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
            ast.AnnAssign, ast.AugAssign)


@dataclass
class Slice:
    text: str  # same number of lines as the source; dropped statements are blank
    kept: list[tuple[int, int]] = field(default_factory=list)  # (first, last) 1-based line ranges kept
    dropped: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, why)
    unresolved: list[str] = field(default_factory=list)  # names the kernels use that nothing at top level binds

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def _first_line(node: ast.stmt) -> int:
    lines = [node.lineno]
    for dec in getattr(node, "decorator_list", []):
        lines.append(dec.lineno)
    return min(lines)


def _defined_names(node: ast.stmt) -> set[str]:
    names: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name == "*":
                names.add("*")
            else:
                names.add((alias.asname or alias.name).split(".")[0])
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    elif isinstance(node, ast.Try):
        for part in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
            for stmt in part:
                names |= _defined_names(stmt)
    elif isinstance(node, ast.If):
        for stmt in node.body + node.orelse:
            names |= _defined_names(stmt)
    return names


def _used_names(node: ast.AST) -> set[str]:
    """Free names a statement reads (over-approximate: any Name in Load context, and decorator/base names)."""
    used: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            used.add(sub.id)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            used.add(sub.target.id)
        elif isinstance(sub, ast.Global):
            used.update(sub.names)
    return used


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__") or (
        isinstance(test, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "__name__" for c in test.comparators))


def _safe_compound(node: ast.stmt) -> bool:
    """A try/if at top level that only binds names (import fallbacks, version switches) — safe to keep whole."""
    if isinstance(node, ast.Try):
        parts = [node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]]
    elif isinstance(node, ast.If) and not _is_main_guard(node):
        parts = [node.body, node.orelse]
    else:
        return False
    for part in parts:
        for stmt in part:
            if isinstance(stmt, (ast.Pass, ast.Expr)) and (
                    isinstance(stmt, ast.Pass) or isinstance(getattr(stmt, "value", None), ast.Constant)):
                continue
            if isinstance(stmt, (ast.Try, ast.If)):
                if not _safe_compound(stmt):
                    return False
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if _has_call(stmt, allow_known=True) is False:
                    continue
                return False
            elif not isinstance(stmt, _BINDING):
                return False
    return True


# Calls that are fine at module level in a kernel file: building kernels, configs and constants.
_ALLOWED_CALLS = {
    "jit", "autotune", "heuristics", "Config", "constexpr", "dtype", "next_power_of_2", "cdiv", "int", "float",
    "bool", "str", "tuple", "list", "dict", "set", "frozenset", "range", "len", "min", "max", "getattr", "namedtuple",
    "pointer_type", "libentry", "partial", "get", "getenv", "lru_cache", "staticmethod", "abs", "round", "zip",
    "enumerate", "sorted", "reversed", "map", "filter", "any", "all", "isinstance", "hasattr", "environ", "join",
    "format", "upper", "lower", "replace", "split", "strip", "items", "keys", "values", "product", "TypeVar",
    "Union", "Optional", "field", "dataclass", "Enum", "IntEnum", "auto", "exp", "log", "log2", "sqrt",
    "int32", "int64", "float16", "float32", "bfloat16", "finfo", "iinfo",
}


def _call_name(call: ast.Call) -> str:
    f = call.func
    while isinstance(f, ast.Call):
        f = f.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def _call_name_of(expr: ast.expr) -> str:
    if isinstance(expr, ast.Call):
        return _call_name(expr)
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return ""


def _body_without_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    return [node.args, *node.body, *([node.returns] if node.returns else [])]


def _has_call(node: ast.AST, allow_known: bool) -> bool | str:
    """False when the statement makes no call we consider unsafe; else the first offending call's name."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = _call_name(sub)
            if allow_known and name in _ALLOWED_CALLS:
                continue
            return name or "call"
    return False


def _local_functions(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def slice_module(text: str, roots: list[str]) -> Slice:
    """Keep what the top-level names in `roots` (kernels) need; blank the rest, keeping line numbers.

    Raises SyntaxError for a file Python cannot parse (the caller reports it as SRC001).
    """
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    local_funcs = _local_functions(tree)

    providers: dict[str, list[int]] = {}
    for i, node in enumerate(tree.body):
        for name in _defined_names(node):
            providers.setdefault(name, []).append(i)

    keep: set[int] = set()
    root_set = set(roots)
    stripped: set[tuple[int, int]] = set()
    why_dropped: dict[int, str] = {}
    need = list(roots)
    seen_names: set[str] = set()
    unresolved: list[str] = []
    star_imports = providers.get("*", [])
    while need:
        name = need.pop()
        if name in seen_names:
            continue
        seen_names.add(name)
        idxs = providers.get(name)
        if not idxs:
            if not hasattr(builtins, name) and name not in _PY_BUILTINS:
                unresolved.append(name)
                for i in star_imports:  # `from x import *` may provide it
                    if i not in keep:
                        keep.add(i)
            continue
        for i in idxs:
            node = tree.body[i]
            if i in keep:
                continue
            if _is_main_guard(node):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                bad = _has_call(node, allow_known=True)
                # An assignment that calls a local function or class is fine if that function is kept too
                # (a config builder); a call into the outside world (torch.cuda..., open(...)) is not run.
                if bad and bad not in local_funcs:
                    why_dropped[i] = f"calls {bad}() at import"
                    continue
            elif isinstance(node, (ast.Try, ast.If)) and not _safe_compound(node):
                why_dropped[i] = "top-level statement with side effects"
                continue
            keep.add(i)
            if name in root_set and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # Only @jit matters for a compile: autotune/heuristics/custom wrappers take their values from the
                # spec, and evaluating them could query a GPU. Their lines are blanked below.
                kept_decos = [d for d in node.decorator_list if _call_name_of(d) == "jit"]
                stripped.update((d.lineno, d.end_lineno or d.lineno) for d in node.decorator_list
                                if d not in kept_decos)
                need.extend(_used_names(ast.Module(body=[*_body_without_decorators(node)], type_ignores=[])))
                for d in kept_decos:
                    need.extend(_used_names(d))
            else:
                need.extend(_used_names(node))

    out = ["\n" if ln.endswith("\n") else "" for ln in lines]
    kept_ranges: list[tuple[int, int]] = []
    # A docstring and `from __future__` imports are harmless and some code relies on the latter.
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            keep.add(i)
    for i in sorted(keep):
        node = tree.body[i]
        first, last = _first_line(node), node.end_lineno or node.lineno
        for ln in range(first - 1, last):
            if ln < len(lines):
                out[ln] = lines[ln]
        kept_ranges.append((first, last))
    for first, last in stripped:
        for ln in range(first - 1, last):
            out[ln] = "\n"
    dropped = []
    for i, node in enumerate(tree.body):
        if i in keep:
            continue
        dropped.append((_first_line(node), node.end_lineno or node.lineno, why_dropped.get(i, "not needed by kernels")))
    return Slice(text="".join(out), kept=kept_ranges, dropped=dropped, unresolved=sorted(set(unresolved)))


_PY_BUILTINS = {"__name__", "__file__", "__doc__", "__spec__", "__package__", "__builtins__", "__loader__"}
