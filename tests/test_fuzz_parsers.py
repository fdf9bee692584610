"""Property-based tests: the IR parsers, the hint parser and the capture reader fed real Triton 3.6 output
(tests/fixtures/ir, made by scripts/regen_ir_fixtures.py) and hostile text, mutated — truncated, lines swapped or
duplicated, characters flipped, huge and deeply nested lines. No exception may escape and what comes out must stay
consistent: every mapped IR line inside the IR text, every source line positive (and, on unmutated IR, inside the
kernel's file), widths and counts non-negative."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import require_module

require_module("hypothesis", "hypothesis is not installed (pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tritonlens.frontend.captures import MAX_LINE, load_captures
from tritonlens.frontend.hints import parse_hint
from tritonlens.ir import parse_amdgcn, parse_llir, parse_mlir, parse_ptx, parse_remarks, parse_sass, \
    parse_vectorization

FIX = Path(__file__).parent / "fixtures" / "ir"
REPO = Path(__file__).parent.parent
FUZZ = settings(max_examples=40, print_blob=False, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# stage suffix -> parser; `.remarks` fixtures are mostly empty, so real remark text is added below.
PARSERS = {"ttir": parse_mlir, "ttgir": parse_mlir, "ptx": parse_ptx, "sass": parse_sass, "amdgcn": parse_amdgcn,
           "llir": parse_llir}
FIXTURES = {stage: sorted(p.name for p in FIX.glob(f"*.{stage}")) for stage in PARSERS}
REMARKS = [(FIX / "vector_add_nodiv.remarks").read_text(),
           "/src/a.py:13:16: remark: Warning: vectorization fails vec = 1 origin vec = 4 numElems = 8 mask is 1\n\n"
           "    x = tl.load(x_ptr + offsets, mask=mask)\n               ^\n"
           "C:\\w\\a.py:7:1: warning: something\n/src/a.py:9: error: no column\n/src/a.py:10:2: note:\n"]
KERNEL_FILES = {"vector_add": "examples/vector_add.py", "softmax": "examples/softmax.py",
                "matmul": "examples/matmul.py", "matmul_leaky": "examples/matmul.py",
                "flash_attention": "examples/flash_attention.py", "helpers": "tests/fixtures/ir/kernels/helpers.py"}

# Characters that matter to the scanners: brackets, quotes, escapes, separators, digits, directives, non-ASCII.
SPICY = list('()[]{}<>"\\:;,#%!@.=- \t0123456789') + ["\n", "loc(", "#loc", "callsite(", " at ", "fused[",
                                                     ".loc", ".file", "//##", "!dbg !", "é", "\x00", "\r",
                                                     "²", "٣", "-1", "99999999999999999999"]


def _read(name: str) -> str:
    return (FIX / name).read_text()


def _kernel_file(name: str) -> str | None:
    stem = name.split(".")[0].removesuffix("_gfx942")
    for key in sorted(KERNEL_FILES, key=len, reverse=True):
        if stem.startswith(key):
            return KERNEL_FILES[key]
    return None


@st.composite
def mutated(draw, text: str) -> str:
    """`text` after a few random edits of the kinds a half-written file, a crash mid-write or a hostile tool give."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "swap", "dup", "flip", "number", "huge", "nest", "drop"]))
        n = len(lines)
        i = draw(st.integers(0, max(0, n - 1)))
        j = draw(st.integers(0, max(0, n - 1)))
        if kind == "truncate":
            joined = "\n".join(lines)
            lines = joined[: draw(st.integers(0, len(joined)))].split("\n")
        elif kind == "swap" and n:
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "dup" and n:
            lines[i:i] = [lines[i]] * draw(st.integers(1, 50))
        elif kind == "drop" and n:
            del lines[i : i + draw(st.integers(1, 20))]
        elif kind == "flip" and n:
            line = lines[i]
            for _ in range(draw(st.integers(1, 8))):
                k = draw(st.integers(0, len(line)))
                line = line[:k] + draw(st.sampled_from(SPICY)) + line[k + 1 :]
            lines[i] = line
        elif kind == "number" and n:  # a line, column or file number turned 0, negative, huge or not ASCII
            line = lines[i]
            digits = [k for k, c in enumerate(line) if c.isdigit()]
            if digits:
                k = draw(st.sampled_from(digits))
                line = line[:k] + draw(st.sampled_from(["0", "-", "²", "99999999999999999999", "1x"])) + line[k + 1 :]
            lines[i] = line
        elif kind == "huge":
            piece = draw(st.sampled_from(SPICY + [lines[i] if n else "x"]))
            lines.insert(i, lines[i][:40] + piece * (200_000 // max(1, len(piece))) if n else piece * 1000)
        elif kind == "nest":  # deep bracket / loc nesting: recursion must be bounded
            opener = draw(st.sampled_from(["loc(", "callsite(", "fused[", "(", "<", "@[ "]))
            depth = draw(st.sampled_from([50, 2_000, 20_000]))
            prefix = lines[i][: lines[i].find("loc(")] if n and "loc(" in lines[i] else "%0 = tt.foo "
            lines.insert(i, prefix + opener * depth + '"f.py":1:1' + ")" * depth)
    return "\n".join(lines)


def _check_linemap(linemap, n_lines: int) -> None:
    for ir_line, loc in linemap.ir_to_src.items():
        assert 1 <= ir_line <= n_lines
        assert loc.line >= 1 and loc.col >= 0, loc
        assert ir_line in linemap.lines_for(loc.line)


def _check(stage: str, text: str, kernel_file: str | None):
    mod = PARSERS[stage](text, kernel_file)
    n = len(text.split("\n"))
    _check_linemap(mod.linemap, n)
    for item in getattr(mod, "ops", None) or getattr(mod, "instrs", None) or []:
        assert 1 <= item.ir_line <= n
        for loc in (item.loc, getattr(item, "inner_loc", None)):
            assert loc is None or (loc.line >= 1 and loc.col >= 0)
        if item.loc is not None:
            assert mod.linemap.get(item.ir_line) is not None
        bits = getattr(item, "bits", None)
        assert bits is None or bits >= 0
        assert getattr(item, "vec", 1) >= 0
        if hasattr(item, "loop_depth"):
            assert item.loop_depth >= 0
    for loc in getattr(mod, "inner", {}).values():
        assert loc.line >= 1
    return mod


@pytest.mark.parametrize("stage", sorted(PARSERS))
def test_real_ir_maps_inside_the_kernel_file(stage):
    """Unmutated fixtures: every line mapped to the kernel's own file is a line of that file."""
    for name in FIXTURES[stage]:
        kernel_file = _kernel_file(name)
        mod = _check(stage, _read(name), kernel_file)
        if kernel_file is None:
            continue
        n_src = len((REPO / kernel_file).read_text().split("\n"))
        for loc in mod.linemap.ir_to_src.values():
            if loc.file.endswith(kernel_file):
                assert 1 <= loc.line <= n_src, (name, loc)


@pytest.mark.parametrize("stage", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_mutated_ir_never_raises(stage, data):
    name = data.draw(st.sampled_from(FIXTURES[stage]))
    text = data.draw(mutated(_read(name)))
    _check(stage, text, _kernel_file(name))


@FUZZ
@given(text=st.one_of(st.sampled_from(REMARKS).flatmap(mutated), st.text(max_size=2000)))
def test_mutated_remarks_never_raise(text):
    for r in parse_remarks(text):
        assert r.line >= 0 and r.col >= 0 and r.severity in ("remark", "warning", "error", "note")
        v = parse_vectorization(r.message)
        assert v is None or all(x is None or x >= 0 for x in (v["vec"], v["origin_vec"], v["num_elems"]))


HINTS = ["# tritonlens: x_ptr=*fp16, n_elements=i32%16, BLOCK_SIZE=1024, num_warps=4, num_stages=3",
         "# tritonlens: x_ptr=*fp16%1, OUT=tl.bfloat16, T=(1, 2), s='a,b', n=1, num_warps=8"]


@FUZZ
@given(data=st.data())
def test_mutated_hints_never_raise(data):
    comment = data.draw(st.one_of(st.sampled_from(HINTS).flatmap(mutated), st.text(max_size=300),
                                  st.sampled_from(HINTS).map(lambda h: h + ", x=" + "(" * 5000 + ")" * 5000),
                                  st.sampled_from(HINTS).map(lambda h: h + ", n=i32%" + "9" * 5000)))
    col = data.draw(st.integers(1, 40))
    params = data.draw(st.none() | st.just(["x_ptr", "n_elements", "BLOCK_SIZE", "OUT", "T", "s", "n", "x"]))
    hint = parse_hint(comment, 7, col, params, ["BLOCK_SIZE", "OUT", "T"])
    assert len(hint.errors) == len(hint.error_spans)
    for start, end in hint.error_spans:
        assert col <= start < end <= col + len(comment) + 1
    assert all(name.isidentifier() for name in hint.values)


def _capture(**extra) -> dict:
    rec = {"version": 2, "path": "k.py", "kernel": "add_kernel",
           "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, "constants": {"BLOCK": 1024},
           "attrs": {"x_ptr": {"divisibility": 16}}, "options": {"num_warps": 4}, "target": "cuda:90",
           "launch": {"grid": [4, 1, 1], "args": {"n": 4096}}}
    rec.update(extra)
    return rec


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                       lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                       max_leaves=20)


@FUZZ
@given(data=st.data())
def test_hostile_capture_files_are_read_as_data(tmp_path_factory, data):
    lines = []
    for _ in range(data.draw(st.integers(1, 8))):
        rec = _capture()
        for key in data.draw(st.lists(st.sampled_from(sorted(rec) + ["record", "autotune", "autotune_keys",
                                                                      "launches", "zzz"]), max_size=3)):
            rec[key] = data.draw(JSONISH)
        line = json.dumps(rec)
        lines.append(data.draw(st.sampled_from([line, line[: len(line) // 2], "[" * 100_000, "{}", line + "garbage",
                                                "x" * (MAX_LINE + 10), "\x00\xff", json.dumps(_capture())])))
    root = tmp_path_factory.mktemp("caps")
    (root / ".tritonlens").mkdir()
    (root / ".tritonlens" / "captures.jsonl").write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    caps, problems = load_captures(str(root))
    assert len(caps) + len(problems) <= len(lines)
    for cap in caps:
        assert isinstance(cap["path"], str) and isinstance(cap["signature"], dict)
        assert isinstance(cap["launches"], int) and cap["launches"] >= 0, cap["launches"]
    assert all(isinstance(p, str) and len(p) < 2000 for p in problems)
    os.remove(root / ".tritonlens" / "captures.jsonl")


# ---------------------------------------------------------------- what the fuzzing found (kept as plain examples)
def test_deeply_nested_locations_are_unknown_not_a_recursion_error():
    deep = "loc(" * 20_000 + '"/a.py":3:1' + ")" * 20_000
    mod = parse_mlir(f'%0 = tt.get_program_id x : i32 {deep}\n%1 = tt.foo : i32 loc("/a.py":4:2)\n', "/a.py")
    assert [op.loc for op in mod.ops] == [None, mod.ops[1].loc] and mod.ops[1].loc.line == 4


def test_line_zero_and_broken_numbers_map_nowhere():
    mlir = parse_mlir('%0 = tt.get_program_id x : i32 loc("/a.py":0:0)\n', "/a.py")
    sass = parse_sass('//## File "/a.py", line 7\n /*0000*/ MOV R1, R2 ;\n//## File "/a.py", line 0\n'
                      ' /*0010*/ MOV R1, R2 ;\n//## File "/a.py", line ²\n /*0020*/ MOV R1, R2 ;\n', "/a.py")
    llir = parse_llir('define void @k() {\n  ret void, !dbg !5\n}\n!5 = !DILocation(line: 1x, column: 2, scope: !6)\n',
                      "/a.py")
    ptx = parse_ptx('.visible .entry k()\n{\n.loc 1 ² 5\nld.global.v0.b32 %r1, [%rd1];\n}\n.file ² "/a.py"\n', "/a.py")
    assert mlir.linemap.ir_to_src == {} and llir.linemap.ir_to_src == {}
    assert {n: loc.line for n, loc in sass.linemap.ir_to_src.items()} == {2: 7}
    assert ptx.linemap.ir_to_src == {} and ptx.instrs[0].vec == 1
    remarks = parse_remarks("/a.py:²:1: remark: x\n/a.py:" + "9" * 5000 + ":1: remark: y")
    assert all(isinstance(r.line, int) and r.line < 10**18 for r in remarks)
