"""Source locations and the map from IR lines back to source lines. Pure: no triton, no I/O."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SrcLoc:
    """A place in a source file. `line` is 1-based; `col` is as the IR gives it (MLIR and PTX `.loc`: 1-based,
    0 when unknown)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def decimal(text: str) -> int | None:
    """A line, column or file number of IR text; None for anything else. Bounded: a corrupt file's 10,000-digit
    "number" is no line (and int() refuses it)."""
    return int(text) if text.isdecimal() and len(text) <= 18 else None


_HEX = frozenset("0123456789abcdefABCDEF")


def unescape(text: str, octal: bool = False) -> str:
    """A string as the IR prints it -> the text. MLIR and LLVM IR write every byte outside printable ASCII as
    `\\XX` (two hex digits), PTX and AMDGCN assembly as `\\ooo` (three octal digits); a backslash before any
    other character stands for that character. A non-ASCII path (`/tmp/wörk/k.py`) only matches its file once decoded."""
    if "\\" not in text:
        return text
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if octal and i + 4 <= n and all(d in "01234567" for d in text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            if not octal and i + 3 <= n and text[i + 1] in _HEX and text[i + 2] in _HEX:
                out.append(int(text[i + 1:i + 3], 16))
                i += 3
                continue
            c = text[i + 1]
            i += 1
        out.extend(c.encode("utf-8"))
        i += 1
    return out.decode("utf-8", errors="replace")


def _norm(path: str) -> str:
    return path.replace("\\", "/").rstrip("/")


@functools.lru_cache(maxsize=4096)
def same_file(a: str | None, b: str | None) -> bool:
    """Whether two spellings name the same file. Triton writes absolute paths while a user may give a relative
    one or a bare name (and PTX comments give only the basename), so one path being a suffix of the other at a
    `/` boundary counts as the same file. None matches anything."""
    if not a or not b:
        return True
    a, b = _norm(a), _norm(b)
    if a == b:
        return True
    a = a.removeprefix("./")
    b = b.removeprefix("./")
    if len(a) < len(b):
        a, b = b, a
    return a.endswith("/" + b) or a == b


def pick_frames(frames: list[SrcLoc], kernel_file: str | None) -> tuple[SrcLoc | None, SrcLoc | None]:
    """From an inlining chain (innermost first) pick (outermost frame in the kernel's file, innermost frame in it).

    The outermost user frame is the line the user wrote the call on; the innermost is the helper's own line, kept
    for hovers. With no frame in the kernel's file, both are the outermost frame of the chain (a location inside
    triton itself, which callers filter out by file)."""
    if not frames:
        return None, None
    outer = inner = None
    for f in frames:
        if same_file(f.file, kernel_file):
            if inner is None:
                inner = f
            outer = f
    if outer is None:
        return frames[-1], frames[-1]
    return outer, inner


@dataclass
class LineMap:
    """IR line (1-based) -> source location, for one stage."""

    stage: str
    ir_to_src: dict[int, SrcLoc] = field(default_factory=dict)
    _by_src: dict[int, list[int]] | None = field(default=None, init=False, repr=False, compare=False)

    def _index(self) -> dict[int, list[int]]:
        if self._by_src is None:
            idx: dict[int, list[int]] = {}
            for ir_line in sorted(self.ir_to_src):
                idx.setdefault(self.ir_to_src[ir_line].line, []).append(ir_line)
            self._by_src = idx
        return self._by_src

    def lines_for(self, line: int, file: str | None = None) -> list[int]:
        """IR lines (ascending) that came from source `line` (of `file`, when given)."""
        ir_lines = self._index().get(line, [])
        if file is None:
            return list(ir_lines)
        return [i for i in ir_lines if same_file(self.ir_to_src[i].file, file)]

    def src_lines(self, file: str | None = None) -> set[int]:
        return {loc.line for loc in self.ir_to_src.values() if file is None or same_file(loc.file, file)}

    def ranges_for(self, line: int, file: str | None = None) -> list[tuple[int, int]]:
        """Contiguous runs (first, last) of IR lines from source `line`; a run spans lines with no mapping of
        their own (labels, blank lines) but breaks at a line that maps elsewhere."""
        ranges: list[tuple[int, int]] = []
        for i in self.lines_for(line, file):
            if ranges:
                start, end = ranges[-1]
                gap_ok = all(j not in self.ir_to_src for j in range(end + 1, i))
                if gap_ok:
                    ranges[-1] = (start, i)
                    continue
            ranges.append((i, i))
        return ranges

    def get(self, ir_line: int) -> SrcLoc | None:
        return self.ir_to_src.get(ir_line)
