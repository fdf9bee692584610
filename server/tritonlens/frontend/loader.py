"""Turn a kernel file into something a worker can import safely.

`moduleExecution = definitions` (the default) builds a dependency-sliced copy of the module: the imports the kernels
need (with their try/except fallbacks), the kernels, their helpers and decorators, and the module-level assignments
they reference. Everything else — `if __name__ == "__main__":`, launches, tests, prints, file reads — is blanked out.
Lines keep their numbers, so Triton's locations point into the user's file. A kernel defined inside a module-level
`if`/`try` gets a slice in which its own branch is the one that runs (see `slice_module`): its condition is never
evaluated, and another branch's definition of the same name is not in the text.

Pure: no import of triton, no execution. The worker executes the text this module returns.
"""
from __future__ import annotations

import ast
import builtins
import copy
import io
import tokenize
from dataclasses import dataclass, field

from ..source import is_main_guard, parse_module, split_lines

# Statements that only bind names and whose right-hand side we accept to evaluate at import.
_BINDING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
            ast.AnnAssign, ast.AugAssign)


@dataclass
class Slice:
    text: str  # same number of lines as the source; dropped statements are blank
    # Names the kernels use whose only binding was not run, and why:
    # "line 9, not run because it calls get_device_name() at import".
    # A compile that then fails on such a name is explained with this, not left as a bare NameError.
    withheld: dict[str, str] = field(default_factory=dict)
    # Names the kernels use that a binding switch binds (see `is_switch`), and why that is an assumption:
    # "line 29: the condition calls compare_version() at import, which is not run; its first branch that binds took".
    assumed: dict[str, str] = field(default_factory=dict)


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
    """Module-level names a statement reads (over-approximate: any free Name in Load context, decorator and base
    names). A name a function binds (a parameter, an assignment, a loop target, an import in its body) is the
    function's own wherever it appears in it, as Python scopes it: `output = tl.where(...)` inside a kernel does not
    make a module-level `output = ...` a dependency. The condition of a binding switch is not read: it never runs
    (see `is_switch`)."""
    used: set[str] = set()
    _reads(node, used)
    return used


_FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _reads(node: ast.AST, used: set[str]) -> None:
    """Add to `used` the names `node` reads from the scope it sits in; names bound in nested function and
    comprehension scopes are left out, what those scopes read from outside is kept."""
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            used.add(sub.id)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            used.add(sub.target.id)
        elif isinstance(sub, ast.Global):
            used.update(sub.names)
        if isinstance(sub, _FUNCTION_SCOPES):
            args = sub.args
            # Decorators, defaults and annotations are evaluated where the function is defined.
            todo.extend([*getattr(sub, "decorator_list", []), *args.defaults, *(d for d in args.kw_defaults if d)])
            todo.extend(a.annotation for a in _arguments(args) if a.annotation is not None)
            if getattr(sub, "returns", None) is not None:
                todo.append(sub.returns)
            body = sub.body if isinstance(sub.body, list) else [sub.body]
            used |= _free_in_scope(body, {a.arg for a in _arguments(args)})
            continue
        if isinstance(sub, _COMPREHENSIONS):
            first, *rest = sub.generators
            todo.append(first.iter)  # the first iterable is evaluated outside the comprehension
            parts = [first.target, *first.ifs, *rest,
                     *([sub.key, sub.value] if isinstance(sub, ast.DictComp) else [sub.elt])]
            used |= _free_in_scope(parts, set())
            continue
        children = list(ast.iter_child_nodes(sub))
        if isinstance(sub, ast.If) and is_switch(sub):
            children = [c for c in children if c is not sub.test]
        todo.extend(children)


def _arguments(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
            *([args.kwarg] if args.kwarg else [])]


def _free_in_scope(body: list[ast.AST], bound: set[str]) -> set[str]:
    """The names a function (or comprehension) scope reads from outside: what it reads minus what it binds —
    wherever in the scope the binding is, as Python decides locals — except names it declares `global`."""
    reads: set[str] = set()
    declared_global: set[str] = set()
    bound = set(bound)
    for stmt in body:
        _reads(stmt, reads)
        _bindings(stmt, bound, declared_global)
    return (reads - bound) | declared_global


def _bindings(node: ast.AST, bound: set[str], declared_global: set[str]) -> None:
    """Names `node` binds in its own scope (not inside nested functions or comprehensions)."""
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            bound.add(sub.id)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            declared_global.update(sub.names)  # a nonlocal is read from outside too; over-approximate
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in sub.names if a.name != "*")
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            bound.add(sub.name)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            bound.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            bound.add(sub.rest)
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(sub.name)
            continue  # its body is its own scope
        if isinstance(sub, (ast.Lambda, *_COMPREHENSIONS)):
            if isinstance(sub, _COMPREHENSIONS):  # a walrus in a comprehension binds in the enclosing scope
                bound.update(n.target.id for n in ast.walk(sub) if isinstance(n, ast.NamedExpr))
            continue
        todo.extend(ast.iter_child_nodes(sub))


def _walk_skipping_switch_tests(node: ast.AST):
    todo = [node]
    while todo:
        sub = todo.pop()
        yield sub
        children = list(ast.iter_child_nodes(sub))
        if isinstance(sub, ast.If) and is_switch(sub):
            children = [c for c in children if c is not sub.test]
        todo.extend(children)


def is_switch(node: ast.stmt) -> bool:
    """A module-level `if` whose condition makes a call we do not run at import (`compare_version(...)`,
    `is_npu_available()`, `torch.cuda.get_device_capability()`): a *binding switch*. When its branches only bind
    names (checked by `_safe_compound`), the slice keeps it with the condition replaced by
    `__tritonlens_switch__(globals(), LINE)`, which the worker answers by running the branch in a scratch namespace:
    the `if` branch is taken when it binds without an exception, else the `else`/`elif` one — as an import fallback
    chain would. Version-gated imports list the newest API first, so on the installed Triton this binds what a real
    import binds; the names it binds are reported as assumed (`Slice.assumed`)."""
    return (isinstance(node, ast.If) and not is_main_guard(node)
            and bool(_has_call(node.test, allow_known=True)) and _binds_by_import_only(node.body + node.orelse))


def _binds_by_import_only(stmts: list[ast.stmt]) -> bool:
    """Imports, constant assignments and nested if/try of those: what an import fallback chain holds. A switch that
    defines functions (a per-backend helper) is not one: taking its first branch could pick the wrong backend's."""
    for st in stmts:
        if isinstance(st, (ast.Import, ast.ImportFrom, ast.Pass, ast.Expr)):
            continue
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and not _has_call(st, allow_known=True):
            continue
        if isinstance(st, ast.If) and _binds_by_import_only(st.body + st.orelse):
            continue
        if isinstance(st, ast.Try) and _binds_by_import_only(
                st.body + st.orelse + st.finalbody + [x for h in st.handlers for x in h.body]):
            continue
        return False
    return True


def _safe_compound(node: ast.stmt) -> bool:
    """A try/if at top level that only binds names (import fallbacks, version switches) — safe to keep whole. An
    `if` whose condition makes a call is kept as a binding switch (`is_switch`): its condition never runs."""
    if isinstance(node, ast.Try):
        parts = [node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]]
    elif isinstance(node, ast.If) and not is_main_guard(node):
        if _has_call(node.test, allow_known=True) and not is_switch(node):  # `if open("/x").read():` never runs
            return False
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
} | {
    # Device queries: the compile workers answer them as one GPU (the local one, else the virtual GPU: see
    # device.answers), so module constants built from them (`IS_HOPPER = get_device_capability()[0] == 9`, a block
    # list sized by `shared_memory_per_block_optin`) exist as the user's own process would see them. Allocating on
    # the device stays out (torch.empty(..., device="cuda") is no query).
    "get_device_properties", "get_device_capability", "get_device_name", "device_count", "current_device",
    "is_available", "get_current_target", "get_current_device", "get_active_torch_device", "mem_get_info",
    "get_arch_list", "is_bf16_supported", "get_device", "active",
}


def _why_unsafe(node: ast.Try | ast.If) -> str:
    """Why a module-level if/try that binds a needed name is not run, naming the first call that stops it."""
    for sub in _walk_skipping_switch_tests(node):
        if isinstance(sub, ast.If) and not is_main_guard(sub) and not is_switch(sub):
            call = _has_call(sub.test, allow_known=True)
            if call:
                return f"sits under an `if` whose condition calls {call}() at import"
    for sub in _walk_skipping_switch_tests(node):
        if isinstance(sub, ast.stmt) and not isinstance(sub, (ast.Try, ast.If, ast.Import, ast.ImportFrom)):
            call = _has_call(sub, allow_known=True)
            if call:
                return f"sits in a block that calls {call}() at import"
    return "has side effects at import"


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


def _without_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef:
    bare = copy.copy(node)
    bare.decorator_list = []
    return bare


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


def slice_module(text: str, roots: list[str], definitions: list[int] | None = None) -> Slice:
    """Keep what the top-level names in `roots` (kernels) need; blank the rest, keeping line numbers.

    `definitions` are the lines (a kernel's `def` line) of definitions that must exist when the slice is imported, also
    when they sit inside module-level `if`/`try` blocks: every such block around them is rewritten so that the branch
    holding them is the one that runs — `if HAS_TLE:` becomes `if True:` on the same line, the other branches become
    `pass`, a `try:` whose body holds them becomes `if True:` and its handlers `if False:` — so the condition is never
    evaluated and a missing import in that branch is a load error, not a silent switch to the fallback. Inside a
    chosen branch only the statements the kernels need are kept, as at top level. A `try` that alone provides a name
    the kernels need (no handler binds it: `try: import ext as tle / except ImportError: HAS = False`) is kept without
    its fallback for the same reason. Columns of kept lines never change.

    Raises SyntaxError for a file Python cannot parse (the caller reports it as SRC001).
    """
    tree = parse_module(text)
    src = _Source(text)
    choices: dict[int, object] = {}  # id(if/try node) -> key of the branch forced to run
    for line in definitions or []:
        path = _path_to(tree.body, line)
        for node, key in path or []:
            choices.setdefault(id(node), key)
    for _ in range(64):  # a forced `try` can make more names needed; each round forces at least one more
        units: list[ast.stmt] = []
        _collect_units(tree.body, choices, units)
        keep, stripped, why_dropped, needed, force = _walk(units, roots, _local_functions(tree))
        force = [n for n in force if id(n) not in choices]
        if not force:
            break
        for node in force:
            choices[id(node)] = "body"

    kept_ids = {id(units[i]) for i in keep}
    for node in tree.body:  # `from __future__` imports are harmless and some code relies on them
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            kept_ids.add(id(node))
    out = _Emitter(src, choices, kept_ids)
    out.block(tree.body, chosen=True, top=True)
    for first, last in stripped:
        for ln in range(first, last + 1):
            out.blank(ln)
    bound = set().union(*(_defined_names(u) for u in units if id(u) in kept_ids)) if kept_ids else set()
    withheld = {}
    for i, why in why_dropped.items():
        for name in _defined_names(units[i]) & needed:
            if name not in bound:
                withheld[name] = f"line {_first_line(units[i])}, not run because it {why}"
    assumed = {}
    for u in units:
        if id(u) not in kept_ids:
            continue
        for sw in (n for n in _walk_skipping_switch_tests(u) if isinstance(n, ast.If) and is_switch(n)):
            for name in _defined_names(sw) & needed:
                assumed.setdefault(name, f"line {sw.lineno}, an `if` whose condition calls "
                                         f"{_has_call(sw.test, allow_known=True)}() at import: tritonlens does not "
                                         f"run it and took the first branch that imports without error")
    return Slice(text="".join(out.out), withheld=withheld, assumed=assumed)


def _walk(units: list[ast.stmt], roots: list[str], local_funcs: set[str]):
    """The dependency walk: which units the roots need. Also returns the `try` units to force (see slice_module)."""
    providers: dict[str, list[int]] = {}
    for i, node in enumerate(units):
        for name in _defined_names(node):
            providers.setdefault(name, []).append(i)
    keep: set[int] = set()
    root_set = set(roots)
    stripped: set[tuple[int, int]] = set()
    why_dropped: dict[int, str] = {}
    need = list(roots)
    seen_names: set[str] = set()
    force: list[ast.Try] = []
    star_imports = providers.get("*", [])
    while need:
        name = need.pop()
        if name in seen_names:
            continue
        seen_names.add(name)
        idxs = providers.get(name)
        if not idxs:
            if not hasattr(builtins, name) and name not in _PY_BUILTINS:
                for i in star_imports:  # `from x import *` may provide it
                    if i not in keep:
                        keep.add(i)
            continue
        for i in idxs:
            node = units[i]
            if isinstance(node, ast.Try) and _only_try_body_binds(node, name) and node not in force:
                force.append(node)
            if i in keep:
                continue
            if is_main_guard(node):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                bad = _has_call(node, allow_known=True)
                # An assignment that calls a local function or class is fine if that function is kept too
                # (a config builder); a call into the outside world (torch.cuda..., open(...)) is not run.
                if bad and bad not in local_funcs:
                    why_dropped[i] = f"calls {bad}() at import"
                    continue
            elif isinstance(node, (ast.Try, ast.If)) and not _safe_compound(node):
                why_dropped[i] = _why_unsafe(node)
                continue
            keep.add(i)
            if name in root_set and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # Only @jit matters for a compile: autotune/heuristics/custom wrappers take their values from the
                # spec, and evaluating them could query a GPU. Their lines are blanked below.
                kept_decos = [d for d in node.decorator_list if _call_name_of(d) == "jit"]
                stripped.update((d.lineno, d.end_lineno or d.lineno) for d in node.decorator_list
                                if d not in kept_decos)
                need.extend(_used_names(_without_decorators(node)))
                for d in kept_decos:
                    need.extend(_used_names(d))
            else:
                need.extend(_used_names(node))
    return keep, stripped, why_dropped, seen_names, force


# ---------------------------------------------------------------- conditional definitions
def _is_branching(node: ast.stmt) -> bool:
    return isinstance(node, (ast.If, ast.Try)) and not is_main_guard(node)


def _blocks(node: ast.stmt) -> list[tuple[object, list[ast.stmt]]]:
    if isinstance(node, ast.If):
        return [("body", node.body), ("orelse", node.orelse)]
    assert isinstance(node, ast.Try)
    return [("body", node.body), *[(("handler", i), h.body) for i, h in enumerate(node.handlers)],
            ("orelse", node.orelse), ("finalbody", node.finalbody)]


def _runs(node: ast.stmt, key: object) -> set:
    """The blocks of `node` that run when `key` is the branch forced."""
    if isinstance(node, ast.If):
        return {key}
    if key in ("body", "orelse"):
        return {"body", "orelse", "finalbody"}
    return {key, "finalbody"}


def _path_to(stmts: list[ast.stmt], line: int) -> list[tuple[ast.stmt, object]] | None:
    """The if/try branches (outermost first) around the module-level statement spanning `line`; None if none does."""
    for s in stmts:
        if _first_line(s) <= line <= (s.end_lineno or s.lineno):
            if not _is_branching(s):
                return [] if not is_main_guard(s) else None
            for key, block in _blocks(s):
                sub = _path_to(block, line)
                if sub is not None:
                    return [(s, key), *sub]
            return None
    return None


def _collect_units(stmts: list[ast.stmt], choices: dict[int, object], units: list[ast.stmt]) -> None:
    """The statements the dependency walk sees: forced if/try blocks are opened, their other branches vanish."""
    for s in stmts:
        if id(s) in choices:
            runs = _runs(s, choices[id(s)])
            for key, block in _blocks(s):
                if key in runs:
                    _collect_units(block, choices, units)
        else:
            units.append(s)


def _only_try_body_binds(node: ast.Try, name: str) -> bool:
    """`name` is bound by the try body (or its else) and by no handler: without the body it does not exist."""
    if any(name in _defined_names(s) for h in node.handlers for s in h.body):
        return False
    return any(name in _defined_names(s) for s in node.body + node.orelse)


class _Source:
    """The source split as Python counts lines, with its tokens (for keyword positions ast does not record)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text, keepends=True)
        self._tokens: list[tokenize.TokenInfo] | None = None

    def line(self, n: int) -> str:  # 1-based
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def col(self, n: int, byte_col: int) -> int:
        """ast columns are UTF-8 byte offsets; string slicing wants characters."""
        return len(self.line(n).encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def tokens(self) -> list[tokenize.TokenInfo]:
        if self._tokens is None:
            try:
                self._tokens = list(tokenize.generate_tokens(io.StringIO(self.text).readline))
            except (tokenize.TokenError, SyntaxError, IndentationError):
                self._tokens = []
        return self._tokens

    def colon_after(self, pos: tuple[int, int]) -> tuple[int, int]:
        """End (line, char column) of the `:` that ends a compound statement's header, searching from `pos`."""
        depth = 0
        for tok in self.tokens():
            if tok.start < pos or tok.type != tokenize.OP:
                continue
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
            elif tok.string == ":" and depth <= 0:
                return tok.end
        raise SyntaxError("no ':' after a block header")

    def keyword_after(self, word: str, pos: tuple[int, int]) -> tuple[int, int]:
        for tok in self.tokens():
            if tok.start >= pos and tok.type == tokenize.NAME and tok.string == word:
                return tok.start
        raise SyntaxError(f"no `{word}` after line {pos[0]}")


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or ""


class _Emitter:
    """Writes the slice: kept statements verbatim, forced if/try headers rewritten in place, the rest blank."""

    def __init__(self, src: _Source, choices: dict[int, object], kept: set[int]) -> None:
        self.src = src
        self.choices = choices
        self.kept = kept
        self.out = [_eol(ln) for ln in src.lines]

    def blank(self, n: int) -> None:
        if 0 < n <= len(self.out):
            self.out[n - 1] = _eol(self.src.line(n))

    def copy(self, first: int, last: int) -> None:
        for n in range(first, last + 1):
            if 0 < n <= len(self.out):
                self.out[n - 1] = self.src.line(n)

    def end(self, node: ast.AST) -> tuple[int, int]:
        n = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return n, self.src.col(n, node.end_col_offset or 0)  # type: ignore[attr-defined]

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.src.col(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def header(self, start: tuple[int, int], colon_end: tuple[int, int], new: str, block: list[ast.stmt],
               chosen: bool) -> bool:
        """Replace a header (`if X:` ... `:`) by `new`; True when the block shares its line (then handled here)."""
        (l1, c1), (l2, c2) = start, colon_end
        rest = self.src.line(l2)[c2:]
        same_line = bool(block) and _first_line(block[0]) == l2
        if same_line and not chosen:
            rest = " pass" + _eol(rest)
            for n in range(l2 + 1, (block[-1].end_lineno or l2) + 1):
                self.blank(n)
        self.out[l1 - 1] = self.src.line(l1)[:c1] + new + rest
        for n in range(l1 + 1, l2 + 1):
            self.blank(n)
        return same_line

    def block(self, stmts: list[ast.stmt], chosen: bool, top: bool = False) -> None:
        if not stmts:
            return
        first = _first_line(stmts[0])
        last = stmts[-1].end_lineno or first
        if not chosen:
            for n in range(first, last + 1):
                self.blank(n)
            line = self.src.line(first)
            self.out[first - 1] = line[:len(line) - len(line.lstrip())] + "pass" + _eol(line)
            return
        wrote = False
        for s in stmts:
            if id(s) in self.choices:
                self.compound(s)
                wrote = True
            elif id(s) in self.kept:
                self.copy(_first_line(s), s.end_lineno or s.lineno)
                self.switch_headers(s)
                wrote = True
        if not wrote and not top:
            line = self.src.line(first)
            self.out[first - 1] = line[:len(line) - len(line.lstrip())] + "pass" + _eol(line)

    def switch_headers(self, node: ast.stmt) -> None:
        """`if compare_version(...):` -> `if __tritonlens_switch__(globals(), 29):` on the same line (see is_switch)."""
        for sw in _walk_skipping_switch_tests(node):
            if not (isinstance(sw, ast.If) and is_switch(sw)):
                continue
            l, c = self.start(sw)
            kw = "elif" if self.src.line(l)[c:].startswith("elif") else "if"
            self.header((l, c), self.src.colon_after(self.end(sw.test)),
                        f"{kw} __tritonlens_switch__(globals(), {l}):", sw.body, True)

    def compound(self, node: ast.stmt) -> None:
        key = self.choices[id(node)]
        src = self.src
        if isinstance(node, ast.If):
            l, c = self.start(node)
            kw = "elif" if src.line(l)[c:].startswith("elif") else "if"
            body_runs = key == "body"
            if not self.header((l, c), src.colon_after(self.end(node.test)), f"{kw} {body_runs}:", node.body,
                               body_runs):
                self.block(node.body, body_runs)
            if not node.orelse:
                return
            first = node.orelse[0]
            is_elif = (isinstance(first, ast.If) and len(node.orelse) == 1
                       and src.line(first.lineno)[src.col(first.lineno, first.col_offset):].startswith("elif"))
            else_line = first.lineno if is_elif else src.keyword_after("else", self.end(node.body[-1]))[0]
            if body_runs:  # the else/elif chain goes away
                for n in range(else_line, (node.end_lineno or else_line) + 1):
                    self.blank(n)
            elif is_elif:
                self.block(node.orelse, True)
            else:
                self.copy(else_line, else_line)
                self.block(node.orelse, True)
            return
        assert isinstance(node, ast.Try)
        runs = _runs(node, key)
        body_runs = "body" in runs
        try_start = self.start(node)
        if not self.header(try_start, src.colon_after(try_start), f"if {body_runs}:", node.body, body_runs):
            self.block(node.body, body_runs)
        prev = node.body[-1]
        for i, h in enumerate(node.handlers):
            chosen = ("handler", i) in runs
            after = self.end(h.type) if h.type is not None else self.start(h)
            if not self.header(self.start(h), src.colon_after(after), f"if {chosen}:", h.body, chosen):
                self.block(h.body, chosen)
            prev = h.body[-1]
        if node.orelse:
            else_line = src.keyword_after("else", self.end(prev))[0]
            if "orelse" in runs:  # `else:` now follows the last handler's `if False:`, so it runs
                self.copy(else_line, else_line)
                self.block(node.orelse, True)
            else:
                for n in range(else_line, (node.orelse[-1].end_lineno or else_line) + 1):
                    self.blank(n)
            prev = node.orelse[-1]
        if node.finalbody:
            at = src.keyword_after("finally", self.end(prev))
            if not self.header(at, src.colon_after(at), "if True:", node.finalbody, True):
                self.block(node.finalbody, True)


_PY_BUILTINS = {"__name__", "__file__", "__doc__", "__spec__", "__package__", "__builtins__", "__loader__"}
