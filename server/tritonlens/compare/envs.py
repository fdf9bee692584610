"""Another Triton release beside the installed one: an interpreter whose `import triton` is that release.

A release made on demand is an overlay, not a whole environment: `pip install --target` puts only the `triton` wheel
(it has no dependencies) into `<releases>/triton-<version>-<python tag>/site`, and a small launcher runs *this*
interpreter with that folder first on `PYTHONPATH`. Everything else the kernels' modules import (torch, numpy, the
project's own packages) is the user's own, as under the installed release, so the two sides differ in the compiler
only. The launcher is named after the interpreter it runs, so one folder serves every virtual environment that uses
it (a fresh CI environment per run included); the wheel is downloaded once.

`<releases>` is `TRITONLENS_RELEASES_DIR`, else `releases/` in tritonlens's cache folder. An interpreter the user
names (`--python`) is used as it is: its triton is the other release.

A checkout is no place to run an installer or a probe from: `python -m pip` in it runs its `pip/`, `python -c "import
triton"` its `triton/` and `json.py`. The installer (pip, or uv) and the probes run isolated (`python -I`; uv with
`--no-config`) in a folder of their own, take the wheel from the package index alone (a requirement by name, wheels
only: nothing is built), and what they installed is verified as Triton before it is cached — and again whenever the
cache is used (`verify`): the wheel's own metadata names triton at that version, its RECORD lists the compiler
library, which is there, and the overlay imports that triton with a `compile`. An entry that fails is discarded and
made again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from ..compiler.cache import default_cache_dir, triton_version

RELEASES_ENV = "TRITONLENS_RELEASES_DIR"
_VERSION = re.compile(r"^\d+(\.\d+){1,3}([a-z]+\d*)?(\.post\d+|\.dev\d+)?$")
_MARKER = "release.json"  # written last: a folder without it is half made and is made again
SITE_ENV = "TRITONLENS_TRITON_SITE"  # a release's overlay, put first on the probe's import path (under -I)
# run isolated (-I): neither the working directory nor PYTHONPATH is on its path, only the interpreter's own
# packages and a release's overlay (SITE_ENV, set by the launcher)
_PROBE = ("import os, sys; d = os.environ.get('TRITONLENS_TRITON_SITE'); d and sys.path.insert(0, d); "
          "import json, triton, triton.language; print(json.dumps({'triton': triton.__version__, "
          "'python': '%d.%d.%d' % sys.version_info[:3], 'file': triton.__file__, "
          "'compile': callable(getattr(triton, 'compile', None))}))")


class ReleaseError(RuntimeError):
    """The other release cannot be used (not on the index, no network, an interpreter without triton)."""


@dataclass(frozen=True)
class Release:
    """An interpreter whose workers compile with one Triton release."""

    python: str  # the executable the compile workers run
    triton: str  # its triton version
    origin: str  # "installed" (this interpreter), "release" (made on demand), "python" (the user's interpreter)
    folder: str | None = None  # a release made on demand: where it lives

    @property
    def label(self) -> str:
        return f"triton {self.triton}" if self.origin != "python" else f"triton {self.triton} ({self.python})"

    @property
    def slug(self) -> str:
        """A folder name for what this release compiles (its own artefact cache)."""
        tail = hashlib.sha256(os.path.abspath(self.python).encode()).hexdigest()[:8]
        return f"triton-{self.triton}-{tail}"


def releases_dir() -> str:
    return os.environ.get(RELEASES_ENV) or os.path.join(default_cache_dir(), "releases")


def installed() -> Release:
    return Release(sys.executable, triton_version(), "installed")


def python_tag() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}-{platform.system().lower()}-{platform.machine()}"


def release_folder(version: str) -> str:
    return os.path.join(releases_dir(), f"triton-{version}-{python_tag()}")


def check_version(version: str) -> str:
    version = version.strip()
    if not _VERSION.match(version):
        raise ReleaseError(f"{version!r} is not a Triton release number (e.g. 3.7.1)")
    return version


def ensure_release(version: str, say: Callable[[str], None] = lambda _m: None) -> tuple[Release, float]:
    """The release `version` for this interpreter, made when missing; (release, seconds spent making it: 0 when it
    was there). Safe against a second process making the same release at once (a lock beside the folder)."""
    version = check_version(version)
    folder = release_folder(version)
    site = os.path.join(folder, "site")
    started = time.perf_counter()
    made = 0.0
    if not _ready(folder, version):
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        with _locked(folder + ".lock"):
            if not _ready(folder, version):
                if os.path.exists(os.path.join(folder, _MARKER)):
                    say(f"{folder} does not hold triton {version} ({verify(site, version)}): made again")
                say(f"making an environment with triton {version} in {folder} (once; reused afterwards)")
                _install(version, folder)
                made = time.perf_counter() - started
    why = verify(site, version, imports=True)
    if why:
        raise ReleaseError(f"{folder}: {why}; remove the folder to make it again")
    return Release(_launcher(folder, site), version, "release", folder), made


def from_python(path: str) -> Release:
    """The user's interpreter as the other side: whatever triton it imports."""
    exe = shutil.which(path) or path
    if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise ReleaseError(f"--python {path}: no such interpreter")
    info = probe(exe)
    return Release(os.path.abspath(exe), str(info.get("triton")), "python")


def probe(python: str, timeout: float = 180.0, site: str | None = None) -> dict:
    """What `python` imports as triton — with `site` (a release's overlay) first: {"triton", "python", "file",
    "compile"}. Run isolated, in the temporary folder: nothing of the current folder or PYTHONPATH runs."""
    env = {**os.environ, SITE_ENV: site} if site else None
    try:
        out = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, cwd=tempfile.gettempdir(), env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ReleaseError(f"{python}: cannot run it ({exc})") from None
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReleaseError(f"{python}: cannot import triton ({tail})")
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ReleaseError(f"{python}: unexpected answer to the triton probe: {out.stdout[-200:]!r}") from None


# ---------------------------------------------------------------- making one
def _ready(folder: str, version: str) -> bool:
    try:
        with open(os.path.join(folder, _MARKER), encoding="utf-8") as f:
            marked = json.load(f).get("triton") == version
    except (OSError, ValueError, AttributeError):
        return False
    return marked and verify(os.path.join(folder, "site"), version) is None


def verify(site: str, version: str, imports: bool = False) -> str | None:
    """Why `site` does not hold the Triton wheel `version`, or None: its dist-info's METADATA names triton at that
    version, its RECORD lists the compiler library (`triton/_C/libtriton*.so`), which is there; with `imports`, an
    isolated interpreter imports that triton from `site`, at that version, with a `compile`."""
    dist = os.path.join(site, f"triton-{version}.dist-info")
    try:
        with open(os.path.join(dist, "METADATA"), encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
        with open(os.path.join(dist, "RECORD"), encoding="utf-8", errors="replace") as f:
            record = [line.split(",", 1)[0] for line in f.read(1 << 22).splitlines()]
    except OSError:
        return f"no triton-{version}.dist-info with its METADATA and RECORD"
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    if fields.get("Name", "").lower() != "triton" or fields.get("Version") != version:
        return f"its metadata names {fields.get('Name')} {fields.get('Version')}, not triton {version}"
    libraries = [p for p in record if re.fullmatch(r"triton/_C/libtriton[^/]*\.so", p)]
    if not libraries or not all(os.path.isfile(os.path.join(site, p)) for p in libraries):
        return "the compiler library (triton/_C/libtriton*.so) is missing"
    if imports:
        info = probe(sys.executable, site=site)
        where = os.path.realpath(str(info.get("file")))
        if info.get("triton") != version or not where.startswith(os.path.realpath(site) + os.sep) \
                or not info.get("compile"):
            return f"the overlay imports triton {info.get('triton')} from {info.get('file')}, not {version} from it"
    return None


def _install(version: str, folder: str) -> None:
    """The wheel into a scratch folder beside `folder`, moved into place in one step once it imports."""
    parent = os.path.dirname(folder)
    scratch = tempfile.mkdtemp(prefix=".making-", dir=parent)
    try:
        site = os.path.join(scratch, "site")
        work = os.path.join(scratch, "work")  # the installer's working directory: empty, not the checkout
        os.makedirs(work)
        out = subprocess.run(install_command(version, site), capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=1800, cwd=work)
        if out.returncode != 0:
            tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-4:])
            raise ReleaseError(f"could not install triton {version} "
                               f"({' '.join(install_command(version, site)[:3])} ...):\n{tail}")
        shutil.rmtree(work, ignore_errors=True)
        why = verify(site, version, imports=True)
        if why:
            raise ReleaseError(f"installed triton {version}, but {why}")
        with open(os.path.join(scratch, _MARKER), "w", encoding="utf-8") as f:
            json.dump({"triton": version, "python_tag": python_tag()}, f)
        for name in os.listdir(scratch):
            if name.startswith("python-"):
                os.remove(os.path.join(scratch, name))  # launchers name their folder: made again in place
        if os.path.isdir(folder):
            shutil.rmtree(folder)  # a half-made one (no marker)
        os.rename(scratch, folder)
    finally:
        if os.path.isdir(scratch):
            shutil.rmtree(scratch, ignore_errors=True)


def install_command(version: str, site: str) -> list[str]:
    """The installer's command: the Triton wheel `version`, by name from the package index (no local path, no
    source build), into `site`. uv when it is on PATH (without a project's configuration), else this interpreter's
    pip, isolated."""
    requirement = f"triton=={version}"
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip", "install", "--quiet", "--no-config", "--no-deps", "--only-binary", ":all:", "--python",
                sys.executable, "--target", site, requirement]
    return [sys.executable, "-I", "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--only-binary",
            ":all:", "--disable-pip-version-check", "--target", site, requirement]


def _launcher(folder: str, site: str) -> str:
    """`folder/python-<hash of this interpreter>`: runs this interpreter with `site` ahead of its own packages.
    Written when missing or stale, by rename, so that a reader never sees half of it."""
    exe = sys.executable
    tag = hashlib.sha256(os.path.abspath(exe).encode()).hexdigest()[:10]
    path = os.path.join(folder, f"python-{tag}")
    text = ("#!/bin/sh\n"
            f"# {exe} with the Triton release in {site} ahead of its own packages (tritonlens compare)\n"
            f"{SITE_ENV}={_sh(site)} PYTHONPATH={_sh(site)}${{PYTHONPATH:+:$PYTHONPATH}} exec {_sh(exe)} \"$@\"\n")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=".launcher-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: no lock; two makers at once each make their own scratch folder
        yield
        return
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
