"""Quick fixes that edit the launch call: proven on exactly the spec the finding came from with one value changed, then
applied to a real file and checked again — the kernel that runs is the one that was proven."""
import json
import os
import textwrap

import pytest

from tritonlens.fixes import launch as fix_launch
from tritonlens.device.targets import has_local_gpu
from tritonlens.frontend.value_sources import whole_row_blocks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(REPO, "examples", "bad", "matmul_spill.py"), encoding="utf-8") as fh:
    _KERNEL = fh.read()
# The example kernel without its hint, launched from its own file with num_warps=4 (and num_stages=2: a launch
# option the fix must keep).
SPILLING = _KERNEL[:_KERNEL.index("# tritonlens:")] + _KERNEL[_KERNEL.index("@triton.jit"):] + textwrap.dedent('''

    def matmul(a, b, c, K):
        grid = (a.shape[0] // 128, b.shape[1] // 128)
        matmul_spill[grid](a, b, c, K, a.stride(0), b.stride(0), c.stride(0),
                           BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=2)
    ''')
NO_WARPS = SPILLING.replace(", num_warps=4, num_stages=2)", ")")


def _spill(checker, path):
    (kr,) = checker.check_file(str(path)).kernels
    (f,) = [g for g in kr.findings if g.code == "SASS001"]
    return kr, f


def test_launch_fix_is_proven_on_the_launch_spec_and_applied_it_removes_the_spill(checker, tmp_path):
    path = tmp_path / "mm.py"
    path.write_text(SPILLING)
    kr, f = _spill(checker, path)
    launched = kr.compiled[0].spec
    assert launched.options["num_warps"] == 4 and launched.options["num_stages"] == 2
    assert launched.origins["num_warps"].startswith("launch at mm.py:")
    cands = list(fix_launch.candidates(kr, f, SPILLING))
    assert [c.label for c in cands] == ["Use num_warps=8 at the launch on line 30",
                                        "Use num_warps=16 at the launch on line 30"]
    first = cands[0]
    proof = checker.check_file(str(path), SPILLING, kernels={kr.name}, variant=first.variant)
    (new,) = proof.kernels
    (proven,) = new.compiled
    # exactly the launch's spec, one value changed: the other option, constexprs and divisibility kept
    assert proven.spec.options == {**launched.options, "num_warps": 8}
    assert proven.spec.constants == launched.constants and proven.spec.attrs == launched.attrs
    said, traded = fix_launch.outcome(kr, new, f, first)
    assert said.startswith("removes SASS001 (") and "spilled → 0" in said and not traded, said
    edits, fixed, _ = first.apply(SPILLING)
    assert "BLOCK_K=32, num_warps=8, num_stages=2)" in fixed and fixed.count("num_warps=4") == 0
    path.write_text(fixed)
    (kr2,) = checker.check_file(str(path)).kernels
    assert kr2.compiled[0].spec.options["num_warps"] == 8
    assert not [g for g in kr2.findings if g.code == "SASS001"]


def test_a_launch_without_the_keyword_gets_it_added(checker, tmp_path):
    path = tmp_path / "mm.py"
    path.write_text(NO_WARPS)
    kr, f = _spill(checker, path)
    cand = next(fix_launch.candidates(kr, f, NO_WARPS))
    _, fixed, _ = cand.apply(NO_WARPS)
    assert "BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8)" in fixed


def test_no_launch_edit_where_the_option_is_a_hint_or_the_kernel_has_two_launches(checker, tmp_path):
    hinted = tmp_path / "hinted.py"
    hinted.write_text(_KERNEL)  # num_warps comes from the hint comment: "Tell tritonlens" fixes apply there
    kr, f = _spill(checker, hinted)
    assert list(fix_launch.candidates(kr, f, _KERNEL)) == []
    twice = NO_WARPS + textwrap.dedent('''
        def matmul_again(a, b, c, K):
            matmul_spill[(1, 1)](a, b, c, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=128, BLOCK_N=128,
                                 BLOCK_K=32)
        ''')
    path = tmp_path / "twice.py"
    path.write_text(twice)
    kr, f = _spill(checker, path)
    assert list(fix_launch.candidates(kr, f, twice)) == []  # which call ran the spec is not known


def test_whole_row_blocks_are_never_halved():
    text = textwrap.dedent('''
        @triton.jit
        def row_kernel(x_ptr, n_cols, BLOCK: tl.constexpr, TILE: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n_cols)
            for start in range(0, n_cols, TILE):
                cols = start + tl.arange(0, TILE)
        ''')
    assert whole_row_blocks(text, 3) == {"BLOCK"}  # TILE is stepped over by a loop: halving it only adds trips


@pytest.mark.gpu
@pytest.mark.skipif(not has_local_gpu(), reason="needs a local NVIDIA GPU")
def test_on_a_gpu_the_launch_fix_is_timed_on_its_captured_launch(checker, tmp_path):
    """The launch-site spec, captured as a 512×512 fp32 launch would be, replayed before and after the fix."""
    path = tmp_path / "mm.py"
    path.write_text(SPILLING)
    (kr,) = checker.check_file(str(path)).kernels
    spec = kr.compiled[0].spec
    t = {"shape": [512, 512], "stride": [512, 1], "dtype": "float32", "align16": True}
    values = {"K": 512, "stride_am": 512, "stride_bk": 512, "stride_cm": 512}
    cap = {"version": 2, "path": "mm.py", "kernel": "matmul_spill", "signature": spec.signature,
           "constants": spec.constants, "attrs": spec.attrs, "options": spec.options, "target": spec.target,
           "triton_version": "3.6.0",
           "launch": {"grid": [4, 4], "args": {**{n: {"tensor": t} for n in ("a_ptr", "b_ptr", "c_ptr")},
                                               **{n: {"value": v} for n, v in values.items()}}}}
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps(cap) + "\n")
    (kr,) = checker.check_file(str(path), workspace_root=str(tmp_path)).kernels
    assert kr.compiled[0].spec.capture_id
    (f,) = [g for g in kr.findings if g.code == "SASS001"]
    cand = next(fix_launch.candidates(kr, f, SPILLING))
    before, after, gpu = fix_launch.time_on_gpu(str(path), str(tmp_path), kr, cand)
    assert after < before, (before, after, gpu)  # 4 → 8 warps removes the spill: faster on any recent GPU
