"""Helpers shared by the rules: anchoring IR locations on the source token, element types, and building findings.

Anchoring: Triton stamps an op with the location of the last AST node its code generator visited, which for a call
is its last positional argument (`tl.load(x_ptr + offsets, mask=mask)` gets the column of `x_ptr + offsets`;
`tl.store(p, x + y)` that of `x + y`). IR columns are Python's 0-based `col_offset`. To land a finding on the
`tl.load` token the rules index the kernel's calls by that "stamp" position.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from ..ir.linemap import same_file
from ..model import Finding, Related, compiled_under, one_line
from ..source import parse_module, split_lines

# ---------------------------------------------------------------- source text



def source_text(ctx) -> str | None:
    """The text the kernel was compiled from (the editor's buffer or the file), carried by the context. Anchors are
    checked against the IR's own positions, so a missing text only costs the finer anchor, never a wrong line."""
    return ctx.source


@dataclass(frozen=True)
class Span:
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int


@dataclass
class CallSite:
    node: ast.Call
    name: str  # the called attribute or name: "load", "store", "dot"
    span: Span  # the callee expression (`tl.load`)
    names: frozenset[str]  # every Name the call's arguments mention (for causes)
    kw: dict[str, ast.expr]
    args: list[ast.expr]


class SourceIndex:
    """Calls of a source file keyed by the position Triton stamps on the ops they create."""

    def __init__(self, text: str, scope: tuple[int, int] | None = None):
        """`scope` (first, last line of a kernel): assignments are read only there and at module level, so that a
        name another kernel of the file also assigns does not leak into this kernel's causes."""
        self.lines = split_lines(text)
        self.by_stamp: dict[tuple[int, int], list[CallSite]] = {}
        self.assigns: dict[str, list[ast.expr]] = {}
        try:
            tree = parse_module(text)
        except (SyntaxError, ValueError):
            return
        module_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self._add_call(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None and (
                    scope is None or id(node) in module_level or scope[0] <= node.lineno <= scope[1]):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.assigns.setdefault(n.id, []).append(node.value)

    def _add_call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        args = [a for a in node.args if not isinstance(a, ast.Starred)]
        if args:
            stamp_node: ast.AST = args[-1]
        elif node.keywords:
            stamp_node = node.keywords[-1]
        else:
            stamp_node = func
        stamp = (stamp_node.lineno, stamp_node.col_offset)
        end_col = func.end_col_offset if func.end_lineno == func.lineno else func.col_offset + len(name)
        span = Span(func.lineno, func.col_offset + 1, func.lineno, (end_col or func.col_offset) + 1)
        names = frozenset(n.id for a in [*node.args, *(k.value for k in node.keywords)] for n in ast.walk(a)
                          if isinstance(n, ast.Name))
        site = CallSite(node, name, span, names, {k.arg: k.value for k in node.keywords if k.arg}, args)
        self.by_stamp.setdefault(stamp, []).append(site)
        # the call's own position too: ops made with no argument visited last (and helpers inlined); and its 1-based
        # column, which is what Triton releases after 3.6 stamp on the ops a call makes
        for pos in ((node.lineno, node.col_offset), (node.lineno, node.col_offset + 1)):
            if pos != stamp and site not in self.by_stamp.get(pos, []):
                self.by_stamp.setdefault(pos, []).append(site)

    def call_at(self, line: int, col: int, names: tuple[str, ...] = ()) -> CallSite | None:
        sites = self.by_stamp.get((line, col), [])
        if names:
            sites = [s for s in sites if s.name in names]
        return sites[0] if len(sites) == 1 or (sites and names) else None

    def token_span(self, line: int, col: int) -> Span:
        """The identifier-ish token at a 0-based column (the IR column), or one character."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        end = col
        while end < len(text) and (text[end].isalnum() or text[end] in "_."):
            end += 1
        return Span(line, col + 1, line, max(end, col + 1) + 1)

    def names_reaching(self, expr_names: frozenset[str], depth: int = 6) -> set[str]:
        """Names an expression depends on, following simple assignments (`mask = offsets < n`)."""
        seen: set[str] = set()
        todo = list(expr_names)
        while todo and depth > 0:
            nxt: list[str] = []
            for n in todo:
                if n in seen:
                    continue
                seen.add(n)
                for value in self.assigns.get(n, []):
                    nxt.extend(m.id for m in ast.walk(value) if isinstance(m, ast.Name))
            todo = nxt
            depth -= 1
        return seen


@lru_cache(maxsize=32)
def _index_for(text: str, scope: tuple[int, int] | None) -> SourceIndex:
    return SourceIndex(text, scope)


def source_index(ctx) -> SourceIndex:
    """The index of the compiled text, its assignments scoped to this kernel (and the module)."""
    k = ctx.kernel
    return _index_for(source_text(ctx) or "", (k.decorator_line, k.end_line))


def anchor(ctx, line: int, col: int, names: tuple[str, ...] = ()) -> tuple[Span, CallSite | None]:
    """Where a finding for an op stamped at (line, IR col) goes: the call's callee when one is found, else the
    token at the IR column (1-based = IR col + 1). The IR column of an indented kernel (under a module-level `if`, a
    static method) is its indent past the file's column (seen with triton 3.6): it is taken back first."""
    col = max(0, col - max(0, ctx.kernel.col - 1))
    idx = source_index(ctx)
    site = idx.call_at(line, col, names)
    if site is not None:
        return site.span, site
    return idx.token_span(line, col), None


def stamped_call(ctx, line: int, col: int, names: tuple[str, ...] = ()) -> CallSite | None:
    """The call whose op Triton stamped at (line, IR col), as `anchor` finds it; None when none is."""
    return anchor(ctx, line, col, names)[1]


def def_span(ctx) -> Span:
    k = ctx.kernel
    return Span(k.def_line, k.col, k.def_line, k.col + 3)


# ---------------------------------------------------------------- types

_DTYPE_BITS = {"f64": 64, "i64": 64, "f32": 32, "i32": 32, "tf32": 32, "f16": 16, "bf16": 16, "i16": 16, "i8": 8,
               "i1": 8, "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8, "f8E4M3B11FNUZ": 8}


def tensor_shape_dtype(type_str: str | None) -> tuple[list[int], str] | None:
    """`tensor<128x64xf16, #blocked>` -> ([128, 64], "f16"); pointers give their pointee:
    `tensor<1024x!tt.ptr<f32>, #blocked>` -> ([1024], "f32"). `!ttg.memdesc<...>` too. None for scalars."""
    if not type_str:
        return None
    t = type_str.strip()
    for head in ("tensor<", "!ttg.memdesc<"):
        if t.startswith(head):
            body = t[len(head):]
            break
    else:
        return None
    depth = 0
    end = len(body)
    for i, c in enumerate(body):
        if c == "<":
            depth += 1
        elif c == ">":
            if depth == 0:
                end = i
                break
            depth -= 1
        elif c == "," and depth == 0:
            end = i
            break
    dims = body[:end].strip()
    parts = dims.split("x")
    shape: list[int] = []
    i = 0
    while i < len(parts) and parts[i].isdigit():
        shape.append(int(parts[i]))
        i += 1
    elem = "x".join(parts[i:])
    if elem.startswith("!tt.ptr<"):
        elem = elem[len("!tt.ptr<"):].rstrip(">")
    return shape, elem


def dtype_bits(dtype: str) -> int | None:
    return _DTYPE_BITS.get(dtype) or (8 if dtype.startswith("f8") else None)


def numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def threads(ctx) -> int:
    warps = int(ctx.spec.options.get("num_warps") or ctx.artifacts.metadata.get("num_warps") or 4)
    return warps * ctx.gpu.warp_size


def in_kernel_file(ctx, loc) -> bool:
    return loc is not None and loc.line > 0 and same_file(loc.file, ctx.kernel.path)


def cuda_arch(ctx) -> int | None:
    """The CUDA arch the spec was compiled for (90 for sm_90), None on AMD: as the run's device took it."""
    return ctx.arch.arch if ctx.arch.is_cuda else None


def ir_path(ctx, stage: str) -> str:
    return ctx.artifacts.paths.get(stage) or ""


def related(ctx, stage: str, ir_line: int, message: str) -> Related:
    return Related(path=ir_path(ctx, stage), line=ir_line, message=message)


def finding(ctx, span: Span, code: str, message: str, *, severity: str = "", data: dict | None = None,
            related_info: list[Related] | None = None, short: str = "") -> Finding:
    """A finding on `span`: `short` (or the head of `message`) is its one-line message; the rule's full account
    `message` and the spec the kernel was compiled under are its first details."""
    head = short or one_line(message)
    return Finding(path=ctx.path, line=span.line, column=span.column, end_line=span.end_line,
                   end_column=span.end_column, code=code, severity=severity, message=head,
                   config=ctx.spec.describe(), related=related_info or [], data=data or {},
                   details=[*([message] if message != head else []), compiled_under(ctx.spec.describe())])

def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
