"""PTX parser: instructions (with inline-asm bodies) mapped to source lines through `.loc` / `.file`.

`.file` directives come after the code (in the debug section), so `.loc` file numbers are resolved in a second
pass. Triton 3.6's `.loc` carries no `inlined_at`; LLVM writes the inlining chain only in the trailing comment
(`// helpers.py:8:43 @[ helpers.py:19:31 @[ helpers.py:26:37 ] ]`), so the chain is read from there (basenames
only) to pick the outermost frame in the kernel's file. Linear: one scan, no regexes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .linemap import LineMap, SrcLoc, decimal, pick_frames, same_file, unescape

_TYPE_BITS = {"8": 8, "16": 16, "32": 32, "64": 64, "128": 128}


@dataclass(slots=True)
class PtxInstr:
    ir_line: int  # 1-based line in the PTX text
    opcode: str  # full dotted opcode: "ld.global.v4.b32"
    text: str  # the statement, stripped, without `;`
    loc: SrcLoc | None  # outermost frame in the kernel's file
    kind: str  # ld.global st.global cp.async ld.shared st.shared ld.local st.local bar mma wgmma atom red other
    bits: int | None = None  # bits moved per thread by one memory access (ld.global.v4.b32 -> 128)
    vec: int = 1  # vector width (.v2/.v4/.v8)
    qualifiers: tuple[str, ...] = ()  # the opcode's dotted parts after the first
    func: str = ""  # the .entry / .func whose body holds the instruction
    is_entry: bool = True  # False inside a `.func` (libdevice, helpers not inlined)
    predicated: bool = False
    inline_asm: bool = False  # inside `// begin inline asm` ... `// end inline asm`
    inner_loc: SrcLoc | None = None  # innermost frame in the kernel's file (inside an inlined helper)
    guard: str = ""  # the predicate of a predicated instruction (`%p1`, `!%p2`)

    @property
    def likely_library(self) -> bool:
        """Code that is not one of Triton's own tensor accesses: the body of a `.func`, or a global access
        outside inline asm. Triton 3.6 emits every tl.load/tl.store as inline asm, while libdevice (sin/cos
        range reduction tables, `ld.global.nc.b32`) is inlined into the entry as plain PTX."""
        return not self.is_entry or (self.kind in ("ld.global", "st.global") and not self.inline_asm)


@dataclass
class PtxModule:
    instrs: list[PtxInstr]
    files: dict[int, str]  # .file number -> path
    linemap: LineMap
    entries: list[str] = field(default_factory=list)  # kernel entry names
    funcs: list[str] = field(default_factory=list)  # non-entry function names
    labels: dict[str, int] = field(default_factory=dict)  # branch label -> its PTX line

    def kernel_instrs(self) -> list[PtxInstr]:
        return [i for i in self.instrs if i.is_entry]

    def looped_lines(self) -> set[int]:
        """Source lines of the entry's instructions inside a loop of the PTX (between a label and a branch back to
        it). A loop of the IR that LLVM unrolled (a constant trip count: `tl.static_range`, a two-trip `tl.range`)
        has no loop left here: its copies are all in the PTX, each run once."""
        regions = []
        for i in self.instrs:
            if i.opcode.startswith("bra"):
                start = self.labels.get(i.text.split()[-1])
                if start is not None and start <= i.ir_line:
                    regions.append((start, i.ir_line))
        return {i.loc.line for i in self.kernel_instrs()
                if i.loc is not None and any(a <= i.ir_line <= b for a, b in regions)} if regions else set()


def _classify(parts: list[str]) -> str:
    op = parts[0]
    quals = parts[1:]
    if op in ("ld", "st"):
        space = next((q for q in quals if q in ("global", "shared", "local", "param", "const")
                      or q.startswith("shared::") or q.startswith("global")), None)
        if space is None:
            return "other"  # generic addressing: unknown space
        if space.startswith("shared"):
            space = "shared"
        if space in ("global", "shared", "local"):
            return f"{op}.{space}"
        return "other"
    if op == "cp" and quals and quals[0].startswith("async"):
        return "cp.async"
    if op == "ldmatrix":
        return "ld.shared"
    if op == "stmatrix":
        return "st.shared"
    if op in ("bar", "barrier"):
        return "bar"
    if op == "mma":
        return "mma"
    if op == "wgmma":
        return "wgmma"
    if op == "atom":
        return "atom"
    if op == "red":
        return "red"
    return "other"


def access_width(parts: list[str], operands: str) -> tuple[int | None, int]:
    """(bits per access, vector width) of a memory instruction's dotted parts."""
    vec = 1
    elem = None
    for q in parts[1:]:
        if len(q) >= 2 and q[0] == "v" and (decimal(q[1:]) or 0) > 0:
            vec = decimal(q[1:]) or 1
        elif len(q) >= 2 and q[0] in "bsuf" and q[1:] in _TYPE_BITS and q not in ("f16x2",):
            elem = _TYPE_BITS[q[1:]]
        elif q in ("f16x2", "bf16x2"):
            elem = 32
        elif len(q) >= 2 and q[0] == "x" and (decimal(q[1:]) or 0) > 0 and parts[0] in ("ldmatrix", "stmatrix"):
            vec = decimal(q[1:]) or 1
    if parts[0] in ("ldmatrix", "stmatrix"):
        # each 8x8 b16 matrix gives every lane one 32-bit register
        return 32 * vec, vec
    if parts[0] == "cp" and len(parts) > 1 and parts[1] == "async":
        # cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}: cp-size in bytes
        ops = [o.strip() for o in operands.split(",")]
        size = _int(ops[2]) if len(ops) >= 3 else None
        return (size * 8 if size is not None else None), 1
    if elem is None:
        return None, vec
    return elem * vec, vec


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _parse_loc_comment(comment: str) -> list[tuple[str, int, int]]:
    """`helpers.py:8:43 @[ helpers.py:19:31 @[ helpers.py:26:37 ] ]` -> [(file, line, col), ...] innermost
    first."""
    frames = []
    for tok in comment.replace("@[", " ").replace("]", " ").split():
        bits = tok.rsplit(":", 2)
        line, col = (decimal(bits[1]), decimal(bits[2])) if len(bits) == 3 else (None, None)
        if line and col is not None:
            frames.append((bits[0], line, col))
    return frames


def _quoted(text: str) -> list[str]:
    out = []
    i = 0
    while True:
        a = text.find('"', i)
        if a < 0:
            return out
        b = text.find('"', a + 1)
        if b < 0:
            return out
        out.append(text[a + 1 : b])
        i = b + 1


def _func_name(header: str, keyword: str) -> str:
    rest = header.split(keyword, 1)[1].lstrip()
    if rest.startswith("("):  # .func (.param .b32 retval) name(
        depth = 0
        for i, c in enumerate(rest):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    rest = rest[i + 1 :].lstrip()
                    break
    end = 0
    while end < len(rest) and (rest[end].isalnum() or rest[end] in "_$.%"):
        end += 1
    return rest[:end]


_OPCODES: dict[str, tuple[tuple[str, ...], str, int | None, int]] = {}  # opcode -> (parts, kind, bits, vec)


def _opcode_info(opcode: str, operands: str) -> tuple[tuple[str, ...], str, int | None, int]:
    """Parts, kind and access width of a dotted opcode, once per distinct opcode (a PTX file has a few hundred
    distinct opcodes among thousands of instructions); cp.async's width is in its operands, so it is not kept."""
    got = _OPCODES.get(opcode)
    if got is not None:
        return got
    parts = opcode.split(".")
    kind = _classify(parts)
    bits, vec = (None, 1)
    if kind not in ("other", "bar", "mma", "wgmma"):
        bits, vec = access_width(parts, operands.strip())
    got = (tuple(parts), kind, bits, vec)
    if kind != "cp.async" and len(_OPCODES) < 4096:
        _OPCODES[opcode] = got
    return got


def parse_ptx(text: str, kernel_file: str | None = None) -> PtxModule:
    lines = text.split("\n")
    files: dict[int, str] = {}
    for raw in lines:  # pass 1: .file directives (printed after the code)
        if ".file" not in raw:
            continue
        s = raw.strip()
        if s.startswith(".file"):
            parts = s.split(None, 2)
            fno = decimal(parts[1]) if len(parts) >= 3 else None
            if fno is not None:
                q = [unescape(x, octal=True) for x in _quoted(parts[2])]
                if len(q) >= 2 and q[1] and not q[1].startswith("/"):
                    files[fno] = q[0].rstrip("/") + "/" + q[1]
                elif q:
                    files[fno] = q[-1] if len(q) >= 2 and q[1].startswith("/") else q[0]

    instrs: list[PtxInstr] = []
    linemap = LineMap("ptx")
    entries: list[str] = []
    funcs: list[str] = []
    labels: dict[str, int] = {}
    depth = 0
    pending: tuple[str, bool] | None = None
    func, is_entry = "", True
    loc: SrcLoc | None = None
    inner: SrcLoc | None = None
    in_asm = False
    loc_lines: dict[str, tuple[SrcLoc | None, SrcLoc | None]] = {}  # a `.loc` line -> its frames (lines repeat)
    for n, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s:
            continue
        if depth > 0 and s[-1] == ";" and s.count(";") == 1 and s[0] not in "./${}" and "//" not in s \
                and "{" not in s and "}" not in s:
            stmts: "list[str] | tuple[str]" = (s[:-1],)  # one plain instruction: most lines of a kernel
        else:
            if (depth > 0 and s[0] == "." and not s.startswith(".loc") and "{" not in s and "}" not in s
                    and s.find(";") in (-1, len(s) - 1)):
                continue  # one directive (`.reg ...;`, the debug sections' `.b8 ...`): no instruction, no depth change
            code, _, comment = s.partition("//")
            code = code.strip()
            if not code:
                c = comment.strip()
                if c.startswith("begin inline asm"):
                    in_asm = True
                elif c.startswith("end inline asm"):
                    in_asm = False
                continue
            if code.startswith(".loc"):
                known = loc_lines.get(s)
                if known is not None:
                    loc, inner = known
                    continue
                parts = code.split()
                fno = decimal(parts[1]) if len(parts) >= 4 else None
                if fno is not None:
                    line_no = decimal(parts[2]) or 0
                    col = decimal(parts[3].rstrip(",")) or 0
                    path = files.get(fno, str(fno))
                    if line_no == 0:  # line 0: compiler-made code with no source line
                        loc = inner = None
                        loc_lines[s] = (None, None)
                        continue
                    frames = [SrcLoc(path, line_no, col)]
                    chain = _parse_loc_comment(comment)
                    for f, ln, cl in chain[1:]:
                        # the comment gives basenames: keep the full path when it names the same file
                        frames.append(SrcLoc(path if same_file(path, f) else f, ln, cl))
                    loc, inner = pick_frames(frames, kernel_file)
                    loc_lines[s] = (loc, inner)
                continue
            if depth == 0:
                if ".entry" in code.split("(", 1)[0].split():
                    pending = (_func_name(code, ".entry"), True)
                elif ".func" in code.split("(", 1)[0].split() or code.startswith(".func"):
                    pending = (_func_name(code, ".func"), False)
            opens, closes = code.count("{"), code.count("}")
            if depth == 0 and opens > closes and pending is not None:
                func, is_entry = pending
                (entries if is_entry else funcs).append(func)
                pending = None
            if depth == 0 and code.endswith(";") and pending is not None and opens == 0:
                pending = None  # a prototype (.extern .func ...;)
            depth += opens - closes
            if depth <= 0:
                depth = 0
                if closes and func:
                    func, is_entry, loc, inner = "", True, None, None
            if depth == 0:
                continue
            stmts = code.split(";")
        for stmt in stmts:
            stmt = stmt.strip().lstrip("{}").strip()
            if stmt.startswith("$") and stmt.endswith(":"):
                labels.setdefault(stmt[:-1], n)
            if not stmt or stmt[0] in ".$}" or stmt.endswith(":"):
                continue
            predicated = stmt.startswith("@")
            guard = ""
            if predicated:
                sp = stmt.find(" ")
                if sp < 0:
                    continue
                guard = stmt[1:sp]
                stmt = stmt[sp + 1 :].lstrip()
            opcode, _, operands = stmt.partition(" ")
            if not opcode or not opcode[0].isalpha():
                continue
            parts, kind, bits, vec = _opcode_info(opcode, operands)
            instrs.append(PtxInstr(n, opcode, stmt, loc, kind, bits, vec, parts[1:], func, is_entry,
                                   predicated, in_asm, inner, guard))
            if loc is not None:
                linemap.ir_to_src[n] = loc
    return PtxModule(instrs, files, linemap, entries, funcs, labels)
