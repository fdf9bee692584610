"""Capture: the hook, the file it writes (dedupe, locking, exit code), and check using captures as specs.

No GPU here: `FAKE_DRIVER` below stands in for Triton's CUDA driver so that a real `kernel[grid](...)` launch goes
through Triton's own JIT (specialization, compile for cuda:90, post-compile hook) and stops at the launch, which the
fake driver records instead of running. Everything else is real.
"""
import json
import os
import subprocess
import sys
import threading

import pytest

from tritonlens.device.targets import has_local_gpu
from tritonlens.gpu import capture
from tritonlens.frontend.captures import fold_captures, identity, load_captures
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

FAKE_DRIVER = '''
import sys, types
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime import driver

class _Utils:
    def load_binary(self, name, kernel, shared, device):
        return (1, 2, 40, 0, 1024)
    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536, "warpSize": 32}

class FakeDriver:  # stands in for the CUDA driver: compiles for real, records launches instead of running them
    utils = _Utils()
    def is_active(self): return True
    def get_current_device(self): return 0
    def set_current_device(self, d): pass
    def get_current_stream(self, d=None): return 0
    def get_current_target(self): return GPUTarget("cuda", 90, 32)
    def get_active_torch_device(self): return None
    def get_device_interface(self): return None
    def get_benchmarker(self): return None
    def map_python_to_cpp_type(self, t): return t
    def launcher_cls(self, src, metadata):
        return lambda *a: print("launched", a[:3])

driver.set_active(FakeDriver())

class FakeTensor:  # what a torch tensor offers Triton's launcher: data_ptr, dtype, shape, stride
    def __init__(self, shape, dtype=tl.float32, ptr=1 << 20):
        self.shape, self.dtype, self._ptr = tuple(shape), dtype, ptr
    def data_ptr(self): return self._ptr
    def stride(self):
        out, acc = [], 1
        for s in reversed(self.shape):
            out.insert(0, acc); acc *= s
        return tuple(out)
'''

PROGRAM = FAKE_DRIVER + '''
sys.path.insert(0, {examples!r})
import softmax
n_cols = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x = FakeTensor((64, 1024))
softmax.softmax_kernel[lambda meta: (64,)](x, x, 1024, 1024, n_cols, BLOCK_SIZE=1024, num_warps=4)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


def _run_capture(tmp_path, *prog_args, extra_env=None):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.replace("{examples!r}", repr(EXAMPLES)))
    env = dict(os.environ, **(extra_env or {}))
    return subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", ROOT, "--output",
                           str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog), *map(str, prog_args)],
                          env=env, capture_output=True, text=True, timeout=120)


def _lines(tmp_path, record="compile"):
    """The file's compile lines (or its summary lines: launch counts and autotuner choices)."""
    lines = [json.loads(ln) for ln in (tmp_path / "captures.jsonl").read_text().splitlines() if ln.strip()]
    return [c for c in lines if c.get("record", "compile") == record]


def test_capture_records_compile_and_launch(tmp_path):
    proc = _run_capture(tmp_path, 1000)
    assert proc.returncode == 0, proc.stderr
    assert "launched (64, 1, 1)" in proc.stdout  # the program ran unchanged
    (cap,) = _lines(tmp_path)
    assert cap["version"] == 2 and cap["path"] == "examples/softmax.py" and cap["kernel"] == "softmax_kernel"
    assert cap["target"] == "cuda:90" and cap["triton_version"]
    assert cap["signature"]["BLOCK_SIZE"] == "constexpr" and cap["constants"] == {"BLOCK_SIZE": 1024}
    # 1000 is not a multiple of 16, the strides (1024) are; pointers are 16-byte aligned
    assert "n_cols" not in cap["attrs"] and cap["attrs"]["input_row_stride"] == {"divisibility": 16}
    assert cap["attrs"]["input_ptr"] == {"divisibility": 16}
    assert cap["options"]["num_warps"] == 4
    assert cap["launch"]["grid"] == [64]
    assert cap["launch"]["args"]["input_ptr"]["tensor"] == {"shape": [64, 1024], "stride": [1024, 1],
                                                            "dtype": "fp32", "align16": True}
    assert cap["launch"]["args"]["n_cols"] == {"value": 1000}
    (summary,) = _lines(tmp_path, "summary")  # written at exit: one launch of that compile, no autotuner
    assert summary["launches"] == 1 and summary["autotune"] is None and identity(summary) == identity(cap)
    caps, problems = load_captures(ROOT, os.path.join(EXAMPLES, "softmax.py"), str(tmp_path / "captures.jsonl"))
    assert not problems
    (folded,) = fold_captures(caps)
    assert folded["launches"] == 1 and folded["autotune"] is None and folded["launch"]["grid"] == [64]


def test_capture_dedupes_and_passes_the_exit_code_through(tmp_path):
    assert _run_capture(tmp_path, 1000).returncode == 0
    assert _run_capture(tmp_path, 1000, 3).returncode == 3  # same compile: not written again; exit code kept
    assert len(_lines(tmp_path)) == 1
    assert _run_capture(tmp_path, 1024).returncode == 0  # n_cols % 16 == 0 is another specialization
    caps = _lines(tmp_path)
    assert len(caps) == 2 and caps[1]["attrs"]["n_cols"] == {"divisibility": 16}


def test_concurrent_processes_write_whole_distinct_lines(tmp_path):
    procs = [threading.Thread(target=_run_capture, args=(tmp_path, n)) for n in (1000, 1000, 1024, 1024)]
    for t in procs:
        t.start()
    for t in procs:
        t.join()
    caps = _lines(tmp_path)  # every line parses
    assert sorted(json.dumps(c["attrs"], sort_keys=True) for c in caps) == sorted(
        {json.dumps(c["attrs"], sort_keys=True) for c in caps})
    assert len(caps) == 2


def test_bootstrap_chains_to_an_existing_sitecustomize(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    env = capture.child_env(str(tmp_path / "c.jsonl"), ROOT, base=dict(os.environ, PYTHONPATH=str(own)))
    out = subprocess.run([sys.executable, "-c", "import os, sys; print(os.environ.get('USER_SITECUSTOMIZE_RAN'), "
                          "'triton' in sys.modules)"], env=env, capture_output=True, text=True).stdout.split()
    assert out == ["1", "False"]  # the user's sitecustomize ran; triton is not imported by the bootstrap


def test_no_command_is_a_usage_error(capsys):
    assert capture.main([]) == 2
    assert "no command" in capsys.readouterr().err


def test_writer_dedupes_across_writers(tmp_path):
    rec = {"version": 1, "path": "k.py", "kernel": "k", "signature": {"x": "*fp32"}, "constants": {}, "attrs": {},
           "options": {"num_warps": 4}, "target": "cuda:90", "triton_version": "3.6.0"}
    a, b = capture.CaptureWriter(str(tmp_path / "c.jsonl")), capture.CaptureWriter(str(tmp_path / "c.jsonl"))
    assert a.append(dict(rec, launch={"grid": [1], "args": {}}))
    assert not b.append(dict(rec, launch={"grid": [2], "args": {}}))  # another launch of the same compile
    assert b.append(dict(rec, options={"num_warps": 8}))
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 2


def test_reader_reports_bad_lines_and_keeps_good_ones(tmp_path):
    f = tmp_path / ".tritonlens" / "captures.jsonl"
    f.parent.mkdir()
    good = {"version": 1, "path": "k.py", "kernel": "k", "signature": {"x": "*fp32"}}
    f.write_text("\n".join([json.dumps(good), "{not json", json.dumps(dict(good, version=99)),
                            json.dumps(dict(good, signature=["x"])), json.dumps(dict(good, path="other.py"))]))
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "k.py"))
    assert [c["path"] for c in caps] == ["k.py"]
    assert len(problems) == 3 and "not JSON" in problems[0] and "version 99" in problems[1]


# ---------------------------------------------------------------- check uses captures as specs
def _capture_line(**over):
    cap = {"version": 1, "path": "vector_add.py", "kernel": "add_kernel",
           "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                         "BLOCK_SIZE": "constexpr"},
           "constants": {"BLOCK_SIZE": 512}, "attrs": {"x_ptr": {"divisibility": 16}, "y_ptr": {"divisibility": 16},
                                                         "out_ptr": {"divisibility": 16}},
           "options": {"num_warps": 2, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}
    cap.update(over)
    return json.dumps(cap)


@pytest.fixture()
def workspace(tmp_path):
    src = open(os.path.join(EXAMPLES, "vector_add.py")).read()
    (tmp_path / "vector_add.py").write_text(src)
    (tmp_path / ".tritonlens").mkdir()
    return tmp_path


def test_check_compiles_the_captured_spec_instead_of_the_hint(workspace):
    (workspace / ".tritonlens" / "captures.jsonl").write_text(_capture_line() + "\n")
    with Checker(Settings(target="cuda:90", max_workers=1)) as checker:
        report = checker.check_file(str(workspace / "vector_add.py"))
    (kr,) = report.kernels
    (cs,) = kr.compiled  # the hint (BLOCK_SIZE=1024, num_warps=4, n_elements=i32%16) is replaced
    assert cs.spec.label == "capture 1"
    assert cs.spec.describe() == "cuda:90, num_warps=2, num_stages=3, BLOCK_SIZE=512, n_elements=i32"
    assert cs.artifacts.ok and cs.artifacts.metadata["num_warps"] == 2
    assert all(f.target == "cuda:90" for f in kr.findings)
    assert not [f for f in report.all_findings() if f.code == "SRC003"]


def test_stale_capture_is_reported_once_and_skipped(workspace):
    stale = _capture_line(signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                     "BLOCK_SIZE": "constexpr"})
    (workspace / ".tritonlens" / "captures.jsonl").write_text(stale + "\n")
    settings = Settings(target="cuda:90", extra_targets=["cuda:80"], max_workers=1)
    with Checker(settings) as checker:
        report = checker.check_file(str(workspace / "vector_add.py"))
    src003 = [f for f in report.all_findings() if f.code == "SRC003"]
    assert len(src003) == 1  # once, though the kernel is compiled for two targets
    assert src003[0].line == 9 and "added n_elements" in src003[0].message and "removed n" in src003[0].message
    (kr,) = report.kernels
    assert {cs.spec.label for cs in kr.compiled} == {"hint line 7"}  # the capture is skipped; the hint is used


AUTOTUNED = FAKE_DRIVER + '''
# The fake driver's benchmarker: the GPU would measure; here config BLOCK=128 is "fastest".
def bench(kernel_call, quantiles):
    kernel_call()
    return [1.0 if CURRENT["BLOCK"] == 128 else 2.0] * 3
FakeDriver.get_benchmarker = lambda self: bench
CURRENT = {}

@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=4, pre_hook=lambda nargs, b=b: CURRENT.update(BLOCK=b))
                          for b in (64, 128)], key=["n"])
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

x = FakeTensor((4096,))
for n in (1000, 1000, 1000, 4096):
    scale[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, n)
'''


def test_gpu_capture_marks_the_autotuner_choice_and_counts_launches(tmp_path):
    # The GPU path (jit_post_compile_hook + wrapped Autotuner) under the fake driver: compiles are real.
    prog = tmp_path / "prog.py"
    prog.write_text(AUTOTUNED)
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", str(tmp_path), "--output",
                           str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    compiles = _lines(tmp_path)
    assert all(c["autotune"] == "trial" and "no_gpu" not in c for c in compiles)  # compiled while benchmarking
    caps, problems = load_captures(str(tmp_path), None, str(tmp_path / "captures.jsonl"))
    assert not problems
    got = {(c["constants"]["BLOCK"], json.dumps(c["attrs"].get("n"))): (c["autotune"], c["launches"]) for c in caps}
    # n=1000 (not %16) and n=4096 (%16) are two autotune keys and two specializations per config
    assert got == {(64, "null"): ("trial", 0), (128, "null"): ("chosen", 3),
                   (64, '{"divisibility": 16}'): ("trial", 0), (128, '{"divisibility": 16}'): ("chosen", 1)}
    chosen = [c for c in caps if c["autotune"] == "chosen"]
    assert sorted(k for c in chosen for k in c["autotune_keys"]) == [[1000, "fp32"], [4096, "fp32"]]


# ---------------------------------------------------------------- a run that is stopped keeps what it saw
def _start_stopped_run(tmp_path):
    """AUTOTUNED, then a wait: the capture of a program that is still running when it is stopped."""
    prog = tmp_path / "prog.py"
    prog.write_text(AUTOTUNED + 'print("launched all", flush=True)\nimport time\ntime.sleep(120)\n')
    proc = subprocess.Popen([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", str(tmp_path), "--output",
                             str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("launched all"):
            return proc
    proc.kill()
    raise AssertionError(proc.stderr.read())


def _chosen_and_counts(tmp_path):
    caps, problems = load_captures(str(tmp_path), None, str(tmp_path / "captures.jsonl"))
    assert not problems
    return {(c["constants"]["BLOCK"], json.dumps(c["attrs"].get("n"))): (c["autotune"], c["launches"]) for c in caps}


def test_a_capture_stopped_by_sigterm_keeps_its_launch_counts_and_choices(tmp_path):
    import signal

    proc = _start_stopped_run(tmp_path)
    proc.send_signal(signal.SIGTERM)  # as `timeout` or a job scheduler would, to tritonlens capture
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "4 new compile(s) recorded by this run" in err and "stopped (SIGTERM)" in err, err
    assert _chosen_and_counts(tmp_path) == {
        (64, "null"): ("trial", 0), (128, "null"): ("chosen", 3),
        (64, '{"divisibility": 16}'): ("trial", 0), (128, '{"divisibility": 16}'): ("chosen", 1)}


def test_a_capture_killed_outright_keeps_what_launched_and_the_choices(tmp_path):
    import signal

    proc = _start_stopped_run(tmp_path)
    program = [int(p) for p in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]
    assert len(program) == 1
    os.kill(program[0], signal.SIGKILL)  # no handler, no atexit: only what was written as it happened
    _, err = proc.communicate(timeout=60)
    assert "stopped (SIGKILL)" in err, err
    got = _chosen_and_counts(tmp_path)
    # the choices and that they launched are kept; counts since the last write may be lost
    assert {k: role for k, (role, _) in got.items()} == {
        (64, "null"): "trial", (128, "null"): "chosen", (64, '{"divisibility": 16}'): "trial",
        (128, '{"divisibility": 16}'): "chosen"}
    assert got[(128, "null")][1] >= 1 and got[(128, '{"divisibility": 16}')][1] >= 1


def test_new_compiles_are_this_runs_own(tmp_path):
    """Another process appending to the same capture file meanwhile does not count as this run's."""
    other = {"version": 2, "path": "elsewhere.py", "kernel": "k", "signature": {"x": "*fp32"}, "constants": {},
             "attrs": {}, "options": {"num_warps": 4}, "target": "cuda:90", "triton_version": "3.6.0"}
    extra = f"open({str(tmp_path / 'captures.jsonl')!r}, 'a').write({json.dumps(json.dumps(other))} + '\\n')\n"
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.replace("{examples!r}", repr(EXAMPLES)).replace("n_cols = ", extra + "n_cols = "))
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", ROOT, "--output",
                           str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(_lines(tmp_path)) == 2
    assert "1 new compile(s) recorded by this run" in proc.stderr and "(2 in all" in proc.stderr, proc.stderr


SCALED = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''


def test_the_summary_names_the_launched_values_the_representative_set_left_out(tmp_path, capsys):
    """14 launched SCALE values, at most 12 compiled by default: the summary says which two and how to get them."""
    from tritonlens.cli import main as cli_main

    (tmp_path / "scale.py").write_text(SCALED)
    (tmp_path / ".tritonlens").mkdir()
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "SCALE": "constexpr", "BLOCK": "constexpr"}
    lines = [{"version": 2, "path": "scale.py", "kernel": "scale_kernel", "signature": sig,
              "constants": {"SCALE": scale, "BLOCK": 128}, "attrs": {"x_ptr": {"divisibility": 16},
                                                                    "out_ptr": {"divisibility": 16}},
              "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}
             for scale in range(1, 15)]
    summaries = [{"version": 2, "record": "summary", **{k: c[k] for k in ("path", "kernel", "signature", "constants",
                                                                         "attrs", "options", "target")},
                  "launches": 20 - c["constants"]["SCALE"], "autotune": None} for c in lines]
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines + summaries))
    assert cli_main(["check", str(tmp_path / "scale.py"), "--target", "cuda:90", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert ("12 of 14 captured specs compiled (a representative set of at most 12; launched but left out: SCALE=13, "
            "SCALE=14; --all-captures compiles every one)") in out, out
    assert cli_main(["check", str(tmp_path / "scale.py"), "--target", "cuda:90", "--workers", "2",
                     "--all-captures"]) == 0
    out = capsys.readouterr().out
    assert "captured specs compiled" not in out and out.count("scale_kernel [cuda:90") == 14, out


def test_a_host_tensor_descriptor_is_keyed_by_geometry_and_never_printed():
    """A TensorDescriptor's repr prints its whole base tensor (a read of GPU memory on every launch): the launch key
    takes the base's geometry and the descriptor's shape, strides and block, and so does the description."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tritonlens.gpu.capture import describe_launch, launch_key

    class Unprintable(torch.Tensor):
        def __repr__(self):  # noqa: D105
            raise AssertionError("the descriptor's tensor was printed")

    base = torch.zeros(4, 8, 64).as_subclass(Unprintable)
    desc = TensorDescriptor(base, shape=[32, 64], strides=[64, 1], block_shape=[16, 64])
    key = launch_key([2, 1, 1], (1.5, desc), {})
    assert key[2] == ("TensorDescriptor", ((4, 8, 64), (512, 64, 1), torch.float32, True), (32, 64), (64, 1),
                      (16, 64))
    assert key == launch_key([2, 1, 1], (1.5, TensorDescriptor(base, [32, 64], [64, 1], [16, 64])), {})
    assert describe_launch(["scale", "desc"], (1.5, desc), {}, [2, 1, 1])["args"]["desc"] == {"descriptor": {
        "base": {"shape": [4, 8, 64], "stride": [512, 64, 1], "dtype": "float32", "align16": True},
        "shape": [32, 64], "strides": [64, 1], "block_shape": [16, 64], "padding": "zero"}}


def _descriptor_line(**desc_over):
    desc = {"base": {"shape": [1024, 512], "stride": [512, 1], "dtype": "float16", "align16": True},
            "shape": [1024, 512], "strides": [512, 1], "block_shape": [64, 64], "padding": "zero", **desc_over}
    desc = {k: v for k, v in desc.items() if v is not None}
    return json.loads(_capture_line(
        path="k.py", kernel="k", signature={"d": "tensordesc<fp16[64, 64]>", "B": "constexpr"}, constants={"B": 64},
        attrs={}, launch={"grid": [16, 8], "args": {"d": {"descriptor": desc}, "B": {"value": 64}}}, version=2))


def test_a_captured_descriptor_is_validated_on_load_and_read_as_the_tensor_it_addresses(tmp_path):
    """Captures are untrusted: a descriptor must hold a base tensor with a dtype and shape, strides and block shape of
    one rank; a line with anything else is reported with its number and the others are used. A good one is read as
    the tensor the kernel addresses through it (its shape and strides, the base's dtype): what the cost model sizes."""
    from tritonlens.model import clean_launch

    f = tmp_path / ".tritonlens" / "captures.jsonl"
    f.parent.mkdir()
    bad = [_descriptor_line(block_shape=[64]), _descriptor_line(shape=[1024, -1]), _descriptor_line(base=None),
           _descriptor_line(strides=["512", 1]), _descriptor_line(block_shape=[1 << 20, 64]),
           _descriptor_line(shape=[1] * 9, strides=[1] * 9, block_shape=[1] * 9)]
    summary = dict(_descriptor_line(), record="summary", launches=3)
    summary["launch_counts"] = [{"launch": _descriptor_line(base={"shape": [1]})["launch"], "count": 3}]
    f.write_text("\n".join(json.dumps(x) for x in [_descriptor_line(), *bad, summary]) + "\n")
    caps, problems = load_captures(str(tmp_path), str(tmp_path / "k.py"))
    assert len(caps) == 1 and len(problems) == len(bad) + 1, problems
    assert all("descriptor d must hold a base tensor" in p for p in problems), problems
    cleaned = clean_launch(caps[0]["launch"])["args"]["d"]
    assert cleaned["tensor"] == {"shape": [1024, 512], "stride": [512, 1], "dtype": "float16", "align16": True}
    assert cleaned["descriptor"]["block_shape"] == [64, 64] and cleaned["descriptor"]["padding"] == "zero"
    # field by field where the reader is handed a launch directly (the editor's cache): a bad descriptor is dropped
    assert "d" not in clean_launch(_descriptor_line(block_shape=[0, 64])["launch"])["args"]


CACHED_LAUNCHER = FAKE_DRIVER + '''
sys.path.insert(0, {here!r})
from scale import scale_kernel
x = FakeTensor((4096,))
kernel = scale_kernel[(4,)](x, x, 4096, SCALE=2, BLOCK=1024)  # compiles, launches, returns the compiled kernel
for _ in range(5):  # a library's later calls: the kept kernel, launched directly with every parameter
    kernel[(4, 1, 1)](x, x, 4096, 2, 1024)
'''


def test_launches_of_a_kept_compiled_kernel_are_counted_once_each(tmp_path):
    """A library that keeps the CompiledKernel its first call returned and launches it directly afterwards (FlagGems'
    LibEntry) launches without `JITFunction.run`: those launches are counted too, and the first one, made through
    `run`, is not counted twice. GPU path, under the fake driver: the compile and `CompiledKernel.__getitem__` are
    Triton's own."""
    (tmp_path / "scale.py").write_text(SCALED)
    prog = tmp_path / "prog.py"
    prog.write_text(CACHED_LAUNCHER.replace("{here!r}", repr(str(tmp_path))))
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", str(tmp_path), "--output",
                           str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("launched") == 6 and "could not" not in proc.stderr, proc.stderr
    (cap,), problems = load_captures(str(tmp_path), None, str(tmp_path / "captures.jsonl"))
    assert not problems and cap["launches"] == 6
    assert sorted((c["launch"]["grid"], c["count"]) for c in cap["launch_counts"]) == [([4], 1), ([4, 1, 1], 5)]
    direct = next(c["launch"]["args"] for c in cap["launch_counts"] if c["count"] == 5)
    assert direct["n"] == {"value": 4096} and direct["x_ptr"]["tensor"]["shape"] == [4096]


KEPT_ON_GPU = '''
import sys, torch
sys.path.insert(0, {here!r})
from scale import scale_kernel
x = torch.rand(1 << 24, device="cuda")
y = torch.empty_like(x)
kernel = scale_kernel[(1 << 14,)](x, y, 1 << 24, SCALE=2, BLOCK=1024)
for _ in range(12):
    kernel[(1 << 14, 1, 1)](x, y, 1 << 24, 2, 1024)
torch.cuda.synchronize()
assert torch.equal(y, x * 2)
'''


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_capture_time_times_the_launches_of_a_kept_compiled_kernel(tmp_path):
    """On a GPU, --time times the direct launches of a kept compiled kernel as it times launches through `run`: the
    first of each distinct launch untimed, the next TIMED_PER_LAUNCH timed (128 MB moved: tens of µs on an H200)."""
    (tmp_path / "scale.py").write_text(SCALED)
    prog = tmp_path / "prog.py"
    prog.write_text(KEPT_ON_GPU.replace("{here!r}", repr(str(tmp_path))))
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--time", "--workspace", str(tmp_path),
                           "--output", str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (cap,), problems = load_captures(str(tmp_path), None, str(tmp_path / "captures.jsonl"))
    assert not problems and cap["launches"] == 13
    direct = next(c for c in cap["launch_counts"] if c["launch"]["grid"] == [1 << 14, 1, 1])
    assert direct["count"] == 12 and direct["timed"] == capture.TIMED_PER_LAUNCH
    assert 5.0 < direct["time_min_us"] <= direct["time_us"] < 100_000.0, direct


def test_launches_of_what_warmup_returned_are_counted(tmp_path):
    """`kernel.warmup(...)` compiles without launching (as Triton's fused-softmax tutorial does before sizing its
    grid from the compiled kernel); the launches of what it returned are counted, with their distinct launch."""
    (tmp_path / "scale.py").write_text(SCALED)
    prog = tmp_path / "prog.py"
    prog.write_text(FAKE_DRIVER + f'''
sys.path.insert(0, {str(tmp_path)!r})
from scale import scale_kernel
x = FakeTensor((4096,))
kernel = scale_kernel.warmup(x, x, 4096, SCALE=2, BLOCK=1024, grid=(1,))
for _ in range(3):
    kernel[(4, 1, 1)](x, x, 4096, 2, 1024)
''')
    proc = subprocess.run([sys.executable, "-m", "tritonlens.gpu.capture", "--workspace", str(tmp_path), "--output",
                           str(tmp_path / "captures.jsonl"), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (cap,), problems = load_captures(str(tmp_path), None, str(tmp_path / "captures.jsonl"))
    assert not problems and cap["launches"] == 3
    assert [(c["launch"]["grid"], c["count"]) for c in cap["launch_counts"]] == [([4, 1, 1], 3)]
