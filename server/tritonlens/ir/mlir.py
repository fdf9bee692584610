"""TTIR / TTGIR (MLIR text) parser: ops with resolved source locations, layouts, loop depth.

Pure and linear: every line is scanned once by hand-written scanners (no backtracking regexes). MLIR prints the
`#locN = loc(...)` aliases mostly after the module, so aliases are collected in a first pass and ops in a second.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .linemap import LineMap, SrcLoc, decimal, pick_frames, unescape

LOOP_OPS = ("scf.for", "scf.while", "scf.forall", "scf.parallel")


@dataclass
class MlirOp:
    ir_line: int  # 1-based
    name: str  # "tt.load", "ttg.convert_layout", "scf.for", ...
    text: str  # the line, stripped
    loc: SrcLoc | None  # outermost frame in the kernel's file (the user's line)
    inner_loc: SrcLoc | None = None  # innermost frame in the kernel's file (inside a same-file helper)
    loop_depth: int = 0  # number of enclosing loop regions (scf.for / scf.while)
    results: list[str] = field(default_factory=list)  # "%x_5", "%acc_67:7"
    # The op's text before its trailing loc (and `{`): its types are read from there on first use — few rules look
    # at types, and splitting every op's signature was a third of the parse.
    sig_body: str = field(default="", repr=False, compare=False)
    _types: tuple[list[str], str | None] | None = field(default=None, init=False, repr=False, compare=False)

    def _parsed_types(self) -> tuple[list[str], str | None]:
        if self._types is None:
            operands: list[str] = []
            result = None
            colons = _top_matches(self.sig_body, r"(?<= ):(?= )") if " : " in self.sig_body else []
            if colons:
                operands, result = _types_of(self.sig_body[colons[-1] + 1 :].strip())
            self._types = (operands, result if self.results else None)
        return self._types

    @property
    def operand_types(self) -> list[str]:
        return self._parsed_types()[0]

    @property
    def result_type(self) -> str | None:
        """None when the op has no result."""
        return self._parsed_types()[1]

    def set_types(self, operand_types: list[str], result_type: str | None) -> None:
        self._types = (operand_types, result_type if self.results else None)


@dataclass
class MlirModule:
    ops: list[MlirOp]
    layouts: dict[str, str]  # "#blocked1" -> "#ttg.blocked<{...}>"
    linemap: LineMap
    locs: dict[str, list[SrcLoc]] = field(default_factory=dict)  # "#loc12" -> frames, innermost first

    def ops_named(self, name: str) -> list[MlirOp]:
        return [op for op in self.ops if op.name == name]


# ---------------------------------------------------------------- scanning helpers
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {")", "]", "}", ">"}


_TOP_SCANNERS: dict[str, re.Pattern] = {}


def _top_matches(text: str, want: str) -> list[int]:
    """Start indices of the regex `want` at bracket depth 0 outside strings (`->` is not a bracket). The text is
    walked from one bracket, quote or match to the next — not character by character: TTGIR of a big kernel has
    millions of characters and every op line is scanned a few times."""
    rx = _TOP_SCANNERS.get(want)
    if rx is None:
        rx = _TOP_SCANNERS[want] = re.compile(r"(?P<w>" + want + r')|\\.|"|->|[(\[{<)\]}>]')
    depth = 0
    in_str = False
    out: list[int] = []
    for m in rx.finditer(text):
        tok = m.group(0)
        if in_str:
            if tok == '"':
                in_str = False
            elif m.group("w") is not None and tok.endswith('"'):
                in_str = False
            continue
        if m.group("w") is not None:
            if depth == 0:
                out.append(m.start())
            if tok.endswith(("(", "[", "{", "<")):
                depth += 1
            continue
        if tok == '"':
            in_str = True
        elif tok in _OPEN:
            depth += 1
        elif tok in _CLOSE:
            depth = max(0, depth - 1)
    return out


def split_top(text: str, sep: str) -> list[str]:
    """Split at top-level occurrences of a one-character separator."""
    parts: list[str] = []
    start = 0
    for i in _top_matches(text, re.escape(sep)):
        parts.append(text[start:i].strip())
        start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


_TRAILING_LOC_REF = re.compile(r"[ \t]loc\((#[\w.$-]+)\)$")
_ALIAS_NAME = re.compile(r"#[\w.$-]+")
_PLAIN_FILE_LOC = re.compile(r'"([^"\\]*)":([0-9]{1,18}):([0-9]{1,18})')


def _strip_loc(line: str) -> tuple[str, str | None]:
    """Split `op ... loc(X)` into (`op ...`, `X`), the trailing top-level loc only."""
    m = _TRAILING_LOC_REF.search(line)
    if m is not None:
        # the common `... loc(#loc12)`: nothing can follow it, so it is at the top level (a string or bracket
        # around it would have to close after it)
        return line[: m.start()].rstrip(), m.group(1)
    found = _top_matches(line, r"(?<![^ \t])loc\(")
    if not found:
        return line, None
    pos = found[-1]
    end = line.rfind(")")
    if end < pos:
        return line, None
    return line[:pos].rstrip(), line[pos + 4 : end]


# ---------------------------------------------------------------- locations
_MAX_LOC_DEPTH = 100


class _LocParser:
    """Parses the inside of `loc(...)` into a small tree: ("file", SrcLoc) | ("ref", "#locN") | ("call", a, b) |
    ("fused", [..]) | ("unknown",)."""

    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.depth = 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def peek(self, word: str) -> bool:
        return self.s.startswith(word, self.i)

    def string(self) -> str:
        # at a '"'
        j = self.s.find('"', self.i + 1)
        if j >= 0 and self.s.find("\\", self.i + 1, j) < 0:  # no escapes: the next quote ends it
            raw = self.s[self.i + 1 : j]
            self.i = j + 1
            return raw
        j = self.i + 1
        while j < len(self.s):
            c = self.s[j]
            if c == "\\" and j + 1 < len(self.s):
                j += 2
                continue
            if c == '"':
                break
            j += 1
        raw = self.s[self.i + 1:j]
        self.i = j + 1
        return unescape(raw)

    def number(self) -> int:
        j = self.i
        while j < len(self.s) and self.s[j].isdecimal():
            j += 1
        val = decimal(self.s[self.i : j]) or 0
        self.i = j
        return val

    def skip_balanced(self) -> None:
        """Skip one bracketed group starting at the current char."""
        depth = 0
        while self.i < len(self.s):
            c = self.s[self.i]
            self.i += 1
            if c in "([{<":
                depth += 1
            elif c in ")]}>":
                depth -= 1
                if depth <= 0:
                    return

    def expr(self):
        """One location; nesting deeper than any printer makes (a corrupt or hostile file) gives unknown."""
        if self.depth >= _MAX_LOC_DEPTH:
            self.i = len(self.s)
            return ("unknown",)
        self.depth += 1
        try:
            return self._expr()
        finally:
            self.depth -= 1

    def _expr(self):
        self.ws()
        s = self.s
        if self.i >= len(s):
            return ("unknown",)
        if self.peek("loc("):
            self.i += 4
            node = self.expr()
            self.ws()
            if self.peek(")"):
                self.i += 1
            return node
        if s[self.i] == "#":
            j = self.i + 1
            while j < len(s) and (s[j].isalnum() or s[j] in "_.$-"):
                j += 1
            name = s[self.i : j]
            self.i = j
            return ("ref", name)
        if self.peek("unknown"):
            self.i += 7
            return ("unknown",)
        if self.peek("callsite("):
            self.i += 9
            callee = self.expr()
            self.ws()
            if self.peek("at"):
                self.i += 2
            caller = self.expr()
            self.ws()
            if self.peek(")"):
                self.i += 1
            return ("call", callee, caller)
        if self.peek("fused"):
            self.i += 5
            if self.peek("<"):
                self.skip_balanced()
            kids = []
            if self.peek("["):
                self.i += 1
                while self.i < len(s):
                    self.ws()
                    if self.peek("]"):
                        self.i += 1
                        break
                    if self.peek(","):
                        self.i += 1
                        continue
                    before = self.i
                    kids.append(self.expr())
                    if self.i == before:
                        self.i += 1
            return ("fused", kids)
        if s[self.i] == '"':
            text = self.string()
            if self.peek(":"):  # "file":line:col [to line:col]
                self.i += 1
                line = self.number()
                col = 0
                if self.peek(":"):
                    self.i += 1
                    col = self.number()
                self.ws()
                if self.peek("to"):
                    self.i += 2
                    self.ws()
                    self.number()
                    if self.peek(":"):
                        self.i += 1
                        self.number()
                # line 0 is no source line (a corrupt file; Triton prints loc(unknown) for compiler-made ops)
                return ("file", SrcLoc(text, line, col)) if line > 0 else ("unknown",)
            if self.peek("("):  # named: "x"(child)
                self.i += 1
                child = self.expr()
                self.ws()
                if self.peek(")"):
                    self.i += 1
                return child
            return ("unknown",)
        # anything else (opaque<...>, etc.)
        self.skip_balanced()
        return ("unknown",)


def parse_loc(text: str):
    return _LocParser(text).expr()


class LocResolver:
    """Resolves location trees to inlining chains (innermost first), following `#locN` aliases lazily."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases  # "#loc3" -> raw inside text
        self.memo: dict[str, list[SrcLoc]] = {}
        self.picked: dict[str, tuple[SrcLoc | None, SrcLoc | None]] = {}

    def frames(self, node, depth: int = 0) -> list[SrcLoc]:
        if depth > 200:
            return []
        kind = node[0]
        if kind == "file":
            return [node[1]]
        if kind == "ref":
            return self.ref(node[1], depth)
        if kind == "call":
            return self.frames(node[1], depth + 1) + self.frames(node[2], depth + 1)
        if kind == "fused":
            for kid in node[1]:
                fr = self.frames(kid, depth + 1)
                if fr:
                    return fr
        return []

    def pick(self, loc_text: str, kernel_file: str | None) -> tuple[SrcLoc | None, SrcLoc | None]:
        """(outermost, innermost) frame in the kernel's file of a loc's text, once per distinct text: most ops
        name a `#locN` alias that many other ops share."""
        got = self.picked.get(loc_text)
        if got is None:
            node = ("ref", loc_text) if _ALIAS_NAME.fullmatch(loc_text) else parse_loc(loc_text)
            got = self.picked[loc_text] = pick_frames(self.frames(node), kernel_file)
        return got

    def ref(self, name: str, depth: int = 0) -> list[SrcLoc]:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = []  # cycle guard
        raw = self.aliases.get(name)
        plain = _PLAIN_FILE_LOC.fullmatch(raw) if raw is not None else None
        if plain is not None:  # most aliases: `"/path/k.py":12:5`, read without the general parser
            line = int(plain.group(2))
            fr = [SrcLoc(plain.group(1), line, int(plain.group(3)))] if line > 0 else []
        else:
            fr = self.frames(parse_loc(raw), depth + 1) if raw is not None else []
        self.memo[name] = fr
        return fr


# ---------------------------------------------------------------- types and layouts
def layout_of(type_str: str | None) -> str | None:
    """The encoding of a tensor / memdesc type: `tensor<128x64xf16, #blocked1>` -> `#blocked1`;
    `tensor<128x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>>` -> the `#ttg.dot_op<...>` text."""
    if not type_str:
        return None
    t = type_str.strip()
    lt = t.find("<")
    if lt < 0 or not t.endswith(">"):
        return None
    inner = t[lt + 1 : -1]
    parts = split_top(inner, ",")
    for p in parts[1:]:
        if p.startswith("#"):
            return p
    return None


def layout_kind(layout: str | None, layouts: dict[str, str] | None = None) -> str | None:
    """Classify a layout name or text: blocked, mma, dot_op, slice, linear, shared, or other."""
    if not layout:
        return None
    text = (layouts or {}).get(layout, layout)
    head = text.split("<", 1)[0]
    if "shared" in head:
        return "shared"
    for key, kind in (("dot_op", "dot_op"), ("mma", "mma"), ("mfma", "mma"), ("wmma", "mma"),
                      ("blocked", "blocked"), ("slice", "slice"), ("linear", "linear")):
        if key in head:
            return kind
    # an alias with no definition: guess from its name (#mma1, #shared2, #blocked)
    name = layout.lstrip("#").rstrip("0123456789")
    for key, kind in (("shared", "shared"), ("mma", "mma"), ("dot", "dot_op"), ("blocked", "blocked"),
                      ("linear", "linear"), ("slice", "slice")):
        if name.startswith(key):
            return kind
    return "other"


def blocked_order(layout: str | None, layouts: dict[str, str] | None = None) -> list[int] | None:
    """A blocked layout's `order` (its axes, fastest first): `#ttg.blocked<{..., order = [1, 0]}>` -> [1, 0]; None
    for another layout or one without it."""
    if layout_kind(layout, layouts) != "blocked":
        return None
    m = re.search(r"order\s*=\s*\[([\d,\s]*)\]", (layouts or {}).get(layout or "", layout or ""))
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


@dataclass
class ConvertLayout:
    src: str | None  # "#blocked1", "#mma", or a full inline layout text
    dst: str | None
    src_kind: str | None  # blocked | mma | dot_op | slice | linear | shared | other
    dst_kind: str | None
    special: bool  # either side is a shared / dot_op / mma layout (usually a trip through shared memory)


def convert_layout_info(op: MlirOp, layouts: dict[str, str] | None = None) -> ConvertLayout | None:
    """From -> to layouts of a `ttg.convert_layout` op."""
    if op.name != "ttg.convert_layout":
        return None
    src = layout_of(op.operand_types[0]) if op.operand_types else None
    dst = layout_of(op.result_type)
    sk, dk = layout_kind(src, layouts), layout_kind(dst, layouts)
    special = bool({sk, dk} & {"shared", "dot_op", "mma"})
    return ConvertLayout(src, dst, sk, dk, special)


def _types_of(sig: str) -> tuple[list[str], str | None]:
    """`T1 -> T2`, `(T1, T2) -> T3`, `T1 * T2 -> T3`, `T` -> (operand types, result type)."""
    arrows = _top_matches(sig, "->")
    arrow = arrows[-1] if arrows else -1
    if arrow >= 0:
        left, right = sig[:arrow].strip(), sig[arrow + 2 :].strip()
        if left.startswith("(") and left.endswith(")"):
            left = left[1:-1]
        operands = [t for p in split_top(left, ",") for t in split_top(p, "*")]
        if right.startswith("(") and right.endswith(")"):
            right = right[1:-1]
        outs = split_top(right, ",")
        return operands, (outs[0] if len(outs) == 1 else right) if outs else None
    types = split_top(sig, ",")
    return types, (types[-1] if types else None)


# ---------------------------------------------------------------- the parser
def _op_name(body: str) -> tuple[list[str], str | None, str]:
    """(results, op name, rest after the name) of an op line without its loc."""
    results: list[str] = []
    rest = body
    if body.startswith("%"):
        eq = body.find(" = ")
        if eq < 0:
            return [], None, body
        results = [r.strip() for r in body[:eq].split(",")]
        rest = body[eq + 3 :].lstrip()
    if rest.startswith('"'):
        end = rest.find('"', 1)
        if end < 0:
            return results, None, rest
        return results, rest[1:end], rest[end + 1 :]
    j = 0
    while j < len(rest) and (rest[j].isalnum() or rest[j] in "._"):
        j += 1
    name = rest[:j]
    if "." not in name:
        return results, None, rest
    return results, name, rest[j:]


def _finish_region_op(op: MlirOp, line: str, resolver: LocResolver, kernel_file: str | None,
                      linemap: LineMap) -> None:
    """A region op (scf.for, tt.reduce, tt.func) prints its loc, and for generic ops its types, on the line that
    closes its last region: `} loc(#loc9)`, `}) : (tensor<..>) -> tensor<..> loc(#loc9)`."""
    body, loc_text = _strip_loc(line)
    if op.loc is None and loc_text is not None:
        op.loc, op.inner_loc = resolver.pick(loc_text, kernel_file)
        if op.loc is not None:
            linemap.ir_to_src[op.ir_line] = op.loc
    colon = body.find(" : ")
    if body.startswith("})") and colon >= 0:
        op.set_types(*_types_of(body[colon + 3 :].strip()))


def parse_mlir(text: str, kernel_file: str | None = None) -> MlirModule:
    lines = text.split("\n")
    aliases: dict[str, str] = {}
    layouts: dict[str, str] = {}
    # pass 1: `#name = ...` aliases, wherever they are printed
    for raw in lines:
        if not raw.startswith("#"):
            continue
        eq = raw.find(" = ")
        if eq < 0:
            continue
        name, value = raw[:eq].strip(), raw[eq + 3 :].strip()
        if value.startswith("loc("):
            end = value.rfind(")")
            aliases[name] = value[4:end] if end > 3 else ""
        else:
            layouts[name] = value
    resolver = LocResolver(aliases)

    ops: list[MlirOp] = []
    linemap = LineMap("mlir")
    stack: list[tuple[str, MlirOp | None]] = []  # (op name, op) of the open regions
    loops = 0
    for n, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("//"):
            continue
        if line.startswith("}"):
            closed, owner = stack.pop() if stack else ("", None)
            if closed in LOOP_OPS:
                loops -= 1
            if line.endswith("{"):  # `} else {`, `} do {`: the same op's next region
                stack.append((closed, owner))
                if closed in LOOP_OPS:
                    loops += 1
            elif owner is not None:
                _finish_region_op(owner, line, resolver, kernel_file, linemap)
            continue
        body, loc_text = _strip_loc(line)
        results, name, rest = _op_name(body)
        opens = body.endswith("{") or body.endswith("({")
        if name is None and not line.startswith("module"):
            if opens:
                stack.append(("", None))
            continue
        name = name or "module"
        loc, inner = resolver.pick(loc_text, kernel_file) if loc_text is not None else (None, None)
        op = MlirOp(n, name, line, loc, inner, loops, results, body[:-1].rstrip() if opens else body)
        ops.append(op)
        if loc is not None:
            linemap.ir_to_src[n] = loc
        if opens:
            stack.append((name, op))
            if name in LOOP_OPS:
                loops += 1
    return MlirModule(ops, layouts, linemap, resolver.memo)
