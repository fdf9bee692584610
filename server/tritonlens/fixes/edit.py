"""A fix's text edits as plain data, and the one function that applies them. Positions are 0-based lines and
columns counted in characters of the line (Python string indices), end exclusive — what an editor's edit holds, less
its protocol: `lsp/` turns an `Edit` into an LSP `TextEdit`, `check --fix` applies it to the file."""
from __future__ import annotations

from dataclasses import dataclass

from ..source import split_lines


@dataclass(frozen=True)
class Position:
    line: int  # 0-based
    character: int  # 0-based, in characters of that line


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class Edit:
    """Replace `range` of the source text by `new_text` (an empty range inserts)."""

    range: Range
    new_text: str

    @classmethod
    def replace(cls, line: int, col: int, end_line: int, end_col: int, new_text: str) -> "Edit":
        return cls(Range(Position(line, col), Position(end_line, end_col)), new_text)

    @classmethod
    def insert(cls, line: int, col: int, new_text: str) -> "Edit":
        return cls.replace(line, col, line, col, new_text)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """`text` with `edits` applied, as an editor applies one workspace edit: every range refers to the original text,
    and the edits do not overlap."""
    lines = split_lines(text, keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def off(p: Position) -> int:
        return starts[min(p.line, len(lines))] + p.character

    for e in sorted(edits, key=lambda e: off(e.range.start), reverse=True):
        text = text[:off(e.range.start)] + e.new_text + text[off(e.range.end):]
    return text


def fit_argument(text: str, edit: Edit) -> Edit:
    """An added keyword argument — `, name=value` inserted at a call's closing parenthesis — fitted to the call as it
    is written: after a trailing comma no second one (`f(a,, b=1)` does not parse), and on a line of its own at the
    arguments' indent when the parenthesis stands alone on its line. Any other edit is returned as it is."""
    r = edit.range
    lines = split_lines(text, keepends=True)
    if r.start != r.end or not edit.new_text.startswith(", ") or r.start.line >= len(lines):
        return edit
    head = lines[r.start.line][:r.start.character]
    before = ("".join(lines[:r.start.line]) + head).rstrip()
    if not before.endswith(","):
        return edit
    argument = edit.new_text[2:]
    if head.strip():  # `f(a, b,)`: the argument after the comma
        return Edit.insert(r.start.line, r.start.character, ("" if head.endswith(" ") else " ") + argument)
    last = before.rsplit("\n", 1)[-1]
    indent = last[:len(last) - len(last.lstrip())]
    newline = "\r\n" if r.start.line and lines[r.start.line - 1].endswith("\r\n") else "\n"
    return Edit.insert(r.start.line, 0, f"{indent}{argument},{newline}")
