"""LLVM IR: `!dbg !N` on instructions -> `!DILocation` (following `inlinedAt` to the outermost frame in the
kernel's file) -> scope -> `!DIFile`. Metadata is printed after the code, so it is read in a first pass. Pure."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..source import split_top_level
from .linemap import LineMap, SrcLoc, decimal, pick_frames, unescape


@dataclass
class LlirModule:
    linemap: LineMap
    inner: dict[int, SrcLoc] = field(default_factory=dict)  # IR line -> innermost frame in the kernel's file
    functions: list[str] = field(default_factory=list)  # defined function names


def _fields(body: str) -> dict[str, str]:
    """`line: 8, column: 43, scope: !13` -> {"line": "8", ...} (strings unquoted; commas inside quotes kept)."""
    out: dict[str, str] = {}
    parts = [item for item, _ in split_top_level(body)]
    for p in parts:
        k, sep, v = p.partition(":")
        if sep:
            v = v.strip()
            if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
                v = v[1:-1]
            out[k.strip()] = v
    return out


def _dbg_ref(line: str) -> str | None:
    pos = line.rfind("!dbg !")
    if pos < 0:
        return None
    j = pos + 5
    k = j + 1
    while k < len(line) and line[k].isdecimal():
        k += 1
    return line[j:k] if k > j + 1 else None


def _number(text: str | None) -> int:
    """A metadata field's non-negative integer; 0 for anything else (a corrupt or truncated file)."""
    return (decimal(text) if text else None) or 0


def parse_llir(text: str, kernel_file: str | None = None) -> LlirModule:
    lines = text.split("\n")
    meta: dict[str, tuple[str, dict[str, str]]] = {}
    for raw in lines:  # pass 1: metadata nodes
        if not raw.startswith("!"):
            continue
        eq = raw.find(" = ")
        if eq < 0:
            continue
        name = raw[:eq].strip()
        value = raw[eq + 3 :].strip().removeprefix("distinct ").strip()
        paren = value.find("(")
        if not value.startswith("!DI") or paren < 0 or not value.endswith(")"):
            continue
        meta[name] = (value[1:paren], _fields(value[paren + 1 : -1]))

    def file_of(scope: str | None, depth: int = 0) -> str:
        seen = 0
        while scope and seen < 100:
            seen += 1
            node = meta.get(scope)
            if node is None:
                return ""
            kind, f = node
            if kind == "DIFile":
                name, d = unescape(f.get("filename", "")), unescape(f.get("directory", ""))
                return name if name.startswith("/") or not d else d.rstrip("/") + "/" + name
            if "file" in f:
                scope = f["file"]
            else:
                scope = f.get("scope")
        return ""

    memo: dict[str, list[SrcLoc]] = {}

    def frames(ref: str) -> list[SrcLoc]:
        if ref in memo:
            return memo[ref]
        chain: list[SrcLoc] = []
        cur: str | None = ref
        while cur and len(chain) < 200:
            node = meta.get(cur)
            if node is None or node[0] != "DILocation":
                break
            f = node[1]
            line, col = _number(f.get("line")), _number(f.get("column"))
            if line > 0:
                chain.append(SrcLoc(file_of(f.get("scope")), line, col))
            cur = f.get("inlinedAt")
        memo[ref] = chain
        return chain

    linemap = LineMap("llir")
    inner: dict[int, SrcLoc] = {}
    functions: list[str] = []
    for n, raw in enumerate(lines, start=1):
        if raw.startswith("define "):
            at = raw.find("@")
            if at >= 0:
                end = raw.find("(", at)
                functions.append(raw[at + 1 : end if end > 0 else None])
            continue
        if not raw.startswith(" ") or "!dbg !" not in raw:
            continue
        ref = _dbg_ref(raw)
        if ref is None:
            continue
        outer, inn = pick_frames(frames(ref), kernel_file)
        if outer is not None:
            linemap.ir_to_src[n] = outer
            if inn is not None:
                inner[n] = inn
    return LlirModule(linemap, inner, functions)
