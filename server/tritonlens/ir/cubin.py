"""Local-memory accesses (spill code: `STL` / `LDL`) of a cubin and their source lines, read from the ELF itself.

`nvdisasm` costs about 0.3 s of CPU per cubin whatever its size (its start-up), as long as a whole compile of a small
kernel; a check of a test suite's captures found spills in dozens of specs. The spill rule needs only where the
local loads and stores are, so this reads them without the disassembler:

- the kernel's code section `.text.<kernel>`: 16-byte instructions (sm_70 and later), whose opcode is the low 12
  bits of the first 8 bytes — `STL` is 0x387 and `LDL` 0x983 on every target Triton compiles for (sm_80 … sm_120;
  checked against nvdisasm in tests/test_ir_parsers.py);
- `.debug_line`, the DWARF line program ptxas writes for `-lineinfo` (what `nvdisasm -g` prints as `//## File`).

Anything outside that shape (another ELF class, two code sections, a DWARF version this does not know, an older
architecture) gives None, and the caller disassembles. Pure: no tools, no I/O.
"""
from __future__ import annotations

import struct

from .linemap import SrcLoc

OPCODES = {0x387: "stl", 0x983: "ldl"}  # low 12 bits of the instruction's first word -> kind
MIN_ARCH, MAX_ARCH = 80, 120  # targets whose encodings were checked


def _sections(elf: bytes) -> dict[str, tuple[int, int]] | None:
    """name -> (offset, size) of an ELF64 little-endian file's sections."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shentsize < 64 or not shnum or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        return None
    heads = []
    for k in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + k * shentsize)
        heads.append((name, offset, size))
    str_off, str_size = heads[shstrndx][1], heads[shstrndx][2]
    names = elf[str_off:str_off + str_size]
    out: dict[str, tuple[int, int]] = {}
    for name, offset, size in heads:
        end = names.find(b"\0", name)
        if end < 0 or offset + size > len(elf):
            return None
        out[names[name:end].decode("utf-8", "replace")] = (offset, size)
    return out


def _leb(buf: bytes, i: int, signed: bool = False) -> tuple[int, int]:
    """An (un)signed LEB128 number at `i` -> (value, index after it)."""
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if signed and b & 0x40:
                value -= 1 << shift
            return value, i


def _uleb(buf: bytes, i: int) -> tuple[int, int]:
    return _leb(buf, i)


def _cstr(buf: bytes, i: int) -> tuple[str, int]:
    end = buf.index(b"\0", i)
    return buf[i:end].decode("utf-8", "surrogateescape"), end + 1


def line_rows(debug_line: bytes) -> list[tuple[int, str, int]] | None:
    """(address, file path, line) rows of a DWARF 2-4 line program, in program order (one sequence: the one code
    section). None for a shape this does not read."""
    try:
        return _line_rows(debug_line)
    except (IndexError, ValueError, struct.error):
        return None


def _line_rows(buf: bytes) -> list[tuple[int, str, int]] | None:
    unit_length, version = struct.unpack_from("<IH", buf, 0)
    if unit_length >= 0xFFFFFFF0 or version not in (2, 3, 4) or 4 + unit_length > len(buf):
        return None
    end = 4 + unit_length
    header_length, = struct.unpack_from("<I", buf, 6)
    i = 10
    min_inst = buf[i]
    i += 1
    if version >= 4:
        i += 1  # maximum_operations_per_instruction (VLIW only)
    i += 1  # default_is_stmt
    line_base = struct.unpack_from("<b", buf, i)[0]
    line_range, opcode_base = buf[i + 1], buf[i + 2]
    i += 3
    if not line_range or not opcode_base:
        return None
    std_lengths = list(buf[i:i + opcode_base - 1])
    i += opcode_base - 1
    dirs = [""]
    while buf[i]:
        d, i = _cstr(buf, i)
        dirs.append(d)
    i += 1
    files = [""]
    while buf[i]:
        name, i = _cstr(buf, i)
        d, i = _uleb(buf, i)
        _, i = _uleb(buf, i)  # mtime
        _, i = _uleb(buf, i)  # length
        files.append(name if name.startswith("/") or d >= len(dirs) or not dirs[d] else dirs[d] + "/" + name)
    i = 10 + header_length
    rows: list[tuple[int, str, int]] = []
    address, file, line = 0, 1, 1
    sequences = 0
    while i < end:
        op = buf[i]
        i += 1
        if op >= opcode_base:
            adj = op - opcode_base
            address += (adj // line_range) * min_inst
            line += line_base + adj % line_range
            rows.append((address, files[file] if file < len(files) else "", line))
        elif op == 0:
            size, i = _uleb(buf, i)
            sub = buf[i]
            if sub == 1:  # end_sequence
                sequences += 1
                if sequences > 1:
                    return None  # code in more than one section: addresses need the relocations
                address, file, line = 0, 1, 1
            elif sub == 2:  # set_address: relocated against the code section; 0 is its start
                address = int.from_bytes(buf[i + 1:i + size], "little")
            elif sub == 3:  # define_file
                name, _ = _cstr(buf, i + 1)
                files.append(name)
            i += size
        elif op == 1:  # copy
            rows.append((address, files[file] if file < len(files) else "", line))
        elif op == 2:
            step, i = _uleb(buf, i)
            address += step * min_inst
        elif op == 3:
            step, i = _leb(buf, i, signed=True)
            line += step
        elif op == 4:
            file, i = _uleb(buf, i)
        elif op == 8:  # const_add_pc
            address += ((255 - opcode_base) // line_range) * min_inst
        elif op == 9:  # fixed_advance_pc
            address += struct.unpack_from("<H", buf, i)[0]
            i += 2
        else:  # set_column, negate_stmt, basic_block, prologue/epilogue, isa, or unknown: skip their operands
            for _ in range(std_lengths[op - 1] if op - 1 < len(std_lengths) else 0):
                _, i = _uleb(buf, i)
    return rows


def local_accesses(cubin: bytes, arch: int) -> list[tuple[int, str, SrcLoc | None]] | None:
    """(offset, "stl" | "ldl", source line) of every local store and load in the cubin's one kernel, in code order;
    None when this cubin is not one this reader knows (the caller then disassembles)."""
    if not MIN_ARCH <= arch <= MAX_ARCH:
        return None
    sections = _sections(cubin)
    if sections is None:
        return None
    code = [(name, span) for name, span in sections.items() if name.startswith(".text.")]
    if len(code) != 1:
        return None
    offset, size = code[0][1]
    if size % 16:
        return None
    rows: list[tuple[int, str, int]] = []
    if ".debug_line" in sections:
        lo, n = sections[".debug_line"]
        got = line_rows(cubin[lo:lo + n])
        if got is None:
            return None
        rows = got
    out: list[tuple[int, str, SrcLoc | None]] = []
    r = -1
    for at in range(0, size, 16):
        kind = OPCODES.get(int.from_bytes(cubin[offset + at:offset + at + 2], "little") & 0xFFF)
        if kind is None:
            continue
        while r + 1 < len(rows) and rows[r + 1][0] <= at:  # rows are in address order within the sequence
            r += 1
        loc = SrcLoc(rows[r][1], rows[r][2]) if r >= 0 and rows[r][2] > 0 else None
        out.append((at, kind, loc))
    return out
