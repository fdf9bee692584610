"""On a real NVIDIA GPU: capture a torch launch, then profile the captured launch with ncu. Skipped without one."""
import json
import os
import subprocess
import sys

import pytest

from tritonlens.frontend.captures import fold_captures
from tritonlens.gpu.profile import can_profile, profile_kernel
from tritonlens.device.targets import has_local_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")]

PROGRAM = """
import sys, torch
sys.path.insert(0, {examples!r})
import vector_add
x = torch.rand(4096 + 3, device="cuda")
vector_add.add(x, x)
"""


def _capture(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(examples=os.path.join(ROOT, "examples")))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"))
    rc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", ROOT, "--output",
                         str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)], env=env).returncode
    assert rc == 0
    # A compile line and, at exit, its count record (version 2): folded as check reads them.
    return fold_captures([json.loads(line) for line in (tmp_path / "captures.jsonl").read_text().splitlines()])


def test_capture_records_the_launch(tmp_path):
    (cap,) = _capture(tmp_path)
    assert cap["path"] == "examples/vector_add.py" and cap["kernel"] == "add_kernel"
    assert cap["signature"]["n_elements"] == "i32" and "n_elements" not in cap["attrs"]  # 4099 is not % 16
    assert cap["launch"]["grid"] == [5] and cap["launch"]["args"]["x_ptr"]["tensor"]["shape"] == [4099]
    assert cap["launches"] == 1 and cap["autotune"] is None


@pytest.mark.skipif(not can_profile()[0], reason="needs ncu")
def test_profile_replays_the_capture(tmp_path):
    _capture(tmp_path)
    result = profile_kernel(os.path.join(ROOT, "examples", "vector_add.py"), "add_kernel", workspace_root=ROOT,
                            captures_file=str(tmp_path / "captures.jsonl"))
    assert result.ok, result.error
    assert result.metrics["duration_ns"] > 0 and result.metrics["local_loads"] == 0


def test_baseline_save_profile_keeps_ncu_metrics(tmp_path):
    """`baseline save --profile` on the GPU machine: each kernel's captured launch measured by ncu, in the baseline."""
    import shutil

    if not can_profile()[0]:
        pytest.skip("needs ncu")
    shutil.copy(os.path.join(ROOT, "examples", "vector_add.py"), tmp_path / "vector_add.py")
    (tmp_path / ".git").mkdir()
    prog = tmp_path / "prog.py"
    prog.write_text("import sys, torch\nsys.path.insert(0, %r)\nimport vector_add\n"
                    "x = torch.rand(4096 + 3, device='cuda')\nvector_add.add(x, x)\n" % str(tmp_path))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "server"))
    assert subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", str(tmp_path), "--",
                           sys.executable, str(prog)], env=env).returncode == 0
    assert subprocess.run([sys.executable, "-m", "tritonlens.cli", "baseline", "save", "--profile",
                           str(tmp_path / "vector_add.py")], env=env, cwd=tmp_path).returncode == 0
    data = json.loads((tmp_path / ".tritonlens" / "baseline.json").read_text())
    ncu = data["files"]["vector_add.py"]["kernels"]["add_kernel"]["ncu"]
    assert ncu["metrics"]["duration_ns"] > 0 and "local_loads" in ncu["metrics"]
