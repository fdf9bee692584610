"""Source files and text helpers shared by the stages: a file read as UTF-8 text (`read_source`), its lines as
Python numbers them (`split_lines`), source segments of AST nodes in linear time, top-level comma splitting.

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


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of `text` as Python's tokenizer numbers them, and the LSP and editors with it: broken at \\r\\n,
    \\r and \\n only. The one line-numbering of every position tritonlens maps to text (ast's line numbers, a
    finding's line, an edit's range, a hint's line, a hover's position). `str.splitlines()` also breaks at \\f,
    \\v, \\x1c-\\x1e, \\x85, U+2028 and U+2029, which a Python file may hold in a comment or a string: every
    line after one would be off by one. Like `splitlines`, a final line break opens no empty last line."""
    if keepends and "\r" in text:
        return _LINE.findall(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        lines = [ln + "\n" for ln in lines]
    if last:
        lines.append(last)
    return lines


class SourceText:
    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[str] | None = None

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self.text, keepends=True)
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


# Bounds of one source file (a repository may be hostile, or hold a generated table): a file over MAX_SOURCE_BYTES is
# not read, and one whose syntax tree nests deeper than MAX_AST_DEPTH is not walked — the walks that read a tree
# (the stages' visitors, `ast.unparse`, `literal_eval`) recurse about twice per level, and Python stops at 1,000
# frames. Either gives that file one SRC007 and the run goes on (pipeline).
MAX_SOURCE_BYTES = 12_000_000  # the editor checks 10 MB files; a 38 MB one cost 3.3 GB
MAX_AST_DEPTH = 250


class SourceTooDeep(SyntaxError):
    """A text whose syntax tree nests deeper than MAX_AST_DEPTH (a 200,000-term expression): a SyntaxError, so
    every reader that skips a file it cannot parse skips this one too."""


def parse_module(text: str) -> ast.Module:
    """`ast.parse(text)`, once per distinct text: discover, the launch-site scan, the definitions slice and the rules
    all read the same file, and a large kernel file took three parses on its way to a compile. The tree is shared —
    callers must not mutate it. Raises SyntaxError (and ValueError for NUL bytes) like ast.parse, SourceTooDeep
    past MAX_AST_DEPTH."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if len(text) > _LARGE_TEXT:
        with _LARGE_LOCK:
            if _LARGE and _LARGE[0] == key:
                return _LARGE[1]
            _LARGE.clear()  # the previous large tree goes before the next is built
            tree = _parse(text)
            _LARGE[:] = [key, tree]
            return tree
    with _TREES_LOCK:
        tree = _TREES.get(key)
        if tree is not None:
            _TREES.move_to_end(key)
            return tree
    tree = _parse(text)
    with _TREES_LOCK:
        _TREES[key] = tree
        _TREE_CHARS[key] = len(text)
        while len(_TREES) > _MAX_TREES or sum(_TREE_CHARS.values()) > _MAX_TREE_CHARS:
            old, _ = _TREES.popitem(last=False)
            _TREE_CHARS.pop(old, None)
    return tree


def _parse(text: str) -> ast.Module:
    try:
        tree = ast.parse(text)
    except RecursionError:  # deeper than the parser goes
        raise SourceTooDeep(too_deep_message(None)) from None
    depth = tree_depth(tree, MAX_AST_DEPTH)
    if depth > MAX_AST_DEPTH:
        raise SourceTooDeep(too_deep_message(depth))
    return tree


def too_deep_message(depth: int | None) -> str:
    how = f"more than {MAX_AST_DEPTH}" if depth is None or depth > MAX_AST_DEPTH else str(depth)
    return (f"its syntax tree nests {how} levels deep, past tritonlens's bound of {MAX_AST_DEPTH} (one expression of "
            "thousands of terms, generated code?)")


def tree_depth(tree: ast.AST, stop: int | None = None) -> int:
    """How deep `tree` nests (without recursion; stops counting past `stop`)."""
    deepest = 0
    todo = [(tree, 1)]
    pop, push = todo.pop, todo.append
    while todo:
        node, depth = pop()
        if depth > deepest:
            deepest = depth
            if stop is not None and deepest > stop:
                return deepest
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                if not isinstance(value, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
                    push((value, depth + 1))
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, depth + 1))
    return deepest


def too_large_message(size: int) -> str:
    return (f"the file is {size / 1e6:.1f} MB, past tritonlens's bound of {MAX_SOURCE_BYTES / 1e6:g} MB per source "
            "file (a generated table, a bundled dependency?)")


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side of the comparison): never part of what an import binds."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__") or (
        isinstance(test, ast.Compare) and any(isinstance(c, ast.Name) and c.id == "__name__" for c in test.comparators))


def read_source(path: str, limit: int = MAX_SOURCE_BYTES, root: str | None = None) -> tuple[str | None, str | None]:
    """(text, None) or (None, a one-line message naming the file). A workspace file (`reads`): a regular file whose
    real path lies inside `root` (default: the file's own workspace), at most `limit` bytes of it — a larger file
    costs nothing (pipeline reports it as one SRC007, `source_too_large`); a link out of the workspace, a FIFO or a
    device (`/proc/self/fd/0`: the checking process's stdin) is refused before it is read, never waited on."""
    from .reads import RefusedRead, read_bytes

    try:
        raw = read_bytes(path, root, limit)
    except RefusedRead as exc:
        if exc.why == "large":
            return None, f"{path}: {too_large_message(source_size(path) or limit + 1)}; not read"
        return None, str(exc)
    except OSError as exc:
        return None, f"{path}: cannot read the file ({exc.strerror or exc})"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); skipped"


def source_size(path: str) -> int | None:
    """The size of `path`, None when it cannot be known or when it leads outside its workspace (`reads`: what a link
    out points at is not looked at, its size no more than its text)."""
    import os

    from .reads import inside
    from .sidecar import find_workspace_root

    if not inside(os.path.realpath(path), os.path.realpath(find_workspace_root(path))):
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def source_too_large(path: str, text: str | None = None) -> str | None:
    """Why `path` (or the editor's `text` of it) is past MAX_SOURCE_BYTES, or None."""
    if text is None:
        size = source_size(path)
    else:  # a character is 1 to 4 bytes: most texts need no encoding to be measured
        size = len(text) if len(text) > MAX_SOURCE_BYTES or 4 * len(text) <= MAX_SOURCE_BYTES \
            else len(text.encode("utf-8", "surrogatepass"))
    return too_large_message(size) if size is not None and size > MAX_SOURCE_BYTES else None


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
