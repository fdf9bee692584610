"""AMDGCN assembly: `.file` / `.loc` line map and memory instructions with their widths. Pure, linear.

Kinds use the PTX names so checks can share code: ld.global (global_load_*, buffer_load_*), st.global,
ld.shared (ds_read*/ds_load*), st.shared (ds_write*/ds_store*), ld.local / st.local (scratch_*), bar
(s_barrier), mma (v_mfma*, v_wmma*), atom (global/buffer/ds atomics), other.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .linemap import LineMap, SrcLoc, decimal, pick_frames, same_file, unescape
from .ptx import _parse_loc_comment, _quoted

_SUFFIX_BITS = {"byte": 8, "ubyte": 8, "sbyte": 8, "short": 16, "ushort": 16, "sshort": 16, "dword": 32,
                "dwordx2": 64, "dwordx3": 96, "dwordx4": 128, "b8": 8, "u8": 8, "i8": 8, "b16": 16, "u16": 16,
                "i16": 16, "b32": 32, "b64": 64, "b96": 96, "b128": 128}


@dataclass
class GcnInstr:
    ir_line: int
    opcode: str  # "global_load_dwordx4"
    text: str
    loc: SrcLoc | None
    kind: str
    bits: int | None = None  # bits per lane per instruction (ds_read2_b64 reads two: 128)
    func: str = ""
    inner_loc: SrcLoc | None = None


@dataclass
class GcnModule:
    instrs: list[GcnInstr]
    files: dict[int, str]
    linemap: LineMap
    functions: list[str] = field(default_factory=list)


def _classify(op: str) -> str:
    if "atomic" in op:
        return "atom"
    if op.startswith(("global_load", "buffer_load", "flat_load")):
        return "ld.global"
    if op.startswith(("global_store", "buffer_store", "flat_store")):
        return "st.global"
    if op.startswith(("ds_read", "ds_load")):
        return "ld.shared"
    if op.startswith(("ds_write", "ds_store")):
        return "st.shared"
    if op.startswith("scratch_load"):
        return "ld.local"
    if op.startswith("scratch_store"):
        return "st.local"
    if op == "s_barrier" or op.startswith("s_barrier_"):
        return "bar"
    if op.startswith(("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")):
        return "mma"
    return "other"


def _bits(op: str) -> int | None:
    parts = op.split("_")
    bits = None
    for p in parts[2:]:
        if p in _SUFFIX_BITS:
            bits = _SUFFIX_BITS[p]
    if bits is None:
        return None
    if parts[1].startswith(("read2", "write2", "load2", "store2")):
        bits *= 2
    return bits


def parse_amdgcn(text: str, kernel_file: str | None = None) -> GcnModule:
    lines = text.split("\n")
    files: dict[int, str] = {}
    declared: set[str] = set()  # `.type name,@function`: real functions, not metadata labels
    for raw in lines:
        s = raw.strip()
        if s.startswith(".type") and "@function" in s:
            declared.add(s[5:].split(",", 1)[0].strip())
        if s.startswith(".file"):
            parts = s.split(None, 2)
            fno = decimal(parts[1]) if len(parts) >= 3 else None
            if fno is not None:
                q = [unescape(x, octal=True) for x in _quoted(parts[2])]  # "dir" "name" [md5 0x...] or "path"
                if len(q) >= 2:
                    files[fno] = q[1] if q[1].startswith("/") else q[0].rstrip("/") + "/" + q[1]
                elif q:
                    files[fno] = q[0]

    instrs: list[GcnInstr] = []
    linemap = LineMap("amdgcn")
    functions: list[str] = []
    func = ""
    loc = inner = None
    for n, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or s[0] == ";":
            continue
        code, _, comment = s.partition(";")
        code = code.strip()
        if code.startswith(".loc"):
            parts = code.split()
            fno, line_no = (decimal(parts[1]), decimal(parts[2])) if len(parts) >= 4 else (None, None)
            if fno is not None and line_no is not None:
                if line_no == 0:
                    loc = inner = None
                    continue
                path = files.get(fno, parts[1])
                col = decimal(parts[3]) or 0
                frames = [SrcLoc(path, line_no, col)]
                for f, ln, cl in _parse_loc_comment(comment)[1:]:
                    frames.append(SrcLoc(path if same_file(path, f) else f, ln, cl))
                loc, inner = pick_frames(frames, kernel_file)
            continue
        if code.endswith(":"):
            label = code[:-1]
            if label in declared:
                func = label
                functions.append(label)
            continue
        if not code or code[0] in "._" or not raw[:1].isspace():
            continue
        opcode = code.split(None, 1)[0]
        if not opcode[0].isalpha():
            continue
        kind = _classify(opcode)
        bits = _bits(opcode) if kind not in ("other", "bar", "mma") else None
        instrs.append(GcnInstr(n, opcode, code, loc, kind, bits, func, inner))
        if loc is not None:
            linemap.ir_to_src[n] = loc
    return GcnModule(instrs, files, linemap, functions)
