"""SASS: disassemble a cubin with the wheel's `nvdisasm`, parse its instructions and `//## File` line info.

`disassemble` and `resource_usage` run the NVIDIA tools shipped in the triton wheel (found without importing
triton); `parse_sass` is pure. Note: nvdisasm's line info (`-g`, and `-gi` too for Triton 3.6 cubins) names only
the innermost frame, so SASS of an inlined same-file helper maps to the helper's body, not the call line; an
`inlined at "f", line N` suffix is honoured when a toolchain prints one.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from ..model import StageTexts
from .linemap import LineMap, SrcLoc, decimal, pick_frames


class ToolError(RuntimeError):
    """An NVIDIA binary tool is missing or failed."""


@dataclass
class SassInstr:
    ir_line: int
    opcode: str  # "LDG.E.128", "HGMMA.64x64x16.F32"
    text: str
    loc: SrcLoc | None
    kind: str  # ldg stg ldl stl lds sts ldgsts bar hmma hgmma other
    bits: int | None = None  # LDG.E.128 -> 128, LDG.E -> 32, LDG.E.64 -> 64
    offset: int | None = None  # the /*0120*/ address
    predicated: bool = False
    func: str = ""
    inner_loc: SrcLoc | None = None


@dataclass
class SassModule:
    instrs: list[SassInstr]
    linemap: LineMap


def tool_path(name: str) -> Path:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        raise ToolError(f"cannot find {name}: the triton package is not installed")
    for base in spec.submodule_search_locations:
        path = Path(base) / "backends" / "nvidia" / "bin" / name
        if path.is_file():
            return path
    raise ToolError(f"cannot find {name} in triton/backends/nvidia/bin of the installed triton")


def _run_on_cubin(name: str, args: list[str], cubin: bytes, timeout: float = 60.0) -> str:
    if not cubin:
        raise ToolError(f"{name}: empty cubin")
    exe = tool_path(name)
    fd, tmp = tempfile.mkstemp(suffix=".cubin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        try:
            res = subprocess.run([str(exe), *args, tmp], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ToolError(f"{name} failed to run: {e}") from e
        if res.returncode != 0:
            raise ToolError(f"{name} exited with {res.returncode}: {res.stderr.strip()[:500]}")
        return res.stdout.replace(tmp, "kernel.cubin")
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def disassemble(cubin: bytes) -> str:
    """SASS text with line info: `nvdisasm -c -g` (code sections only, `//## File "...", line N` comments), without
    the branch-stack dataflow pass (`-ndf`): sm_70 and later have no branch stack, the text is the same (compared on
    40 Liger-Kernel cubins and in tests/test_ir_parsers.py), and that pass is a third of nvdisasm's time."""
    return _run_on_cubin("nvdisasm", ["-c", "-g", "-ndf"], cubin)


CUBIN_STAGE = "cubin64"  # the cubin, base64, kept instead of its SASS until something asks for the SASS


class LazyAsm(StageTexts):
    """A compile's texts by stage, whose `sass` is disassembled from the kept cubin the first time it is asked for.
    `nvdisasm -c -g` takes about as long as the compile itself, and most checks never read SASS (only spills need
    it, and the worker disassembles those at once); a `check` of many files never pays for it. The language server
    reads SASS on every hover, so its `Checker` has it made as each compile's results arrive (`sass_ahead`), off the
    hover path. `"sass" in asm` is true while the cubin is there; `sass_pending` while reading `sass` would still run
    the tool; a disassembler that fails leaves no `sass` (and the error in `error`)."""

    error: str | None = None
    _LOCK = threading.Lock()  # one disassembly at a time: a hover asking meanwhile waits for it, not for a second run
    # the last few cubins disassembled, by their base64 text: a cache hit of the same compile (a file reopened, the
    # same spec in another report) gets its SASS without running the tool again
    _MADE: "OrderedDict[str, str]" = OrderedDict()
    _MAX_MADE = 8

    @property
    def sass_pending(self) -> bool:
        return not dict.__contains__(self, "sass") and dict.__contains__(self, CUBIN_STAGE) and not self.error

    def _make(self) -> str | None:
        if not self.sass_pending:
            return dict.get(self, "sass")
        with self._LOCK:
            if not self.sass_pending:  # made while this one waited
                return dict.get(self, "sass")
            import base64

            cubin = dict.__getitem__(self, CUBIN_STAGE)
            text = self._MADE.get(cubin)
            if text is None:
                try:
                    text = disassemble(base64.b64decode(cubin))
                except (ToolError, ValueError) as exc:
                    self.error = str(exc)
                    return None
                self._MADE[cubin] = text
                while len(self._MADE) > self._MAX_MADE:
                    self._MADE.popitem(last=False)
            dict.__setitem__(self, "sass", text)
            return text

    def __contains__(self, key: object) -> bool:
        if key == "sass" and not dict.__contains__(self, "sass"):
            return dict.__contains__(self, CUBIN_STAGE) and not self.error
        return dict.__contains__(self, key)

    def __getitem__(self, key: str) -> str:
        if key == "sass":
            text = self._make()
            if text is None:
                raise KeyError(key)
            return text
        return dict.__getitem__(self, key)

    def get(self, key: str, default=None):
        if key == "sass":
            text = self._make()
            return default if text is None else text
        return dict.get(self, key, default)


def parse_resource_usage(text: str) -> dict:
    """`cuobjdump -res-usage` text -> {"REG": 26, "STACK": 0, "SHARED": 0, "LOCAL": 0, ...} of the first
    function (plus "functions": {name: {...}} for all)."""
    funcs: dict[str, dict[str, int]] = {}
    current = None
    for raw in text.split("\n"):
        s = raw.strip()
        if s.startswith("Function ") and s.endswith(":"):
            current = s[len("Function ") : -1].strip()
            funcs[current] = {}
            continue
        if current is None or ":" not in s:
            continue
        for tok in s.split():
            key, _, val = tok.partition(":")
            if decimal(val) is not None:
                funcs[current][key] = decimal(val)
    first = next(iter(funcs.values()), {})
    return {**first, "functions": funcs}


def resource_usage(cubin: bytes) -> dict:
    """REG / STACK / SHARED / LOCAL (and the rest cuobjdump prints) of the cubin's kernel."""
    return parse_resource_usage(_run_on_cubin("cuobjdump", ["-res-usage"], cubin))


_KINDS = {"LDG": "ldg", "STG": "stg", "LDL": "ldl", "STL": "stl", "LDS": "lds", "LDSM": "lds", "STS": "sts",
          "STSM": "sts", "LDGSTS": "ldgsts", "BAR": "bar", "HMMA": "hmma", "HGMMA": "hgmma"}
_WIDTHS = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "32": 32, "64": 64, "128": 128}


def _bits(parts: list[str]) -> int | None:
    bits = None
    for q in parts[1:]:
        if q in _WIDTHS:
            bits = _WIDTHS[q]
    return bits if bits is not None else 32


def _line_info(comment: str) -> list[SrcLoc]:
    """`File "a.py", line 8 inlined at "a.py", line 19` -> frames, innermost first."""
    frames = []
    rest = comment
    while True:
        a = rest.find('File "')
        if a < 0:
            a = rest.find('"')
            if a < 0 or not frames:
                break
            a -= 5
        q1 = rest.find('"', a + 5)
        q2 = rest.find('"', q1 + 1)
        if q1 < 0 or q2 < 0:
            break
        path = rest[q1 + 1 : q2]
        tail = rest[q2 + 1 :]
        ln = tail.find("line ")
        if ln < 0:
            break
        j = ln + 5
        k = j
        while k < len(tail) and tail[k].isdecimal():
            k += 1
        if k == j or decimal(tail[j:k]) is None:
            break
        frames.append(SrcLoc(path, decimal(tail[j:k]), 0))
        rest = tail[k:]
        if "inlined at" not in rest:
            break
        rest = rest[rest.find("inlined at") + 10 :]
    return frames


def parse_sass(text: str, kernel_file: str | None = None) -> SassModule:
    instrs: list[SassInstr] = []
    linemap = LineMap("sass")
    loc = inner = None
    func = ""
    for n, raw in enumerate(text.split("\n"), start=1):
        s = raw.strip()
        if not s:
            continue
        if s.startswith("//##"):
            frames = _line_info(s[4:])
            if frames:  # line 0: code with no source line, as PTX's `.loc 1 0 0`
                loc, inner = pick_frames(frames, kernel_file) if frames[0].line > 0 else (None, None)
            continue
        if s.endswith(":") and not s.startswith((".", "/")):
            func = s[:-1]
            continue
        if not s.startswith("/*"):
            continue
        end = s.find("*/")
        if end < 0:
            continue
        addr = s[2:end]
        body = s[end + 2 :].strip()
        semi = body.find(";")
        if semi >= 0:
            body = body[:semi].strip()
        if not body:
            continue
        predicated = body.startswith("@")
        if predicated:
            sp = body.find(" ")
            body = body[sp + 1 :].lstrip() if sp > 0 else ""
        opcode = body.split(None, 1)[0] if body else ""
        if not opcode:
            continue
        parts = opcode.split(".")
        kind = _KINDS.get(parts[0], "other")
        bits = _bits(parts) if kind in ("ldg", "stg", "ldl", "stl", "lds", "sts", "ldgsts") else None
        if parts[0] in ("LDSM", "STSM"):  # .M88.4: four 8x8 b16 matrices, 32 bits each per lane
            bits = 32 * int(parts[-1]) if parts[-1] in ("1", "2", "4") else 32
        try:
            offset = int(addr, 16)
        except ValueError:
            offset = None
        instrs.append(SassInstr(n, opcode, body, loc, kind, bits, offset, predicated, func, inner))
        if loc is not None:
            linemap.ir_to_src[n] = loc
    return SassModule(instrs, linemap)
