"""One virtual GPU, the same answers from every door: fixture libraries (tests/data/virtual_gpu) that learn their
device at import — Triton's driver then torch, torch alone, a vendor runtime with nvidia-smi, an environment
variable — compile on this CPU machine (a CPU-only torch); a module that allocates on the device at import gets the
one SRC006 that says so; `--gpu` names the GPU the findings are for; `capture --no-gpu` runs a driver written for
`device="cuda"` and records the GPU it answered as. Nothing is mocked but the GPU itself: the answers are what
tritonlens installs in its workers, checked here from torch, Triton and the stand-in tools as a library sees them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tritonlens import cli
from tritonlens.device.limits import _CUDA, _HIP
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from tritonlens.device.targets import has_local_gpu
from tritonlens.device.virtual_gpu import GPUS, lookup
from conftest import evidence

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "data", "virtual_gpu")
BAD = os.path.join(os.path.dirname(HERE), "examples", "bad")

torch = pytest.importorskip("torch", reason="the fixture libraries import torch (pip install torch)")


def _lib(name: str) -> str:
    return os.path.join(FIXTURES, name, "kernels.py")


def _codes(report, code):
    return [f for f in report.all_findings() if f.code == code]


# ---------------------------------------------------------------- every door, one GPU
DOORS = r'''
import json, subprocess, sys
from tritonlens.device import answers as device_answers
from tritonlens.device.virtual_gpu import lookup
gpu = lookup(sys.argv[1])
device_answers.install(gpu)
import torch, triton
p = torch.cuda.get_device_properties(0)
target = triton.runtime.driver.active.get_current_target()
tool = "nvidia-smi" if gpu.is_cuda else "rocminfo"
args = [tool, "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader"] if gpu.is_cuda else [tool]
with torch.cuda.device(0):
    current = torch.cuda.current_device()
try:
    torch.empty(4, device="cuda")
    refused = None
except device_answers.DeviceUseRefused as exc:
    refused = str(exc)
print(json.dumps({
    "available": torch.cuda.is_available(), "count": torch.cuda.device_count(), "current": current,
    "name": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability()),
    "sms": p.multi_processor_count, "optin": p.shared_memory_per_block_optin, "total": p.total_memory,
    "mem_get_info": list(torch.cuda.mem_get_info()), "cuda": torch.version.cuda, "hip": torch.version.hip,
    "arch_list": torch.cuda.get_arch_list(), "backend": target.backend, "arch": target.arch,
    "driver_sms": triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"],
    "tool": subprocess.run(args, capture_output=True, text=True).stdout, "refused": refused}))
'''


@pytest.mark.parametrize("key", ["h100", "h200", "b200", "mi300x"])
def test_triton_torch_and_the_vendor_tool_answer_as_one_gpu(key):
    gpu = lookup(key)
    proc = subprocess.run([sys.executable, "-c", DOORS, key], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["available"] is True and got["count"] == 1 and got["current"] == 0
    assert got["name"] == gpu.name and tuple(got["capability"]) == gpu.capability
    assert got["sms"] == got["driver_sms"] == gpu.sms and got["optin"] == gpu.shared_per_block_optin
    assert got["mem_get_info"] == [gpu.memory_bytes, gpu.memory_bytes] == [got["total"]] * 2
    backend, _, arch = gpu.target.partition(":")
    assert got["backend"] == backend and str(got["arch"]) == arch
    if gpu.is_cuda:
        assert got["cuda"] and got["hip"] is None and got["arch_list"] == [f"sm_{arch}"]
        major, minor = gpu.capability
        assert got["tool"] == f"{gpu.name}, {major}.{minor}, {gpu.memory_mib} MiB\n"
    else:
        assert got["hip"] and got["cuda"] is None
        assert f"Name:                    {arch}" in got["tool"] and f"Marketing Name:          {gpu.name}" in \
            got["tool"] and f"Compute Unit:            {gpu.sms}" in got["tool"]
    # nothing is allocated on a device: the first tensor asked for there is refused, naming the line
    assert got["refused"].startswith("the module allocates on the device at import, at <string>:")


def test_nvidia_smi_stand_in_prints_what_the_real_tool_prints(tmp_path):
    from tritonlens.device.answers import put_tools_on_path

    env = {"PATH": os.environ.get("PATH", "")}
    folder = put_tools_on_path(lookup("h200"), env)
    assert env["PATH"].split(os.pathsep)[0] == folder

    def smi(*args):
        proc = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, env=env, timeout=60)
        return proc.returncode, proc.stdout + proc.stderr

    assert smi("-L") == (0, "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n")
    assert smi("--query-gpu=name,memory.total,compute_cap", "--format=csv") == (
        0, "name, memory.total [MiB], compute_cap\nNVIDIA H200, 143771 MiB, 9.0\n")
    assert smi("--query-gpu=memory.total,clocks.max.sm", "--format=csv,noheader,nounits") == (0, "143771, 1980\n")
    assert smi("--query-gpu=bogus", "--format=csv") == (2, 'Field "bogus" is not a valid field to query.\n')
    code, table = smi()
    assert code == 0 and "NVIDIA H200" in table and "0MiB / 143771MiB" in table


def test_rule_limits_agree_with_the_device_model():
    """RES001/RES002 keep per-arch limits (blocks per SM, register granule) but the sizes are the GPUs': every GPU
    of the table agrees with its arch's row."""
    for gpu in GPUS.values():
        backend, _, arch = gpu.target.partition(":")
        lim = _CUDA[int(arch)] if backend == "cuda" else _HIP[arch]
        assert (lim.shared_per_block, lim.shared_per_sm) == (gpu.shared_per_block_optin, gpu.shared_per_sm), gpu.key
        assert lim.max_warps == gpu.max_threads_per_sm // gpu.warp_size, gpu.key


# ---------------------------------------------------------------- fixture libraries, checked without a GPU
@pytest.mark.parametrize("lib", ["driver_probe", "torch_probe", "vendor_probe", "triton_probe"])
def test_a_library_that_asks_its_device_at_import_compiles(checker, lib):
    report = checker.check_file(_lib(lib))
    assert not _codes(report, "SRC006"), [f.message for f in _codes(report, "SRC006")]
    (kr,) = report.kernels
    assert kr.compiled and all(cs.artifacts.ok for cs in kr.compiled), [cs.artifacts.error for cs in kr.compiled]


@pytest.mark.skipif(has_local_gpu(), reason="a local GPU answers its own capability, whatever the target compiled for")
def test_module_constants_follow_the_gpu_of_the_target(checkers):
    """driver_probe's IS_HOPPER (Triton's backend, then torch's capability) is compiled into the kernel: the
    multiply it guards is in the IR for cuda:90 (H100) and not for cuda:80 (A100)."""
    def muls(target):
        report = checkers(target).check_file(_lib("driver_probe"))
        assert not _codes(report, "SRC006")
        (cs,) = report.kernels[0].compiled
        return cs.artifacts.asm["ttir"].count("arith.mulf")

    assert muls("cuda:90") == 1 and muls("cuda:80") == 0


def test_a_library_that_reads_its_device_from_the_environment(checker):
    report = checker.check_file(_lib("env_probe"))
    (f,) = _codes(report, "SRC006")
    assert f.line == 4 and "no device detected (ENVLIB_DEVICE='')" in f.message
    assert "`tritonlens.env` setting" in evidence(f) and "--env NAME=value" in evidence(f)
    with Checker(Settings(target="cuda:90", max_workers=1, env={"ENVLIB_DEVICE": "cuda"})) as given:
        report = given.check_file(_lib("env_probe"))
    assert not _codes(report, "SRC006") and report.kernels[0].compiled[0].artifacts.ok


def test_env_flag_gives_the_workers_the_variable(capsys):
    args = ["check", _lib("env_probe"), "--target", "cuda:90", "--workers", "1", "--format", "json"]
    cli.main(args + ["--env", "ENVLIB_DEVICE=hip"])
    assert not [f for f in json.loads(capsys.readouterr().out) if f["code"] == "SRC006"]
    assert cli.main(args + ["--env", "ENVLIB_DEVICE"]) == 2
    assert "expected NAME=VALUE, got 'ENVLIB_DEVICE'" in capsys.readouterr().err


def test_a_module_that_allocates_on_the_device_at_import_gets_one_src006_saying_so(checker):
    report = checker.check_file(_lib("allocates"))
    (f,) = _codes(report, "SRC006")
    assert f.line == 4 and f.severity == "warning"  # `from .buffers import WORKSPACE_BYTES`
    assert "DeviceUseRefused: the module allocates on the device at import, at " in evidence(f)
    assert "buffers.py:6: WORKSPACE = torch.empty(WORKSPACE_BYTES.value" in evidence(f)
    assert "nothing is allocated on a device or launched while tritonlens checks" in evidence(f)


# ---------------------------------------------------------------- the GPU the findings name
ROWS = '''import triton
import triton.language as tl


@triton.jit
def rows(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''


def _rows_workspace(tmp_path, target="cuda:90"):
    (tmp_path / "rows.py").write_text(ROWS)
    (tmp_path / ".tritonlens").mkdir()
    rec = {"version": 2, "path": "rows.py", "kernel": "rows", "signature": {"x_ptr": "*fp32", "n": "i32",
           "BLOCK": "constexpr"}, "constants": {"BLOCK": 1024}, "attrs": {"x_ptr": {"divisibility": 16}},
           "options": {"num_warps": 4, "num_stages": 3}, "target": target, "triton_version": "3.6.0",
           "launch": {"grid": [40], "args": {"n": {"value": 40 * 1024}}}}
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(rec) + "\n")
    return str(tmp_path / "rows.py")


@pytest.mark.skipif(has_local_gpu(), reason="the virtual GPU's names: with a local GPU the findings name it")
@pytest.mark.parametrize("gpu,target,head", [
    ("", "cuda:90", "40 programs on 132 SMs (H100 SXM, cuda:90): 92 SMs idle"),
    ("h200", "cuda:90", "40 programs on 132 SMs (H200, cuda:90): 92 SMs idle"),
    ("b200", "auto", "40 programs on 148 SMs (B200, cuda:100): 108 SMs idle"),
])
def test_grid_underfill_names_the_gpu(tmp_path, capsys, gpu, target, head):
    path = _rows_workspace(tmp_path, "cuda:100" if gpu == "b200" else "cuda:90")
    args = ["check", path, "--format", "json", "--workers", "1", "--target", target, "--select", "LAUNCH002"]
    assert cli.main(args + (["--gpu", gpu] if gpu else [])) == 0
    (f,) = json.loads(capsys.readouterr().out)
    assert f["details"][0].startswith(head), f["details"]  # the rule's account names the GPU and the target
    assert set(f) >= {"path", "line", "column", "end_line", "end_column", "code", "severity", "message", "kernel",
                      "config", "target"}


@pytest.mark.skipif(has_local_gpu(), reason="the virtual GPU's names: with a local GPU the findings name it")
@pytest.mark.parametrize("gpu,name", [("", "H100 SXM (sm_90)"), ("h200", "H200 (sm_90)")])
def test_shared_memory_limit_names_the_gpu(gpu, name):
    with Checker(Settings(target="cuda:90", max_workers=1, gpu=gpu)) as c:
        report = c.check_file(os.path.join(BAD, "matmul_big_shared.py"))
    (f,) = _codes(report, "RES001")
    assert f"; {name} allows 232448 B (227 KB)" in evidence(f) and f.data["gpu"] == (gpu or "h100")


def test_a_gpu_of_another_arch_than_the_target_is_a_usage_error(capsys):
    assert cli.main(["check", _lib("torch_probe"), "--gpu", "a100", "--target", "cuda:90"]) == 2
    assert "--gpu: GPU A100 80GB is cuda:80, not cuda:90" in capsys.readouterr().err
    assert cli.main(["check", _lib("torch_probe"), "--gpu", "x9000"]) == 2
    assert "unknown GPU 'x9000'" in capsys.readouterr().err


def test_the_text_report_names_the_gpu(capsys):
    assert cli.main(["check", _lib("torch_probe"), "--gpu", "h200", "--target", "cuda:90", "--workers", "1"]) in (0, 1)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("GPU: H200 (132 SMs), cuda:90 (virtual: the imports' device queries and the findings' "
                            "limits answer as it"), first


# ---------------------------------------------------------------- capture --no-gpu: a driver written for cuda
DRIVER = '''
import subprocess, sys, torch, triton
sys.path.insert(0, {fixtures!r})
from driver_probe.kernels import scale
from driver_probe.device import NAME, NUM_SMS
x = torch.randn(1 << 20, device="cuda")
y = torch.zeros(1 << 20).cuda().to("cuda:0")
assert x.device == torch.device("cuda", 0) and x.is_cuda and torch.cuda.is_available()  # CPU memory, cuda's name
assert not torch.empty(64, device="cuda").any()  # nothing fills it: zeros, so sizes read back from it are 0
scale(x)
scale(y[:1000])
smi = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
print("sees", NAME, NUM_SMS, smi.stdout.strip())
'''


@pytest.mark.parametrize("flags,gpu,target,sms", [((), "h100", "cuda:90", 132),
                                                   (("--gpu", "b200"), "b200", "cuda:100", 148)])
def test_no_gpu_capture_runs_a_cuda_driver_as_the_virtual_gpu(tmp_path, flags, gpu, target, sms):
    prog = tmp_path / "driver.py"
    prog.write_text(DRIVER.format(fixtures=FIXTURES))
    out = tmp_path / "c.jsonl"
    proc = subprocess.run([sys.executable, "-m", "tritonlens", "capture", "--no-gpu", *flags, "--workspace",
                           FIXTURES, "--output", str(out), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    name = lookup(gpu).name
    assert f"sees {name} {sms} {name}" in proc.stdout
    assert f"as the virtual {lookup(gpu).label()}" in proc.stderr
    recs = [json.loads(ln) for ln in out.read_text().splitlines() if ln.strip()]
    compiles = [r for r in recs if r.get("record", "compile") == "compile"]
    # one program per SM over 2**20 elements; 1000 elements: 16 blocks of BLOCK_LIST[0] = 64
    assert [r["launch"]["grid"] for r in compiles] == [[sms], [16]]
    assert all(r["gpu"] == gpu and r["target"] == target and r["no_gpu"] for r in recs)
