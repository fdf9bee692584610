"""The compile pipeline end to end, on kernels Triton really compiles here (CPU, no GPU)."""
import json
import os
import re
import textwrap

import pytest

from tritonlens.cli import main as cli_main
from tritonlens.compiler.pool import CompileJob, CompileService
from tritonlens.device.targets import has_local_gpu
from tritonlens.frontend.loader import slice_module
from tritonlens.model import Spec
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

from conftest import EXAMPLES, evidence

VECTOR_ADD = '''\
import triton
import triton.language as tl


# tritonlens: n_elements={n}, BLOCK_SIZE=1024, num_warps=4
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
'''


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def only_compiled(report, name):
    kr = next(k for k in report.kernels if k.name == name)
    assert kr.compiled, f"{name} was not compiled: {[f.message for f in kr.findings]}"
    return kr


def ptx_load_widths(checker, kr, source_line):
    from tritonlens.checks import CheckContext

    cs = kr.compiled[0]
    assert cs.artifacts.ok, cs.artifacts.error
    ctx = CheckContext(kr.kernel, cs.spec, cs.artifacts, checker.settings)
    lines = set(ctx.ptx.linemap.lines_for(source_line, kr.kernel.path))
    return sorted(i.bits for i in ctx.ptx.instrs if i.kind == "ld.global" and i.ir_line in lines)


def test_divisibility_assumption_changes_load_width(checker, tmp_path):
    """n_elements=i32%16 gives 128-bit loads on the tl.load line; n_elements=i32 gives 32-bit ones."""
    aligned = checker.check_file(write(tmp_path, "add16.py", VECTOR_ADD.format(n="i32%16")))
    plain = checker.check_file(write(tmp_path, "add.py", VECTOR_ADD.format(n="i32")))
    widths16 = ptx_load_widths(checker, only_compiled(aligned, "add_kernel"), 11)
    widths1 = ptx_load_widths(checker, only_compiled(plain, "add_kernel"), 11)
    assert widths16 and set(widths16) == {128}
    assert widths1 and set(widths1) == {32}
    assert only_compiled(plain, "add_kernel").compiled[0].spec.describe().endswith("n_elements=i32")


def test_non_power_of_2_arange_is_src001_on_its_line(checker, tmp_path):
    path = write(tmp_path, "bad_arange.py", '''\
        import triton
        import triton.language as tl


        # tritonlens: n=i32
        @triton.jit
        def k(x_ptr, n):
            offs = tl.arange(0, 100)
            tl.store(x_ptr + offs, offs, mask=offs < n)
        ''')
    report = checker.check_file(path)
    errors = [f for f in report.all_findings() if f.code == "SRC001"]
    assert len(errors) == 1, [f.message for f in report.all_findings()]
    err = errors[0]
    assert (err.line, err.severity) == (8, "error")
    # The column names the tl.arange call (1-based), not the def.
    assert err.column == len("    offs = ") + 1
    assert "power of 2" in err.message


def test_helper_in_same_file_is_inlined_not_compiled_alone(checker):
    report = checker.check_file(os.path.join(EXAMPLES, "matmul.py"))
    assert [k.name for k in report.kernels] == ["matmul_kernel"]
    kr = report.kernels[0]
    assert len(kr.compiled) == 2  # one spec per autotune config, the hint supplying the rest
    assert all(cs.artifacts.ok for cs in kr.compiled)


def test_jit_function_that_returns_a_value_is_a_helper_even_when_unused(checker, tmp_path):
    # A library of device functions (or one a kernel no longer calls): a kernel cannot return a value, so compiling
    # it alone would only report the compiler's refusal on the `return` line.
    path = write(tmp_path, "device_lib.py", '''\
        import triton
        import triton.language as tl


        @triton.jit
        def leaky(x):
            return tl.where(x >= 0, x, 0.01 * x)


        @triton.jit
        def gather(src, index, axis, _builder=None):
            """A fallback for a Triton without tl.gather, as flash-linear-attention writes it: `return None` (which
            Triton refuses in a kernel) says it is a device function."""
            return None


        # tritonlens: BLOCK=64
        @triton.jit
        def relu_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 0.0))
        ''')
    report = checker.check_file(path)
    assert [k.name for k in report.kernels] == ["relu_kernel"]
    assert report.all_findings() == [] or all(f.code != "SRC001" for f in report.all_findings())


def test_definitions_mode_runs_no_top_level_code(checker, tmp_path):
    marker = tmp_path / "ran.txt"
    path = write(tmp_path, "side_effects.py", f'''\
        import triton
        import triton.language as tl

        SCALE = tl.constexpr(2)
        LOG = open({str(tmp_path / "no-such-dir" / "log.txt")!r}, "w")
        open({str(marker)!r}, "w").write("top level ran")


        # tritonlens: n=i32%16, BLOCK=256
        @triton.jit
        def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


        if __name__ == "__main__":
            open({str(marker)!r}, "w").write("main ran")
        ''')
    report = checker.check_file(path)
    kr = only_compiled(report, "scale_kernel")
    assert kr.compiled[0].artifacts.ok, kr.compiled[0].artifacts.error
    assert not marker.exists()


def test_slice_keeps_import_fallbacks_and_needed_constants():
    src = textwrap.dedent('''\
        try:
            import triton
        except ImportError:
            triton = None
        import numpy_not_needed
        import triton.language as tl
        BLOCK = 128
        UNUSED = 5
        DEVICE = torch.cuda.get_device_name()
        print("hello")

        @triton.autotune(configs=get_configs(), key=["n"])
        @triton.jit
        def k(x, n):
            tl.store(x, BLOCK)
        ''')
    s = slice_module(src, ["k"])
    kept = s.text
    assert "import triton\n" in kept and "triton = None" in kept
    assert "BLOCK = 128" in kept and "UNUSED" not in kept
    assert "numpy_not_needed" not in kept and "get_device_name" not in kept and "print" not in kept
    assert "autotune" not in kept and "@triton.jit" in kept
    assert len(kept.splitlines()) == len(src.splitlines())  # line numbers unchanged


def test_syntax_error_and_unreadable_files(checker, tmp_path):
    path = write(tmp_path, "broken.py", "import triton\n\ndef f(:\n    pass\n")
    report = checker.check_file(path)
    [f] = report.all_findings()
    assert (f.code, f.line) == ("SRC001", 3)
    bad = tmp_path / "latin1.py"
    bad.write_bytes(b"# caf\xe9\nimport triton\n")
    report = checker.check_file(str(bad))
    assert report.problems and "latin1.py" in report.problems[0] and "UTF-8" in report.problems[0]


def test_missing_constexpr_is_src002_not_a_crash(checker, tmp_path):
    path = write(tmp_path, "nohint.py", '''\
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, offs, mask=offs < n)
        ''')
    report = checker.check_file(path)
    [f] = report.all_findings()
    assert f.code == "SRC002" and f.line == 6
    assert not report.kernels[0].compiled


def test_unchanged_kernel_is_never_compiled_twice(checker, tmp_path):
    path = write(tmp_path, "cached.py", VECTOR_ADD.format(n="i32%16"))
    first = only_compiled(checker.check_file(path), "add_kernel").compiled[0].artifacts
    second = only_compiled(checker.check_file(path), "add_kernel").compiled[0].artifacts
    assert not first.cached and second.cached
    assert second.asm["ptx"] == first.asm["ptx"] and os.path.exists(second.paths["ptx"])


def test_hip_target_compiles_to_amdgcn(tmp_path):
    path = write(tmp_path, "add_hip.py", VECTOR_ADD.format(n="i32%16"))
    with Checker(Settings(target="hip:gfx942", max_workers=1)) as c:
        kr = only_compiled(c.check_file(path), "add_kernel")
    art = kr.compiled[0].artifacts
    assert art.ok, art.error
    assert "amdgcn" in art.asm and "global_load" in art.asm["amdgcn"] and "ptx" not in art.asm
    assert kr.compiled[0].spec.target == "hip:gfx942"


def _job(path, text, timeout=60.0):
    spec = Spec(signature={"x_ptr": "*fp32"}, constants={}, attrs={"x_ptr": {"divisibility": 16}},
                options={"num_warps": 4}, target="cuda:90")
    return CompileJob(path=path, text=text, qualname="k", spec=spec.to_json(), timeout=timeout)


KERNEL = '''import triton
import triton.language as tl
{pre}
@triton.jit
def k(x_ptr):
    tl.store(x_ptr + tl.arange(0, 128), 1.0)
'''


def test_crashed_and_hung_workers_are_reported_and_replaced(tmp_path):
    """A module that segfaults at import, one that hangs, then a good one: the pool survives both, and blames the
    import of the module, not the compiler."""
    path = str(tmp_path / "k.py")
    with CompileService(max_workers=1) as service:
        crash = service.submit(_job(path, KERNEL.format(pre="import ctypes; ctypes.string_at(0)"))).result(120)
        assert crash.error.kind == "ImportCrash" and "SIGSEGV" in crash.error.message
        assert "while importing `k`" in crash.error.message, crash.error.message
        hang = service.submit(_job(path, KERNEL.format(pre="import time; time.sleep(600)"), timeout=5)).result(120)
        assert hang.error.kind == "ImportTimeout" and "importing `k`" in hang.error.message
        good = service.submit(_job(path, KERNEL.format(pre=""))).result(120)
        assert good.ok, good.error
        assert "st.global" in good.asm["ptx"]
        assert service.restarts == 2


def test_cancel_drops_queued_jobs(tmp_path):
    path = str(tmp_path / "k.py")
    with CompileService(max_workers=1) as service:
        slow = _job(path, KERNEL.format(pre="import time; time.sleep(600)"), timeout=300)
        slow.group = "doc"
        queued = _job(path, KERNEL.format(pre=""))
        queued.group = "doc"
        # The worker is started first, so that the slow job is sent to it.
        assert service.submit(_job(path, KERNEL.format(pre=""))).result(120).ok
        f1, f2 = service.submit(slow), service.submit(queued)
        import time

        deadline = time.monotonic() + 60
        while not f1.running() and time.monotonic() < deadline:  # the one worker took the slow job
            time.sleep(0.05)
        assert f1.running()
        time.sleep(0.5)  # from taking it to sending it to the worker
        assert service.cancel("doc", kill_after=0) == 2  # the running job and the one queued behind it
        assert f1.result(120).error.kind == "Cancelled"
        assert f2.cancelled()  # it never started: no compile, no result
        # The worker killed with the slow job is replaced: the next job compiles.
        after = service.submit(_job(path, KERNEL.format(pre=""))).result(120)
        assert after.ok, after.error


def test_cancel_reaches_a_job_taken_while_its_worker_starts(tmp_path):
    """A new worker imports triton (seconds); a job taken by it in that time is running, and a cancel reaches it."""
    import time

    path = str(tmp_path / "k.py")
    with CompileService(max_workers=1) as service:
        job = _job(path, KERNEL.format(pre=""))
        job.group = "doc"
        fut = service.submit(job)
        deadline = time.monotonic() + 30
        while not fut.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fut.running()
        assert service.cancel("doc") == 1  # taken, its worker still starting: neither queued nor sent
        assert fut.result(120).error.kind == "Cancelled"
        assert service.submit(_job(path, KERNEL.format(pre=""))).result(120).ok  # the pool goes on


# ------------------------------------------------------------------ CLI contract
def run_cli(capsys, *argv):
    code = cli_main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


BAD_ARANGE = '''\
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.store(x_ptr + tl.arange(0, 100), 1.0)
'''


def test_cli_json_is_the_documented_array(capsys, tmp_path):
    path = write(tmp_path, "bad_arange.py", BAD_ARANGE)
    code, out, _ = run_cli(capsys, "check", path, "--target", "cuda:90", "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert [d["code"] for d in data] == ["SRC001"]
    assert set(data[0]) == {"path", "line", "column", "end_line", "end_column", "code", "severity", "message",
                            "kernel", "config", "target", "details"}
    # the message is one line; the evidence is a list of lines beside it
    assert "\n" not in data[0]["message"] and len(data[0]["message"]) <= 200
    assert all(isinstance(d, str) for d in data[0]["details"])
    assert data[0]["line"] == 7 and data[0]["target"] == "cuda:90" and data[0]["kernel"] == "k"


def test_cli_sarif_and_usage_errors(capsys, tmp_path):
    path = write(tmp_path, "bad_arange.py", BAD_ARANGE)
    code, out, _ = run_cli(capsys, "check", path, "--target", "cuda:90", "--format", "sarif")
    sarif = json.loads(out)
    assert code == 1 and sarif["version"] == "2.1.0"
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "SRC001" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert any(r["id"] == "SRC001" for r in sarif["runs"][0]["tool"]["driver"]["rules"])
    assert run_cli(capsys, "check", path, "--target", "cuda:7x")[0] == 2
    assert run_cli(capsys, "check", str(tmp_path / "missing.py"))[0] == 2
    assert run_cli(capsys, "ir", "no-separator")[0] == 2


def test_cli_check_examples_and_ir(capsys):
    good = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".py"))
    code, out, _ = run_cli(capsys, "check", *good, "--target", "cuda:90")
    assert code == 0, out  # the bundled good examples have nothing at warning level
    for name in ("add_kernel", "softmax_kernel", "layer_norm_fwd", "matmul_kernel", "attn_fwd"):
        assert f"::{name} [cuda:90" in out
    assert "regs" in out and "shared" in out
    code, out, _ = run_cli(capsys, "ir", os.path.join(EXAMPLES, "softmax.py") + "::softmax_kernel",
                           "--stage", "ttgir", "--target", "cuda:90")
    assert code == 0 and "tt.func public @softmax_kernel" in out and "#blocked" in out


def test_change_in_imported_workspace_helper_recompiles(checker, tmp_path):
    (tmp_path / ".git").mkdir()  # the workspace root
    helper = tmp_path / "helpers.py"
    helper.write_text("import triton\n\n\n@triton.jit\ndef bump(x):\n    return x + 7.0\n")
    path = write(tmp_path, "uses_helper.py", '''\
        import triton
        import triton.language as tl
        from helpers import bump


        @triton.jit
        def k(x_ptr):
            offs = tl.arange(0, 128)
            tl.store(x_ptr + offs, bump(tl.load(x_ptr + offs)))
        ''')
    first = only_compiled(checker.check_file(path), "k").compiled[0].artifacts
    assert "7.000000e+00" in first.asm["ttir"]
    helper.write_text("import triton\n\n\n@triton.jit\ndef bump(x):\n    return x + 9.0\n")
    os.utime(helper, ns=(os.stat(helper).st_mtime_ns + 10**9,) * 2)
    second = only_compiled(checker.check_file(path), "k").compiled[0].artifacts
    assert not second.cached
    assert "9.000000e+00" in second.asm["ttir"] and "7.000000e+00" not in second.asm["ttir"]


def test_cli_explain(capsys):
    code, out, _ = run_cli(capsys, "explain", "ptx001")
    assert code == 0 and out.startswith("# PTX001") and "fix" in out.lower()
    code, _, err = run_cli(capsys, "explain", "NOPE042")
    assert code == 2 and "unknown code NOPE042" in err and "PTX001" in err


def test_pointers_whose_values_index_or_bound_loops_are_assumed_int(checker, tmp_path):
    """A block table / cu_seqlens pointer holds ints in a real launch: assuming *fp32 would fail a correct kernel."""
    path = write(tmp_path, "gather.py", '''\
        import triton
        import triton.language as tl


        @triton.jit
        def gather_rows(out_ptr, src_ptr, idx_ptr, cu_ptr, stride, BLOCK: tl.constexpr = 128):
            seq = tl.program_id(0)
            start = tl.load(cu_ptr + seq)
            end = tl.load(cu_ptr + seq + 1)
            cols = tl.arange(0, BLOCK)
            for i in range(start, end):
                row = tl.load(idx_ptr + i)
                x = tl.load(src_ptr + row * stride + cols)
                tl.store(out_ptr + i * stride + cols, x)
        ''')
    kr = only_compiled(checker.check_file(path), "gather_rows")
    cs = kr.compiled[0]
    assert cs.artifacts.ok, cs.artifacts.error
    sig = cs.spec.signature
    assert (sig["idx_ptr"], sig["cu_ptr"], sig["src_ptr"], sig["out_ptr"]) == ("*i32", "*i32", "*fp32", "*fp32")
    assert "integers" in cs.spec.origins["idx_ptr"]


def test_bare_assert_inside_triton_is_explained_by_its_condition(tmp_path):
    import importlib.util

    from tritonlens.compiler.worker import _root_message

    # A module of its own: pytest rewrites asserts in test files only, and Triton's are bare.
    internal = tmp_path / "triton_internal.py"
    internal.write_text("def check(lhs_dtype):\n    assert lhs_dtype == 'int32'\n")
    spec = importlib.util.spec_from_file_location("triton_internal", internal)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    try:
        try:
            mod.check("int8")
        except AssertionError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        assert _root_message(exc) == "Triton's check failed: `assert lhs_dtype == 'int32'`"


def test_workers_die_with_a_killed_parent(tmp_path):
    """SIGKILL the process that owns the pool while its worker runs user code: the worker must not linger."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(f'''\
        import time
        from tritonlens.compiler.pool import CompileJob, CompileService
        from tritonlens.model import Spec

        if __name__ == "__main__":  # workers are spawned: they re-import this file
            spec = Spec(signature={{"x_ptr": "*fp32"}}, constants={{}}, attrs={{}}, options={{}}, target="cuda:90")
            text = "import sys, time\\nprint('started', flush=True)\\ntime.sleep(600)\\n"
            service = CompileService(1)
            service.submit(CompileJob(path={str(tmp_path / 'k.py')!r}, text=text, qualname="k",
                                      spec=spec.to_json(), timeout=600))
            time.sleep(600)
        '''))
    # the worker may write nothing outside its own folder: it says it started on its stdout, our stderr
    owner = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True)
    try:
        started = any(line.strip() == "started" for line in owner.stderr)
        assert started, "the worker never ran the job"
        children = subprocess.run(["pgrep", "-P", str(owner.pid)], capture_output=True, text=True).stdout.split()
        assert children, "no worker process found"
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        deadline = time.time() + 10
        alive = children
        while alive and time.time() < deadline:
            time.sleep(0.3)
            alive = [pid for pid in children if os.path.exists(f"/proc/{pid}") and
                     "zombie" not in open(f"/proc/{pid}/status").read().lower()]
        assert not alive, f"worker(s) {alive} outlived their killed parent"
    finally:
        if owner.poll() is None:
            owner.kill()


def test_checker_works_from_stdin_and_unguarded_scripts(tmp_path):
    """Workers are plain subprocesses: nothing re-imports the caller's `__main__` (a REPL, stdin, a notebook)."""
    import subprocess
    import sys

    path = write(tmp_path, "add.py", VECTOR_ADD.format(n="i32%16"))
    code = textwrap.dedent(f'''\
        from tritonlens.pipeline import Checker
        from tritonlens.settings import Settings
        print("top level ran")
        with Checker(Settings(target="cuda:90", max_workers=1)) as c:
            art = c.check_file({path!r}).kernels[0].compiled[0].artifacts
        print("ok" if art.ok and "ld.global.v4.b32" in art.asm["ptx"] else art.error)
        ''')
    out = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=300)
    assert out.stdout.splitlines() == ["top level ran", "ok"], out.stderr[-2000:]


def _ttir_lines(kr):
    import re

    cs = kr.compiled[0]
    assert cs.artifacts.ok, cs.artifacts.error
    return {int(m) for m in re.findall(r'conditional\w*\.py":(\d+):', cs.artifacts.asm["ttir"])}


def test_kernels_in_both_branches_of_an_if_are_compiled_from_their_own_lines(checker, tmp_path):
    marker = tmp_path / "condition-ran.txt"
    path = write(tmp_path, "conditional_if.py", f'''\
        import triton
        import triton.language as tl

        USE_WIDE = False


        if USE_WIDE:
            # tritonlens: BLOCK=128
            @triton.jit
            def scale(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 7)
        else:
            # tritonlens: BLOCK=64
            @triton.jit
            def scale(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 9)

        if open({str(marker)!r}, "w").write("condition ran"):
            # tritonlens: BLOCK=32
            @triton.jit
            def guarded(x_ptr, BLOCK: tl.constexpr):
                tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

        if __name__ == "__main__":
            @triton.jit
            def in_main(x_ptr):
                tl.store(x_ptr, 0)
        ''')
    report = checker.check_file(path)
    assert [(k.kernel.name, k.kernel.def_line, k.kernel.branch) for k in report.kernels] == [
        ("scale", 10, "if USE_WIDE:"), ("scale", 16, "else: (of if USE_WIDE:)"),
        ("guarded", 23, f"if open({str(marker)!r}, \"w\").write(\"condition ran\"):")]
    wide, narrow, guarded = report.kernels
    # The `if` branch is compiled although USE_WIDE is False at import; each compile holds its own definition.
    assert wide.compiled[0].spec.constants["BLOCK"] == 128 and narrow.compiled[0].spec.constants["BLOCK"] == 64
    assert 12 in _ttir_lines(wide) and not {17, 18} & _ttir_lines(wide)
    assert 18 in _ttir_lines(narrow) and not {11, 12} & _ttir_lines(narrow)
    assert _ttir_lines(guarded) and not marker.exists()  # the condition with a side effect never ran
    assert not [f for f in report.all_findings() if f.code == "SRC001"]


def test_try_kernel_needing_a_missing_module_is_a_load_error_and_its_fallback_compiles(checker, tmp_path):
    path = write(tmp_path, "conditional_try.py", '''\
        import triton
        import triton.language as tl

        try:
            import tritonlens_test_missing_ext as ext
            HAS_EXT = True
        except ImportError:
            HAS_EXT = False

        if HAS_EXT:
            # tritonlens: BLOCK=64
            @triton.jit
            def act(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, ext.fast_exp(tl.load(x_ptr + offs)))

        try:
            from tritonlens_test_missing_ops import fused_add as _fast
            # tritonlens: BLOCK=64
            @triton.jit
            def add(x_ptr, BLOCK: tl.constexpr):
                _fast(x_ptr, BLOCK)
        except ImportError:
            # tritonlens: BLOCK=64
            @triton.jit
            def add(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
        ''')
    report = checker.check_file(path)
    by_line = {k.kernel.def_line: k for k in report.kernels}
    assert sorted(by_line) == [13, 21, 26]
    assert by_line[26].kernel.branch == "except ImportError:" and by_line[26].compiled[0].artifacts.ok
    assert not [f for f in report.all_findings() if f.code == "SRC001"]
    errors = sorted((f.line, f.kernel, f.severity, evidence(f)) for f in report.all_findings() if f.code == "SRC006")
    assert len(errors) == 2
    (line1, k1, sev1, msg1), (line2, k2, sev2, msg2) = errors
    # Each failure sits on the import that is missing and names the module; nothing fell back silently. A module
    # that does not import here is the environment's problem: a warning, once per import line, not an error.
    assert (line1, k1) == (5, "act") and "No module named 'tritonlens_test_missing_ext'" in msg1
    assert (line2, k2) == (18, "add") and "No module named 'tritonlens_test_missing_ops'" in msg2
    assert sev1 == sev2 == "warning" and "not compiled" in msg1 and "install it" in msg2


def test_error_on_a_name_the_slice_did_not_bind_says_why(checker, tmp_path):
    path = write(tmp_path, "pid_const.py", '''\
        from os import getpid
        import triton
        import triton.language as tl

        SCALE = tl.constexpr(getpid() % 7)


        @triton.jit
        def k(x_ptr):
            offs = tl.arange(0, 128)
            tl.store(x_ptr + offs, SCALE * 1.0)
        ''')
    [f] = checker.check_file(path).all_findings()
    assert (f.code, f.line) == ("SRC001", 11)
    assert "`SCALE` comes from line 5, not run because it calls getpid() at import" in f.message
    assert "moduleExecution to full" in evidence(f)


def test_module_constants_from_device_queries_are_run_and_answered_by_the_gpu(checker, tmp_path):
    """A constant built from the device's answers exists as in the user's own process: the workers answer as one GPU
    (here the virtual one of cuda:90, capability 9.0), through a helper defined in the module too."""
    path = write(tmp_path, "device_const.py", '''\
        import torch
        import triton
        import triton.language as tl

        _PROPS = torch.cuda.get_device_properties(torch.cuda.current_device())
        MAJOR: tl.constexpr = tl.constexpr(torch.cuda.get_device_capability()[0])
        ROWS: tl.constexpr = tl.constexpr(4 if _PROPS.multi_processor_count >= 100 else 2)


        @triton.jit
        def k(x_ptr):
            offs = tl.arange(0, 128)
            tl.static_assert(MAJOR == 9)
            tl.static_assert(ROWS == 4)
            tl.store(x_ptr + offs, MAJOR * 1.0)
        ''')
    report = checker.check_file(path)
    assert [f.code for f in report.all_findings() if f.code.startswith("SRC")] == []
    assert report.kernels[0].compiled[0].artifacts.ok


def test_type_error_from_a_pointer_assumed_fp32_is_an_info_that_names_it(checker, tmp_path):
    """Bit operations on a value read through `flags` (an int tensor in any real launch): discovery does not see the
    pointer's element type, tritonlens types it *fp32 and the compile fails — that failure is ours, not the kernel's."""
    path = write(tmp_path, "masked_copy.py", '''\
        import triton
        import triton.language as tl


        # tritonlens: BLOCK=128
        @triton.jit
        def masked_copy(flags, src, dst, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            f = tl.load(flags + pid)
            keep = (f >> 1) & 1
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst + offs, tl.load(src + offs) * keep)
        ''')
    [f] = checker.check_file(path).all_findings()
    assert (f.code, f.severity, f.line) == ("SRC001", "info", 10)
    assert "flags typed *fp32" in f.message and "`# tritonlens: flags=*i32`" in evidence(f)
    assert f.data["assumed_pointers"] == ["flags"]
    # With the pointer typed by the user, the same kernel compiles: the error was the assumption's.
    hinted = write(tmp_path, "masked_copy_hinted.py", open(path).read().replace(
        "# tritonlens: BLOCK=128", "# tritonlens: BLOCK=128, flags=*i32"))
    report = checker.check_file(hinted)
    assert not report.all_findings() and report.kernels[0].compiled[0].artifacts.ok


def test_type_error_with_every_pointer_typed_by_the_user_stays_an_error(checker, tmp_path):
    path = write(tmp_path, "float_bound.py", '''\
        import triton
        import triton.language as tl


        # tritonlens: BLOCK=128, starts=*fp32, dst=*fp32
        @triton.jit
        def float_bound(starts, dst, BLOCK: tl.constexpr):
            n = tl.load(starts)
            for off in range(0, n, BLOCK):
                tl.store(dst + off + tl.arange(0, BLOCK), 1.0)
        ''')
    [f] = checker.check_file(path).all_findings()
    assert (f.code, f.severity, f.line) == ("SRC001", "error", 9)
    assert "assumed_pointers" not in f.data


def test_version_gated_import_binds_as_a_real_import_without_running_its_condition(checker, tmp_path):
    """A version switch between two imports of one device function (Liger-Kernel's `if compare_version(...)`): the
    condition is a call into a module we do not run, so the slice keeps the `if` as a binding switch — the first
    branch that imports binds `tanh`, as a real import on this Triton does — and the kernel compiles."""
    text = textwrap.dedent('''\
        import operator

        import triton
        import triton.language as tl

        from tritonlens_test_helpers import version_at_least

        if version_at_least("triton", operator.ge, "3.0.0"):
            from triton.language.extra.libdevice import tanh
        else:
            from triton.language.extra.cuda.libdevice import tanh


        # tritonlens: BLOCK=128
        @triton.jit
        def act(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tanh(tl.load(x_ptr + offs)))
        ''')
    path = write(tmp_path, "version_switch.py", text)
    report = checker.check_file(path)
    assert report.all_findings() == [] and report.kernels[0].compiled[0].artifacts.ok
    # The first branch cannot import here: the `else` binds, as an except clause would take it.
    fallback = write(tmp_path, "version_switch_fallback.py", text.replace(
        "from triton.language.extra.libdevice import tanh", "from no_such_module_here import tanh"))
    report = checker.check_file(fallback)
    assert report.all_findings() == [] and report.kernels[0].compiled[0].artifacts.ok
    # Neither branch imports: the module does not import here, one SRC006 warning on the import that failed.
    broken = write(tmp_path, "version_switch_broken.py", text.replace(
        "from triton.language.extra.cuda.libdevice import tanh", "from no_such_module_either import tanh").replace(
        "from triton.language.extra.libdevice import tanh", "from no_such_module_here import tanh"))
    [f] = checker.check_file(broken).all_findings()
    assert (f.code, f.severity, f.line) == ("SRC006", "warning", 11) and "no_such_module_either" in f.message

def test_dtype_constexpr_from_a_hint(checker, tmp_path):
    path = write(tmp_path, "cast.py", '''\
        import triton
        import triton.language as tl


        # tritonlens: n=i32%16, OUT_DTYPE=tl.bfloat16, BLOCK=256
        @triton.jit
        def cast_kernel(x_ptr, y_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(y_ptr + offs, x.to(OUT_DTYPE), mask=offs < n)
        ''')
    cs = only_compiled(checker.check_file(path), "cast_kernel").compiled[0]
    assert cs.artifacts.ok, cs.artifacts.error
    assert "to tensor<256xbf16" in cs.artifacts.asm["ttgir"]
    assert "OUT_DTYPE=tl.bfloat16" in cs.spec.describe()


def test_load_error_is_not_replayed_from_the_cache_once_the_module_exists(checker, tmp_path):
    # The kernel's module imports a package that is not installed yet; installing it must make the next check compile.
    path = write(tmp_path, "needs_pkg.py", '''\
        import triton
        import triton.language as tl
        from tritonlens_test_late_pkg import SCALE


        # tritonlens: BLOCK=64
        @triton.jit
        def scale(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)
        ''')
    first = only_compiled(checker.check_file(path), "scale").compiled[0].artifacts
    assert first.error is not None and first.error.kind == "LoadError"
    assert "tritonlens_test_late_pkg" in first.error.message
    # Installing it (here: the module appears next to the file, where the loader finds it) must not replay the failure.
    (tmp_path / "tritonlens_test_late_pkg.py").write_text("import triton.language as tl\n\nSCALE = tl.constexpr(2)\n")
    second = only_compiled(checker.check_file(path), "scale").compiled[0].artifacts
    assert second.ok and not second.cached


def test_parameter_that_is_a_pointer_only_under_a_flag(checker, tmp_path):
    """`OFFSETS` is a tensor when IS_TENSOR is set and a plain int otherwise (flash-attention's rotary does this):
    each spec types it by the branch it takes, so neither fails to compile."""
    path = write(tmp_path, "shift.py", '''\
        import triton
        import triton.language as tl


        # tritonlens: out_ptr=*fp32, x_ptr=*fp32, IS_TENSOR=False, BLOCK=128
        # tritonlens: out_ptr=*fp32, x_ptr=*fp32, IS_TENSOR=True, BLOCK=128
        @triton.jit
        def shift(out_ptr, x_ptr, OFFSETS, IS_TENSOR: tl.constexpr, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            if IS_TENSOR:
                start = tl.load(OFFSETS + pid)
            else:
                start = OFFSETS
            cols = start + tl.arange(0, BLOCK)
            tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + cols))
        ''')
    report = checker.check_file(path)
    assert not report.all_findings(), [f.message for f in report.all_findings()]
    kr = only_compiled(report, "shift")
    types = {cs.spec.constants["IS_TENSOR"]: cs.spec.signature["OFFSETS"] for cs in kr.compiled}
    assert types == {False: "i32", True: "*i32"}
    assert all(cs.artifacts.ok for cs in kr.compiled)


def test_captured_tuple_arguments_replay_with_their_element_attributes(checker, tmp_path):
    """A tuple argument as the capture writer records it — triton's own text of the tuple type, and element
    attributes under `ptrs[0]` — compiles as the GPU compiled it: element 0 aligned gives 128-bit loads."""
    path = write(tmp_path, "tup.py", '''\
        import triton
        import triton.language as tl


        @triton.jit
        def tup_kernel(ptrs, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(ptrs[0] + offs, mask=offs < n)
            tl.store(ptrs[1] + offs, x.to(tl.float16), mask=offs < n)
        ''')
    record = {"version": 2, "path": "tup.py", "kernel": "tup_kernel", "target": "cuda:90",
              "signature": {"ptrs": "('*fp32', '*fp16')", "n": "i32", "BLOCK": "constexpr"},
              "constants": {"BLOCK": 1024}, "options": {"num_warps": 4},
              "attrs": {"ptrs[0]": {"divisibility": 16}, "ptrs[1]": {"divisibility": 16}, "n": {"divisibility": 16}}}
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(record) + "\n")
    kr = only_compiled(checker.check_file(path, workspace_root=str(tmp_path)), "tup_kernel")
    assert [cs.spec.label for cs in kr.compiled] == ["capture 1"]
    assert not [f for f in kr.findings if f.code in ("SRC001", "PTX001")], [f.message for f in kr.findings]
    assert set(ptx_load_widths(checker, kr, 8)) == {128}


@pytest.mark.skipif(has_local_gpu(),
                    reason="a local GPU answers its own device queries (the worker leaves a real GPU's answers alone)")
def test_device_queries_at_import_are_answered_for_the_target_compiled(tmp_path):
    """A helper module that asks triton's driver for the GPU at import (`driver.active.get_current_target()`) cannot
    load on a machine without one ("0 active drivers"): the failure is this machine's. The worker answers such
    queries for the target it compiles — so the module loads, and each target gets its own answer."""
    (tmp_path / "helpers.py").write_text(textwrap.dedent('''\
        import triton

        ARCH = triton.runtime.driver.active.get_current_target().arch
        BLOCK = triton.language.constexpr(128 if ARCH >= 90 else 64)
        '''))
    path = write(tmp_path, "k.py", '''\
        import triton
        import triton.language as tl

        from helpers import BLOCK


        # tritonlens: n=i32%16
        @triton.jit
        def k(x_ptr, n):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
        ''')
    settings = Settings(target="cuda:90", extra_targets=["cuda:80"], max_workers=1)
    with Checker(settings) as c:
        report = c.check_file(path, workspace_root=str(tmp_path))
    assert report.all_findings() == [], [f.message for f in report.all_findings()]
    ranges = {cs.spec.target: re.search(r"tt\.make_range \{end = (\d+)", cs.artifacts.asm["ttir"]).group(1)
              for cs in only_compiled(report, "k").compiled}
    assert ranges == {"cuda:90": "128", "cuda:80": "64"}


def test_captures_are_found_from_the_folder_holding_tritonlens_and_unmatched_ones_are_reported(capsys, tmp_path):
    """A package that ships its own pyproject.toml inside the repository must not move the workspace root below the
    capture file (every capture path then missed, silently); captures naming files or kernels that are not there are
    said, not dropped."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    path = write(pkg, "k.py", '''\
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
        ''')
    base = {"version": 1, "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            "constants": {"BLOCK": 256}, "attrs": {"x_ptr": {"divisibility": 16}, "n": {"divisibility": 16}},
            "options": {"num_warps": 4}, "target": "cuda:90"}
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps({**base, **r}) + "\n" for r in [
        {"path": "pkg/k.py", "kernel": "k"},
        {"path": "pkg/k.py", "kernel": "renamed_kernel"},
        {"path": "other_checkout/k.py", "kernel": "k"},
    ]))
    code, out, err = run_cli(capsys, "check", path, "--target", "cuda:90", "--format", "json")
    assert code == 0 and json.loads(out) == []  # compiled from the capture: BLOCK=256, no SRC002
    assert "1 capture(s) of renamed_kernel in pkg/k.py, which no longer defines that kernel" in err
    assert "1 captures name files that are not under" in err and "other_checkout/k.py (1)" in err
    with Checker(Settings(target="cuda:90", max_workers=1)) as c:
        kr = only_compiled(c.check_file(path), "k")
    assert [cs.spec.label for cs in kr.compiled] == ["capture 1"] and kr.compiled[0].spec.constants["BLOCK"] == 256


def test_the_analysis_runs_in_the_workers_only_and_is_kept_with_the_compile(tmp_path, monkeypatch):
    """Workers analyse their compiles (checks.analyse, with IR paths placed once the artefact cache stored the IR);
    the cache keeps the analysis with the compile and its inputs' digest. A cache hit read with the same inputs takes
    the stored analysis (no job at all); with other inputs (here a changed setting) a worker analyses the cached
    compile again. This process never analyses: `checks.analyse` raises here. All three give the same metrics and
    findings, related IR places included, on kernels with spills, conversions and narrow accesses."""
    import dataclasses

    import tritonlens.checks
    from tritonlens.compiler.cache import ArtifactCache
    from tritonlens.pipeline import Checker
    from tritonlens.settings import Settings

    def not_here(*a, **k):
        raise AssertionError("analysed in the checking process")

    monkeypatch.setattr(tritonlens.checks, "analyse", not_here)
    bad = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "bad")
    files = [os.path.join(bad, n) for n in ("matmul_spill.py", "transpose_storm.py",
                                                          "vector_add_unaligned.py")]

    def run(cache_dir, **settings):
        with Checker(Settings(target="cuda:90", max_workers=2, **settings), cache=ArtifactCache(cache_dir)) as c:
            jobs = []
            submit = c.service.submit
            c.service.submit = lambda job: jobs.append(job) or submit(job)
            out = []
            for report in c.check_files(files):
                for kr in report.kernels:
                    for cs in kr.compiled:
                        assert "analysis_error" not in cs.metrics, cs.metrics
                        out.append((kr.kernel.name, cs.spec.key(), cs.metrics,
                                    sorted((dataclasses.asdict(f) for f in cs.findings), key=repr)))
            return out, jobs

    cache = str(tmp_path / "cache")
    fresh, jobs = run(cache)  # compiled and analysed in the workers
    assert len(jobs) == len(fresh) == 3 and all(j.artifacts is None and j.analysis for j in jobs)
    stored, jobs = run(cache)  # the analyses stored with the compiles
    assert jobs == [] and stored == fresh
    again, jobs = run(cache, compile_timeout=61)  # another setting: the cached compiles analysed again, in workers
    assert len(jobs) == 3 and all(j.artifacts is not None and j.text == "" for j in jobs)
    assert again == fresh
    related = [r for *_, findings in fresh for f in findings for r in f["related"]]
    assert related and all(os.path.isfile(r["path"]) for r in related), related[:3]
    assert {f["code"] for *_, findings in fresh for f in findings} >= {"SASS001", "TTGIR001", "PTX001"}


DROPOUT = '''\
import torch
import triton
import triton.language as tl


# tritonlens: BLOCK_SIZE=1024, p=fp32
@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    output = tl.where(tl.rand(seed, offsets) > p, x / (1 - p), 0.0)
    tl.store(out_ptr + offsets, output, mask=mask)


def dropout(x, p, seed):
    output = torch.empty_like(x)
    dropout_kernel[(triton.cdiv(x.numel(), 1024),)](x, output, x.numel(), p, seed, BLOCK_SIZE=1024)
    return output


p = 0.5
output = dropout(x, p=p, seed=123)
'''


def test_names_local_to_the_kernel_do_not_pull_module_statements(checker, tmp_path):
    # `output` and `p` are the kernel's own (an assignment, a parameter): the script lines at the bottom that bind
    # the same names at module level are not run; they would fail (`x` is not defined).
    path = write(tmp_path, "dropout.py", DROPOUT)
    report = checker.check_file(path)
    assert [f.code for f in report.all_findings() if f.code.startswith("SRC")] == []
    assert only_compiled(report, "dropout_kernel").compiled[0].artifacts.ok


def test_a_needed_module_statement_that_fails_gets_advice_for_the_mode_in_use(checker, tmp_path):
    # SCALE is the module's: the kernel reads it, so the slice runs its line, which fails here. Under the default
    # mode the advice is about that statement, not "set moduleExecution to definitions" (the mode in use).
    path = write(tmp_path, "scaled.py", DROPOUT.replace("x / (1 - p)", "x * SCALE").replace(
        "p = 0.5\n", "SCALE = dropout(x, 0.5, 1)\n"))
    [f] = [f for f in checker.check_file(path).all_findings() if f.code == "SRC006"]
    assert (f.line, f.severity) == (22, "warning")
    assert "NameError: name 'x' is not defined" in f.message
    assert "set moduleExecution to definitions" not in evidence(f)
    assert "moduleExecution=definitions" in evidence(f) and "this is one of them" in evidence(f)
