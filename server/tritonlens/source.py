"""Source files and text helpers shared by the stages: a file read as UTF-8 text (`read_source`), source
segments of AST nodes in linear time, top-level comma splitting.

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
# A module cache on purpose: the key is the text itself and a tree is never changed, so no object's lifetime bounds
# it — the checker, the rules, the config evaluator and the server's features all share the one parse of a text.
_TREES: "OrderedDict[str, ast.Module]" = OrderedDict()
_TREES_LOCK = threading.Lock()
_TREE_CHARS: dict[str, int] = {}  # key -> len(text) of the trees kept
_MAX_TREES = 64
# A tree takes 100-200 times its source in memory (a 10 MB data table: 1.8 GB), so what is kept is bounded by the
# length of the texts, not only by their count: small texts share an LRU of at most 8 MB of source; a text over
# 1 MB has one slot of its own (the latest such text), and such texts are parsed one at a time — two files of
# 10 MB never hold two trees, and a second request for the same text waits for the first parse instead of repeating it.
_MAX_TREE_CHARS = 8_000_000
_LARGE_TEXT = 1_000_000
_LARGE: list = []  # [key, tree] of the latest large text
_LARGE_LOCK = threading.Lock()


def parse_module(text: str) -> ast.Module:
    """`ast.parse(text)`, once per distinct text: discover, the launch-site scan, the definitions slice and the rules
    all read the same file, and a large kernel file took three parses on its way to a compile. The tree is shared —
    callers must not mutate it. Raises SyntaxError (and ValueError for NUL bytes) like ast.parse."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if len(text) > _LARGE_TEXT:
        with _LARGE_LOCK:
            if _LARGE and _LARGE[0] == key:
                return _LARGE[1]
            _LARGE.clear()  # the previous large tree goes before the next is built
            tree = ast.parse(text)
            _LARGE[:] = [key, tree]
            return tree
    with _TREES_LOCK:
        tree = _TREES.get(key)
        if tree is not None:
            _TREES.move_to_end(key)
            return tree
    tree = ast.parse(text)
    with _TREES_LOCK:
        _TREES[key] = tree
        _TREE_CHARS[key] = len(text)
        while len(_TREES) > _MAX_TREES or sum(_TREE_CHARS.values()) > _MAX_TREE_CHARS:
            old, _ = _TREES.popitem(last=False)
            _TREE_CHARS.pop(old, None)
    return tree


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side of the comparison): never part of what an import binds."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__") or (
        isinstance(test, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "__name__" for c in test.comparators))


def read_source(path: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, a one-line message naming the file)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        return None, f"{path}: cannot read the file ({exc.strerror or exc})"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); skipped"


def python_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """The `.py` files that command-line paths name, a folder walked in name order without its hidden folders,
    `__pycache__` and `node_modules`; and a message for each path that does not exist."""
    import os

    files, problems = [], []
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules"))
                files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
        elif os.path.exists(p):
            files.append(p)
        else:
            problems.append(f"{p}: no such file or folder")
    return files, problems
