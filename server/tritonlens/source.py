"""Text helpers shared by the parsers: source segments of AST nodes in linear time, top-level comma splitting.

`ast.get_source_segment` splits the whole text on every call, which is quadratic over a file with many calls
(launch-site scans ask thousands of times per file). `SourceText` splits once, the same way (\\r\\n, \\r, \\n), and
slices by UTF-8 byte columns as ast's offsets count them.
"""
from __future__ import annotations

import ast
import hashlib
import re
import threading
from collections import OrderedDict

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class SourceText:
    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[str] | None = None

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = _LINE.findall(self.text)
        return self._lines

    def segment(self, node: ast.AST) -> str | None:
        """What `ast.get_source_segment(text, node)` returns, without re-splitting the text."""
        try:
            if node.end_lineno is None or node.end_col_offset is None:
                return None
            first, last = node.lineno - 1, node.end_lineno - 1
            col, end_col = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        lines = self.lines
        if not 0 <= first <= last < len(lines):
            return None
        if first == last:
            return lines[first].encode()[col:end_col].decode()
        head = lines[first].encode()[col:].decode()
        tail = lines[last].encode()[:end_col].decode()
        return "".join([head, *lines[first + 1:last], tail])


def split_top_level(text: str) -> list[tuple[str, int]]:
    """Split on commas outside quotes and brackets: `a=1, b=(2, 3), c="x,y"` -> items with their offsets in `text`.
    Used for hint comments and for LLVM debug metadata fields; empty items are dropped."""
    items: list[tuple[str, int]] = []
    depth, quote, start = 0, "", 0
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append((text[start:i], start))
            start = i + 1
    items.append((text[start:], start))
    return [(s, o) for s, o in items if s.strip()]


# ---------------------------------------------------------------- one parse per text
_TREES: "OrderedDict[str, ast.Module]" = OrderedDict()
_TREES_LOCK = threading.Lock()
_MAX_TREES = 64


def parse_module(text: str) -> ast.Module:
    """`ast.parse(text)`, once per distinct text: discover, the launch-site scan, the definitions slice and the rules
    all read the same file, and a large kernel file took three parses on its way to a compile. The tree is shared —
    callers must not mutate it. Raises SyntaxError (and ValueError for NUL bytes) like ast.parse."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    with _TREES_LOCK:
        tree = _TREES.get(key)
        if tree is not None:
            _TREES.move_to_end(key)
            return tree
    tree = ast.parse(text)
    with _TREES_LOCK:
        _TREES[key] = tree
        while len(_TREES) > _MAX_TREES:
            _TREES.popitem(last=False)
    return tree


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side of the comparison): never part of what an import binds."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__") or (
        isinstance(test, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "__name__" for c in test.comparators))
