"""The fixes of a whole file, as `tritonlens check --fix` applies them: for each finding, the fix the editor would
offer as preferred — a program edit re-compiled and proven, that trades nothing away — and no other (a hint edit
states an assumption and is never preferred; a pointer has no edit). At most one fix per kernel per round, edits that
do not overlap; the file is re-checked after each round (so the next fix is proven on the text the previous one
made), until a round finds none."""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from typing import Any, Callable

from ..model import Finding, KernelReport
from .edit import Edit, apply_edits
from .hints import fixable
from .search import Fix, Search
from ..source import split_lines

MAX_ROUNDS = 4


@dataclass
class Applied:
    finding: Finding
    fix: Fix


@dataclass
class FileFix:
    path: str
    original: str
    text: str  # with the fixes applied
    applied: list[Applied] = field(default_factory=list)
    report: Any = None  # the check of `text` (a pipeline.FileReport)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self, name: str) -> str:
        return "".join(difflib.unified_diff(split_lines(self.original, keepends=True),
                                            split_lines(self.text, keepends=True), f"a/{name}", f"b/{name}"))


def preferred_fix(checker, settings, path: str, text: str, kr: KernelReport, f: Finding,
                  root: str | None) -> Fix | None:
    """The fix the editor would mark preferred for `f`, or None. The candidates are tried in the editor's order; the
    first preferred one is the only one (a later fix is never preferred once one is), so the search stops there."""
    search = Search(kr, f, text, f.code, root)
    for i in search.pending():
        fix = search.attempt(checker, settings, path, i)
        search.decide(i, fix)
        if fix is not None and fix.preferred:
            return fix
    return None


def _overlaps(edits: list[Edit], taken: list[Edit]) -> bool:
    def span(e: Edit) -> tuple[tuple[int, int], tuple[int, int]]:
        return (e.range.start.line, e.range.start.character), (e.range.end.line, e.range.end.character)

    return any(span(a)[0] < span(b)[1] and span(b)[0] < span(a)[1] or span(a) == span(b)
               for a in edits for b in taken)


def fix_file(checker, settings, report, text: str, keep: Callable[[Finding], bool], root: str | None,
             rounds: int = MAX_ROUNDS) -> FileFix:
    """Apply the preferred fixes of the findings `keep` accepts to `text` (the text `report` was checked from)."""
    out = FileFix(report.path, text, text, report=report)
    # A finding a fix was applied for is not fixed again: when the re-check still has it, the check cannot see the
    # change (a captured launch's values replace the launch site's), and a second fix would edit the edit.
    done: set[tuple[str, str, int]] = set()
    for _ in range(rounds):
        taken: list[Applied] = []
        edits: list[Edit] = []
        for kr in out.report.kernels:
            for f in kr.findings:
                if not fixable(f.code) or not keep(f) or (kr.name, f.code, f.line) in done:
                    continue
                fix = preferred_fix(checker, settings, report.path, out.text, kr, f, root)
                if fix is not None and fix.edits and not _overlaps(fix.edits, edits):
                    taken.append(Applied(f, fix))
                    edits.extend(fix.edits)
                    done.add((kr.name, f.code, f.line))
                    break  # one per kernel: the next is proven on the text this one makes
        if not taken:
            break
        fixed = apply_edits(out.text, edits)
        try:
            ast.parse(fixed)
        except SyntaxError:  # an edit that breaks the file is never written, proven or not
            break
        out.text = fixed
        out.applied.extend(taken)
        out.report = checker.check_file(report.path, out.text)
    return out
