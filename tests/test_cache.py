"""The artefact cache: atomic, private, never trusted when damaged, shared by processes at once, bounded in size."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from tritonlens.compiler.cache import ArtifactCache
from tritonlens.model import Artifacts, CompileError

from conftest import EXAMPLES

FILES = [os.path.join(EXAMPLES, "vector_add.py"), os.path.join(EXAMPLES, "bad", "vector_add_unaligned.py")]


def _art(kernel: str = "add_kernel", size: int = 1000) -> Artifacts:
    art = Artifacts(kernel=kernel, spec_key="s", target="cuda:90", metadata={"num_warps": 4}, remarks="r")
    art.asm = {"ttgir": "t" * size, "ptx": "p" * size, "cubin": "not stored"}
    return art


def _mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_entries_are_private_and_whole(tmp_path):
    cache = ArtifactCache(str(tmp_path / "c"))
    key = cache.key("text", "add_kernel", "spec")
    stored = cache.put(key, _art())
    assert set(stored.paths) == {"ttgir", "ptx"}
    folder = os.path.dirname(stored.paths["ptx"])
    assert _mode(os.path.join(str(tmp_path / "c"), "artifacts")) == 0o700 and _mode(folder) == 0o700
    assert all(_mode(os.path.join(folder, f)) == 0o600 for f in os.listdir(folder))
    assert not [n for n in os.listdir(os.path.dirname(folder)) if n.startswith(".")]  # no temp folder left
    hit = cache.get(key)
    assert hit.cached and hit.asm["ptx"] == "p" * 1000 and hit.metadata == {"num_warps": 4}
    # a transient failure is never stored
    failed = Artifacts(kernel="k", spec_key="s", target="cuda:90", error=CompileError("Timeout", "slow"))
    cache.put(cache.key("text", "k", "s"), failed)
    assert cache.get(cache.key("text", "k", "s")) is None


def _damage(folder: str, how: str) -> None:
    meta_path = os.path.join(folder, "meta.json")
    with open(meta_path) as f:
        meta = json.load(f)
    ptx = os.path.join(folder, meta["files"]["ptx"][0])
    if how == "truncated file":
        with open(ptx, "r+") as f:
            f.truncate(10)
    elif how == "truncated meta":
        with open(meta_path, "r+") as f:
            f.truncate(30)
    elif how == "garbage meta":
        with open(meta_path, "wb") as f:
            f.write(b"\xff\x00{{{")
    elif how == "missing file":
        os.remove(ptx)
    else:
        if how == "foreign format":
            meta["format"] = 99
        elif how == "foreign version":
            meta["tritonlens"] = "0.0.1"
        elif how == "file outside the entry":
            meta["files"]["ptx"][0] = "../../../../etc/passwd"
        elif how == "wrong types":
            meta["resources"] = {"registers": 1, "evil": 2}
        with open(meta_path, "w") as f:
            json.dump(meta, f)


@pytest.mark.parametrize("how", ["truncated file", "truncated meta", "garbage meta", "missing file", "foreign format",
                                 "foreign version", "file outside the entry", "wrong types"])
def test_a_damaged_entry_is_dropped_and_stored_again(tmp_path, how):
    cache = ArtifactCache(str(tmp_path))
    key = cache.key("text", "add_kernel", "spec")
    folder = os.path.dirname(cache.put(key, _art()).paths["ptx"])
    _damage(folder, how)
    assert cache.get(key) is None
    assert not os.path.exists(folder)  # removed, so the recompile's entry takes its place
    cache.put(key, _art())
    assert cache.get(key).asm["ptx"] == "p" * 1000


def test_least_recently_used_entries_are_evicted(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_bytes=5 * 2000 + 2000)  # room for about five entries
    keys = [cache.key(str(i), "k", "s") for i in range(12)]
    for i, key in enumerate(keys):
        cache.put(key, _art(f"k{i}"))
        cache.evict()  # the bound is checked on every store past it; here after each to see the order
        assert cache.get(keys[0]) is not None, f"the entry used all along was evicted at store {i}"
        time.sleep(0.02)
    alive = [i for i, key in enumerate(keys) if cache.get(key) is not None]
    assert 0 in alive and alive[-1] == 11 and 3 <= len(alive) <= 6, alive
    assert alive[1:] == list(range(12 - len(alive) + 1, 12))  # the rest: the newest ones
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path) for f in fs)
    assert total <= cache.max_bytes


def test_store_past_the_bound_evicts_by_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONLENS_CACHE_MAX_MB", "0.01")  # 10 KB
    cache = ArtifactCache(str(tmp_path))
    for i in range(20):
        cache.put(cache.key(str(i), "k", "s"), _art(f"k{i}"))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path) for f in fs)
    assert total <= 12 * 1024 and cache.get(cache.key("19", "k", "s")) is not None


def _findings(checker, paths):
    out = []
    for report in checker.check_files(paths):
        out.extend(f.to_json() for f in report.all_findings())
    return json.dumps(out, sort_keys=True, default=str)


def test_damaged_entries_of_real_compiles_are_recompiled(tmp_path, checker):
    from tritonlens.pipeline import Checker

    with Checker(checker.settings, service=checker.service, cache=ArtifactCache(str(tmp_path))) as c:
        first = _findings(c, FILES)
        assert "PTX001" in first
        folders = [d for d, _, fs in os.walk(tmp_path) if "meta.json" in fs]
        assert folders
        for n, folder in enumerate(folders):
            _damage(folder, ["truncated file", "garbage meta", "foreign version"][n % 3])
        assert _findings(c, FILES) == first
        assert len([d for d, _, fs in os.walk(tmp_path) if "meta.json" in fs]) == len(folders)
        assert _findings(c, FILES) == first  # and now from the cache


def _check_json(cache_dir: str) -> subprocess.Popen:
    env = dict(os.environ, TRITONLENS_CACHE_DIR=cache_dir)
    return subprocess.Popen([sys.executable, "-m", "tritonlens", "check", "--format", "json", "--target", "cuda:90",
                             "--workers", "1", *FILES], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)


def test_two_checks_sharing_a_cache_at_once_agree(tmp_path):
    cache_dir = str(tmp_path / "shared")
    runs = [_check_json(cache_dir), _check_json(cache_dir)]
    outs = [p.communicate(timeout=300) for p in runs]
    assert [p.returncode for p in runs] == [1, 1], [err[-2000:] for _, err in outs]
    a, b = (json.loads(out) for out, _ in outs)
    assert a == b and any(f["code"] == "PTX001" for f in a)
    again = _check_json(cache_dir)
    out, err = again.communicate(timeout=300)
    assert json.loads(out) == a, err[-2000:]
