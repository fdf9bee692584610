"""Quick fixes edit where a value is set — a heuristics entry, a module constant — and a value computed at run time
(a helper like Liger-Kernel's `calculate_settings`) gets a pointer at the line that computes it and a conditional
launch keyword proven on each captured spec it selects. Every proof is a real compile for cuda:90 on the CPU; each
applied fix is checked again from the edited file."""
import json
import os
import textwrap

import pytest

from tritonlens.frontend.value_sources import where_set
from tritonlens.fixes import launch as fix_launch, search
from tritonlens.fixes.configs import metric_changes
from tritonlens.fixes.edit import apply_edits as _apply
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings

from fix_kernels import BODY as _BODY

# Two row-long accumulators over a loop stepping by BLOCK: 16384 fp32 elements (x2) over 128 threads spill; 8192 do
# not. BLOCK is not a whole-row block (the loop steps by it), so halving it is a fix.
_KERNEL = '''
    import triton
    import triton.language as tl

    {constant}
    # tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_cols=i32%16
    {decorator}@triton.jit
    def sumsq_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
            acc += x
            acc2 += x * x
        tl.store(out_ptr + row * 2, tl.sum(acc, axis=0))
        tl.store(out_ptr + row * 2 + 1, tl.sum(acc2, axis=0))


    def sumsq(x, out):
        sumsq_kernel[(x.shape[0],)](x, out, x.shape[1]{keywords})
    '''


def _source(constant: str = "", decorator: str = "", keywords: str = "") -> str:
    return textwrap.dedent(_KERNEL).format(constant=constant, decorator=decorator, keywords=keywords).lstrip()


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _proven(checker, path, text, code="SASS001"):
    """(kernel report, finding, [(candidate, title tail, traded)] for every candidate, proven or not)."""
    (kr,) = checker.check_file(str(path), text).kernels
    (f,) = [g for g in kr.findings if g.code == code and g.line == kr.kernel.def_line]
    cands, _ = search.fix_candidates(kr, f, text, code, str(path.parent))
    return kr, f, [(c, *search.prove(checker, Settings(), str(path), text, kr, f, c)) for c in cands]


def _recheck(checker, path, text):
    path.write_text(text)
    (kr,) = checker.check_file(str(path)).kernels
    return kr


def test_a_heuristics_entry_that_returns_a_constant_is_edited_there_and_the_spill_is_gone(checker, tmp_path):
    text = _source(decorator='@triton.heuristics({"BLOCK": lambda args: 16384})\n')
    path = tmp_path / "heur.py"
    path.write_text(text)
    kr, f, tried = _proven(checker, path, text)
    assert kr.compiled[0].spec.constants["BLOCK"] == 16384 and kr.compiled[0].spec.origins["BLOCK"] == "heuristics"
    (cand, said, traded), = [t for t in tried if t[0].where == "heuristics"]
    heur_line = _line(text, "@triton.heuristics")
    assert cand.label == f"Return 8192 for BLOCK in @triton.heuristics on line {heur_line} (was 16384)"
    assert said.startswith("removes SASS001 (") and "spilled → 0" in said and not traded, said
    (edit,) = cand.edits
    fixed = _apply(text, [edit])
    assert '@triton.heuristics({"BLOCK": lambda args: 8192})' in fixed and fixed.count("16384") == 0
    kr2 = _recheck(checker, path, fixed)
    assert kr2.compiled[0].spec.constants["BLOCK"] == 8192
    assert not [g for g in kr2.findings if g.code == "SASS001"]


def test_a_module_constant_only_this_launch_reads_is_edited_a_shared_one_is_left_to_the_launch(checker, tmp_path):
    text = _source(constant="BLOCK = 16384\n", keywords=", BLOCK=BLOCK")
    path = tmp_path / "const.py"
    path.write_text(text)
    kr, f, tried = _proven(checker, path, text)
    (cand, said, traded), = [t for t in tried if t[0].where == "constant"]
    assert cand.label == f"Set BLOCK = 8192 on line {_line(text, 'BLOCK = 16384')} (was 16384)"
    assert said.startswith("removes SASS001") and not traded, said
    fixed = _apply(text, cand.edits)
    assert "BLOCK = 8192\n" in fixed and ", BLOCK=BLOCK)" in fixed  # the launch still reads the constant
    kr2 = _recheck(checker, path, fixed)
    assert kr2.compiled[0].spec.constants["BLOCK"] == 8192
    assert not [g for g in kr2.findings if g.code == "SASS001"]

    # NUM_WARPS read by another function too: the launch keyword is edited, the constant stays.
    shared = _source(constant="BLOCK = 16384\nNUM_WARPS = 4\n", keywords=", BLOCK=BLOCK, num_warps=NUM_WARPS") + \
        "\n\ndef warps():\n    return NUM_WARPS\n"
    src = where_set(str(path), shared, "sumsq_kernel", _line(shared, "def sumsq_kernel"), "num_warps",
                    _line(shared, "sumsq_kernel[("))
    assert (src.kind, src.shared, src.local) == ("constant", True, "NUM_WARPS")
    path.write_text(shared)
    kr, f, tried = _proven(checker, path, shared)
    launch_line = _line(shared, "sumsq_kernel[(")
    warps = [t for t in tried if t[0].option == "num_warps"]
    assert warps[0][0].label == f"Use num_warps=8 at the launch on line {launch_line} (NUM_WARPS is read elsewhere too)"
    assert warps[0][1] and warps[0][1].startswith("removes SASS001"), warps[0][1]
    fixed = _apply(shared, warps[0][0].edits)
    assert "num_warps=8)" in fixed and "NUM_WARPS = 4\n" in fixed


# ---------------------------------------------------------------- a value computed by a helper (Liger's way)
_UTILS = '''\
import triton


def calculate_settings(n):
    MAX_FUSED_SIZE = 65536
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"n = {n} exceeds the block size {MAX_FUSED_SIZE}")

    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    return BLOCK_SIZE, num_warps
'''
_NORM = '''\
import torch
import triton
import triton.language as tl

from pkg.utils import calculate_settings


@triton.jit
def _norm_kernel(Y_ptr, X_ptr, W_ptr, B_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0)
    b = tl.load(B_ptr + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    y = xc * rstd * w + b
    tl.store(Y_ptr + row * n_cols + cols, y, mask=mask)


def norm(x, w, b, eps=1e-6):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _norm_kernel[(n_rows,)](y, x, w, b, n_cols, eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y
'''


def _capture(block: int, warps: int, aligned_cols: bool = True) -> dict:
    ptrs = ("Y_ptr", "X_ptr", "W_ptr", "B_ptr")
    return {"version": 1, "path": "pkg/norm.py", "kernel": "_norm_kernel",
            "signature": {**{p: "*fp32" for p in ptrs}, "n_cols": "i32", "eps": "fp32", "BLOCK_SIZE": "constexpr"},
            "constants": {"BLOCK_SIZE": block},
            "attrs": {**{p: {"divisibility": 16} for p in ptrs}, **({"n_cols": {"divisibility": 16}}
                                                                    if aligned_cols else {})},
            "options": {"num_warps": warps, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0"}


def liger_workspace(root, caps: list[dict], norm: str = _NORM):
    """pkg/utils.py, pkg/norm.py and the captured launches in `root`; returns the path of norm.py."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "utils.py").write_text(_UTILS)
    (root / "pkg" / "norm.py").write_text(norm)
    (root / ".tritonlens").mkdir()
    (root / ".tritonlens" / "captures.jsonl").write_text("".join(json.dumps(c) + "\n" for c in caps))
    return root / "pkg" / "norm.py"


@pytest.fixture(scope="module")
def liger_like(tmp_path_factory):
    """A workspace written as Liger-Kernel's ops are: the launch passes what calculate_settings returned. Captured:
    rows of 1024 and 4096 (4 warps, no spill) and two of 16384 (4 warps, both spill)."""
    root = tmp_path_factory.mktemp("liger_like")
    liger_workspace(root, [_capture(1024, 4), _capture(4096, 4), _capture(16384, 4),
                           _capture(16384, 4, aligned_cols=False)])
    return root


def test_a_helper_computed_value_gets_a_pointer_and_a_conditional_launch_fix_proven_per_spec(liger_like):
    path = liger_like / "pkg" / "norm.py"
    with Checker(Settings(target="cuda:90", all_captures=True)) as checker:
        (kr,) = checker.check_file(str(path)).kernels
        assert sorted(cs.spec.constants["BLOCK_SIZE"] for cs in kr.compiled) == [1024, 4096, 16384, 16384]
        (f,) = [g for g in kr.findings if g.code == "SASS001" and g.line == kr.kernel.def_line]
        cands, _ = search.fix_candidates(kr, f, _NORM, "SASS001", str(liger_like))
        pointer = next(c for c in cands if c.where == "pointer")
        # the pointer names the helper's line that sets num_warps and the line of this file that calls it
        assert pointer.label == ("num_warps comes from calculate_settings(n_cols) at utils.py:10 "
                                 f"(line {_line(_NORM, 'calculate_settings(n_cols)')}): num_warps=8")
        said, traded = search.prove(checker, Settings(), str(path), _NORM, kr, f, pointer)
        # the spill goes, and the registers it takes cut occupancy: the title says so (the trade)
        assert said.startswith("removes SASS001 (") and "spilled → 0" in said, said
        assert "; but occupancy 100% → 12%" in said and traded, said
        assert pointer.edits == []  # no blind edit of the helper
        fix = search.make_fix(pointer, said, traded, [])  # the editor shows it as a command (tests/test_lsp_units.py)
        assert fix.pointer and fix.edits == [] and not fix.preferred
        assert fix.show == (str(liger_like / "pkg" / "utils.py"), 10)

        cond = next(c for c in cands if c.where == "conditional")
        launch_line = _line(_NORM, "_norm_kernel[(")
        assert cond.label == (f"Use num_warps=8 if BLOCK_SIZE >= 16384 else num_warps at the launch on line "
                              f"{launch_line}")
        # both captured 16384 specs are selected and each is re-compiled with 8 warps; 1024 and 4096 keep theirs
        proven_on = sorted(kr.compiled[i].spec.label for i, _ in cond.proofs)
        assert len(proven_on) == 2 and all(kr.compiled[i].spec.constants["BLOCK_SIZE"] == 16384
                                           for i, _ in cond.proofs)
        assert all(v.options == (("num_warps", 8),) for _, v in cond.proofs)
        said, traded = search.prove(checker, Settings(), str(path), _NORM, kr, f, cond)
        assert said.startswith("removes SASS001 on 2 captured specs (BLOCK_SIZE=16384: ") and traded, said
        assert said.count("spilled → 0") == 2 and "but occupancy 100% → 12% (BLOCK_SIZE=16384)" in said, said
        assert "[proven on 2 specs]" in said
        fixed = _apply(_NORM, cond.edits)
        assert "BLOCK_SIZE=BLOCK_SIZE, num_warps=8 if BLOCK_SIZE >= 16384 else num_warps)" in fixed


def test_a_conditional_that_makes_a_selected_spec_worse_is_withheld(liger_like, tmp_path):
    """With a 32768 row captured at 32 warps (it spills too, at 64 registers a thread), `num_warps=8 if BLOCK_SIZE >=
    16384` would give it 8 warps: its spill grows, the finding stays, and the conditional is not offered."""
    root = tmp_path / "ws"
    path = liger_workspace(root, [_capture(1024, 4), _capture(16384, 4), _capture(32768, 32)])
    with Checker(Settings(target="cuda:90", all_captures=True)) as checker:
        (kr,) = checker.check_file(str(path)).kernels
        (f,) = [g for g in kr.findings if g.code == "SASS001" and g.line == kr.kernel.def_line]
        cands, _ = search.fix_candidates(kr, f, _NORM, "SASS001", str(root))
        cond = next(c for c in cands if c.where == "conditional" and c.value == 8)
        assert sorted(kr.compiled[i].spec.constants["BLOCK_SIZE"] for i, _ in cond.proofs) == [16384, 32768]
        assert search.prove(checker, Settings(), str(path), _NORM, kr, f, cond) == (None, False)


def test_metric_changes_lists_every_metric_and_the_ones_that_got_worse():
    before = {"spill_bytes": 1496, "registers": 255, "shared": 2048, "occupancy": {"occupancy": 0.125},
              "global_widths": {"ld.global": {"128": 4}}, "convert_layout": 1}
    after = {"spill_bytes": 0, "registers": 255, "shared": 4096, "occupancy": {"occupancy": 0.25},
             "global_widths": {"ld.global": {"32": 16}}, "convert_layout": 3}
    changed, worse = metric_changes(before, after)
    assert changed == ["1.5 KB spilled → 0", "shared 2.0 KB → 4.0 KB", "occupancy 12% → 25%",
                       "ld.global 128 → 32-bit (mean)", "conversions 1 → 3"]
    assert worse == ["ld.global 128 → 32-bit (mean)", "conversions 1 → 3"]


# ---------------------------------------------------------------- a module constant read by an autotune Config
# the autotuned matmul of the editor's config-fix tests


def _autotuned(second_n: str) -> str:
    """Config 1 reads BLOCK_N from the module constant WIDE_N (256, 5 stages: 240 KB of shared memory on sm_90,
    over the 227 KB limit); config 2 reads `second_n`."""
    return ("import triton\nimport triton.language as tl\n\nWIDE_N = 256\n\n\n"
            "# tritonlens: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, K=i32%16, stride_am=i32%16, stride_bk=i32%16, "
            "stride_cm=i32%16\n"
            "@triton.autotune(configs=[\n"
            '    triton.Config({"BLOCK_M": 128, "BLOCK_N": WIDE_N, "BLOCK_K": 64}, num_warps=8, num_stages=5),\n'
            f'    triton.Config({{"BLOCK_M": 128, "BLOCK_N": {second_n}, "BLOCK_K": 64}}, num_warps=4, '
            'num_stages=3),\n'
            '], key=["K"])' + _BODY)


def test_a_config_block_read_from_a_module_constant_is_halved_in_the_constant(checker, tmp_path):
    text = _autotuned("128")
    path = tmp_path / "tuned.py"
    path.write_text(text)
    (kr,) = checker.check_file(str(path)).kernels
    (f,) = [g for g in kr.findings if g.code == "RES001"]
    cands, _ = search.fix_candidates(kr, f, text, "RES001", str(tmp_path))
    (block,) = [c for c in cands if "BLOCK_N 256 → 128" in c.label]
    assert block.label.endswith(f"BLOCK_N 256 → 128 (sets WIDE_N = 128 on line {_line(text, 'WIDE_N = 256')})")
    said, traded = search.prove(checker, Settings(), str(path), text, kr, f, block)
    assert said.startswith("removes RES001; shared 240.0 KB → ") and not traded, said
    fixed = _apply(text, block.edits)
    assert "WIDE_N = 128\n" in fixed and '"BLOCK_N": WIDE_N' in fixed
    path.write_text(fixed)
    (kr2,) = checker.check_file(str(path)).kernels
    assert not [g for g in kr2.findings if g.code == "RES001"]

    # both configs read the constant: the failing Config alone gets the literal
    shared = _autotuned("WIDE_N // 2")
    (kr,) = checker.check_file(str(path), shared).kernels
    (f,) = [g for g in kr.findings if g.code == "RES001"]
    cands, _ = search.fix_candidates(kr, f, shared, "RES001", str(tmp_path))
    (block,) = [c for c in cands if "BLOCK_N 256 → 128" in c.label]
    assert block.label.endswith("(WIDE_N is read elsewhere too: the Config gets 128)")
    fixed = _apply(shared, block.edits)
    assert '"BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8' in fixed and "WIDE_N = 256\n" in fixed


def test_a_heuristics_lambda_of_args_gets_a_pointer_and_a_conditional_in_the_lambda(checker, tmp_path):
    """num_warps from `@triton.heuristics` computed from args: no blind edit; the conditional goes into the lambda,
    proven on the captured 16384 row (the only spec `args["BLOCK_SIZE"] >= 16384` selects)."""
    text = _NORM.replace("@triton.jit\ndef _norm_kernel", '@triton.heuristics({"num_warps": lambda args: max(4, '
                         'args["BLOCK_SIZE"] // 8192)})\n@triton.jit\ndef _norm_kernel')
    text = text.replace(", num_warps=num_warps)", ")")
    path = liger_workspace(tmp_path, [_capture(1024, 4), _capture(4096, 4), _capture(16384, 4)], text)
    (kr,) = checker.check_file(str(path), workspace_root=str(tmp_path)).kernels
    (f,) = [g for g in kr.findings if g.code == "SASS001" and g.line == kr.kernel.def_line]
    cands, _ = search.fix_candidates(kr, f, text, "SASS001", str(tmp_path))
    heur = _line(text, "@triton.heuristics")
    pointer = next(c for c in cands if c.where == "pointer")
    assert pointer.label == (f'num_warps comes from its @triton.heuristics lambda on line {heur} '
                             '(max(4, args["BLOCK_SIZE"] // 8192)): num_warps=8')
    cond = next(c for c in cands if c.where == "conditional")
    assert [kr.compiled[i].spec.constants["BLOCK_SIZE"] for i, _ in cond.proofs] == [16384]
    said, traded = search.prove(checker, Settings(), str(path), text, kr, f, cond)
    assert said.startswith("removes SASS001 (") and "spilled → 0" in said, said
    fixed = _apply(text, cond.edits)
    assert ('lambda args: 8 if args["BLOCK_SIZE"] >= 16384 else (max(4, args["BLOCK_SIZE"] // 8192))})'
            in fixed), fixed
    compile(fixed, "norm.py", "exec")


# ---------------------------------------------------------------- Triton's default at a launch (Liger's group norm)
_DEFAULT_WARPS = _NORM.replace("from pkg.utils import calculate_settings\n", "").replace(
    "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n",
    "    BLOCK_SIZE = min(65536, triton.next_power_of_2(n_cols))\n").replace(
    "BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)", "BLOCK_SIZE=BLOCK_SIZE)")


def test_a_launch_on_tritons_default_warps_gets_a_conditional_for_the_blocks_that_spill(tmp_path):
    """The launch passes no num_warps (4, Triton's default) and a block the host sizes to the row: 8 warps for every
    launch would change the small rows too, so the first fix adds `num_warps=8 if BLOCK_SIZE >= 16384 else 4`,
    proven on each spec it changes; a spill a change only halves is offered as such ("reduces"), never preferred."""
    path = liger_workspace(tmp_path, [_capture(1024, 4), _capture(16384, 4), _capture(65536, 4)], _DEFAULT_WARPS)
    with Checker(Settings(target="cuda:90", all_captures=True)) as checker:
        (kr,) = checker.check_file(str(path)).kernels
        (f,) = [g for g in kr.findings if g.code == "SASS001" and g.line == kr.kernel.def_line]
        cands, _ = search.fix_candidates(kr, f, _DEFAULT_WARPS, "SASS001", str(tmp_path))
        launch_line = _line(_DEFAULT_WARPS, "_norm_kernel[(")
        labels = [c.label for c in cands if c.option == "num_warps"]
        assert labels[:2] == [f"Use num_warps=8 if BLOCK_SIZE >= 16384 else 4 at the launch on line {launch_line}",
                              f"Use num_warps=8 at the launch on line {launch_line}"], labels
        cond = cands[[c.label for c in cands].index(labels[0])]
        assert sorted(kr.compiled[i].spec.constants["BLOCK_SIZE"] for i, _ in cond.proofs) == [16384, 65536]
        said, traded = search.prove(checker, Settings(), str(path), _DEFAULT_WARPS, kr, f, cond)
        # 16384 loses its spill, 65536 keeps less than half of it: offered as "reduces", with the trade, not preferred
        assert said.startswith("reduces SASS001 on 2 captured specs (BLOCK_SIZE=16384: ") and traded, said
        assert cond.partial and "spilled → 0" in said and "BLOCK_SIZE=65536: " in said, said
        fixed = _apply(_DEFAULT_WARPS, cond.edits)
        assert "BLOCK_SIZE=BLOCK_SIZE, num_warps=8 if BLOCK_SIZE >= 16384 else 4)" in fixed
        compile(fixed, "norm.py", "exec")
        # The edit for every launch is proven on every spec it changes, the 1024 row too
        plain = cands[[c.label for c in cands].index(labels[1])]
        said, _ = search.prove(checker, Settings(), str(path), _DEFAULT_WARPS, kr, f, plain)
        assert said.startswith("reduces SASS001 on 3 captured specs") and "[proven on 3 specs]" in said, said
