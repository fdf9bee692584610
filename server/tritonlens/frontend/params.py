"""Parameter types of a kernel inferred from its body: which parameters are pointers (loaded, stored, offset), which
pointers hold integers, which are tensor descriptors — the types a spec assumes when no capture or hint says."""
from __future__ import annotations

import ast
from typing import Any

from ..model import Param
from .scope import ModuleScope, call_arg


_POINTER_FUNCS = {"load", "store", "make_block_ptr", "make_tensor_descriptor", "advance", "atomic_add", "atomic_max",
                  "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor",
                  "prefetch"}


def infer_params(scope: ModuleScope, fn: ast.FunctionDef) -> list[Param]:
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


def _pointer_params(scope: ModuleScope, fn: ast.FunctionDef, depth: int = 3) -> set[str]:
    """Params that flow into the base of tl.load / tl.store / make_block_ptr (through locals and `+`), here or in a
    `@jit` helper of the module they are passed to (`_token_request(query_start_loc, ...)`, which loads from it)."""
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
                base = call_arg(node, "pointer", 0) or call_arg(node, "base", 0)
                if base is not None:
                    bases.append(base)
            elif depth > 0 and isinstance(node.func, ast.Name) and node.func.id in scope.defs \
                    and scope.defs[node.func.id] is not fn:
                helper = scope.defs[node.func.id]
                names = [a.arg for a in helper.args.posonlyargs + helper.args.args + helper.args.kwonlyargs]
                passed = dict(zip(names, node.args))
                passed.update({k.arg: k.value for k in node.keywords if k.arg})
                for name in _pointer_params(scope, helper, depth - 1) & set(passed):
                    bases.append(passed[name])
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
        base = call_arg(node, "pointer", 0) or call_arg(node, "base", 0)
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
        base = call_arg(call, "pointer", 0)
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
            base = call_arg(node, "pointer", 0)
            if base is not None:
                mark_integer_uses(base)
            # Storing an explicitly integer value: `tl.store(counts_ptr + e, tl.zeros([E], tl.int32))`.
            value = call_arg(node, "value", 1) if name != "triton.language.load" else None
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
