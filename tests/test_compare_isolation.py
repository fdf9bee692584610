"""`compare` from a checkout nobody vetted: the installer and the probes run nothing of it, and what is cached is
Triton.

A checkout's `pip/` once ran instead of pip (`python -m pip` in the current folder) and installed its own "triton",
accepted because only its `__version__` was checked, cached, and imported again by a later `compare` from a clean
checkout. Here the release folder starts poisoned that way, `compare` runs from a poisoned checkout (a `pip/` and a
`json.py` that each leave a marker), then from a clean one; with pip, and with uv where uv is on
PATH (envs.install_command picks uv first). The release is the wheel of the installed Triton's version, which the
package index here has (no new download)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tritonlens.compare import envs
from tritonlens.compiler.cache import triton_version

TRITONLENS = os.path.join(os.path.dirname(sys.executable), "tritonlens")
ADD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "vector_add.py")


def _marker(marks, name: str) -> str:
    """Code that leaves a marker outside the checkout (a confined process cannot: the sandbox refuses the write)."""
    return textwrap.dedent(f'''\
        import os
        try:
            with open(os.path.join({str(marks)!r}, "{name}-%d" % os.getpid()), "w") as f:
                f.write("ran")
        except OSError:
            pass
        ''')


def _poisoned_checkout(root, marks):
    """A checkout whose `pip` installs a fake triton into any --target and whose `json.py` runs on import (a
    `triton/` at its root would be imported by the compile workers too, confined, as `check` does: doctor says
    so)."""
    root.mkdir()
    (root / "pip").mkdir()
    (root / "pip" / "__init__.py").write_text("")
    (root / "pip" / "__main__.py").write_text(_marker(marks, "pip") + textwrap.dedent('''\
        import sys
        site = sys.argv[sys.argv.index("--target") + 1]
        os.makedirs(os.path.join(site, "triton"), exist_ok=True)
        with open(os.path.join(site, "triton", "__init__.py"), "w") as f:
            f.write("__version__ = %r\\n" % sys.argv[-1].split("==")[1])
        '''))
    (root / "json.py").write_text(_marker(marks, "json"))
    shutil.copy(ADD, root / "vector_add.py")


def _poisoned_cache(releases, marks, version: str) -> str:
    """What the old attack left in the release cache: a marked folder whose overlay's "triton" is a script."""
    folder = os.path.join(releases, f"triton-{version}-{envs.python_tag()}")
    os.makedirs(os.path.join(folder, "site", "triton"))
    with open(os.path.join(folder, "site", "triton", "__init__.py"), "w") as f:
        f.write(_marker(marks, "cached-triton") + f"__version__ = {version!r}\n")
    with open(os.path.join(folder, "release.json"), "w") as f:
        json.dump({"triton": version, "python_tag": envs.python_tag()}, f)
    return folder


def _path_without_uv() -> str:
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not os.path.exists(os.path.join(p, "uv")))


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_compare_from_a_poisoned_checkout_installs_and_caches_only_triton(tmp_path, installer):
    if installer == "uv" and not shutil.which("uv"):
        pytest.skip("uv is not on PATH")
    version = triton_version()
    marks = tmp_path / "marks"
    marks.mkdir()
    releases = tmp_path / "releases"
    folder = _poisoned_cache(str(releases), marks, version)
    checkout = tmp_path / "checkout"
    _poisoned_checkout(checkout, marks)
    env = {**os.environ, envs.RELEASES_ENV: str(releases), "TRITONLENS_CACHE_DIR": str(tmp_path / "cache")}
    if installer == "pip":
        env["PATH"] = _path_without_uv()

    def compare(cwd) -> subprocess.CompletedProcess:
        return subprocess.run([TRITONLENS, "compare", "vector_add.py", "--triton", version, "--target", "cuda:90",
                               "--format", "json"], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)

    done = compare(checkout)
    assert done.returncode in (0, 1), done.stderr
    assert sorted(os.listdir(marks)) == [], "ran: " + ", ".join(sorted(os.listdir(marks)))
    assert "does not hold triton" in done.stderr, done.stderr  # the poisoned entry was found out and made again
    site = os.path.join(folder, "site")
    assert envs.verify(site, version, imports=True) is None
    assert any(n.startswith("libtriton") for n in os.listdir(os.path.join(site, "triton", "_C")))
    # from a clean checkout: the cached release, verified again, compiles
    clean = tmp_path / "clean"
    clean.mkdir()
    shutil.copy(ADD, clean / "vector_add.py")
    again = compare(clean)
    assert again.returncode in (0, 1), again.stderr
    assert "making an environment" not in again.stderr, again.stderr
    report = json.loads(again.stdout)
    assert report["second"]["triton"] == version and report["specs"], again.stdout
    assert sorted(os.listdir(marks)) == [], "ran: " + ", ".join(sorted(os.listdir(marks)))


def test_a_cached_release_that_is_not_triton_is_discarded(tmp_path, monkeypatch):
    """The check itself, without an install: a marked folder whose overlay is not the wheel fails verification
    (and is what ensure_release makes again)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    folder = _poisoned_cache(str(tmp_path), marks, "3.6.0")
    why = envs.verify(os.path.join(folder, "site"), "3.6.0", imports=True)
    assert why and "dist-info" in why, why
    monkeypatch.setenv(envs.RELEASES_ENV, str(tmp_path))
    assert not envs._ready(folder, "3.6.0")
    assert sorted(os.listdir(marks)) == []
