"""Launch-site arguments the file pins to a few literals are compiled for each of them, labelled; sizes from tensor
shapes stay missing (SRC002)."""
import ast
import os
import sys

import pytest
from conftest import evidence

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))

from tritonlens.frontend.launches import Choices, is_unknown, value_or_choices  # noqa: E402
from tritonlens.pipeline import Checker  # noqa: E402
from tritonlens.settings import Settings  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "launch_choices")


@pytest.mark.parametrize("expr, values", [
    ("0 if n <= LIMIT else 1", (0, 1)),
    ("min(max(triton.next_power_of_2(K), 16), 64)", (16, 32, 64)),
    ("max(min(triton.next_power_of_2(K), 64), 16)", (16, 32, 64)),
    ("min(max(triton.next_power_of_2(K), 20), 64)", (20, 32, 64)),  # 1..16 all become 20
    ("min(64, triton.next_power_of_2(seq_len))", (0, 1, 2, 4, 8, 16, 32, 64)),  # next_power_of_2(0) is 0
    ("True if beta is not None else False", (False, True)),
    ("(32 if wide else 16) * 2", (32, 64)),
    ("4 if n >= LIMIT else 2 if n >= 512 else 1", (1, 2, 4)),
])
def test_a_few_literals_are_every_value_and_no_other(expr, values):
    assert value_or_choices(ast.parse(expr, mode="eval").body, {"LIMIT": 4096}) == Choices(values)


@pytest.mark.parametrize("expr", [
    "triton.next_power_of_2(K)",  # every power of two
    "max(triton.next_power_of_2(K), 16)",  # every power of two from 16 up
    "min(K, 64)",  # any int up to 64
    "x.shape[1]",
    "min(16384, triton.next_power_of_2(V))",  # 16 values: more than a launch site is compiled for
])
def test_open_ended_values_stay_unknown(expr):
    assert is_unknown(value_or_choices(ast.parse(expr, mode="eval").body, {}))


def test_each_value_a_launch_site_can_pass_is_compiled_and_labelled():
    path = os.path.join(DATA, "clamped.py")
    with Checker(Settings(max_workers=2, target="cuda:90")) as checker:
        report = checker.check_file(path, workspace_root=DATA)
    kernels = {kr.kernel.name: kr for kr in report.kernels}
    scale = kernels["scale"]
    assert all(cs.artifacts is not None and cs.artifacts.error is None for cs in scale.compiled)
    got = sorted((cs.spec.constants["MODE"], cs.spec.constants["BLOCK"], cs.spec.label) for cs in scale.compiled)
    assert got == [(mode, block, f"launch at clamped.py:19 (MODE={mode} of 0, 1) (BLOCK={block} of 16, 32, 64)")
                   for mode in (0, 1) for block in (16, 32, 64)]
    assert all(cs.spec.origins["BLOCK"] == "launch at clamped.py:19" for cs in scale.compiled)
    assert [f.code for f in scale.findings if f.code.startswith("SRC")] == []
    shape = kernels["from_shape"]
    assert shape.compiled == []
    (f,) = [f for f in shape.findings if f.code == "SRC002"]
    assert "launch sites pass triton.next_power_of_2(x.shape[1])" in evidence(f)


def test_arguments_computed_from_one_unknown_are_not_combined():
    # MODE and BLOCK both follow from n: (MODE=1, BLOCK=16) cannot be launched, so no product of their values is
    # compiled; each stays unknown and the finding lists its values
    src = '''import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    pass


def run(x, n, wide):
    block = min(max(triton.next_power_of_2(n), 16), 64)
    k[(1,)](x, n, 0 if n <= 4096 else 1, BLOCK=block, WIDE=1 if wide else 0)
'''
    from tritonlens.frontend.discover import discover
    from tritonlens.frontend.launches import find_launches
    from tritonlens.frontend.specs import build_specs

    (site,) = find_launches("k", {"/ws/k.py": src})
    (kernel,) = discover("/ws/k.py", src).kernels
    specs, (f,) = build_specs(kernel, "cuda:90", launches=[site])
    assert sorted(s.label for s in specs) == [f"launch at k.py:12 (WIDE={w} of 0, 1)" for w in (0, 1)]
    assert all(s.missing == ["MODE", "BLOCK"] for s in specs)
    assert f.data["candidates_by_param"] == {"MODE": ["0", "1"], "BLOCK": ["16", "32", "64"]}
    assert "MODE (launch sites pass 0, 1); BLOCK (launch sites pass 16, 32, 64)" in evidence(f)


def test_a_local_computed_from_the_same_unknown_ties_arguments_too():
    src = '''import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    pass


def run(x):
    n = x.numel()
    m = n * 2
    k[(1,)](x, n, 0 if n <= 4096 else 1, BLOCK=min(max(triton.next_power_of_2(m), 16), 64))


def run_rebound(x, n, k_dim):
    width = k_dim
    width = width * 2
    k[(1,)](x, n, 0 if n <= 4096 else 1, BLOCK=min(max(triton.next_power_of_2(width), 16), 64))
'''
    from tritonlens.frontend.launches import find_launches

    for site in find_launches("k", {"/ws/k.py": src}):
        values, _ = site.bind(["x_ptr", "n", "MODE", "BLOCK"])
        assert not values["MODE"].independent_of(values["BLOCK"]), site.line
