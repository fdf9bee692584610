"""`tritonlens capture --no-gpu`: launches recorded on this CPU machine, with Triton's own specialization for cuda:90,
compared with what an H200 recorded for the same calls; the autotuner's trials; what needs a GPU is said; the
capture file under 16 concurrent writers and hostile content. Nothing is mocked: the programs run with torch CPU
tensors and the real Triton, whose launch path --no-gpu replaces. One test (marked gpu) replays on a GPU what such a
capture recorded there.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import missing, require_module

from tritonlens.device.targets import has_local_gpu
from tritonlens.gpu import capture
from tritonlens.frontend.captures import MAX_LINE, fold_captures, load_captures
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "examples")
CORPUS = os.environ.get("TRITONLENS_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus")
LIGER = os.path.join(CORPUS, "liger-kernel")

torch = require_module("torch", "the drivers make torch CPU tensors (pip install -e '.[test]')")


def _capture(tmp_path, program: str, *flags: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    prog = tmp_path / "driver.py"
    prog.write_text(program)
    return subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--no-gpu", *flags, "--workspace",
                           str(cwd or ROOT), "--output", str(tmp_path / "c.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def _records(tmp_path, record="compile"):
    lines = [json.loads(ln) for ln in (tmp_path / "c.jsonl").read_text().splitlines() if ln.strip()]
    return [c for c in lines if c.get("record", "compile") == record]


VECTOR_ADD = f'''
import sys, torch
sys.path.insert(0, {EXAMPLES!r})
import vector_add
x, y = torch.rand(98432), torch.rand(98432)
for _ in range(3):
    out = vector_add.add(x, y)
vector_add.add(torch.rand(1000)[1:], torch.rand(999))  # an unaligned pointer and n % 16 != 0: another compile
print("outputs untouched:", bool((out == 0).all() or True))
'''


def test_no_gpu_capture_records_launches_without_running_them(tmp_path):
    proc = _capture(tmp_path, VECTOR_ADD)
    assert proc.returncode == 0, proc.stderr
    assert "specialized for cuda:90 without a GPU, as the virtual H100 SXM (132 SMs); the kernels were not run" \
        in proc.stderr
    aligned, unaligned = _records(tmp_path)
    assert aligned["version"] == 2 and aligned["no_gpu"] is True and aligned["target"] == "cuda:90"
    assert aligned["gpu"] == "h100"  # the GPU the run answered as
    assert aligned["path"] == "examples/vector_add.py" and aligned["constants"] == {"BLOCK_SIZE": 1024}
    assert aligned["attrs"] == {"x_ptr": {"divisibility": 16}, "y_ptr": {"divisibility": 16},
                                "out_ptr": {"divisibility": 16}, "n_elements": {"divisibility": 16}}
    assert aligned["options"]["num_warps"] == 4 and aligned["launch"]["grid"] == [97]
    assert "x_ptr" not in unaligned["attrs"] and "n_elements" not in unaligned["attrs"]  # as Triton specializes them
    counts: dict = {}  # summary lines of one compile add up (readers sum them)
    for s in _records(tmp_path, "summary"):
        key = json.dumps(s["attrs"], sort_keys=True)
        counts[key] = counts.get(key, 0) + s["launches"]
    assert sorted(counts.values()) == [1, 3]
    caps, problems = load_captures(ROOT, os.path.join(EXAMPLES, "vector_add.py"), str(tmp_path / "c.jsonl"))
    assert not problems
    assert sorted(c["launches"] for c in caps) == [1, 3]  # folded: one capture per compile
    assert fold_captures(caps) == caps  # folding again changes nothing


def test_check_compiles_the_spec_a_no_gpu_capture_recorded(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".tritonlens").mkdir(parents=True)
    shutil.copy(os.path.join(EXAMPLES, "vector_add.py"), ws / "vector_add.py")
    program = VECTOR_ADD.replace(repr(EXAMPLES), repr(str(ws))).replace("\nvector_add.add(torch.rand(1000)", "\n#")
    proc = _capture(tmp_path, program, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    shutil.copy(tmp_path / "c.jsonl", ws / ".tritonlens" / "captures.jsonl")
    with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
        report = checker.check_file(str(ws / "vector_add.py"))
    (kr,) = report.kernels
    (cs,) = kr.compiled
    assert cs.spec.label == "capture 1" and cs.artifacts.ok
    assert cs.spec.describe() == "cuda:90, num_warps=4, num_stages=3, BLOCK_SIZE=1024, n_elements=i32%16"


AUTOTUNED = '''
import torch, triton, triton.language as tl

def prune(configs, nargs, **kw):  # Triton calls this with the launch's arguments
    return [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]

@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 1), (128, 2), (4096, 8))],
                 key=["n"], prune_configs_by={"early_config_prune": prune})
@triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"])
@triton.jit
def one_config(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

x = torch.zeros(1000)
for _ in range(2):
    scale[lambda m: (triton.cdiv(1000, m["BLOCK"]),)](x, 1000)
    one_config[lambda m: (triton.cdiv(1000, m["BLOCK"]),)](x, 1000)
'''


def test_autotuned_launches_record_every_pruned_config_as_a_trial(tmp_path):
    proc = _capture(tmp_path, AUTOTUNED)
    assert proc.returncode == 0, proc.stderr
    recs = _records(tmp_path)
    trials = [r for r in recs if r["kernel"] == "scale"]
    # BLOCK=4096 is pruned by early_config_prune as Triton prunes it; the heuristic EVEN is applied per config
    assert sorted((r["constants"]["BLOCK"], r["constants"]["EVEN"], r["options"]["num_warps"]) for r in trials) == [
        (64, False, 1), (128, False, 2)]
    assert all(r["autotune"] == "trial" for r in trials)
    (single,) = [r for r in recs if r["kernel"] == "one_config"]
    assert single["autotune"] == "chosen"  # the only config: no GPU is needed to know the choice
    caps, _ = load_captures(ROOT, None, str(tmp_path / "c.jsonl"))
    folded = {(c["kernel"], c["constants"]["BLOCK"]): c for c in caps}
    assert folded[("one_config", 256)]["launches"] == 2 and folded[("one_config", 256)]["autotune"] == "chosen"
    # which of the two trials the H200 would pick is not known here: neither is chosen, neither counted
    assert [folded[("scale", b)]["autotune"] for b in (64, 128)] == ["trial", "trial"]
    assert [folded[("scale", b)]["launches"] for b in (64, 128)] == [0, 0]


def test_a_program_that_needs_torch_cuda_stops_naming_the_call(tmp_path):
    # a tensor asked for on the device is made on the CPU; the CUDA RNG's state exists only on a GPU
    program = VECTOR_ADD + ("\nw = torch.ones(4, device='cuda')\nstate = torch.cuda.get_rng_state()  # the GPU-only "
                            "line\nprint('not reached')\n")
    proc = _capture(tmp_path, program)
    assert proc.returncode == 1 and "not reached" not in proc.stdout
    line = program.splitlines().index("state = torch.cuda.get_rng_state()  # the GPU-only line") + 1
    assert f"{tmp_path / 'driver.py'}:{line}: state = torch.cuda.get_rng_state()" in proc.stderr
    assert "capture on a GPU machine without --no-gpu, run the kernels in Triton's interpreter" in proc.stderr
    assert len(_records(tmp_path)) == 2  # what was recorded before it is kept


def test_interpret_runs_the_kernels_and_records_them(tmp_path):
    program = VECTOR_ADD.replace('print("outputs untouched:", bool((out == 0).all() or True))',
                                 'print("max error", float((out - (x + y)).abs().max()))')
    proc = _capture(tmp_path, program, "--interpret")
    assert proc.returncode == 0, proc.stderr
    assert "max error 0.0" in proc.stdout and "ran in Triton's interpreter" in proc.stderr
    assert [r["attrs"].get("n_elements") for r in _records(tmp_path)] == [{"divisibility": 16}, None]


def test_interpret_says_when_the_interpreter_fails(tmp_path):
    program = ("import torch, triton, triton.language as tl\n@triton.jit\ndef k(x_ptr):\n"
               "    tl.store(x_ptr + tl.arange(0, 4), tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', "
               "[tl.load(x_ptr + tl.arange(0, 4))], dtype=tl.int32, is_pure=True, pack=1))\n"
               "k[(1,)](torch.zeros(4, dtype=torch.int32))\n")
    proc = _capture(tmp_path, program, "--interpret")
    assert proc.returncode != 0
    assert "failed under Triton's interpreter" in proc.stderr and "recorded before the failure are kept" in proc.stderr
    assert len(_records(tmp_path)) == 1


def test_target_and_interpret_need_no_gpu(capsys):
    assert capture.main(["--target", "cuda:80", "--", "true"]) == 2
    assert capture.main(["--no-gpu", "--target", "cuda:x", "--", "true"]) == 2
    assert "bad CUDA target" in capsys.readouterr().err


# ---------------------------------------------------------------- the real corpus: Liger-Kernel, H200 captures
def test_no_gpu_capture_of_liger_equals_the_h200_capture(tmp_path):
    if not os.path.isdir(os.path.join(LIGER, "src", "liger_kernel")):
        missing("corpus", f"the real-code corpus is not beside this checkout ({os.path.normpath(LIGER)}; "
                          f"set TRITONLENS_CORPUS)")
    src = tmp_path / "liger" / "src"
    shutil.copytree(os.path.join(LIGER, "src"), src)  # the corpus may be read-only
    env = dict(os.environ, PYTHONPATH=str(src))
    program = open(os.path.join(HERE, "data", "liger_cpu_driver.py")).read()
    proc = _capture(tmp_path, program, cwd=src, env=env)
    assert proc.returncode == 0, proc.stderr

    def geometry(c):  # which call it was: kernel, tensor shapes/dtypes, the mode constexprs
        tensors = {k: (v["tensor"]["shape"], v["tensor"]["dtype"]) for k, v in c["launch"]["args"].items()
                   if "tensor" in v}
        return c["kernel"], json.dumps(tensors, sort_keys=True), json.dumps(
            [c["constants"].get(k) for k in ("casting_mode", "elementwise_affine")])

    def spec(c):
        return json.dumps([c["signature"], c["constants"], c["attrs"], c["options"]["num_warps"],
                           c["options"]["num_stages"]], sort_keys=True)

    h200: dict = {}
    with open(src / ".tritonlens" / "captures.jsonl") as f:
        for line in f:
            cap = json.loads(line)
            h200.setdefault(geometry(cap), []).append(spec(cap))
    equal, differ = [], []
    for rec in _records(tmp_path):
        assert rec["no_gpu"] and rec["target"] == "cuda:90"
        if geometry(rec) in h200:
            (equal if spec(rec) in h200[geometry(rec)] else differ).append(rec)
    kernels = {r["kernel"] for r in equal}
    assert kernels == {"_rms_norm_forward_kernel", "_rms_norm_backward_kernel", "_swiglu_forward_kernel",
                       "_swiglu_backward_kernel"}
    # RMSNorm's backward splits rows over torch.cuda's SM count when its tensors are on "cuda": the virtual H100
    # answers 132 SMs, as the H200 did, and the CPU tensors of --no-gpu say they are on cuda:0, so rows_per_program
    # is the GPU's (ceil(rows / 132)): every spec the H200 recorded for these calls is reproduced (before the
    # virtual GPU, 7 of them differed in exactly that value)
    assert len(equal) == 44 and not differ, (len(equal), [(r["kernel"], r["constants"]) for r in differ])
    for r in equal:
        if r["kernel"] == "_rms_norm_backward_kernel":
            args = r["launch"]["args"]
            assert args["rows_per_program"]["value"] == -(-args["n_rows"]["value"] // 132), args


# ---------------------------------------------------------------- the file: concurrent writers, hostile content
WRITER = '''
import sys
from tritonlens.gpu.capture import CaptureWriter
w = CaptureWriter(sys.argv[1])
me = int(sys.argv[2])
for i in range(40):
    rec = {"version": 2, "path": "k.py", "kernel": "k", "signature": {"x": "*fp32", "n": "i32"},
           "constants": {"BLOCK": 1000 * me + i}, "attrs": {}, "options": {"num_warps": 4}, "target": "cuda:90",
           "launch": {"grid": [1], "args": {"pad": {"value": "x" * (9000 if i % 7 == 0 else 10)}}}}
    w.append(rec)
    w.append(dict(rec, constants={"BLOCK": i}))  # the same compile in every process: written once in all
    w.append_records([dict(rec, record="summary", launches=1)])
'''


def test_sixteen_processes_append_without_losing_or_splitting_a_line(tmp_path):
    file = tmp_path / "c.jsonl"
    file.write_text('{"version": 2, "path": "half')  # a half line left by a killed process
    prog = tmp_path / "writer.py"
    prog.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(prog), str(file), str(n)]) for n in range(1, 17)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    lines = file.read_text().splitlines()
    assert lines[0] == '{"version": 2, "path": "half'  # spoils only itself
    recs = [json.loads(ln) for ln in lines[1:]]  # every other line is whole JSON (9 KB lines included)
    compiles = [r for r in recs if r.get("record") != "summary"]
    summaries = [r for r in recs if r.get("record") == "summary"]
    assert len(summaries) == 16 * 40
    assert sorted(r["constants"]["BLOCK"] for r in compiles) == sorted(
        [1000 * me + i for me in range(1, 17) for i in range(40)] + list(range(40)))
    caps, problems = load_captures(str(tmp_path), None, str(file))
    assert len(problems) == 1 and ":1: not JSON" in problems[0]
    counted = {c["constants"]["BLOCK"]: c["launches"] for c in caps}
    assert sum(counted[1000 * me + i] for me in range(1, 17) for i in range(40)) == 16 * 40  # summed counts
    assert [counted[i] for i in range(40)] == [1] * 40  # no count line: a line with a launch counts once


def test_hostile_capture_file_is_read_as_bounded_data_and_reported_per_line(tmp_path):
    good = {"version": 2, "path": "k.py", "kernel": "k", "signature": {"x": "*fp32"}, "constants": {},
            "attrs": {}, "options": {"num_warps": 4}, "future_field": {"anything": [1, 2]}}
    bad = [
        "[" * 100000 + "]" * 100000,  # nesting deeper than the parser goes
        '{"version": 2, "launches": ' + "9" * 5000 + "}",  # an integer with more digits than Python parses
        json.dumps(dict(good, launches=10 ** 30)),  # a count no run makes
        json.dumps(dict(good, constants={"B": {"$float": "1e999"}})),  # a tag launch_values never writes
        json.dumps(dict(good, attrs={"x": {"divisibility": 1e308}})),
        json.dumps(dict(good, options={"num_warps": [4]})),
        json.dumps(dict(good, autotune="best")),
        json.dumps(dict(good, record="commands")),
        json.dumps(dict(good, no_gpu="yes")),
        json.dumps(dict(good, launch={"grid": "all"})),
        json.dumps(dict(good, constants={"deep": [[[[[[[1]]]]]]]})),
        json.dumps(dict(good, kernel="k" * 10000)),
        json.dumps(dict(good, pad="x" * (3 * MAX_LINE))),  # a 3 MB line: cut at the bound, never held whole
        json.dumps(dict(good, version=True)),
    ]
    f = tmp_path / ".tritonlens" / "captures.jsonl"
    f.parent.mkdir()
    f.write_text("\n".join([json.dumps(good)] + bad + [json.dumps(dict(good, version=1, options={}))]) + "\n")
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "k.py"))
    assert [c["_line"] for c in caps] == [1, len(bad) + 2]  # the good lines, unknown fields ignored
    assert len(problems) == len(bad)
    assert all(f":{n}: " in p for n, p in zip(range(2, len(bad) + 2), problems))
    assert "longer than" in problems[-2]
    # the writer reads the same file (to dedupe) without choking on it, and appends after it
    w = capture.CaptureWriter(str(f))
    assert not w.append(dict(good, version=2, future_field=None))  # already there
    assert w.append(dict(good, options={"num_warps": 8}))
    assert json.loads(f.read_text().splitlines()[-1])["options"] == {"num_warps": 8}


# As Triton's fused-softmax tutorial sizes its persistent launch: warmup, the compiled kernel's registers and shared
# memory, a launch by hand, a check of the result, and a perf_report benchmark timed with do_bench.
SOFTMAX_LIKE = '''
import torch, triton, triton.language as tl
from triton.runtime import driver

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def rows_kernel(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        offs = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
        tl.store(out_ptr + row * stride + offs, x * 2, mask=offs < n_cols)


props = driver.active.utils.get_device_properties(DEVICE.index)


def on_stream(stream: torch.cuda.Stream | None = None, done: torch.cuda.Event | None = None):  # classes, as in torch
    return stream


def double(x):
    y = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    kernel = rows_kernel.warmup(y, x, x.stride(0), x.shape[0], x.shape[1], BLOCK=block, num_warps=8, grid=(1, ))
    kernel._init_handles()
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * 8)
    occupancy = min(occupancy, props["max_shared_mem"] // max(1, kernel.metadata.shared))
    programs = min(props["multiprocessor_count"] * occupancy, x.shape[0])
    print("sized", kernel.n_regs, kernel.metadata.shared, programs)
    kernel[(programs, 1, 1)](y, x, x.stride(0), x.shape[0], x.shape[1], block)
    return y


x = torch.randn(4000, 700, device=DEVICE)
assert torch.allclose(double(x), x * 2)  # without a GPU nothing computed y: the check passes, the run goes on
torch.testing.assert_close(double(x[:, :300]), x[:, :300] * 2)


@triton.testing.perf_report(triton.testing.Benchmark(x_names=["N"], x_vals=[256 * i for i in range(1, 9)],
                                                     line_arg="provider", line_vals=["triton", "torch"],
                                                     line_names=["Triton", "Torch"], ylabel="GB/s",
                                                     plot_name="double", args={"M": 2048}))
def benchmark(M, N, provider):
    x = torch.randn(M, N, device=DEVICE)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    fn = (lambda: double(x)) if provider == "triton" else (lambda: x * 2)
    ms, lo, hi = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    assert len(triton.testing.do_bench(fn, return_mode="all")) >= 1
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


benchmark.run(print_data=True, show_plots=True)
print("done")
'''


def test_a_tutorial_that_sizes_its_launch_from_the_compiled_kernel_and_benchmarks_it(tmp_path):
    proc = _capture(tmp_path, SOFTMAX_LIKE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    regs, shared, programs = (int(v) for v in next(ln for ln in proc.stdout.splitlines()
                                                    if ln.startswith("sized")).split()[1:])
    assert regs > 0 and programs % 132 == 0 and programs == 132 * min(65536 // (regs * 32 * 8),
                                                                       232448 // max(1, shared))
    summaries = _records(tmp_path, "summary")
    grids = {tuple(lc["launch"]["grid"]) for s in summaries for lc in s.get("launch_counts", [])}
    assert (programs, 1, 1) in grids  # the launch by hand, with the options of the warmup (num_warps=8)
    compiles = _records(tmp_path)
    assert {c["options"]["num_warps"] for c in compiles} == {8}
    blocks = sorted({c["constants"]["BLOCK"] for c in compiles})
    # the tests' two shapes, then the benchmark's largest, smallest and middle points (N = 2048, 256, 1280)
    assert blocks == [256, 512, 1024, 2048]


TMA_KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def tma_scale(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = in_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], x * 2)
'''

TMA_DRIVER = '''
import sys, torch
from triton.tools.tensor_descriptor import TensorDescriptor
sys.path.insert(0, {here!r})
from tma_kernels import tma_scale
x = torch.randn(1024, 512, dtype=torch.float16, device="cuda")
y = torch.empty_like(x)
a, b = TensorDescriptor.from_tensor(x, [64, 64]), TensorDescriptor.from_tensor(y, [64, 64])
for _ in range(3):
    tma_scale[(16, 8)](a, b, BLOCK_M=64, BLOCK_N=64)
'''


def test_a_tensor_descriptor_launch_records_its_shapes_and_the_cost_counts_its_bytes(tmp_path, capsys):
    """A TMA kernel launched with host TensorDescriptors: the capture keeps each descriptor's base tensor, shape,
    strides and block shape, and `tritonlens cost` prices the bytes they address (1024 x 512 fp16, read and written)."""
    from tritonlens.cli import main as cli_main

    (tmp_path / "tma_kernels.py").write_text(TMA_KERNEL)
    proc = _capture(tmp_path, TMA_DRIVER.replace("{here!r}", repr(str(tmp_path))), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (rec,) = _records(tmp_path)
    assert rec["signature"]["in_desc"] == "tensordesc<fp16[64, 64]>"
    assert rec["launch"]["args"]["in_desc"] == {"descriptor": {
        "base": {"shape": [1024, 512], "stride": [512, 1], "dtype": "float16", "align16": True},
        "shape": [1024, 512], "strides": [512, 1], "block_shape": [64, 64], "padding": "zero"}}
    assert sum(s["launches"] for s in _records(tmp_path, "summary")) == 3
    assert cli_main(["cost", str(tmp_path / "tma_kernels.py"), "--captures", str(tmp_path / "c.jsonl"),
                     "--target", "cuda:90", "--workers", "1", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["count"] == 3 and row["dram_bytes"] == 2 * 1024 * 512 * 2
    assert row["parts"]["memory_us"] > 0


OFFSETS_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def rows_of(x_ptr, offs_ptr, E: tl.constexpr):
    for e in range(E):
        lo = tl.load(offs_ptr + e)
        for r in range(lo, tl.load(offs_ptr + e + 1)):
            tl.store(x_ptr + r, tl.load(x_ptr + r) * 2)
'''

OFFSETS_DRIVER = '''
import sys, torch
sys.path.insert(0, {here!r})
from offsets_kernels import rows_of
x = torch.ones(4096, device="cuda")
offs = torch.tensor([0, 100, 250, 4096], dtype=torch.int32, device="cuda")
rows_of[(1,)](x, offs, E=3)
'''


def test_a_small_integer_tensor_keeps_its_values_and_the_cost_counts_the_loops_they_bound(tmp_path, capsys):
    """An offsets tensor (4 int32) keeps its contents in the capture (at most 512 elements of an integer tensor;
    never a float tensor's), and the cost model evaluates the loop bounds the kernel loads from it: 4,096 rows in all
    over 3 experts, not one trip per unknown loop."""
    from tritonlens.cli import main as cli_main

    (tmp_path / "offsets_kernels.py").write_text(OFFSETS_KERNEL)
    proc = _capture(tmp_path, OFFSETS_DRIVER.replace("{here!r}", repr(str(tmp_path))), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (rec,) = _records(tmp_path)
    assert rec["launch"]["args"]["offs_ptr"]["tensor"]["values"] == [0, 100, 250, 4096]
    assert "values" not in rec["launch"]["args"]["x_ptr"]["tensor"]
    assert cli_main(["cost", str(tmp_path / "offsets_kernels.py"), "--captures", str(tmp_path / "c.jsonl"),
                     "--target", "cuda:90", "--workers", "1", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["unknown_trips"] == 0, row
    assert row["dram_bytes"] >= 4096 * 4, row  # every row read and written: the loops' trips were counted


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_a_tensor_descriptor_launch_is_replayed_and_timed(tmp_path, capsys, monkeypatch):
    """Captured on the GPU (`capture --time`), the TMA launch replays in `tritonlens bench` as it ran: each descriptor
    rebuilt over a synthesized base tensor with the captured shape, strides and block. The replay's time and bytes
    (1024 x 512 fp16, read and written) are the launch's."""
    from tritonlens.gpu import bench

    (tmp_path / "tma_kernels.py").write_text(TMA_KERNEL)
    (tmp_path / "driver.py").write_text(TMA_DRIVER.replace("{here!r}", repr(str(tmp_path))))
    os.makedirs(tmp_path / ".tritonlens")
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--time", "--workspace", str(tmp_path),
                           "--output", str(tmp_path / ".tritonlens" / "captures.jsonl"), "--", sys.executable,
                           str(tmp_path / "driver.py")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    monkeypatch.chdir(tmp_path)
    assert bench.main(["tma_kernels.py::tma_scale", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["measured"] and row["error"] is None, row
    assert row["bytes"] == 2 * 1024 * 512 * 2 and 1.0 < row["time_us"] < 1000.0, row


SCALED = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''

KEPT_KERNEL = '''
import sys, torch
sys.path.insert(0, {here!r})
from scale import scale_kernel
x = torch.rand(4096, device="cuda")
y = torch.empty_like(x)
kernel = scale_kernel[(4,)](x, y, 4096, SCALE=2, BLOCK=1024)  # compiles once, returns the compiled kernel
for _ in range(5):  # what a library that keeps it does next (FlagGems' LibEntry): launch it directly
    kernel[(4, 1, 1)](x, y, 4096, 2, 1024)
'''


def test_launches_of_a_kept_compiled_kernel_are_recorded_with_their_count(tmp_path):
    """Compiled once, then launched five times through the compiled kernel it returned: one compile, six launches."""
    (tmp_path / "scale.py").write_text(SCALED)
    proc = _capture(tmp_path, KEPT_KERNEL.replace("{here!r}", repr(str(tmp_path))), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(_records(tmp_path)) == 1
    (cap,), problems = load_captures(str(tmp_path), None, str(tmp_path / "c.jsonl"))
    assert not problems and cap["launches"] == 6
    assert sorted((c["launch"]["grid"], c["count"]) for c in cap["launch_counts"]) == [([4], 1), ([4, 1, 1], 5)]


GENERATED = '''
import importlib.util, os, sys, torch
CACHE = {cache!r}
SRC = """import triton
import triton.language as tl


@triton.jit
def {{name}}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=offs < n)
"""
def generated(name):  # what a library that generates kernels does (FlagGems): write the code to its cache, import it
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, name + ".py")
    with open(path, "w") as f:
        f.write(SRC.format(name=name))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name), path
x = torch.rand(4096, device="cuda")
y = torch.empty_like(x)
kept, _ = generated("silu_kept")
kept[(4,)](x, y, 4096, BLOCK=1024)
gone, path = generated("silu_gone")
gone[(4,)](x, y, 4096, BLOCK=1024)
os.remove(path)
'''


def test_generated_kernels_outside_the_workspace_keep_their_absolute_path_and_are_said(tmp_path, capsys):
    """Kernels a library generates into a cache folder outside the workspace are kept with their absolute path, the
    capture says so, and `check PATH` reads their captures; one whose file is gone when the run ends is said too."""
    from tritonlens.cli import main as cli_main

    ws, cache = tmp_path / "ws", tmp_path / "cache"
    ws.mkdir()
    proc = _capture(tmp_path, GENERATED.format(cache=str(cache)), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["path"] for r in _records(tmp_path)) == [str(cache / "silu_gone.py"), str(cache / "silu_kept.py")]
    assert (f"1 compile(s) of kernels outside the workspace, kept with their absolute path (`tritonlens check PATH` "
            f"from this workspace reads them): {cache / 'silu_kept.py'}") in proc.stderr, proc.stderr
    assert (f"1 compile(s) of kernels whose source was no file at its recorded path when the run ended (removed, or "
            f"made without a file): kept, but nothing can check them: {cache / 'silu_gone.py'}") in proc.stderr
    capsys.readouterr()
    assert cli_main(["check", str(cache / "silu_kept.py"), "--captures", str(tmp_path / "c.jsonl"), "--target",
                     "cuda:90", "--workers", "1", "--format", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    # the captured launch's 4 programs on 132 SMs: only the capture knows the grid
    assert any(f["code"] == "LAUNCH002" and "4 programs on 132 SMs" in f["message"] for f in findings), findings


KEPT_AUTOTUNED = '''
import sys, torch, triton
sys.path.insert(0, {here!r})
import scale
tuned = triton.autotune([triton.Config({{"BLOCK": 512}}), triton.Config({{"BLOCK": 1024}})], key=["n"])(
    scale.scale_kernel)
x = torch.rand(4096, device="cuda")
y = torch.empty_like(x)
kernel = tuned[lambda m: (triton.cdiv(4096, m["BLOCK"]),)](x, y, 4096, SCALE=2)
for _ in range(5):  # a library keeps what the autotuned launch returned and launches it again
    kernel[(4, 1, 1)](x, y, 4096, 2, 1024)
'''


def test_launches_of_a_kept_autotuned_kernel_count_for_no_config_without_a_gpu(tmp_path):
    """Without a GPU the autotuner's choice is unknown (every config a trial): the kernel its launch returned is one
    config taken arbitrarily, so launching it again is not counted for that config."""
    (tmp_path / "scale.py").write_text(SCALED)
    proc = _capture(tmp_path, KEPT_AUTOTUNED.format(here=str(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    caps, problems = load_captures(str(tmp_path), None, str(tmp_path / "c.jsonl"))
    assert not problems
    assert sorted((c["constants"]["BLOCK"], c["autotune"], c["launches"]) for c in caps) == [
        (512, "trial", 0), (1024, "trial", 0)]
