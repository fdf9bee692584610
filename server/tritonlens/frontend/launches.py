"""Launch sites `kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)` in the workspace, read from the AST.

Literal arguments (also through local and module constants and simple arithmetic) become values a spec can use;
an argument the file pins to one of a few literals (`0 if n <= LIMIT else 1`, `min(max(triton.next_power_of_2(K),
16), 64)`) becomes `Choices`, every value it can take and no other; the rest are kept as expression text so a
missing-value finding can show what the launch passes.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from ..source import SourceText, parse_module

_UNKNOWN = object()
MAX_CHOICES = 8  # values one argument may take for a launch site to be compiled for each of them


@dataclass(frozen=True)
class Choices:
    """An argument that can only be one of `values` (in order): all of them, exactly. `sources` are the unknown names
    it is computed from: two arguments computed from a common one are not independent (`n <= LIMIT` and
    `next_power_of_2(n)`), so not every combination of their values is one a launch can pass."""

    values: tuple
    sources: frozenset = field(default=frozenset(), compare=False)

    def independent_of(self, other: "Choices") -> bool:
        return not self.sources & other.sources and "*" not in self.sources | other.sources


@dataclass(frozen=True)
class Typed:
    """An argument whose value the file does not fix but whose type it does: a float the launch computes
    (`1.0 / math.sqrt(d)`, `lr * 0.5`) or passes on (a parameter annotated `float` or defaulting to one) is an `fp32`
    scalar, as Triton types a Python float — never the `i32` a value of unknown type would be taken for."""

    type: str


FP32 = Typed("fp32")
_FLOAT_CALLS = frozenset({"float", "sqrt", "exp", "log", "log2", "log10", "pow", "rsqrt", "fsum"})


@dataclass
class LaunchSite:
    path: str
    line: int
    col: int
    positional: list[tuple[Any, str]] = field(default_factory=list)  # (value, Choices or UNKNOWN, source text)
    keywords: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def bind(self, param_names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
        """(literal values, expression texts of the non-literal ones) keyed by parameter / option name."""
        values: dict[str, Any] = {}
        exprs: dict[str, str] = {}
        pairs = list(zip(param_names, self.positional)) + list(self.keywords.items())
        for name, (value, text) in pairs:
            if value is _UNKNOWN or isinstance(value, Typed):
                exprs[name] = _one_line(text)
            if value is not _UNKNOWN:
                values[name] = value
        return values, exprs

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _one_line(text: str) -> str:
    """An argument written over several lines (with comments, in parentheses) as the one line a message or a hint
    comment can hold."""
    if "\n" not in text:
        return text
    try:
        return ast.unparse(ast.parse(f"(\n{text}\n)", mode="eval"))  # a segment inside parentheses needs them
    except SyntaxError:
        return " ".join(text.split())


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
            tree = parse_module(text)
            found: list[LaunchSite] = []
            _Finder(path, text, short, _constants(tree.body, {}), found, _float_params(tree)).visit(tree)
        except (SyntaxError, ValueError, RecursionError):
            continue  # that file's sites only: one file past the bounds (source.py) turns off no other's
        sites.extend(found)
    return sites


def _float_params(tree: ast.Module) -> dict[str, set[str]]:
    """Per function of the file, the parameters every call of it in the file passes a float (`update_fn(p, g,
    lr=0.01)` in its test): a launch inside it passes them on as fp32 scalars."""
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    seen: dict[str, dict[str, list[bool]]] = {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
        fn = defs.get(call.func.id)
        if fn is None:
            continue
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        passed = {names[i]: a for i, a in enumerate(call.args[:len(names)]) if not isinstance(a, ast.Starred)}
        passed.update({k.arg: k.value for k in call.keywords if k.arg})
        for name in names + [a.arg for a in fn.args.kwonlyargs]:
            seen.setdefault(fn.name, {}).setdefault(name, []).append(
                name in passed and is_float(passed[name], set()))
    return {f: {n for n, flags in params.items() if flags and all(flags)} for f, params in seen.items()}


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, text: str, name: str, module_env: dict[str, Any], out: list[LaunchSite],
                 float_params: dict[str, set[str]] | None = None):
        self.float_params = float_params or {}
        self.path, self.text, self.name, self.out = path, text, name, out
        self.source = SourceText(text)
        self.envs = [module_env]
        self.texts: list[dict[str, str]] = [{}]
        self.aliases: list[set[str]] = [set()]
        self.floats: list[set[str]] = [set()]  # names that hold a Python float here (see Typed)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # A function whose text names neither the kernel nor an alias of it launches nothing: skip its (costly)
        # constant folding — a workspace scan visits every function of every file that mentions the kernel.
        body = "".join(self.source.lines[node.lineno - 1:node.end_lineno or node.lineno])
        if self.name not in body and not any(a in body for scope in self.aliases for a in scope):
            return
        a = node.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | \
            {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        outer = {k: v for k, v in self.envs[-1].items() if k not in params}  # a parameter shadows a module constant
        self.envs.append(_constants(node.body, outer))
        self.texts.append(self._assigned_texts(node.body))
        self.aliases.append(self._aliases(node.body))
        self.floats.append(self._floats(node))
        self.generic_visit(node)
        self.envs.pop()
        self.texts.pop()
        self.aliases.pop()
        self.floats.pop()

    def _floats(self, node: ast.FunctionDef) -> set[str]:
        """Parameters annotated `float` or defaulting to a float literal, and locals assigned a float expression
        (every assignment of them), in this function."""
        a = node.args
        positional = a.posonlyargs + a.args
        defaults = dict(zip([x.arg for x in positional][len(positional) - len(a.defaults):], a.defaults))
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        out = {x.arg for x in positional + a.kwonlyargs
               if (isinstance(x.annotation, ast.Name) and x.annotation.id == "float")
               or (isinstance(defaults.get(x.arg), ast.Constant) and isinstance(defaults[x.arg].value, float))}
        out |= self.float_params.get(node.name, set())
        out |= self.floats[-1] - {x.arg for x in positional + a.kwonlyargs}
        assigned: dict[str, bool] = {}
        for stmt in _statements(node.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                assigned[name] = assigned.get(name, True) and is_float(stmt.value, out)
        return out | {n for n, yes in assigned.items() if yes}

    def _assigned_texts(self, body: list[ast.stmt]) -> dict[str, str]:
        """Single assignments as text: `block = triton.next_power_of_2(n)` -> {"block": "triton.next_power_of_2(n)"};
        one element of an unpacked call: `block, warps = settings(n)` -> {"block": "settings(n)[0]", ...}."""
        texts: dict[str, str] = {}
        twice: set[str] = set()
        for stmt in _statements(body):
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                twice.add(stmt.target.id)  # `d *= 2` after `_, d = x.shape`: x.shape[1] would be a wrong candidate
                continue
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target = stmt.targets[0]
            value = self.source.segment(stmt.value) or ""
            if isinstance(target, ast.Name):
                pairs = [(target.id, value or target.id)]
            elif isinstance(target, (ast.Tuple, ast.List)) and not isinstance(stmt.value, (ast.Tuple, ast.List)):
                pairs = [(t.id, f"{value}[{i}]") for i, t in enumerate(target.elts) if isinstance(t, ast.Name)] \
                    if value and not any(isinstance(t, ast.Starred) for t in target.elts) else []
            elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(stmt.value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(stmt.value.elts):
                pairs = [(t.id, self.source.segment(v) or t.id)
                         for t, v in zip(target.elts, stmt.value.elts) if isinstance(t, ast.Name)]
            else:
                pairs = []
            for name, text in pairs:
                if name in texts:
                    twice.add(name)
                texts[name] = text
        return {k: v for k, v in texts.items() if k not in twice}

    def _aliases(self, body: list[ast.stmt]) -> set[str]:
        """Local names bound to the kernel: `fn = kernel`, `fn = other if c else kernel` (then `fn[grid](...)`)."""
        out = set(self.aliases[-1])
        for stmt in _statements(body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and self._names_kernel(stmt.value, out):
                out.add(stmt.targets[0].id)
        return out

    def _names_kernel(self, node: ast.expr, aliases: set[str]) -> bool:
        if isinstance(node, ast.IfExp):
            return self._names_kernel(node.body, aliases) or self._names_kernel(node.orelse, aliases)
        tail = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return tail == self.name or (isinstance(node, ast.Name) and node.id in aliases)

    def _text(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and node.id in self.texts[-1]:
            return self.texts[-1][node.id]
        return self.source.segment(node) or ""

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _is_kernel(self, target: ast.expr) -> bool:
        """`kernel`, `mod.kernel`, a local alias, or a wrapper call around one of those whose result launches the
        same kernel: `torch.library.wrap_triton(kernel)`, `capture_triton(kernel)`."""
        if isinstance(target, ast.Call) and len(target.args) == 1 and not target.keywords:
            f = target.func
            wrapper = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if wrapper in _WRAPPERS:
                target = target.args[0]
        tail = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) \
            else None
        return tail == self.name or (isinstance(target, ast.Name) and target.id in self.aliases[-1])

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        # kernel[grid](...), or kernel.warmup(..., grid=...) / kernel.run(..., grid=...), which take the same
        # arguments and compile the same specialization (`grid`, `warmup` are theirs, not the kernel's)
        if (isinstance(f, ast.Subscript) and self._is_kernel(f.value)) or \
                (isinstance(f, ast.Attribute) and f.attr in ("warmup", "run") and self._is_kernel(f.value)):
            env = self.envs[-1]
            site = LaunchSite(self.path, node.lineno, node.col_offset + 1)
            for a in node.args:
                if isinstance(a, ast.Starred):
                    break
                site.positional.append((self._value(a, env), self._text(a)))
            for kw in node.keywords:
                if kw.arg and not (isinstance(f, ast.Attribute) and kw.arg in ("grid", "warmup")):
                    site.keywords[kw.arg] = (self._value(kw.value, env), self._text(kw.value))
            self.out.append(site)
        self.generic_visit(node)


    def _value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        value = value_or_choices(node, env)
        return FP32 if value is _UNKNOWN and is_float(node, self.floats[-1]) else value


def _from_torch(node: ast.expr) -> bool:
    """A call reached from `torch` (`torch.rand(...)`, `torch.exp(x).cuda()`): a tensor, never a Python float."""
    seen_call = False
    while isinstance(node, (ast.Call, ast.Attribute)):
        seen_call = seen_call or isinstance(node, ast.Call)
        node = node.func if isinstance(node, ast.Call) else node.value
    return seen_call and isinstance(node, ast.Name) and node.id == "torch"


def is_float(node: ast.expr, floats: set[str]) -> bool:
    """Whether an expression is a Python float whatever its value: a float literal, a name in `floats`, a true
    division, arithmetic with a float, `math.sqrt(...)`, `float(...)` — but not arithmetic on a tensor
    (`torch.rand(M, 4) + 0.5` is a tensor of scales, passed as a pointer)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    if isinstance(node, ast.Name):
        return node.id in floats
    if isinstance(node, ast.BinOp):
        if _from_torch(node.left) or _from_torch(node.right):
            return False
        return isinstance(node.op, ast.Div) or is_float(node.left, floats) or is_float(node.right, floats)
    if isinstance(node, ast.UnaryOp):
        return is_float(node.operand, floats)
    if isinstance(node, ast.IfExp):
        return is_float(node.body, floats) and is_float(node.orelse, floats)
    if isinstance(node, ast.Call):
        if _from_torch(node):
            return False
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name in _FLOAT_CALLS
    return False


_WRAPPERS = frozenset({"wrap_triton", "capture_triton"})


def _constants(body: list[ast.stmt], outer: dict[str, Any]) -> dict[str, Any]:
    """Names assigned exactly once in a block to something that evaluates to a constant (or to `Choices`); the other
    names the block binds map to `_Derived`, what their values depend on."""
    env = dict(outer)
    counts: dict[str, int] = {}
    bound: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
    for stmt in _statements(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            bound.add(name)
            if counts.get(name) == 1:
                value = value_or_choices(stmt.value, env)
                env[name] = value if value is not _UNKNOWN else _Derived(_sources(stmt.value, env))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            bound.add(stmt.target.id)
            if counts.get(stmt.target.id) == 1:
                value = value_or_choices(stmt.value, env)
                env[stmt.target.id] = value if value is not _UNKNOWN else _Derived(_sources(stmt.value, env))
    for name, n in counts.items():
        if n > 1 or name not in bound:  # rebound, or bound by a loop / with / unpacking: not this constant
            env[name] = _ANYTHING
    return env


@dataclass(frozen=True)
class _Derived:
    """A local with no constant value, computed from `sources` (unknown names; "*" for any)."""

    sources: frozenset


_ANYTHING = _Derived(frozenset({"*"}))


def _statements(body: list[ast.stmt]):
    """The statements of a block and of the blocks nested in it (if/for/while/with/try), not of nested defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field_name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field_name, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _statements(handler.body)


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.LShift: lambda a, b: a << b,
           ast.RShift: lambda a, b: a >> b, ast.Div: lambda a, b: a / b}


def evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    """A constant value, or the UNKNOWN marker. Pure: literals, known names, arithmetic, next_power_of_2/cdiv.
    Bounded: a value no launch takes (an int past 64 bits, a string or tuple past a few thousand items) is UNKNOWN,
    so a file's 100,000-digit literal costs nothing more than its parse."""
    value = _evaluate(node, env)
    return _UNKNOWN if _too_big(value) else value


_MAX_BITS, _MAX_ITEMS = 64, 4096


def _too_big(value: Any) -> bool:
    if isinstance(value, int):
        return value.bit_length() > _MAX_BITS
    if isinstance(value, (str, bytes, tuple, list, frozenset, set, dict)):
        return len(value) > _MAX_ITEMS or (isinstance(value, tuple) and any(_too_big(v) for v in value))
    return False


def _evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError):
        pass
    if isinstance(node, ast.Name):
        value = env.get(node.id, _UNKNOWN)
        return _UNKNOWN if isinstance(value, _Derived) else value
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
            return _next_power_of_2(args[0])
        if fname == "cdiv" and len(args) == 2 and args[1]:
            return -(-args[0] // args[1])
        if fname in ("min", "max") and args:
            return (min if fname == "min" else max)(args)
        if fname == "int" and len(args) == 1:
            return args[0]
        if fname == "log2" and len(args) == 1 and args[0] > 0:
            return math.log2(args[0])
    return _UNKNOWN


def _next_power_of_2(n: int) -> int:
    """What `triton.next_power_of_2` returns: 0 for n <= 0 (its bit trick), 1 for 1."""
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


def value_or_choices(node: ast.expr, env: dict[str, Any]) -> Any:
    """`evaluate`'s constant; else `Choices` when the expression can only take a few values (2..MAX_CHOICES);
    else UNKNOWN."""
    value = evaluate(node, env)
    if value is not _UNKNOWN:
        return value
    d = _domain(node, env)
    if d is None or d.unbounded_from is not None or not 1 < len(d.finite) <= MAX_CHOICES:
        return _UNKNOWN
    return Choices(tuple(sorted(d.finite, key=lambda v: (type(v).__name__, v))), _sources(node, env))


def _sources(node: ast.expr, env: dict[str, Any]) -> frozenset:
    """The names an expression reads that hold no constant: what its value depends on (through `Choices` locals)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            value = env.get(n.id, _UNKNOWN)
            if isinstance(value, (Choices, _Derived)):
                out |= value.sources
            elif value is _UNKNOWN:
                out.add(n.id)
    return frozenset(out)


@dataclass(frozen=True)
class _Domain:
    """Every value an expression can take: a finite set, and all powers of two from `unbounded_from` up (what
    `triton.next_power_of_2` of an unknown size gives) when that is not None."""

    finite: frozenset
    unbounded_from: int | None = None

    def __or__(self, other: "_Domain") -> "_Domain | None":
        if self.unbounded_from is not None and other.unbounded_from is not None:
            lo = min(self.unbounded_from, other.unbounded_from)
        else:
            lo = self.unbounded_from if self.unbounded_from is not None else other.unbounded_from
        return _Domain(self.finite | other.finite, lo)


_ANY_POWER_OF_2 = _Domain(frozenset({0}), 1)  # next_power_of_2 of any int: 0 (n <= 0), 1, 2, 4, ...


def _domain(node: ast.expr, env: dict[str, Any]) -> _Domain | None:
    """The values `node` can take, or None when they are not known to be few."""
    value = evaluate(node, env)
    if isinstance(value, Choices):
        return _Domain(frozenset(value.values))
    if value is not _UNKNOWN:
        return _Domain(frozenset([value])) if isinstance(value, (int, float, str, bool, type(None))) else None
    if isinstance(node, ast.IfExp):
        test = evaluate(node.test, env)
        if test is not _UNKNOWN and not isinstance(test, Choices):
            return _domain(node.body if test else node.orelse, env)
        a, b = _domain(node.body, env), _domain(node.orelse, env)
        return a | b if a is not None and b is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS and not isinstance(node.op, ast.Pow):
        a, b = _domain(node.left, env), _domain(node.right, env)
        if a is None or b is None or a.unbounded_from is not None or b.unbounded_from is not None or \
                len(a.finite) * len(b.finite) > MAX_CHOICES ** 2:
            return None
        out = set()
        for x in a.finite:
            for y in b.finite:
                got = evaluate(ast.BinOp(ast.Constant(x), node.op, ast.Constant(y)), {})
                if got is _UNKNOWN:
                    return None
                out.add(got)
        return _Domain(frozenset(out))
    if isinstance(node, ast.Call) and not node.keywords and node.args:
        fname = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id \
            if isinstance(node.func, ast.Name) else ""
        if fname == "next_power_of_2" and len(node.args) == 1:
            d = _domain(node.args[0], env)
            if d is None:
                return _ANY_POWER_OF_2
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in d.finite):
                return None
            return _Domain(frozenset(_next_power_of_2(v) for v in d.finite), d.unbounded_from)
        if fname in ("min", "max") and len(node.args) >= 2:
            domains = [_domain(a, env) for a in node.args]
            if any(d is None for d in domains):
                return None
            out = domains[0]
            for d in domains[1:]:
                out = _clamp(fname, out, d)
                if out is None:
                    return None
            return out
        if fname == "int" and len(node.args) == 1:
            d = _domain(node.args[0], env)
            return d if d is not None and all(isinstance(v, int) for v in d.finite) else None
    return None


def _clamp(fname: str, a: _Domain, b: _Domain) -> _Domain | None:
    """min(a, b) or max(a, b) over every pair of values, with the unbounded powers of two of one side taken
    against each (finite) value of the other."""
    if a.unbounded_from is not None and b.unbounded_from is not None:
        return None
    if b.unbounded_from is not None:
        a, b = b, a
    pick = min if fname == "min" else max
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in a.finite | b.finite)
    if not numbers:
        return None
    out = {pick(x, y) for x in a.finite for y in b.finite}
    lo = a.unbounded_from
    if lo is None:
        return _Domain(frozenset(out))
    rest: int | None = None
    for c in b.finite:
        if fname == "min":  # powers of two up to c stay, every larger one becomes c
            p = lo
            while p <= c:
                out.add(p)
                p *= 2
            out.add(c)
        else:  # powers of two from c up stay (unbounded), every smaller one becomes c
            if lo < c:
                out.add(c)
            first = lo
            while first < c:
                first *= 2
            rest = first if rest is None else min(rest, first)
            if len(out) > MAX_CHOICES:
                return None
    return _Domain(frozenset(out), rest)
