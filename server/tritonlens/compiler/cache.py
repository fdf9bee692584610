"""The artefact cache: one folder per (module slice, kernel, spec, triton version), so an unchanged kernel and spec is
never compiled twice, and IR files exist on disk for editors to open ("jump to the PTX of this line")."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict

from .. import __version__
from ..model import Artifacts, CompileError, Resources

# Errors that say something about the machine or the moment, not the kernel: never cached. A LoadError is one too:
# the module failed to import because of what is installed (or of a module outside the file's tracked dependencies),
# and installing the missing package must make the next check compile, not replay the old failure.
_TRANSIENT = {"Timeout", "WorkerCrash", "Cancelled", "InternalError", "LoadError"}
_EXT = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "sass": "sass", "amdgcn": "amdgcn"}


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


def triton_version() -> str:
    try:
        from importlib.metadata import version

        return version("triton")
    except Exception:  # noqa: BLE001
        return "unknown"


class ArtifactCache:
    def __init__(self, root: str | None = None) -> None:
        self.root = root or default_cache_dir()
        self._triton = triton_version()

    def key(self, module_text: str, qualname: str, spec_key: str) -> str:
        h = hashlib.sha256()
        for part in (__version__, self._triton, qualname, spec_key, module_text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:32]

    def _dir(self, key: str) -> str:
        return os.path.join(self.root, "artifacts", key[:2], key)

    def get(self, key: str) -> Artifacts | None:
        folder = self._dir(key)
        meta_path = os.path.join(folder, "meta.json")
        try:
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
            art = Artifacts(
                kernel=meta["kernel"], spec_key=meta["spec_key"], target=meta["target"],
                metadata=meta.get("metadata", {}), resources=Resources(**meta.get("resources", {})),
                remarks=meta.get("remarks", ""), compile_time=meta.get("compile_time", 0.0), cached=True,
                error=CompileError(**meta["error"]) if meta.get("error") else None,
            )
            for stage, fname in meta.get("files", {}).items():
                p = os.path.join(folder, fname)
                with open(p, encoding="utf-8") as f:
                    art.asm[stage] = f.read()
                art.paths[stage] = p
            return art
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, art: Artifacts) -> Artifacts:
        """Store and fill `art.paths`. Transient failures are not stored."""
        if art.error is not None and art.error.kind in _TRANSIENT:
            return art
        folder = self._dir(key)
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        tmp = tempfile.mkdtemp(dir=os.path.dirname(folder), prefix=".tmp-")
        files = {}
        name = art.kernel.replace(".", "_") or "kernel"
        for stage, text in art.asm.items():
            ext = _EXT.get(stage)
            if ext is None:
                continue
            fname = f"{name}.{ext}"
            with open(os.path.join(tmp, fname), "w", encoding="utf-8") as f:
                f.write(text)
            files[stage] = fname
        meta = {
            "kernel": art.kernel, "spec_key": art.spec_key, "target": art.target, "metadata": art.metadata,
            "resources": asdict(art.resources), "remarks": art.remarks, "compile_time": art.compile_time,
            "error": asdict(art.error) if art.error else None, "files": files,
        }
        with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process stored the same key first: theirs is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
        art.paths = {stage: os.path.join(folder, fname) for stage, fname in files.items()}
        art.asm = {k: v for k, v in art.asm.items() if k in _EXT}
        return art
