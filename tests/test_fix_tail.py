"""The program fix for narrow accesses caused by the mask: a mask-free path for full blocks and the masked code kept
for the last block (or a block loop split into full iterations and a masked last one). Each edit is compiled for
cuda:90 for real — its fast path must come out 128-bit — and run in Triton's interpreter beside the original, on
lengths that are and are not multiples of the block, with outputs compared exactly. Kernels where dropping the mask
would change what the kernel computes get no fix."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tritonlens.fixes import tail as fix_tail
from tritonlens.report.irviews import SpecView, compiled_specs
from tritonlens.settings import Settings
from conftest import evidence


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(REPO, "examples", "bad", "vector_add_unaligned.py"), encoding="utf-8") as fh:
    VECTOR_ADD = fh.read()
SETTINGS = Settings(target="cuda:90")

# The fixed example, as the user gets it: only the kernel's last three lines are replaced.
VECTOR_ADD_FIXED_BODY = '''\
    mask = offsets < n_elements
    if (pid + 1) * BLOCK_SIZE <= n_elements:  # a full block: every lane is in bounds, no mask
        x = tl.load(x_ptr + offsets)
        y = tl.load(y_ptr + offsets)
        tl.store(out_ptr + offsets, x + y)
    else:  # the last, partial block
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)
'''

# A reduction over a row in blocks: the loop form. The row stride is known aligned; the row length is not.
ROW_SUM = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_cols=i32, stride=i32%16, BLOCK=1024, num_warps=4
    @triton.jit
    def row_sum(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
            acc += x * x
        tl.store(out_ptr + row, tl.sum(acc, axis=0))
    ''')
ROW_SUM_LOAD = 13

# Runs a kernel module's kernel in Triton's interpreter on several lengths; prints the outputs as JSON lists.
# Triton 3.6's interpreter turns a computed scalar into an index with `int()` of a one-element array, which NumPy 2.4
# refuses (`range(0, n - 1, B)` fails, whatever the kernel); the runner reads it with `.item()` instead.
_RUN = textwrap.dedent('''\
    import importlib.util, json, sys
    import torch, triton
    import triton.language as tl
    from triton.runtime import interpreter

    _patch = interpreter._patch_lang_tensor

    def _patch_lang_tensor(tensor, scope):
        _patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    interpreter._patch_lang_tensor = _patch_lang_tensor

    spec = importlib.util.spec_from_file_location("k", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gen = torch.Generator().manual_seed(0)
    out = {}
    if sys.argv[2] == "add":
        for n in (1, 5, 1000, 1024, 3000, 4096):
            x, y = torch.randn(n, generator=gen), torch.randn(n, generator=gen)
            o = torch.full((n + 7,), -1.0)  # past the end: must stay untouched
            mod.add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK_SIZE=1024)
            assert torch.equal(o[:n], x + y) and bool((o[n:] == -1.0).all()), n
            out[n] = o.tolist()
    else:
        for n in (1, 1000, 1024, 2048, 2500):
            x = torch.randn(3, n, generator=gen)
            o = torch.empty(3)
            mod.row_sum[(3,)](x, o, n, x.stride(0), BLOCK=1024)
            assert torch.allclose(o, (x * x).sum(1), rtol=1e-5), n
            out[n] = o.tolist()
    print(json.dumps(out))
    ''')


def _interpret(tmp_path, path, which: str) -> dict:
    runner = tmp_path / "run_interpreted.py"
    runner.write_text(_RUN)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(runner), str(path), which], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _finding(kr, code: str, line: int):
    (f,) = [g for g in kr.findings if g.code == code and g.line == line]
    return f


def _opcodes(kr, line: int, kind: str) -> list[str]:
    view = SpecView(kr, compiled_specs(kr)[0], SETTINGS)
    wanted = set(view.ir_lines("ptx", line))
    return [i.opcode for i in view.module("ptx").instrs if i.ir_line in wanted and i.kind == kind]


def test_vector_add_gets_a_full_block_path_that_compiles_wide_and_computes_the_same(checker, tmp_path):
    path = tmp_path / "add.py"
    path.write_text(VECTOR_ADD)
    (kr,) = checker.check_file(str(path)).kernels
    f = _finding(kr, "PTX001", 13)
    assert f.data["cause"] == "mask"
    (cand,) = fix_tail.candidates(kr, f, VECTOR_ADD)
    assert cand.label == "Add an unmasked path for full blocks"
    (edit,), fixed, shift = cand.apply(VECTOR_ADD)
    # one edit over the accesses' lines (13-15), the rest of the file as the user wrote it
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.line, edit.range.end.character) \
        == (12, 0, 15, 0) and shift == 0
    assert fixed == VECTOR_ADD[:VECTOR_ADD.index("    mask = ")] + VECTOR_ADD_FIXED_BODY

    fixed_path = tmp_path / "add_fixed.py"
    fixed_path.write_text(fixed)
    (new,) = checker.check_file(str(fixed_path), fixed).kernels
    assert not [g for g in new.findings if g.code == "SRC001"]
    # the fast path (lines 14-16): no finding, and its PTX moves four floats per access
    assert not [g for g in new.findings if g.code in ("PTX001", "PTX002") and 14 <= g.line <= 16]
    assert set(_opcodes(new, 14, "ld.global")) == {"ld.global.v4.b32"}
    assert set(_opcodes(new, 16, "st.global")) == {"st.global.v4.b32"}
    # the tail (lines 18-20) stays masked and narrow, as it must
    assert sorted((g.code, g.line) for g in new.findings if g.code.startswith("PTX")) == [
        ("PTX001", 18), ("PTX001", 19), ("PTX002", 20)]
    # ... and one program of a launch runs it: infos that say so, no squiggles left by the applied fix
    assert all(g.severity == "info" and "the last, partial block" in evidence(g)
               for g in new.findings if g.code.startswith("PTX")), [evidence(g) for g in new.findings]
    assert set(_opcodes(new, 18, "ld.global")) == {"ld.global.b32"}

    said, traded = cand.outcome(kr, new, f, SETTINGS)
    assert said == ("loads 32 → 128-bit and stores 32 → 128-bit on the fast path (re-compiled); the last block "
                    "stays masked") and not traded
    store = _finding(kr, "PTX002", 15)
    (for_store,) = fix_tail.candidates(kr, store, VECTOR_ADD)
    assert for_store.outcome(kr, new, store, SETTINGS)[0].startswith("stores 32 → 128-bit and loads 32 → 128-bit")

    # the same results, element for element, on lengths that are and are not multiples of the block
    assert _interpret(tmp_path, fixed_path, "add") == _interpret(tmp_path, path, "add")
    # fixed once: the finding left on the tail gets no second wrapping
    assert fix_tail.plan(fixed, kr.kernel.def_line, 18) is None


def test_a_block_loop_is_split_into_unmasked_full_blocks_and_a_masked_last_one(checker, tmp_path):
    path = tmp_path / "rows.py"
    path.write_text(ROW_SUM)
    (kr,) = checker.check_file(str(path)).kernels
    f = _finding(kr, "PTX001", ROW_SUM_LOAD)
    assert f.data["cause"] == "mask" and f.data["params"] == ["n_cols"]
    (cand,) = fix_tail.candidates(kr, f, ROW_SUM)
    assert cand.label == "Split the loop: full blocks unmasked, the last one masked"
    (edit,), fixed, _ = cand.apply(ROW_SUM)
    assert edit.range.start.line == 9 and edit.range.end.line == 14
    assert fixed.splitlines()[9:19] == [
        "    for start in range(0, n_cols - n_cols % BLOCK, BLOCK):",
        "        cols = start + tl.arange(0, BLOCK)",
        "        mask = cols < n_cols",
        "        x = tl.load(x_ptr + row * stride + cols)",
        "        acc += x * x",
        "    for start in range(n_cols - n_cols % BLOCK, n_cols, BLOCK):",
        "        cols = start + tl.arange(0, BLOCK)",
        "        mask = cols < n_cols",
        "        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)",
        "        acc += x * x",
    ]
    fixed_path = tmp_path / "rows_fixed.py"
    fixed_path.write_text(fixed)
    (new,) = checker.check_file(str(fixed_path), fixed).kernels
    assert not [g for g in new.findings if g.code == "PTX001" and g.line == ROW_SUM_LOAD]
    assert set(_opcodes(new, ROW_SUM_LOAD, "ld.global")) == {"ld.global.v4.b32"}
    said, traded = cand.outcome(kr, new, f, SETTINGS)
    assert said == "loads 32 → 128-bit on the fast path (re-compiled); the last iteration stays masked", said
    assert not traded
    assert _interpret(tmp_path, fixed_path, "rows") == _interpret(tmp_path, path, "rows")


_KERNEL = '''\
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
{body}'''
_PLAIN = '''\
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=mask)
'''
# Each of these keeps a PTX001 whose cause is the mask, yet dropping the mask would change what the kernel computes,
# or the mask is not one a full block makes all-true: no fix.
NOT_OFFERED = {
    "mask used in tl.where": '''\
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(mask, x * 2, 0.0), mask=mask)
''',
    "mask counted in a sum": '''\
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * tl.sum(mask.to(tl.float32), axis=0), mask=mask)
''',
    "mask combined with a second condition": '''\
    mask = (offs < n) & (offs % 3 != 0)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=mask)
''',
    "mask extended at the access": '''\
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask & (offs > 4), other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=mask)
''',
    "bound changed after the mask": '''\
    mask = offs < n
    n = n - 1
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
''',
    "mask made under a branch": '''\
    mask = offs < n
    if n > 4096:
        mask = offs < 4096
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=mask)
''',
    "offsets not a block of a range": '''\
    mask = offs * 2 < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=mask)
''',
}

WHY_NOT = {
    "mask used in tl.where": "is used on line 11 for more than a load's or store's mask",
    "mask counted in a sum": "is used on line 11 for more than a load's or store's mask",
    "mask combined with a second condition": "not a single `offs < bound`",
    "mask extended at the access": "not a single `offs < bound`",
    "bound changed after the mask": "`n`, which the mask depends on, is assigned again on line 10",
    "mask made under a branch": "`mask` is bound on line 10 in a way this does not follow",
    "offsets not a block of a range": "compares an expression, not an offsets variable",
}


@pytest.mark.parametrize("case", sorted(NOT_OFFERED))
def test_no_fix_where_dropping_the_mask_is_not_sound(case):
    head = "import triton\nimport triton.language as tl\n\n\n"
    plain = head + _KERNEL.format(body=_PLAIN)
    assert fix_tail.plan(plain, 6, 10) is not None  # the same kernel with a plain mask gets the fix
    text = head + _KERNEL.format(body=NOT_OFFERED[case])
    load = next(i for i, ln in enumerate(text.splitlines(), 1) if "tl.load" in ln)
    store = next(i for i, ln in enumerate(text.splitlines(), 1) if "tl.store" in ln)
    assert fix_tail.plan(text, 6, load) is None and fix_tail.plan(text, 6, store) is None
    assert WHY_NOT[case] in fix_tail.planned(text, 6, load)


# Two passes over a row reuse the names `mask` and `idx` (Liger's multi-block softmax): each loop's mask is the one
# made in its own body, so each loop can be split.
TWO_PASSES = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def two_passes(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = tl.float32(-float("inf"))
        for start in tl.range(0, n_cols, BLOCK):
            idx = start + offs
            mask = idx < n_cols
            m = tl.maximum(m, tl.max(tl.load(x_ptr + row * n_cols + idx, mask=mask, other=-float("inf")), axis=0))
        for start in tl.range(0, n_cols, BLOCK):
            idx = start + offs
            mask = idx < n_cols
            x = tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0)
            tl.store(y_ptr + row * n_cols + idx, x - m, mask=mask)
    ''')


def test_names_reused_by_two_loops_are_read_per_loop():
    p = fix_tail.plan(TWO_PASSES, 6, 17)
    assert p is not None and p.form == "loop" and (p.first, p.last) == (14, 18), p
    (_,), fixed = fix_tail.apply_plan(TWO_PASSES, p)
    assert fixed.splitlines()[13:23] == [
        "    for start in tl.range(0, n_cols - n_cols % BLOCK, BLOCK):",
        "        idx = start + offs",
        "        mask = idx < n_cols",
        "        x = tl.load(x_ptr + row * n_cols + idx)",
        "        tl.store(y_ptr + row * n_cols + idx, x - m)",
        "    for start in tl.range(n_cols - n_cols % BLOCK, n_cols, BLOCK):",
        "        idx = start + offs",
        "        mask = idx < n_cols",
        "        x = tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0)",
        "        tl.store(y_ptr + row * n_cols + idx, x - m, mask=mask)"]
    assert fix_tail.plan(TWO_PASSES, 6, 13) is not None  # the first loop too
    # `offs` made again inside the second loop, after the mask read it: the guard's view of it is not the mask's
    moved = TWO_PASSES.replace("        tl.store(y_ptr", "        offs = offs + 1\n        tl.store(y_ptr")
    assert fix_tail.plan(moved, 6, 17) is None
    # a mask read before it is made in the loop's body is the previous iteration's
    made_late = "        idx = start + offs\n        mask = idx < n_cols\n"
    load = "        x = tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0)\n"
    carried = TWO_PASSES[::-1].replace((made_late + load)[::-1], (load + made_late)[::-1], 1)[::-1]
    assert carried != TWO_PASSES
    assert "`mask` is bound later in the loop" in fix_tail.planned(carried, 6, 15), fix_tail.planned(carried, 6, 15)


def test_no_fix_for_a_two_dimensional_mask():
    text = textwrap.dedent('''\
        import triton
        import triton.language as tl


        @triton.jit
        def copy2d(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            cols = tl.arange(0, BN)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask)
            tl.store(out_ptr + rows[:, None] * N + cols[None, :], x, mask=mask)
        ''')
    assert fix_tail.plan(text, 6, 10) is None and fix_tail.plan(text, 6, 11) is None
    assert "not a single `offs < bound` (combined with another condition, 2-D" in fix_tail.planned(text, 6, 10)


def test_the_where_case_compiles_to_the_finding_and_still_gets_no_fix(checker, tmp_path):
    """Seen as the user sees it: the finding is there (cause: the mask), only the hint fix may be offered."""
    text = ("import triton\nimport triton.language as tl\n\n\n"
            "# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n=i32, BLOCK=1024\n"
            + _KERNEL.format(body=NOT_OFFERED["mask used in tl.where"]))
    path = tmp_path / "where.py"
    path.write_text(text)
    (kr,) = checker.check_file(str(path)).kernels
    f = _finding(kr, "PTX001", 11)
    assert f.data["cause"] == "mask"
    assert list(fix_tail.candidates(kr, f, text)) == []


def test_other_formatting_and_the_tutorial_form_are_kept():
    """The tutorial's `block_start = pid * BLOCK_SIZE` form, a multi-line call with `other=` and a trailing comma,
    tab indentation: the guard reads the start, the copies keep the user's layout."""
    text = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
            "def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
            "\tblock_start = tl.program_id(0) * BLOCK\n"
            "\toffs = block_start + tl.arange(0, BLOCK)\n"
            "\tmask = offs < n\n"
            "\tx = tl.load(\n\t\tx_ptr + offs,\n\t\tmask=mask,\n\t\tother=0.0,\n\t)\n"
            "\ttl.store(out_ptr + offs, x, mask)  # positional mask\n")
    p = fix_tail.plan(text, 6, 10)
    assert p is not None and p.guard == "if block_start + BLOCK <= n:"
    (_,), fixed = fix_tail.apply_plan(text, p)
    assert fixed.endswith(
        "\tmask = offs < n\n"
        "\tif block_start + BLOCK <= n:  # a full block: every lane is in bounds, no mask\n"
        "\t\tx = tl.load(\n\t\t\tx_ptr + offs,\n\t\t)\n"
        "\t\ttl.store(out_ptr + offs, x)  # positional mask\n"
        "\telse:  # the last, partial block\n"
        "\t\tx = tl.load(\n\t\t\tx_ptr + offs,\n\t\t\tmask=mask,\n\t\t\tother=0.0,\n\t\t)\n"
        "\t\ttl.store(out_ptr + offs, x, mask)  # positional mask\n"), fixed


def _captured(tmp_path, n: int) -> None:
    """One captured launch of the example with `n_elements = n` (not a multiple of 16), as `tritonlens capture`
    records it."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / ".tritonlens").mkdir(exist_ok=True)
    (tmp_path / ".tritonlens" / "captures.jsonl").write_text(json.dumps({
        "version": 1, "path": "add.py", "kernel": "add_kernel",
        "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32",
                      "BLOCK_SIZE": "constexpr"},
        "constants": {"BLOCK_SIZE": 1024}, "attrs": {p: {"divisibility": 16} for p in ("x_ptr", "y_ptr", "out_ptr")},
        "options": {"num_warps": 4, "num_stages": 3}, "target": "cuda:90", "triton_version": "3.6.0",
        "launch": {"grid": [-(-n // 1024), 1, 1], "args": {"n_elements": {"value": n}}}}) + "\n")


@pytest.mark.parametrize("n, share, preferred", [
    (3001, "the captured launches it is narrow in take it in 2 of 3 programs", True),
    (1001, "but no captured launch it is narrow in takes the fast path (0 of 1 programs)", False),
])
def test_the_captured_launches_say_how_often_the_fast_path_runs(checker, tmp_path, n, share, preferred):
    """Proven on the captured spec; the title counts the programs of the captured launches that take the fast path,
    and a fast path no captured launch takes is no preferred fix."""
    _captured(tmp_path, n)
    path = tmp_path / "add.py"
    path.write_text(VECTOR_ADD)
    (kr,) = checker.check_file(str(path)).kernels
    assert [cs.spec.label for cs in kr.compiled] == ["capture 1"]
    f = _finding(kr, "PTX001", 13)
    (cand,) = fix_tail.candidates(kr, f, VECTOR_ADD)
    _, fixed, _ = cand.apply(VECTOR_ADD)
    (new,) = checker.check_file(str(path), fixed).kernels
    said, traded = cand.outcome(kr, new, f, SETTINGS)
    assert said.endswith(f"the last block stays masked; {share}"), said
    assert traded is not preferred


ROW_SOFTMAX = textwrap.dedent('''\
    import triton
    import triton.language as tl


    # tritonlens: y_ptr=*fp32, x_ptr=*fp32, stride=i32%16, n_cols=i32, BLOCK=1024
    @triton.jit
    def row_softmax(y_ptr, x_ptr, stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)
    ''')


def test_one_block_per_row_says_when_its_fast_path_runs_and_is_not_preferred(checker, tmp_path):
    """A row kernel's block is sized to hold the whole row (BLOCK = the next power of two): its fast path runs only
    for a row exactly as long as the block — proven wide, offered, but not preferred, and the title says so."""
    path = tmp_path / "rows.py"
    path.write_text(ROW_SOFTMAX)
    (kr,) = checker.check_file(str(path)).kernels
    f = _finding(kr, "PTX001", 11)
    (cand,) = fix_tail.candidates(kr, f, ROW_SOFTMAX)
    assert cand.plan.guard == "if BLOCK <= n_cols:"
    _, fixed, _ = cand.apply(ROW_SOFTMAX)
    (new,) = checker.check_file(str(path), fixed).kernels
    said, traded = cand.outcome(kr, new, f, SETTINGS)
    assert said.startswith("loads 32 → 128-bit and stores 32 → 128-bit on the fast path (re-compiled); the fast path "
                           "runs only where BLOCK <= n_cols — "), said
    assert traded  # not the preferred fix


@pytest.mark.parametrize("start, bound, guard", [
    ("pid * BLOCK", "n", "if (pid + 1) * BLOCK <= n:"),
    ("(pid * 2 + 1) * BLOCK", "n - 1", "if (pid * 2 + 1 + 1) * BLOCK <= n - 1:"),
    ("(pid if c else 0) * BLOCK", "(n if c else m)", "if ((pid if c else 0) + 1) * BLOCK <= (n if c else m):"),
    ("pid * BLOCK - 5", "n | m", "if pid * BLOCK - 5 + BLOCK <= n | m:"),
])
def test_the_guard_reads_as_the_mask_does(start, bound, guard):
    """Operator precedence: the guard's start and bound mean what they meant in the offsets and the mask."""
    text = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
            "def k(x_ptr, n, m, c, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n"
            f"    offs = {start} + tl.arange(0, BLOCK)\n    mask = offs < {bound}\n"
            "    x = tl.load(x_ptr + offs, mask=mask)\n    tl.store(x_ptr + offs, x, mask=mask)\n")
    p = fix_tail.plan(text, 6, 10)
    assert p is not None and p.guard == guard
    # evaluated as Python on a few values, the guard is `start + BLOCK <= bound`
    cond = guard[3:-1]
    for pid, n, m, c in ((0, 100, 7, True), (3, 5000, 1 << 12, False), (1, 2047, 3, True)):
        env = {"pid": pid, "n": n, "m": m, "c": c, "BLOCK": 1024}
        assert eval(cond, env) == (eval(start, env) + 1024 <= eval(bound, env))
