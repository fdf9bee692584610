"""Every file tritonlens writes or deletes: a fixed kernel file, a baseline and its IR folder, bench results,
captures, reports.

A repository may be hostile, and its links are its own: a committed `kern.py -> ../victim.py`, a
`.tritonlens/baseline.json` pointing at a shell's start-up file, a `.tritonlens/baseline/` folder linked elsewhere
would have `check --fix`, `baseline save` and the rest write (or delete) outside the repository. So a path is
resolved to its real path, which must lie inside the real path of `root` (the workspace, or the folder the user
named for an output); the final step is taken through a descriptor of that checked folder, opened without following
links (`O_NOFOLLOW`), and a whole file is replaced atomically (written beside itself under a temporary name, then
`os.replace`) so that a reader never sees half a file. A link whose real path stays inside `root` is written at
its target.
"""
from __future__ import annotations

import contextlib
import os
import stat
from typing import IO, Iterator

from .sidecar import is_sidecar_folder

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class RefusedWrite(OSError):
    """A write or delete tritonlens will not make: the path leads outside the folder it must stay in."""


def workspace_of(path: str) -> str:
    """The folder a file of tritonlens's own belongs to: the one holding its `.tritonlens/` (a baseline, captures,
    bench results), else the file's own folder."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.dirname(folder) if is_sidecar_folder(folder) else folder


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve(path: str, root: str | None = None) -> str:
    """The real path of `path`, checked to be inside the real path of `root` (default: the folder `path` names as
    its own, i.e. only links on the way out of that folder are refused)."""
    given = os.path.abspath(path)
    top = os.path.realpath(root if root is not None else os.path.dirname(given))
    real = os.path.realpath(given)
    if not _inside(real, top):
        via = f" (a link to {real})" if real != given else ""
        raise RefusedWrite(f"{given}{via} is outside {top}: not written")
    return real


@contextlib.contextmanager
def _folder(real_file: str, root: str | None, make: bool) -> Iterator[int]:
    """A descriptor of `real_file`'s folder, opened without following a link, still inside `root`."""
    folder = os.path.dirname(real_file)
    if make and not os.path.isdir(folder):
        os.makedirs(resolve(folder, root), exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | os.O_CLOEXEC)
    try:
        # the folder may have been swapped for a link between the check and the open: ask the descriptor
        where = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else folder
        top = os.path.realpath(root if root is not None else folder)
        if not _inside(where, top):
            raise RefusedWrite(f"{folder} moved outside {top}: not written")
        yield fd
    finally:
        os.close(fd)


def write_file(path: str, data: str | bytes, root: str | None = None, only_if_changed: bool = False) -> bool:
    """Replace `path` with `data` atomically, inside `root` (see the module's doc). Keeps an existing file's mode.
    False when `only_if_changed` and the file already holds `data`. Raises RefusedWrite or OSError."""
    real = resolve(path, root)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with _folder(real, root, make=True) as dfd:
        name = os.path.basename(real)
        mode = 0o644
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                raise RefusedWrite(f"{real} is not a regular file: not written")
            mode = stat.S_IMODE(st.st_mode)
            if only_if_changed and st.st_size == len(raw) and _read(name, dfd) == raw:
                return False
        except FileNotFoundError:
            pass
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), mode)  # the umask narrowed os.open's mode
                f.write(raw)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    return True


def _read(name: str, dfd: int) -> bytes:
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


@contextlib.contextmanager
def open_append(path: str, root: str | None = None, read: bool = False) -> Iterator[IO[bytes]]:
    """`path` opened to append to (created when missing; "a+b" with `read`), inside `root`, never through a link."""
    real = resolve(path, root)
    with _folder(real, root, make=True) as dfd:
        flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_CREAT | _NOFOLLOW | os.O_CLOEXEC
        fd = os.open(os.path.basename(real), flags, 0o644, dir_fd=dfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RefusedWrite(f"{real} is not a regular file: not written")
    with os.fdopen(fd, "a+b" if read else "ab") as f:
        yield f


def remove_file(path: str, root: str | None = None) -> None:
    """Delete the file `path` (a link is removed itself, never what it points at), inside `root`."""
    given = os.path.abspath(path)
    real = os.path.join(os.path.realpath(os.path.dirname(given)), os.path.basename(given))
    resolve(os.path.dirname(real), root)
    with _folder(real, root, make=False) as dfd:
        os.unlink(os.path.basename(real), dir_fd=dfd)


def remove_empty_folder(path: str, root: str | None = None) -> None:
    real = resolve(path, root)
    with _folder(real, root, make=False) as dfd:
        os.rmdir(os.path.basename(real), dir_fd=dfd)


def make_folder(path: str, root: str | None = None) -> str:
    """`path` made (with its parents) inside `root`; its real path."""
    real = resolve(path, root)
    os.makedirs(real, exist_ok=True)
    return resolve(real, root)


COPY_CHUNK = 1 << 20


def copy_bounded(src: str, dst: str, cap: int) -> str | None:
    """Copy the regular file `src` (not through a link) to the new file `dst`, if it holds at most `cap` bytes;
    None when copied, else why not (and `dst` is not left). Bounded by real bytes: the size it claims and the
    blocks it takes (`st_blocks`, a sparse file's holes read as zeros and would be written out whole) are checked
    first, and the copy stops at `cap` whatever the file does meanwhile — a run's 3 GB sparse file is never written
    into the cache."""
    try:
        fd = os.open(src, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return f"it cannot be opened ({exc.strerror})"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return "it is not a regular file"
        held = max(st.st_size, getattr(st, "st_blocks", 0) * 512)
        if held > cap:
            return f"it holds {held >> 20} MB, over the {cap >> 20} MB kept"
        try:
            with open(dst, "xb") as out:
                copied = 0
                while chunk := f.read(COPY_CHUNK):
                    copied += len(chunk)
                    if copied > cap:
                        raise ValueError(f"it grew past the {cap >> 20} MB kept while copied")
                    out.write(chunk)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                os.remove(dst)
            return str(exc) if isinstance(exc, ValueError) else f"it could not be copied ({exc.strerror})"
    return None
