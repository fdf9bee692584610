"""Specs from captures, hints, launch sites, defaults, autotune configs and heuristics — and a real compile."""
import importlib.util
import os
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))

from tritonlens.frontend.discover import discover  # noqa: E402
from tritonlens.frontend.launches import find_launches  # noqa: E402
from tritonlens.frontend.specs import build_specs, spec_to_compile_args  # noqa: E402
from conftest import evidence

ROOT = os.path.join(os.path.dirname(__file__), "..")
DATA = os.path.join(os.path.dirname(__file__), "data", "discover")
VECTOR_ADD = os.path.join(ROOT, "examples", "vector_add.py")


def kernel_of(src, name=None, path="k.py"):
    kernels = discover(path, src).kernels
    return kernels[0] if name is None else next(k for k in kernels if k.name == name)


HEAD = "import triton\nimport triton.language as tl\n\n"


def test_hint_spec_matches_a_torch_launch():
    text = open(VECTOR_ADD, encoding="utf-8").read()
    k = kernel_of(text, path=VECTOR_ADD)
    (spec,), findings = build_specs(k, "cuda:90")
    assert findings == []
    assert spec.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                              "BLOCK_SIZE": "constexpr"}
    assert spec.constants == {"BLOCK_SIZE": 1024}
    assert spec.attrs == {n: {"divisibility": 16} for n in ("x_ptr", "y_ptr", "out_ptr", "n_elements")}
    assert spec.options == {"num_warps": 4, "num_stages": 3}
    assert spec.origins["num_stages"] == "triton default" and spec.origins["BLOCK_SIZE"] == "hint line 7"
    assert spec.label == "hint line 7" and spec.missing == []


def test_unset_params_default_like_a_torch_launch_and_one_and_none_specialize():
    src = HEAD + ("# tritonlens: n=1, z=None, B=64\n@triton.jit\n"
                  "def k(x_ptr, n, m, z, out, B: tl.constexpr):\n    tl.store(out + 1, tl.load(x_ptr))\n")
    (spec,), _ = build_specs(kernel_of(src), "cuda:80")
    assert spec.signature == {"x_ptr": "*fp32", "n": "constexpr", "m": "i32", "z": "constexpr", "out": "*fp32",
                              "B": "constexpr"}
    assert spec.constants == {"n": 1, "z": None, "B": 64}
    assert spec.attrs == {"x_ptr": {"divisibility": 16}, "out": {"divisibility": 16}}
    assert spec.origins["x_ptr"] == "assumed (torch launch)"


def test_do_not_specialize_drops_divisibility_and_one():
    src = HEAD + ("# tritonlens: n=1, m=i32%16, p=*fp16\n@triton.jit(do_not_specialize=['n', 1, 'p'])\n"
                  "def k(p, m, n):\n    pass\n")
    (spec,), _ = build_specs(kernel_of(src), "cuda:90")
    assert spec.signature == {"p": "*fp16", "m": "i32", "n": "i32"}
    assert spec.constants == {} and spec.attrs == {}


def test_hint_times_autotune_configs():
    src = open(os.path.join(DATA, "forms.py"), encoding="utf-8").read()
    k = kernel_of(src, "stacked")
    specs, findings = build_specs(k, "cuda:90")
    # the hint sets BLOCK_N but not num_warps/num_stages: it combines with each config, hint values winning
    assert [s.label for s in specs] == ["hint line 39 × autotune config 1/2", "hint line 39 × autotune config 2/2"]
    assert [s.constants["BLOCK_N"] for s in specs] == [64, 64]
    assert [(s.options["num_warps"], s.options["num_stages"]) for s in specs] == [(4, 3), (8, 2)]
    assert specs[1].origins["num_warps"] == "autotune config 2/2" and specs[0].origins["num_stages"] == "triton default"
    # EVEN comes from a heuristic on n, which only a launch knows: missing, with the reason
    assert all(s.missing == ["EVEN"] for s in specs)
    (f,) = findings
    assert (f.code, f.severity, f.line) == ("SRC002", "info", 45)
    assert "EVEN has no value" in evidence(f) and "known only at launch" in evidence(f)


def test_heuristics_evaluate_once_inputs_are_known():
    src = HEAD + ("# tritonlens: n=1024, BLOCK=128\n"
                  "@triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0,"
                  " 'WIDE': lambda args: triton.next_power_of_2(args['BLOCK']) > 64})\n@triton.jit\n"
                  "def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, WIDE: tl.constexpr):\n    pass\n")
    (spec,), findings = build_specs(kernel_of(src), "cuda:90")
    assert findings == [] and spec.constants == {"BLOCK": 128, "EVEN": True, "WIDE": True}
    assert spec.signature["n"] == "i32" and spec.attrs["n"] == {"divisibility": 16}


def test_autotune_configs_alone_and_dedupe():
    src = HEAD + ("@triton.autotune(configs=[triton.Config({'B': 64}), triton.Config({'B': 64}),"
                  " triton.Config({'B': 128}, num_warps=8)], key=[])\n@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n"
                  "    pass\n")
    specs, _ = build_specs(kernel_of(src), "hip:gfx942")
    assert [(s.constants["B"], s.options["num_warps"], s.options["num_stages"]) for s in specs] == [(64, 4, 2),
                                                                                                     (128, 8, 2)]
    assert specs[0].label == "autotune config 1/3"


def test_defaults_in_def():
    src = HEAD + "BLOCK = 256\n\n@triton.jit\ndef k(x_ptr, eps=1e-5, B: tl.constexpr = BLOCK):\n    pass\n"
    (spec,), findings = build_specs(kernel_of(src), "cuda:90")
    assert findings == [] and spec.constants == {"B": 256} and spec.signature["eps"] == "fp32"
    assert spec.origins["B"] == "default in def" and spec.label == "defaults"


def test_launch_sites_give_values_and_candidates():
    files = {os.path.join(DATA, n): open(os.path.join(DATA, n), encoding="utf-8").read()
             for n in ("forms.py", "launcher.py")}
    k = kernel_of(files[os.path.join(DATA, "forms.py")], "plain", path=os.path.join(DATA, "forms.py"))
    sites = find_launches("plain", files)
    assert [(os.path.basename(s.path), s.line) for s in sites] == [("launcher.py", 10), ("launcher.py", 15)]
    specs, findings = build_specs(k, "cuda:90", launches=sites)
    first, second = specs
    assert first.label == "launch at launcher.py:10" and first.constants == {"BLOCK": 512}
    assert first.origins["BLOCK"] == "launch at launcher.py:10" and first.signature["n"] == "i32"
    assert second.constants == {"n": 1} and second.missing == ["BLOCK"]  # n=1 specialises like a real launch
    (f,) = findings
    assert f.code == "SRC002" and (f.line, f.column, f.end_column) == (15, 21, 26)
    assert "(launch sites pass 512, triton.next_power_of_2(n_cols))" in evidence(f)


def test_missing_constexpr_without_launches():
    src = HEAD + "@triton.jit\ndef k(x_ptr, BLOCK_SIZE: tl.constexpr):\n    pass\n"
    (spec,), (f,) = build_specs(kernel_of(src), "cuda:90")
    assert spec.missing == ["BLOCK_SIZE"]
    assert f.message == "BLOCK_SIZE has no value: add a hint `# tritonlens: BLOCK_SIZE=...`"
    with pytest.raises(ValueError):
        spec_to_compile_args(spec, kernel_of(src))


def test_unevaluable_autotune_configs_are_missing_with_the_reason():
    path = os.path.join(DATA, "configs_fn.py")
    k = kernel_of(open(path, encoding="utf-8").read(), "unknowable", path=path)
    (spec,), (f,) = build_specs(k, "cuda:90")
    assert spec.missing == ["BLOCK"] and "load_from_disk" in evidence(f)


def test_hint_errors_become_findings_on_the_token():
    src = HEAD + "# tritonlens: x_ptr=*fq16, B=64\n@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    pass\n"
    (spec,), (f,) = build_specs(kernel_of(src), "cuda:90")
    assert (f.code, f.severity, f.line, f.column, f.end_column) == ("SRC004", "warning", 4, 21, 26)
    assert spec.constants == {"B": 64} and spec.signature["x_ptr"] == "*fp32"


CAPTURE = {"version": 1, "path": "kernels/add.py", "kernel": "add_kernel",
           "signature": {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16", "n_elements": "i32",
                         "BLOCK_SIZE": "constexpr"},
           "constants": {"BLOCK_SIZE": 2048}, "attrs": {"x_ptr": {"divisibility": 16}},
           "options": {"num_warps": 8, "num_stages": 3, "arch": "sm90"}, "target": "cuda:90",
           "triton_version": "3.6.0"}


def test_captures_replace_hints():
    k = kernel_of(open(VECTOR_ADD, encoding="utf-8").read(), path="/ws/kernels/add.py")
    (spec,), findings = build_specs(k, "cuda:90", captures=[CAPTURE])
    assert findings == [] and spec.label == "capture 1"
    assert spec.constants == {"BLOCK_SIZE": 2048} and spec.options == {"num_warps": 8, "num_stages": 3}
    assert spec.attrs == {"x_ptr": {"divisibility": 16}} and spec.origins["BLOCK_SIZE"] == "capture"


def test_stale_capture_is_reported_and_skipped():
    k = kernel_of(open(VECTOR_ADD, encoding="utf-8").read(), path="/ws/kernels/add.py")
    stale = dict(CAPTURE, signature={"x_ptr": "*fp16", "n_elements": "i32", "BLOCK_SIZE": "constexpr"})
    specs, (f,) = build_specs(k, "cuda:90", captures=[stale])
    assert [s.label for s in specs] == ["hint line 7"]
    assert f.code == "SRC003" and f.severity == "info"
    assert f.message == ("capture from kernels/add.py no longer fits: parameters changed (added y_ptr, out_ptr)")


# ---------------------------------------------------------------- the proof: triton compiles what we produce
@pytest.fixture(scope="module")
def add_kernel_fn():
    pytest.importorskip("triton")
    stub = None
    if importlib.util.find_spec("torch") is None:
        stub = types.ModuleType("torch")  # the example imports torch only for its launcher; no torch here
        sys.modules["torch"] = stub
    try:
        spec = importlib.util.spec_from_file_location("tritonlens_test_vector_add", VECTOR_ADD)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if stub is not None:
            del sys.modules["torch"]
    return mod.add_kernel


def _ptx(fn, spec, kernel):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonlens.compiler.worker import private_triton_cache

    signature, constexprs, attrs = spec_to_compile_args(spec, kernel)
    with private_triton_cache():  # not another checkout's cached IR of the same kernel
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32),
                                  options=spec.options)
    return compiled.asm["ptx"]


def test_spec_compiles_to_what_its_assumptions_say(add_kernel_fn):
    text = open(VECTOR_ADD, encoding="utf-8").read()
    k = kernel_of(text, path=VECTOR_ADD)
    (aligned,), _ = build_specs(k, "cuda:90")
    ptx = _ptx(add_kernel_fn, aligned, k)
    assert "ld.global.v4.b32" in ptx

    k.hints[0].values["n_elements"] = "i32"
    (unaligned,), _ = build_specs(k, "cuda:90")
    assert "n_elements" not in unaligned.attrs
    ptx = _ptx(add_kernel_fn, unaligned, k)
    assert "ld.global.b32" in ptx and "ld.global.v4.b32" not in ptx


def test_launch_sites_through_aliases_branches_and_unpacked_settings():
    path = os.path.join(DATA, "launch_forms.py")
    files = {path: open(path, encoding="utf-8").read()}
    norm = find_launches("norm_fwd", files)
    shifted = find_launches("shifted_fwd", files)
    assert [s.line for s in norm] == [29, 36, 40] and [s.line for s in shifted] == [29, 42]
    specs, findings = build_specs(kernel_of(files[path], "norm_fwd", path=path), "cuda:90", launches=norm)
    assert all(s.missing == ["BLOCK"] for s in specs)  # never the module's BLOCK = 32: a parameter shadows it
    (f,) = findings
    assert f.data["candidates"] == ["settings(n)[0]", "triton.next_power_of_2(n)", "BLOCK"]
    _, (g,) = build_specs(kernel_of(files[path], "shifted_fwd", path=path), "cuda:90", launches=shifted)
    assert g.data["candidates"] == ["settings(n)[0]", "BLOCK"]  # the loop variable, not 32


def test_configs_from_an_imported_module_say_why_they_are_not_evaluated():
    from tritonlens.frontend.discover import discover

    src = (
        "import triton\nimport triton.language as tl\nfrom flag_runtime import runtime\n\n\n"
        "@triton.autotune(configs=runtime.get_tuned_config('rms'), key=['n'])\n@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"
    )
    [kernel] = discover("/ws/k.py", src).kernels
    assert kernel.autotune_configs is None
    assert "imported from flag_runtime.runtime" in kernel.autotune_error and "does not run" in kernel.autotune_error


def test_launch_argument_written_over_several_lines_is_one_line_in_the_candidates():
    src = HEAD + '''@triton.jit
def k(x_ptr, USE_FAST: tl.constexpr):
    pass


def launch(x, fast_ok, exact):
    k[(1,)](
        x,
        USE_FAST=(
            fast_ok  # only where the hardware has it
            and not exact
        ),
    )
'''
    path = "/ws/multi_line_arg.py"
    specs, (f,) = build_specs(kernel_of(src, "k", path=path), "cuda:90", launches=find_launches("k", {path: src}))
    assert f.data["candidates"] == ["fast_ok and (not exact)"]
    assert "\n" not in f.message and "(launch sites pass fast_ok and (not exact))" in evidence(f)


def test_wrapped_and_warmup_launches_are_launch_sites():
    # torch.library.wrap_triton(k)[grid](...) launches k; k.warmup(..., grid=...) compiles the spec that a later
    # launch of the returned kernel uses. Both give values (BLOCK=2) and candidates; grid is not a parameter.
    src = HEAD + '''@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    pass


def run_wrapped(x, n):
    torch.library.wrap_triton(k)[(1,)](x, n, BLOCK=2, STAGES=n // 4)


def run_warm(x, n, big):
    stages = 4 if big else 2
    compiled = k.warmup(x, n, BLOCK=triton.next_power_of_2(n), STAGES=stages, num_warps=8, grid=(1,))
    compiled[(1, 1, 1)](x, n)
'''
    files = {"/ws/w.py": src}
    sites = find_launches("k", files)
    assert len(sites) == 2 and all("grid" not in s.keywords for s in sites)
    specs, findings = build_specs(kernel_of(src, "k", path="/ws/w.py"), "cuda:90", launches=sites)
    (f,) = findings  # one SRC002 for the kernel, naming both values and their candidates
    by_param = f.data["candidates_by_param"]
    assert by_param["STAGES"] == ["n // 4", "2", "4"]  # `stages` can only be 4 or 2: each is a value it passes
    assert by_param["BLOCK"] == ["2", "triton.next_power_of_2(n)"]
    assert f.data["params"] == ["STAGES", "BLOCK"] or f.data["params"] == ["BLOCK", "STAGES"]
    assert "STAGES (launch sites pass n // 4, 2, 4)" in evidence(f) and "`# tritonlens: " in evidence(f)


def test_an_augmented_assignment_drops_the_stale_candidate_text():
    # `_, d = w.shape; d *= 2` passes twice w.shape[1]: naming w.shape[1] as what the launch passes would be wrong.
    src = HEAD + '''@triton.jit
def k(x_ptr, DIM: tl.constexpr):
    pass


def launch(x, w):
    rows, dim = w.shape
    dim *= 2
    k[(rows,)](x, dim)
'''
    sites = find_launches("k", {"/ws/a.py": src})
    _, (f,) = build_specs(kernel_of(src, "k", path="/ws/a.py"), "cuda:90", launches=sites)
    assert f.data["candidates"] == ["dim"] and "w.shape" not in f.message


def test_a_parameter_named_like_an_option_sets_both():
    """`num_stages: tl.constexpr` in the signature: a launch keyword (and so a hint) sets the constexpr and the
    compile option together, as Triton's launcher does."""
    src = (
        "import triton\nimport triton.language as tl\n\n\n"
        "# tritonlens: BLOCK=256, num_stages=4\n@triton.jit\n"
        "def k(x_ptr, BLOCK: tl.constexpr, num_stages: tl.constexpr):\n"
        "    for i in tl.range(0, 4, num_stages=num_stages):\n"
        "        tl.store(x_ptr + i * BLOCK + tl.arange(0, BLOCK), 1.0)\n"
    )
    [kernel] = discover("/ws/k.py", src).kernels
    specs, _ = build_specs(kernel, "cuda:90")
    [spec] = specs
    assert spec.constants["num_stages"] == 4 and spec.options["num_stages"] == 4
    assert spec.describe().count("num_stages") == 1 and "num_stages=4" in spec.describe()


def _captured(kernel_src: str, caps: list[dict]):
    k = kernel_of(kernel_src, "k", path="/ws/k.py")
    return build_specs(k, "cuda:90", captures=[{"version": 1, "path": "k.py", "kernel": "k", **c} for c in caps])


def test_representative_captured_specs_cover_every_launched_value_chosen_and_most_launched_first():
    from tritonlens.frontend.specs import representative

    src = HEAD + "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
    sig = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    caps = [{"signature": sig, "constants": {"BLOCK": b}, "attrs": {"x_ptr": {"divisibility": 16}},
             "options": {"num_warps": w}, "launches": launches, **({"autotune": tune} if tune else {})}
            for b, w, launches, tune in [(64, 4, 1, None), (64, 4, 1, None), (128, 4, 5, None), (256, 8, 2, None),
                                         (512, 8, 0, "trial"), (1024, 16, 0, "chosen")]]
    specs, findings = _captured(src, caps)
    assert findings == [] and len(specs) == 5  # the two identical launches are one spec with 2 launches
    assert specs[0].launches == 2
    picked = representative(specs, limit=12)
    # the autotuner's choice first, then by launches; every BLOCK and num_warps launched is covered; no trial
    assert [s.constants["BLOCK"] for s in picked] == [1024, 128, 64, 256]  # 64 and 256: 2 launches each
    assert representative(specs, limit=2) == picked[:2]
    assert {s.constants["BLOCK"] for s in representative([s for s in specs if s.autotune == "trial"], 4)} == {512}


def test_a_heuristics_entry_for_num_warps_sets_the_launch_option():
    """Triton passes a heuristics value named like a launch option to the launch, as a keyword: the spec has it."""
    src = HEAD + ("# tritonlens: n=1024, BLOCK=4096\n"
                  "@triton.heuristics({'num_warps': lambda args: 16 if args['BLOCK'] >= 4096 else 4})\n@triton.jit\n"
                  "def k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n")
    (spec,), findings = build_specs(kernel_of(src), "cuda:90")
    assert findings == [] and spec.options["num_warps"] == 16 and spec.origins["num_warps"] == "heuristics"
    assert "num_warps" not in spec.constants
    hinted = src.replace("BLOCK=4096\n", "BLOCK=4096, num_warps=2\n")  # the hint is the user's word
    (spec,), _ = build_specs(kernel_of(hinted), "cuda:90")
    assert spec.options["num_warps"] == 2


def test_a_param_a_helper_loads_from_is_a_pointer():
    """vLLM's token-to-request mapping passes `query_start_loc` (no `_ptr` in its name) to a `@jit` helper that loads
    from it: a pointer, not an i32 — assumed an int, the kernel did not compile."""
    src = HEAD + (
        "@triton.jit\n"
        "def _first_above(starts, token, n):\n"
        "    lo = tl.zeros_like(token)\n"
        "    for i in range(0, n):\n"
        "        lo += (tl.load(starts + i) <= token).to(tl.int32)\n"
        "    return lo\n\n\n"
        "@triton.jit\n"
        "def mapping(query_start_loc, output, n):\n"
        "    token = tl.program_id(0) * 256 + tl.arange(0, 256)\n"
        "    tl.store(output + token, _first_above(query_start_loc, token, n))\n")
    k = kernel_of(src, "mapping")
    assert {p.name for p in k.params if p.is_pointer} == {"query_start_loc", "output"}
    (spec,), _ = build_specs(k, "cuda:90")
    assert spec.signature["query_start_loc"].startswith("*") and spec.signature["n"] == "i32", spec.signature
