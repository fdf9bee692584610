"""The artefact cache: one folder per (module slice, kernel, spec, triton version), so an unchanged kernel and spec is
never compiled twice, and IR files exist on disk for editors to open ("jump to the PTX of this line").

Several processes share it (two `check` runs and a server): an entry is written into a temporary folder beside its
place and renamed there in one step, so a reader sees all of it or nothing; a folder that fails any check on reading
(truncated, edited, of another format or version) is removed and recompiled, never trusted. The folders are the
user's own (0700, files 0600), and the cache is bounded: past its size the least recently used entries go.

An entry also keeps the last analysis of its compile (checks.analyse's metrics and findings) with a digest of what
that analysis read besides the compile (checks.analysis_digest): a check that reads the entry with the same inputs
takes it as it is; other inputs (a setting, the file around the kernel) have it analysed again."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict

from .. import __version__
from ..ir.sass import CUBIN_STAGE, LazyAsm
from ..model import LOAD_FAILURES, OWN_FAILURES, Artifacts, CompileError, Resources, StageTexts
from .wire import analysis_from_wire, analysis_to_wire

# Errors that say something about the machine or the moment, not the kernel: never cached. tritonlens's own failures
# (model.OWN_FAILURES), and a LoadError: the module failed to import because of what is installed (or of a module
# outside the file's tracked dependencies), and installing the missing package must make the next check compile, not
# replay the old failure.
_TRANSIENT = OWN_FAILURES | LOAD_FAILURES
_EXT = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "sass": "sass", "amdgcn": "amdgcn",
        CUBIN_STAGE: "cubin64"}


def default_cache_dir() -> str:
    if env := os.environ.get("TRITONLENS_CACHE_DIR"):
        return env
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    elif sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "tritonlens")


FORMAT = 3  # of meta.json: an entry of another format is recompiled (3: entries written before each worker compiled
# in a Triton cache of its own may hold another file's IR, and spill sites read from the cubin are kept)
DEFAULT_MAX_MB = 2048
_ANALYSIS = "analysis.json"  # an entry's last analysis (checks.analyse's metrics and findings) and what it was for


def default_max_bytes() -> int:
    """`TRITONLENS_CACHE_MAX_MB` (a number of megabytes; fractions allowed), else 2 GB."""
    try:
        mb = float(os.environ.get("TRITONLENS_CACHE_MAX_MB", DEFAULT_MAX_MB))
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int(max(mb, 0.001) * (1 << 20))


def _own_dir(path: str, private: bool) -> bool:
    """Make `path` (0700) if missing; True when it is a folder (not a link) of this user — with `private`, one
    nobody else may read or write (its mode is set to 0700)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    if not hasattr(os, "getuid"):  # Windows: the per-user LOCALAPPDATA is private already
        return True
    if st.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
        return False
    if private and st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError:
            return False
    return True


def _write_private(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """What identifies this tritonlens's own code beyond its version (the files of the package: name, size, time):
    an analysis stored by other code — a checkout edited since — is made again, not replayed."""
    h = hashlib.sha256(__version__.encode())
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                h.update(f"{os.path.relpath(os.path.join(folder, name), root)}\0{st.st_size}\0{st.st_mtime_ns}\0"
                         .encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def triton_version() -> str:
    try:
        from importlib.metadata import version

        return version("triton")
    except Exception:  # noqa: BLE001
        return "unknown"


class ArtifactCache:
    def __init__(self, root: str | None = None, max_bytes: int | None = None) -> None:
        self.root = root or default_cache_dir()
        self.max_bytes = max_bytes if max_bytes is not None else default_max_bytes()
        self._triton = triton_version()
        self._usable: bool | None = None  # decided on first use
        self._size: int | None = None  # bytes in the cache as last counted, plus what this process added since
        self._puts = 0

    def key(self, module_text: str, qualname: str, spec_key: str) -> str:
        h = hashlib.sha256()
        for part in (__version__, self._triton, qualname, spec_key, module_text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:32]

    def _dir(self, key: str) -> str:
        return os.path.join(self.root, "artifacts", key[:2], key)

    def _ready(self) -> bool:
        """The cache's folders exist and are this user's alone. A root owned by someone else (a shared
        TRITONLENS_CACHE_DIR) gets a folder per user inside; when even that fails, nothing is cached."""
        if self._usable is None:
            ok = _own_dir(self.root, private=False)
            if not ok and hasattr(os, "getuid"):
                self.root = os.path.join(self.root, f"user-{os.getuid()}")
                ok = _own_dir(self.root, private=True)
            self._usable = ok and _own_dir(os.path.join(self.root, "artifacts"), private=True)
        return self._usable

    def get(self, key: str) -> Artifacts | None:
        if not self._ready():
            return None
        folder = self._dir(key)
        if not os.path.isdir(folder):
            return None
        try:
            art = self._read(folder, key)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            art = None
        if art is None:
            self._discard(folder)  # never trusted again; the recompile's put takes its place
            return None
        try:
            os.utime(os.path.join(folder, "meta.json"))  # recently used: evicted last
        except OSError:
            pass
        return art

    def _read(self, folder: str, key: str) -> Artifacts | None:
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key \
                or meta.get("tritonlens") != __version__ or meta.get("triton") != self._triton:
            return None
        for name, kind in (("kernel", str), ("spec_key", str), ("target", str), ("metadata", dict),
                           ("resources", dict), ("remarks", str), ("compile_time", (int, float)), ("files", dict)):
            if not isinstance(meta.get(name), kind):
                return None
        art = Artifacts(
            kernel=meta["kernel"], spec_key=meta["spec_key"], target=meta["target"], metadata=meta["metadata"],
            resources=Resources(**meta["resources"]), remarks=meta["remarks"], compile_time=meta["compile_time"],
            cached=True, error=CompileError(**meta["error"]) if meta.get("error") else None,
        )
        if CUBIN_STAGE in meta["files"] and "sass" not in meta["files"]:
            art.asm = LazyAsm()
        for stage, entry in meta["files"].items():
            fname, digest = entry
            if stage not in _EXT or not isinstance(fname, str) or os.path.basename(fname) != fname \
                    or fname.startswith("."):
                return None
            p = os.path.join(folder, fname)
            with open(p, encoding="utf-8") as f:
                text = f.read()
            if _digest(text) != digest:  # truncated or edited
                return None
            art.asm[stage] = text
            art.paths[stage] = p
        return art

    def put(self, key: str, art: Artifacts) -> Artifacts:
        """Store and fill `art.paths`. Transient failures are not stored."""
        if art.error is not None and art.error.kind in _TRANSIENT:
            return art
        if not self._ready():
            return art
        folder = self._dir(key)
        parent = os.path.dirname(folder)
        os.makedirs(parent, mode=0o700, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
        files = {}
        size = 0
        name = art.kernel.replace(".", "_").replace(os.sep, "_") or "kernel"
        try:
            for stage, text in art.asm.items():
                ext = _EXT.get(stage)
                if ext is None:
                    continue
                fname = f"{name}.{ext}"
                _write_private(os.path.join(tmp, fname), text)
                files[stage] = [fname, _digest(text)]
                size += len(text)
            meta = {
                "format": FORMAT, "key": key, "tritonlens": __version__, "triton": self._triton,
                "kernel": art.kernel, "spec_key": art.spec_key, "target": art.target, "metadata": art.metadata,
                "resources": asdict(art.resources), "remarks": art.remarks, "compile_time": art.compile_time,
                "error": asdict(art.error) if art.error else None, "files": files,
            }
            _write_private(os.path.join(tmp, "meta.json"), json.dumps(meta))
            os.replace(tmp, folder)
        except OSError:  # another process stored the same key first: theirs is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
        art.paths = {stage: os.path.join(folder, fname) for stage, (fname, _) in files.items()}
        kept = {k: v for k, v in dict.items(art.asm) if k in _EXT}
        art.asm = LazyAsm(kept) if isinstance(art.asm, LazyAsm) else StageTexts(kept)
        self._account(size)
        return art

    def add_text(self, key: str, stage: str, text: str) -> str | None:
        """Add a stage made after the entry was stored — the SASS of a kept cubin, disassembled later — to the entry
        of `key`, so that the next read has it at once. The file is written beside the others and `meta.json`
        replaced in one step (a reader sees the entry with or without it, never half). Its path, or None when the
        entry is gone, already has the stage, or cannot be written."""
        ext = _EXT.get(stage)
        if ext is None or not self._ready():
            return None
        folder = self._dir(key)
        meta_file = os.path.join(folder, "meta.json")
        try:
            with open(meta_file, encoding="utf-8") as f:
                meta = json.load(f)
            files = meta.get("files") if isinstance(meta, dict) and meta.get("key") == key else None
            if not isinstance(files, dict) or stage in files or not files:
                return None
            stem = os.path.splitext(next(iter(files.values()))[0])[0]
            fname = f"{stem}.{ext}"
            tmp = os.path.join(folder, f".tmp-{os.getpid()}-{time.monotonic_ns()}")
            _write_private(tmp, text)
            os.replace(tmp, os.path.join(folder, fname))
            meta["files"] = {**files, stage: [fname, _digest(text)]}
            tmp = os.path.join(folder, f".tmp-{os.getpid()}-{time.monotonic_ns()}")
            _write_private(tmp, json.dumps(meta))
            os.replace(tmp, meta_file)
        except (OSError, ValueError, TypeError, IndexError):
            return None
        self._account(len(text))
        return os.path.join(folder, fname)

    def get_analysis(self, key: str, digest: str) -> tuple[dict, list] | None:
        """The (metrics, findings) stored with the entry of `key` for the analysis inputs `digest`
        (checks.analysis_digest), IR paths still marked (checks.place_ir_paths places them); None when there is none
        for these inputs or it does not read back whole."""
        if not self._ready():
            return None
        try:
            with open(os.path.join(self._dir(key), _ANALYSIS), encoding="utf-8") as f:
                stored = json.load(f)
            if not isinstance(stored, dict) or stored.get("digest") != f"{code_digest()}:{digest}":
                return None
            return analysis_from_wire(stored.get("analysis"))
        except (OSError, ValueError, TypeError, RecursionError):
            return None

    def put_analysis(self, key: str, digest: str, analysis: tuple[dict, list]) -> None:
        """Keep a compile's analysis with its entry, for the inputs `digest`, in place of an older one (one file,
        replaced in one step). Nothing when the entry is not stored (a transient failure) or cannot be written."""
        folder = self._dir(key)
        if not self._ready() or not os.path.isfile(os.path.join(folder, "meta.json")):
            return
        try:
            text = json.dumps({"digest": f"{code_digest()}:{digest}", "analysis": analysis_to_wire(analysis)},
                              separators=(",", ":"))
            tmp = os.path.join(folder, f".tmp-{os.getpid()}-{time.monotonic_ns()}")
            _write_private(tmp, text)
            os.replace(tmp, os.path.join(folder, _ANALYSIS))
        except (OSError, ValueError, TypeError):
            return
        self._account(len(text))

    # ------------------------------------------------------------ the size bound
    def _discard(self, folder: str) -> None:
        """Remove an entry so that no reader meets it half gone: rename it aside first (atomic), then delete."""
        trash = os.path.join(os.path.dirname(folder), f".trash-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.rename(folder, trash)
        except OSError:
            return  # gone already, or another process is on it
        shutil.rmtree(trash, ignore_errors=True)

    def _entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, folder) of every entry."""
        out = []
        base = os.path.join(self.root, "artifacts")
        try:
            shards = [e.path for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return out
        for shard in shards:
            try:
                entries = [e for e in os.scandir(shard) if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for e in entries:
                if e.name.startswith("."):  # another process's entry being written or removed; or a crash's
                    self._remove_stale(e.path)
                    continue
                try:
                    files = list(os.scandir(e.path))
                    size = sum(f.stat(follow_symlinks=False).st_size for f in files)
                    used = max((f.stat(follow_symlinks=False).st_mtime for f in files if f.name == "meta.json"),
                               default=0.0)  # no meta.json: unreadable, evicted first
                except OSError:
                    continue
                out.append((used, size, e.path))
        return out

    @staticmethod
    def _remove_stale(path: str, age: float = 3600.0) -> None:
        try:
            if time.time() - os.lstat(path).st_mtime > age:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass

    def _account(self, added: int) -> None:
        """Count what this process added; recount (other processes write too) and evict when over the bound, and
        every 64 stores anyway."""
        self._puts += 1
        if self._size is not None and self._puts % 64:
            self._size += added
            if self._size <= self.max_bytes:
                return
        self.evict()

    def evict(self) -> int:
        """Remove least recently used entries until the cache holds at most 90% of its bound; returns how many."""
        entries = self._entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        if total > self.max_bytes:
            for _, size, folder in sorted(entries):
                if total <= self.max_bytes * 0.9:
                    break
                self._discard(folder)
                total -= size
                removed += 1
        self._size = total
        return removed
