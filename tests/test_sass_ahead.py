"""The SASS of a compile is made as its results arrive when the checker is asked to (the language server's: hovers
show SASS), not when a hover first reads it; a `check` leaves it to be made on demand. Real compiles for cuda:90 on
the CPU (nvdisasm from Triton's wheel), each test with its own artefact cache."""
import os
import shutil
import time

from conftest import EXAMPLES
from tritonlens.compiler.cache import ArtifactCache
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings


def _artifacts(checker, path):
    (kr,) = checker.check_file(path).kernels
    return kr.compiled[0].artifacts


def _wait(cond, timeout=60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_sass_is_made_ahead_and_kept_in_the_cache(tmp_path):
    path = str(tmp_path / "vector_add.py")
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), path)
    cache = ArtifactCache(str(tmp_path / "cache"))
    with Checker(Settings(target="cuda:90", max_workers=1), cache=cache) as lazy:
        art = _artifacts(lazy, path)
        assert art.asm.sass_pending  # a check: the cubin is kept, nothing disassembled unasked
        time.sleep(0.5)
        assert art.asm.sass_pending
    with Checker(Settings(target="cuda:90", max_workers=1), cache=cache, sass_ahead=True) as ahead:
        art = _artifacts(ahead, path)  # a cache hit of the same compile, its SASS still to be made
        assert art.cached
        # made in the background, without anything reading it, and its file added to the cache entry
        assert _wait(lambda: not art.asm.sass_pending and "sass" in art.paths), (art.asm.sass_pending, art.paths)
        assert dict.get(art.asm, "sass", "").count("//## File") > 0  # nvdisasm -g: line info for the hover
        with open(art.paths["sass"], encoding="utf-8") as f:
            assert f.read() == dict.get(art.asm, "sass")
    with Checker(Settings(target="cuda:90", max_workers=1), cache=cache) as later:
        art = _artifacts(later, path)
        assert art.cached and not art.asm.sass_pending and "sass" in art.paths  # read from the entry, not made
