"""Every file tritonlens reads from a workspace: sources and their helper modules, captures, a baseline and its IR
folder, bench results, proposals, configuration files.

A repository may be hostile (a pull request from a fork in CI), and its files and links are its own: a committed
`.tritonlens/baseline/.../x.ptx -> ~/.ssh/id_rsa` printed a key as the baseline's side of `diff --stage`, a link to
`/dev/zero` was read until memory ran out, and a kernel file linked to `/proc/self/fd/0` read the checking process's
stdin (the language server's own JSON-RPC stream: it hung and ignored `exit`). So a workspace file is read only when
its real path lies inside the real path of `root` (the workspace; by default the workspace of the file itself), its
last step is opened through a descriptor of its checked folder without following a link (`O_NOFOLLOW`) and without
blocking (`O_NONBLOCK`: a FIFO answers at once), it is a regular file (asked before the open and of the open
descriptor), and at most `limit` bytes are read: a larger file is refused by name, never read whole. A link whose
real path stays inside `root` is read at its target.
"""
from __future__ import annotations

import os
import stat
from typing import BinaryIO

MAX_FILE = 256 << 20  # bytes of one workspace file tritonlens reads (captures of a whole test suite are a few MB)

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RefusedRead(OSError):
    """A workspace file tritonlens will not read: it leads outside the workspace (`why` "outside"), is not a regular
    file ("irregular") or is larger than its bound ("large"). The message names the file and says which."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _shown(path: str) -> str:
    text = str(path)  # escaped: a file name may hold a terminal's control characters
    return text if text.isprintable() else "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def open_file(path: str, root: str | None = None, limit: int = MAX_FILE) -> BinaryIO:
    """The regular file `path` opened to read in binary, inside `root` (see the module's doc), no larger than
    `limit` bytes when opened. OSError when it cannot be opened (missing: FileNotFoundError); RefusedRead when it is
    outside `root`, not a regular file or over `limit`. A caller that streams it reads at most `limit` bytes."""
    from .sidecar import find_workspace_root

    given = os.path.abspath(path)
    top = os.path.realpath(root if root is not None else find_workspace_root(given))
    real = os.path.realpath(given)
    if not inside(real, top):
        raise RefusedRead(f"{_shown(given)} is outside the workspace ({_shown(top)}); not read", "outside")
    dfd = os.open(os.path.dirname(real), _FOLDER)
    try:
        # the folder may have been swapped for a link between the check and the open: ask the descriptor
        if os.path.exists("/proc/self/fd") and not inside(os.readlink(f"/proc/self/fd/{dfd}"), top):
            raise RefusedRead(f"{_shown(given)} moved outside the workspace ({_shown(top)}); not read", "outside")
        name = os.path.basename(real)
        if not stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
            raise RefusedRead(f"{_shown(given)}: not a regular file; not read", "irregular")
        fd = os.open(name, _FLAGS, dir_fd=dfd)
    finally:
        os.close(dfd)
    f = os.fdopen(fd, "rb")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedRead(f"{_shown(given)}: not a regular file; not read", "irregular")
        if st.st_size > limit:
            raise _too_large(given, limit)
    except BaseException:
        f.close()
        raise
    return f


def read_bytes(path: str, root: str | None = None, limit: int = MAX_FILE) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them, inside `root` (see `open_file`)."""
    with open_file(path, root, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew since it was opened
        raise _too_large(os.path.abspath(path), limit)
    return data


def read_text(path: str, root: str | None = None, limit: int = MAX_FILE) -> str:
    """`read_bytes` as UTF-8 text, undecodable bytes replaced."""
    return read_bytes(path, root, limit).decode("utf-8", "replace")


def _too_large(given: str, limit: int) -> RefusedRead:
    size = f"{limit / 1e6:g} MB" if limit >= 1_000_000 else f"{limit} bytes"
    return RefusedRead(f"{_shown(given)}: larger than {size}, tritonlens's bound for this file; not read", "large")
