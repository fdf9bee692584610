"""Files read from a workspace are untrusted input: a repository may be hostile (a pull request from a fork in CI).

`read_text` reads a regular file of the workspace only (`reads`: a link out of it, to `/dev/zero`, a FIFO or a
device is refused before it is read, never blocked on), at most `limit` bytes; `loads` parses JSON and turns any
failure — nesting deeper than the parser goes included — into `UntrustedFile` naming the file; `printable` escapes
control and format characters whenever a path or a name that came from such a file is printed (terminal escapes would
set the title or clear the screen).
"""
from __future__ import annotations

import json
from typing import Any

from .. import reads
from ..reads import MAX_FILE

MAX_DEPTH = 64  # nesting of a JSON value read from a workspace file; tritonlens writes at most a handful


class UntrustedFile(ValueError):
    """A workspace file that cannot be read as what it should be; the message names the file."""


def read_text(path: str, limit: int = MAX_FILE, root: str | None = None) -> str:
    """The text of the regular file `path` inside `root` (UTF-8, undecodable bytes replaced; `reads.read_text`).
    OSError when it cannot be opened (missing: FileNotFoundError); UntrustedFile when it leads outside the workspace,
    is not a regular file or is larger than `limit` bytes."""
    try:
        return reads.read_text(path, root, limit)
    except reads.RefusedRead as exc:
        raise UntrustedFile(str(exc)) from None


def loads(text: str, where: str, depth: int = MAX_DEPTH) -> Any:
    """JSON from a workspace file, nested at most `depth` deep; UntrustedFile naming `where` otherwise."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UntrustedFile(f"{printable(where)}: JSON nested too deep; not read") from None
    except ValueError as exc:
        raise UntrustedFile(f"{printable(where)}: not JSON ({getattr(exc, 'msg', None) or str(exc)[:120]})") \
            from None
    if too_deep(value, depth):
        raise UntrustedFile(f"{printable(where)}: JSON nested deeper than {depth}; not read")
    return value


def too_deep(value: Any, depth: int = MAX_DEPTH) -> bool:
    todo = [(value, 0)]
    while todo:
        v, d = todo.pop()
        if d > depth:
            return True
        if isinstance(v, dict):
            todo.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, d + 1) for x in v)
    return False


def has_controls(value: Any) -> bool:
    """Whether a string of a JSON value (its keys too) holds a character a terminal acts on, newlines and tabs
    aside: such a file is refused rather than printed."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if not v.isprintable() and not v.replace("\n", "").replace("\t", "").isprintable():
                return True
        elif isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
    return False


def printable(text: Any) -> str:
    """`text` with every character a terminal would act on (C0/C1 controls, DEL, bidirectional and other format
    characters) written as a Python escape: what a file said, shown, never obeyed."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
