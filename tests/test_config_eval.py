"""Autotune configs and heuristics built by code: evaluated in a sealed process of their own, answering device queries
as the virtual GPU; the checking process runs none of the file's code."""
import ast
import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest
from conftest import evidence

SERVER = os.path.join(os.path.dirname(__file__), "..", "server")
sys.path.insert(0, SERVER)

from tritonlens.device.config_eval import ConfigEvaluator  # noqa: E402
from tritonlens.frontend.config_code import config_program  # noqa: E402
from tritonlens.frontend.discover import discover  # noqa: E402
from tritonlens.frontend.scope import ModuleScope  # noqa: E402
from tritonlens.pipeline import Checker  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402
from tritonlens.source import parse_module  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "config_eval")
SEALED = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")

# A config builder that leaves any namespace it is given: a generator's frame leads to its callers' frames, whose
# globals hold the real builtins of the process that runs it.
ESCAPE = '''
import triton
import triton.language as tl


def real_builtin(name):
    gen = (gen.gi_frame.f_back for _ in [1])
    for frame in gen:
        while frame is not None:
            found = frame.f_globals.get("__builtins__")
            if isinstance(found, dict) and name in found and "exec" in found:
                return found[name]
            frame = frame.f_back
    return None


def configs():
    {action}
    return [triton.Config({{"BLOCK": 64}})]


@triton.autotune(configs=configs(), key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass
'''


def _write_escape(tmp_path, action):
    path = tmp_path / "escape.py"
    path.write_text(ESCAPE.format(action=action))
    return str(path)


def test_check_runs_no_config_code_of_the_file_in_the_checking_process(tmp_path):
    written = tmp_path / "written"
    path = _write_escape(tmp_path, f'real_builtin("open")({str(written)!r}, "w").write("escaped")')
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SERVER))
    out = subprocess.run([sys.executable, "-m", "tritonlens", "check", "--format", "json", path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert not written.exists()
    (f,) = json.loads(out.stdout)
    assert f["code"] == "SRC002" and "the autotune configs could not be evaluated" in evidence(f)


def _raw_request(path, target="cuda:90", gpu="h100"):
    """The request discover would send, without the guard that refuses frame walks before anything is sent."""
    text = open(path).read()
    tree = parse_module(text)
    scope = ModuleScope(path, text, tree, None)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "k")
    program = config_program(scope, fn.decorator_list[0].keywords[0].value)
    return {"op": "configs", "program": program.to_json(), "target": target, "gpu": gpu}


@pytest.mark.skipif(not SEALED, reason="the seccomp seal is for Linux on x86-64 and arm64")
@pytest.mark.parametrize("action, error", [
    ('real_builtin("open")(WRITTEN, "w").write("escaped")', "PermissionError"),
    ('real_builtin("__import__")("os").system("touch " + WRITTEN)', None),
    ('real_builtin("__import__")("subprocess").run(["touch", WRITTEN])', "PermissionError"),
    ('real_builtin("__import__")("os").kill(PARENT, 15)', "PermissionError"),
    ('real_builtin("__import__")("socket").create_connection(("127.0.0.1", 22))', "PermissionError"),
])
def test_the_evaluator_process_is_sealed_even_when_the_guard_is_passed(tmp_path, action, error):
    written = tmp_path / "written"
    path = _write_escape(tmp_path, action.replace("WRITTEN", repr(str(written))).replace("PARENT", str(os.getpid())))
    evaluator = ConfigEvaluator(timeout=20)
    try:
        answer = evaluator.evaluate(_raw_request(path))
        assert evaluator.sealed is True
        assert not written.exists()
        if error:
            assert not answer["ok"] and error in answer["error"]
        alive = evaluator.pid
        assert alive is not None and alive != os.getpid()
    finally:
        evaluator.close()


def test_a_hang_is_killed_reported_as_our_limit_and_the_next_evaluation_runs(tmp_path):
    path = tmp_path / "hang.py"
    path.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        def slow():
            return sum(range(10 ** 13))  # one C call: no line events for the step budget

        @triton.autotune(configs=[triton.Config({"B": 64})] if slow() else [], key=[])
        @triton.jit
        def hangs(x_ptr, B: tl.constexpr):
            pass

        @triton.autotune(configs=[triton.Config({"B": b}) for b in (32, 64)], key=[])
        @triton.jit
        def fine(x_ptr, B: tl.constexpr):
            pass
    '''))
    evaluator = ConfigEvaluator(timeout=1)
    try:
        found = discover(str(path), path.read_text(), str(tmp_path), evaluator=evaluator)
        kernels = {k.name: k for k in found.kernels}
        assert kernels["hangs"].autotune_configs is None
        assert kernels["hangs"].autotune_error == "evaluation took longer than 1 s"
        assert kernels["fine"].autotune_configs == [{"kwargs": {"B": 32}}, {"kwargs": {"B": 64}}]
    finally:
        evaluator.close()


def test_a_crashed_evaluator_is_replaced(tmp_path):
    evaluator = ConfigEvaluator(timeout=20)
    try:
        assert evaluator.call("lambda args: args['n'] + 1", {"n": 1}, "cuda:90") == {"ok": True, "value": 2}
        first = evaluator.pid
        os.kill(first, 9)
        assert evaluator.call("lambda args: args['n'] * 2", {"n": 21}, "cuda:90") == {"ok": True, "value": 42}
        assert evaluator.pid not in (None, first)
        # code that brings the process down: reported, and the next evaluation gets a new process
        path = _write_escape(tmp_path, 'real_builtin("__import__")("os").abort()')
        answer = evaluator.evaluate(_raw_request(path))
        assert not answer["ok"] and answer["error"].startswith("the evaluator process stopped (killed by SIG")
        assert evaluator.call("lambda args: 7", {}, "cuda:90") == {"ok": True, "value": 7}
    finally:
        evaluator.close()


def test_memory_over_the_bound_is_our_limit(tmp_path):
    evaluator = ConfigEvaluator(timeout=20, memory_mb=256)
    try:
        answer = evaluator.call("lambda args: len([0] * (10 ** 9))", {}, "cuda:90")
        assert not answer["ok"] and answer["error"] == "evaluation needed more than the 256 MB the evaluator may use"
        assert evaluator.call("lambda args: 1", {}, "cuda:90") == {"ok": True, "value": 1}
    finally:
        evaluator.close()


# ---------------------------------------------------------------- module constants built from device answers
def _configs(target, gpu=None):
    from tritonlens.device.run import run_devices

    path = os.path.join(DATA, "devicelib", "attn.py")
    device = run_devices(target, gpu or "", local=False)[0]  # as a run makes it: the GPU named, when of the arch
    with open(path, encoding="utf-8") as fh:
        found = discover(path, fh.read(), DATA, target=device.target, gpu=device.gpu.key)
    assert found.errors == []
    return {k.name: (k.autotune_configs, k.autotune_error) for k in found.kernels}


def test_autotune_lists_from_device_answers_follow_the_virtual_gpu():
    h100 = _configs("cuda:90")
    # 227 KB of opt-in shared memory >= 144 KB: the large list; capability 9: four stages
    assert h100["scale"] == ([{"kwargs": {"BKV": b}, "num_warps": w, "num_stages": 4}
                              for b in (32, 64) for w in (2, 4)], None)
    # a list filled by a loop over a condition on Triton's driver properties
    assert h100["wide"] == ([{"kwargs": {"BKV": b}, "num_warps": 8, "num_stages": 4} for b in (128, 256)], None)
    # flags imported from a workspace module, computed from Triton's backend, torch, functools.lru_cache and os.environ
    assert h100["imported_flags"] == ([{"kwargs": {"BKV": 64}, "num_warps": 8}], None)
    l40s = _configs("cuda:89")  # 99 KB opt-in, capability 8.9
    assert l40s["scale"][0] == [{"kwargs": {"BKV": b}, "num_warps": w, "num_stages": 2}
                                for b in (16, 32) for w in (2, 4)]
    assert l40s["wide"][0] == [{"kwargs": {"BKV": 64}, "num_warps": 8, "num_stages": 2}]
    assert l40s["imported_flags"][0] == [{"kwargs": {"BKV": 64}, "num_warps": 2}]
    # a GPU named for the target answers as itself (SM counts: L40S 142, RTX 4090 128); one of another arch is not
    # taken (an RTX 3090 is sm_86: the A100's 163 KB answer for cuda:80)
    assert l40s["by_sms"][0] == [{"kwargs": {"BKV": 64}, "num_warps": 4}]
    assert _configs("cuda:89", "RTX 4090")["by_sms"][0] == [{"kwargs": {"BKV": 64}, "num_warps": 2}]
    assert _configs("cuda:80", "rtx3090")["scale"][0][0]["kwargs"] == {"BKV": 32}


def test_a_failed_module_statement_is_the_reason(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        BLOCKS = [32, 64] if torch.cuda.get_device_properties(0).no_such_field else [16]

        @triton.autotune(configs=[triton.Config({"B": b}) for b in BLOCKS], key=[])
        @triton.jit
        def k(x_ptr, B: tl.constexpr):
            pass
    '''))
    (k,) = discover(str(path), path.read_text(), str(tmp_path)).kernels
    assert k.autotune_configs is None
    assert k.autotune_error == ("BLOCKS (line 6) could not be evaluated: AttributeError: 'types.SimpleNamespace' "
                                "object has no attribute 'no_such_field'")


def test_kernels_with_device_built_autotune_lists_compile(tmp_path):
    path = os.path.join(DATA, "devicelib", "attn.py")
    with Checker(Settings(max_workers=1, target="cuda:90")) as checker:
        report = checker.check_file(path, workspace_root=DATA, kernels={"scale"})
    (kr,) = report.kernels
    assert [f.code for f in kr.findings if f.code.startswith("SRC")] == []
    labels = sorted(cs.spec.label for cs in kr.compiled)
    assert labels == [f"autotune config {i}/4" for i in range(1, 5)]
    assert all(cs.artifacts is not None and cs.artifacts.error is None for cs in kr.compiled)
    assert sorted((cs.spec.constants["BKV"], cs.spec.options["num_warps"]) for cs in kr.compiled) == [
        (32, 2), (32, 4), (64, 2), (64, 4)]


def test_the_decorator_sees_the_module_as_it_stands_at_its_line(tmp_path):
    path = tmp_path / "order.py"
    path.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        BLOCKS = [16]
        if triton.runtime.driver.active.get_current_target().arch >= 90:
            BLOCKS.append(32)

        @triton.autotune(configs=[triton.Config({"B": b}) for b in BLOCKS], key=[])
        @triton.jit
        def k(x_ptr, B: tl.constexpr):
            pass

        BLOCKS = [128]  # rebound after the kernel: its decorator never saw this
    '''))
    (k,) = discover(str(path), path.read_text(), str(tmp_path), target="cuda:90").kernels
    assert k.autotune_configs == [{"kwargs": {"B": 16}}, {"kwargs": {"B": 32}}]
    (k,) = discover(str(path), path.read_text(), str(tmp_path), target="cuda:80").kernels
    assert k.autotune_configs == [{"kwargs": {"B": 16}}]


def test_heuristics_read_module_constants_built_from_device_answers(tmp_path):
    from tritonlens.frontend.specs import build_specs

    path = tmp_path / "heur.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        MAX_BLOCK = 4096 if torch.cuda.get_device_properties(0).shared_memory_per_block_optin >= 144 * 1024 else 1024


        def block_for(n):
            return min(triton.next_power_of_2(n), MAX_BLOCK)


        # tritonlens: n=100000
        @triton.heuristics({"BLOCK": lambda args: block_for(args["n"]),
                            "EVEN": lambda args: args["n"] % args["BLOCK"]
                            == 0})
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            pass
    '''))
    for target, block in (("cuda:90", 4096), ("cuda:89", 1024)):
        (kernel,) = discover(str(path), path.read_text(), str(tmp_path), target=target).kernels
        (spec,), findings = build_specs(kernel, target)
        assert findings == [] and spec.constants == {"BLOCK": block, "EVEN": False}


def test_config_code_reads_the_environment_the_workers_import_with(monkeypatch):
    """Config code sees the compile workers' clean environment: a variable of the checking process reaches it only
    when tritonlens.env names it (here with no value: this process's own)."""
    # USE_FAST_PATH = os.environ.get("DEVICELIB_FAST", "1") == "1" in the fixture's utils.py
    path = os.path.join(DATA, "devicelib", "attn.py")
    monkeypatch.setenv("DEVICELIB_FAST", "0")
    evaluator = ConfigEvaluator()
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        unnamed = {k.name: k for k in discover(path, text, DATA, evaluator=evaluator).kernels}
        assert unnamed["imported_flags"].autotune_configs == [{"kwargs": {"BKV": 64}, "num_warps": 8}]
        named = {k.name: k for k in discover(path, text, DATA, evaluator=evaluator,
                                             env={"DEVICELIB_FAST": None}).kernels}
        assert named["imported_flags"].autotune_configs == [{"kwargs": {"BKV": 64}, "num_warps": 4}]
    finally:
        evaluator.close()


def test_the_workers_environment_setting_reaches_config_code(tmp_path):
    path = os.path.join(DATA, "devicelib", "attn.py")
    with Checker(Settings(max_workers=1, target="cuda:90", env={"DEVICELIB_FAST": "0"})) as checker:
        plan = checker.plan_file(path, workspace_root=DATA, kernels={"imported_flags"})
        report = checker.finish(plan)
    (kr,) = report.kernels
    assert [cs.spec.options["num_warps"] for cs in kr.compiled] == [4]


def test_a_module_constant_a_heuristic_reads_is_part_of_the_kernel_hash():
    src = ('import triton\nimport triton.language as tl\n\nLIMIT = 1024\n\n\n'
           '@triton.heuristics({"B": lambda args: min(args["n"], LIMIT)})\n@triton.jit\n'
           'def k(x_ptr, n, B: tl.constexpr):\n    pass\n')
    base = discover("h.py", src).kernels[0].source_hash
    assert discover("h.py", src.replace("LIMIT = 1024", "LIMIT = 2048")).kernels[0].source_hash != base
    assert discover("h.py", "# a comment above\n" + src).kernels[0].source_hash == base
