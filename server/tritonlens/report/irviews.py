"""What the compiler made of one source line: the IR of a compiled spec, parsed lazily, with its line map."""
from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

from ..checks import CheckContext
from ..model import CompiledSpec, KernelReport
from ..settings import Settings

LANGUAGE_IDS = {"ttir": "ttir", "ttgir": "ttgir", "llir": "llvm", "ptx": "ptx", "sass": "sass", "amdgcn": "amdgcn"}
STAGE_TITLES = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX", "sass": "SASS", "amdgcn": "AMDGCN"}


# Alignment padding that the line table attributes to the kernel's last line: not what that line compiled to.
_PADDING = {"NOP", "s_nop", "s_code_end"}


def compiled_specs(kr: KernelReport) -> list[CompiledSpec]:
    """Specs whose compile succeeded, in report order."""
    return [cs for cs in kr.compiled if cs.artifacts is not None and cs.artifacts.ok]


_VIEWS: "OrderedDict[int, SpecView]" = OrderedDict()
_MAX_VIEWS = 8  # parsed IR of a big kernel is tens of MB; hover and cursor moves hit the same few kernels


def view_for(kr: KernelReport, cs: CompiledSpec, settings: Settings) -> "SpecView":
    """A `SpecView` whose parsed IR is kept between requests: parsing megabytes of PTX/SASS for every hover and
    every cursor move costs hundreds of ms. Keyed by the artefacts object, which a recompile replaces."""
    key = id(cs.artifacts)
    view = _VIEWS.get(key)
    if view is not None and view.cs.artifacts is cs.artifacts and view.settings == settings:
        _VIEWS.move_to_end(key)
        view.kr, view.cs = kr, cs
        return view
    view = SpecView(kr, cs, settings)
    _VIEWS[key] = view
    while len(_VIEWS) > _MAX_VIEWS:
        _VIEWS.popitem(last=False)
    return view


@dataclass
class SpecView:
    kr: KernelReport
    cs: CompiledSpec
    settings: Settings

    def __post_init__(self) -> None:
        assert self.cs.artifacts is not None
        self.ctx = CheckContext(self.kr.kernel, self.cs.spec, self.cs.artifacts, self.settings)
        self._hashes: dict[str, str] = {}

    @property
    def artifacts(self):
        return self.cs.artifacts

    def stages(self) -> list[str]:
        return [s for s in ("ttgir", "ptx", "sass", "amdgcn", "ttir", "llir") if s in self.artifacts.asm]

    def text(self, stage: str) -> str | None:
        return self.artifacts.asm.get(stage)

    def path(self, stage: str) -> str | None:
        return self.artifacts.paths.get(stage)

    def text_hash(self, stage: str) -> str | None:
        """Content hash of one stage's text: what a client holding that text names it by (`irDocument`'s
        `have`). Computed once per view (the text of an artefacts object never changes), not per request."""
        h = self._hashes.get(stage)
        if h is None:
            text = self.text(stage)
            if text is None:
                return None
            h = self._hashes[stage] = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return h

    def module(self, stage: str) -> Any:
        if stage not in self.artifacts.asm:
            return None
        return getattr(self.ctx, stage)

    def ir_lines(self, stage: str, line: int) -> list[int]:
        mod = self.module(stage)
        return mod.linemap.lines_for(line, self.kr.kernel.path) if mod is not None else []

    def ranges(self, stage: str, line: int) -> list[tuple[int, int]]:
        mod = self.module(stage)
        return mod.linemap.ranges_for(line, self.kr.kernel.path) if mod is not None else []

    def counts(self, stage: str, line: int) -> Counter:
        """Op / opcode counts of the IR that came from 1-based source `line`."""
        mod = self.module(stage)
        if mod is None:
            return Counter()
        wanted = set(self.ir_lines(stage, line))
        items = mod.ops if stage in ("ttgir", "ttir") else getattr(mod, "instrs", [])
        names = ((getattr(it, "name", None) or it.opcode) for it in items if it.ir_line in wanted)
        return Counter(n for n in names if n not in _PADDING)

    def conversions(self) -> int:
        mod = self.module("ttgir")
        return len(mod.ops_named("ttg.convert_layout")) if mod is not None else 0


def summary(counter: Counter, limit: int = 4) -> str:
    return ", ".join(f"{n}× {name}" for name, n in counter.most_common(limit)) + (" …" if len(counter) > limit else "")
