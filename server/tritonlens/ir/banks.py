"""Shared-memory bank conflicts, read from the PTX: for every `ld.shared` / `st.shared` of a kernel's entry, the
wavefronts one warp's execution of it takes — the 32 lanes' addresses evaluated from the instructions that compute
them (`%tid.x` is the lane; a Triton kernel computes its shared-memory addresses from it and constants, in
straight-line code), then spread over the 32 four-byte banks. A cross-warp reduction that stores each lane's partial
16 words apart takes 16 wavefronts a store where a contiguous one takes one: the memory-I/O pipe's time
(checks/costmodel.py, `mio_us`) is its wavefronts, not its instructions.

An address this reader cannot evaluate (it depends on a loaded value, a register written twice, an opcode it does not
know) counts as one wavefront, the fewest an access takes. Pure: no GPU, no triton import."""
from __future__ import annotations

import re
from typing import Iterable

LANES = 32
BANKS = 32  # four-byte banks
_MASK = (1 << 64) - 1
_SPECIAL = {"%tid.x": tuple(range(LANES)), "%laneid": tuple(range(LANES))}
_UNIFORM = re.compile(r"^%(?:tid\.[yz]|ntid\.[xyz]|ctaid\.[xyz]|nctaid\.[xyz]|warpid|smid|nsmid)$")
_ADDRESS = re.compile(r"\[\s*([%\w$.]+)\s*(?:\+\s*(-?(?:0x[0-9a-fA-F]+|\d+)))?\s*\]")
_SETP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
         "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
         "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}
Lanes = tuple[int, ...]


def shared_wavefronts(instrs: Iterable) -> dict[int, int]:
    """{PTX line (`PtxInstr.ir_line`): wavefronts one warp's execution takes} for each shared-memory load and store
    of the entry functions in `instrs` (ir.ptx.PtxInstr)."""
    instrs = [i for i in instrs if i.is_entry]
    defs: dict[str, tuple[str, list[str]] | None] = {}
    for i in instrs:
        dest, ops = _operands(i.text)
        if dest is None or dest.startswith("{") or i.kind in ("ld.shared", "ld.global", "ld.local"):
            continue
        defs[dest] = None if dest in defs else (i.opcode, ops)  # written twice: not a value this reader follows
    ev = _Evaluator(defs)
    out: dict[int, int] = {}
    for i in instrs:
        if i.kind not in ("ld.shared", "st.shared"):
            continue
        width = max(1, (i.bits or 32) // 8)
        m = _ADDRESS.search(i.text)
        addr = None
        if m:
            base = ev.value(m.group(1))
            off = int(m.group(2), 0) if m.group(2) else 0
            addr = None if base is None else tuple(a + off for a in base)
        active = ev.active(i.guard)
        out[i.ir_line] = wavefronts(addr, width, active)
    return out


def wavefronts(addr: Lanes | None, width: int, active: tuple[bool, ...] | None = None) -> int:
    """Wavefronts of one warp-wide shared access of `width` bytes a lane at the lanes' byte addresses `addr`. A
    wavefront serves one word of each of the 32 banks: a bank holding k distinct words of the request takes k
    wavefronts, and lanes reading one word share it (a broadcast), whatever the width. An address not known (None)
    counts as one wavefront, the fewest any access takes (an FMA matmul's operand loads, whose addresses follow the
    K loop, are broadcasts): a part of the cost that bounds the time only where it is known."""
    if addr is None:
        return 1
    words: dict[int, set] = {}
    for lane in range(LANES):
        if active is not None and not active[lane]:
            continue
        first = addr[lane] // 4
        for w in range(first, first + max(1, width // 4)):
            words.setdefault(w % BANKS, set()).add(w)
    return max(1, max((len(ws) for ws in words.values()), default=1))


class _Evaluator:
    """The 32 lanes' values of the registers of warp 0, from their single definitions; None where unknown."""

    def __init__(self, defs: dict[str, tuple[str, list[str]] | None]):
        self.defs = defs
        self.memo: dict[str, Lanes | None] = {}

    def active(self, guard: str) -> tuple[bool, ...] | None:
        if not guard:
            return None
        neg = guard.startswith("!")
        v = self.value(guard.lstrip("!"))
        return None if v is None else tuple(bool(x) != neg for x in v)

    def value(self, name: str, depth: int = 0) -> Lanes | None:
        name = name.strip()
        if name in _SPECIAL:
            return _SPECIAL[name]
        if _UNIFORM.match(name):
            return (0,) * LANES
        if re.fullmatch(r"-?(?:0x[0-9a-fA-F]+|\d+)", name):
            return (int(name, 0) & _MASK,) * LANES
        if not name.startswith("%"):
            return (0,) * LANES if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else None  # a symbol: shared base 0
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = None  # a cycle reads as unknown
        d = self.defs.get(name)
        out = None if d is None or depth > 400 else self._apply(d[0], d[1], depth)
        self.memo[name] = out
        return out

    def _apply(self, opcode: str, ops: list[str], depth: int) -> Lanes | None:
        base = opcode.split(".")[0]
        if base == "setp":
            parts = opcode.split(".")
            f = _SETP.get(parts[1]) if len(parts) > 1 else None
            a, b = (self.value(o, depth + 1) for o in ops[:2]) if len(ops) >= 2 else (None, None)
            if f is None or a is None or b is None:
                return None
            signed = any(p.startswith("s") for p in parts[2:])
            return tuple(int(f(_signed(x) if signed else x, _signed(y) if signed else y)) for x, y in zip(a, b))
        vals = [self.value(o, depth + 1) for o in ops]
        if any(v is None for v in vals) or not vals:
            return None
        if base in ("mov", "cvt", "cvta"):
            return vals[0]
        if base == "selp" and len(vals) == 3:
            return tuple(x if c else y for x, y, c in zip(*vals))
        if base == "bfe" and len(vals) == 3:
            return tuple((x >> p) & ((1 << n) - 1) for x, p, n in zip(*vals))
        if base == "not" and opcode.endswith(".pred"):
            return tuple(int(not x) for x in vals[0])
        if base == "mad" and len(vals) == 3:
            return tuple((x * y + z) & _MASK for x, y, z in zip(*vals))
        f = _BINARY.get(base) if ".hi" not in opcode else None
        if f is None or len(vals) != 2:
            return None
        return tuple(f(x, y) & _MASK for x, y in zip(*vals))


def _signed(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "shl": lambda a, b: a << min(b, 63), "shr": lambda a, b: a >> min(b, 63), "and": lambda a, b: a & b,
           "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "min": min, "max": max}


def _operands(text: str) -> tuple[str | None, list[str]]:
    """(destination, sources) of a PTX statement `opcode d, a, b`."""
    _, _, rest = text.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    if not ops:
        return None, []
    return ops[0], ops[1:]
