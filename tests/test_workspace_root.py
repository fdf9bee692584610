"""Where `.tritonlens/` (captures, baseline) is looked for: walking up from the files checked, up to the repository's
root (the folder holding `.git`) and never into the home folder: a stray `~/.tritonlens` must not take over every
project under home."""
import json
import os

import pytest

from tritonlens.pipeline import Checker, find_workspace_root
from tritonlens.settings import Settings

KERNEL = '''\
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, n=i32, BLOCK=256
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def _capture(folder, rel_path: str) -> None:
    """A capture of scale_kernel with BLOCK=1024 and fp16, in FOLDER/.tritonlens/captures.jsonl."""
    os.makedirs(folder / ".tritonlens", exist_ok=True)
    rec = {"version": 1, "path": rel_path, "kernel": "scale_kernel",
           "signature": {"x_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"}, "constants": {"BLOCK": 1024},
           "attrs": {"x_ptr": {"divisibility": 16}}, "options": {"num_warps": 4, "num_stages": 3},
           "target": "cuda:90", "triton_version": "3.6.0"}
    (folder / ".tritonlens" / "captures.jsonl").write_text(json.dumps(rec) + "\n")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_a_stray_capture_folder_in_home_is_not_found(home, checker):
    project = home / "proj"
    project.mkdir()
    path = project / "scale.py"
    path.write_text(KERNEL)
    _capture(home, "proj/scale.py")  # would match the file, were it looked for
    assert find_workspace_root(str(path)) != str(home)
    report = checker.check_file(str(path))
    [kr] = report.kernels
    assert [cs.spec.label.startswith("capture") for cs in kr.compiled] == [False]
    assert kr.compiled[0].spec.constants == {"BLOCK": 256} and kr.compiled[0].artifacts.ok


def test_the_search_stops_at_the_repository_root(home, checker):
    outer = home / "work"
    repo = outer / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / ".git").mkdir()
    path = repo / "pkg" / "scale.py"
    path.write_text(KERNEL)
    _capture(outer, "repo/pkg/scale.py")  # above the repository: not this project's
    assert find_workspace_root(str(path)) == str(repo)
    [kr] = checker.check_file(str(path)).kernels
    assert not [cs for cs in kr.compiled if cs.spec.label.startswith("capture")]
    # at the repository's root (or below it, in the file's own folder) the captures are found and compiled
    _capture(repo, "pkg/scale.py")
    assert find_workspace_root(str(path)) == str(repo)
    [kr] = checker.check_file(str(path)).kernels
    captured = [cs for cs in kr.compiled if cs.spec.label.startswith("capture")]
    assert [(cs.spec.constants, cs.spec.signature["x_ptr"]) for cs in captured] == [({"BLOCK": 1024}, "*fp16")]
    assert captured[0].artifacts.ok


def test_a_file_in_home_itself_and_outside_home(home, tmp_path):
    _capture(home, "scale.py")
    (home / "scale.py").write_text(KERNEL)
    assert find_workspace_root(str(home / "scale.py")) == str(home)  # checking home's own files: its own folder
    elsewhere = tmp_path / "elsewhere" / "deep"
    elsewhere.mkdir(parents=True)
    _capture(tmp_path / "elsewhere", "deep/scale.py")
    assert find_workspace_root(str(elsewhere / "scale.py")) == str(tmp_path / "elsewhere")
