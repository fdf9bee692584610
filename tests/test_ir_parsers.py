"""The IR parsers on real Triton 3.6 output (tests/fixtures/ir, made by scripts/regen_ir_fixtures.py)."""
from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

from tritonlens.compiler.worker import private_triton_cache
from tritonlens.ir import (
    LineMap,
    SrcLoc,
    convert_layout_info,
    layout_of,
    parse_amdgcn,
    parse_llir,
    parse_mlir,
    parse_ptx,
    parse_remarks,
    parse_resource_usage,
    parse_sass,
    parse_vectorization,
    same_file,
)

FIX = Path(__file__).parent / "fixtures" / "ir"
VECTOR_ADD = "examples/vector_add.py"  # relative, as a user gives it; Triton wrote /src/examples/vector_add.py
HELPERS = "tests/fixtures/ir/kernels/helpers.py"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


def global_loads(mod, line: int):
    return [i for i in mod.instrs if i.kind == "ld.global" and i.loc and i.loc.line == line]


# ---------------------------------------------------------------- linemap
def test_same_file_tolerates_relative_and_basename():
    assert same_file("/src/examples/vector_add.py", "examples/vector_add.py")
    assert same_file("/src/examples/vector_add.py", "vector_add.py")
    assert not same_file("/src/examples/vector_add.py", "other/vector_add2.py")
    assert not same_file("/site-packages/triton/language/standard.py", "examples/matmul.py")


def test_linemap_ranges_join_runs_and_break_at_other_lines():
    lm = LineMap("x", {1: SrcLoc("a.py", 5, 1), 2: SrcLoc("a.py", 5, 2), 4: SrcLoc("a.py", 5, 1),
                       5: SrcLoc("a.py", 6, 1), 6: SrcLoc("a.py", 5, 1)})
    assert lm.lines_for(5) == [1, 2, 4, 6]
    assert lm.ranges_for(5) == [(1, 4), (6, 6)]
    assert lm.src_lines() == {5, 6}
    assert lm.lines_for(5, file="b.py") == []


# ---------------------------------------------------------------- PTX
def test_ptx_aligned_loads_are_128_bit_on_the_load_lines():
    ptx = parse_ptx(fixture("vector_add_div16.ptx"), VECTOR_ADD)
    for line in (13, 14):
        loads = global_loads(ptx, line)
        assert loads and all(i.opcode == "ld.global.v4.b32" and i.bits == 128 and i.vec == 4 for i in loads)
        assert all(i.inline_asm and i.func == "add_kernel" and i.is_entry for i in loads)
    stores = [i for i in ptx.instrs if i.kind == "st.global"]
    assert {i.loc.line for i in stores} == {15} and all(i.bits == 128 for i in stores)
    assert ptx.linemap.lines_for(13, VECTOR_ADD)


def test_ptx_unaligned_length_gives_b32_loads():
    ptx = parse_ptx(fixture("vector_add_nodiv.ptx"), VECTOR_ADD)
    for line in (13, 14):
        loads = global_loads(ptx, line)
        assert len(loads) == 8
        assert all(i.opcode == "ld.global.b32" and i.bits == 32 and i.predicated for i in loads)


def test_ptx_file_directive_after_code_is_resolved():
    text = fixture("vector_add_div16.ptx")
    assert text.index(".file") > text.index("ld.global.v4.b32")  # the premise: .file comes last
    ptx = parse_ptx(text, VECTOR_ADD)
    assert ptx.files[1] == "/src/examples/vector_add.py"
    assert all(i.loc.file == "/src/examples/vector_add.py" for i in ptx.instrs if i.loc)


def test_ptx_cp_async_ldmatrix_and_wgmma_in_flash_attention():
    ptx = parse_ptx(fixture("flash_attention.ptx"), "examples/flash_attention.py")
    copies = [i for i in ptx.instrs if i.opcode == "cp.async.cg.shared.global"]
    assert copies and all(i.bits == 128 for i in copies)  # cp-size 0x10 bytes
    assert {i.loc.line for i in copies} == {23, 31}  # the K and V tl.load lines
    ldm = [i for i in ptx.instrs if i.opcode.startswith("ldmatrix")]
    assert ldm and all(i.kind == "ld.shared" and i.bits == 128 for i in ldm)
    mma = [i for i in ptx.instrs if i.kind == "wgmma" and "mma_async" in i.opcode]
    assert {i.loc.line for i in mma} == {24, 32}  # the two tl.dot lines
    assert any(i.kind == "bar" for i in ptx.instrs)


def test_ptx_inlined_helper_maps_to_the_call_line_and_flags_libdevice():
    ptx = parse_ptx(fixture("helpers.ptx"), HELPERS)
    # the tl.load is in _load_block (line 8), inlined via _load_and_scale (19) into the kernel's line 26
    tensor_loads = [i for i in ptx.instrs if i.kind == "ld.global" and i.inline_asm]
    assert tensor_loads and all(i.loc.line == 26 and i.inner_loc.line == 8 for i in tensor_loads)
    # libdevice's sin: Payne-Hanek table loads and a local array, inlined, outside inline asm
    lib = [i for i in ptx.instrs if i.kind == "ld.global" and not i.inline_asm]
    assert lib and all(i.likely_library for i in lib)
    assert any(i.kind == "st.local" for i in ptx.instrs)
    assert not any(i.likely_library for i in tensor_loads)


def test_ptx_func_bodies_are_not_entry():
    text = """.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.loc\t1 5 3
\tld.global.v2.b64 \t{%rd1, %rd2}, [%rd3];
\tcall.uni (retval0), __nv_sinf, (param0);
\tret;
}
.func (.param .b32 func_retval0) __nv_sinf(
\t.param .b32 __nv_sinf_param_0
)
{
\tld.global.nc.v2.b32 \t{%r1, %r2}, [%rd9];
\tst.local.b32 \t[%rd1], %r1;
\tret;
}
\t.file\t1 "/abs/dir" "k.py"
"""
    ptx = parse_ptx(text, "dir/k.py")
    assert ptx.entries == ["k"] and ptx.funcs == ["__nv_sinf"]
    first = ptx.instrs[0]
    assert (first.opcode, first.bits, first.vec, first.loc) == ("ld.global.v2.b64", 128, 2, SrcLoc("/abs/dir/k.py", 5, 3))
    lib = [i for i in ptx.instrs if i.func == "__nv_sinf"]
    assert [i.kind for i in lib] == ["ld.global", "st.local", "other"] and not any(i.is_entry for i in lib)
    assert lib[0].bits == 64 and lib[0].qualifiers == ("global", "nc", "v2", "b32")


LINEAR_LIMIT = 16  # time ratio of 8x the input: see scaled_parse


def scaled_parse(parse, text_of, n: int):
    """Parse text_of(n) and text_of(8 n) — the same content repeated n and 8 n times — and return both results and
    the ratio of their CPU times (best of 3 each, the garbage collector paused, so neither a busy spell of a shared
    machine nor a collection decides it). A linear parser gives about 8 (4.6-13.7 measured on a shared 2-core
    machine); one whose quadratic part is as costly as the rest at 8 n gives 14, one it dominates up to 64."""
    results, times = [], []
    for copies in (n, 8 * n):
        text = text_of(copies)
        best = float("inf")
        for _ in range(3):
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                result = parse(text)
                best = min(best, time.process_time() - start)
            finally:
                gc.enable()
        results.append(result)
        times.append(best)
    return results, times[1] / max(times[0], 1e-3)


def test_ptx_parse_is_linear_on_a_3mb_text():
    block = fixture("vector_add_nodiv.ptx")
    code, tail = block[: block.index("\t.file")], block[block.index("\t.file") :]
    n = 3_000_000 // len(code) // 8 + 1
    (small, big), ratio = scaled_parse(lambda text: parse_ptx(text, VECTOR_ADD), lambda k: code * k + tail, n)
    assert len(code * 8 * n) > 3_000_000
    per_copy = len(small.instrs) // n
    assert per_copy > 0 and len(small.instrs) == per_copy * n and len(big.instrs) == per_copy * 8 * n
    assert ratio < LINEAR_LIMIT, f"8x the PTX took {ratio:.1f}x the time: parsing is no longer linear"


# ---------------------------------------------------------------- TTGIR / TTIR
def test_ttgir_helper_call_maps_to_the_users_call_line():
    mod = parse_mlir(fixture("helpers.ttgir"), HELPERS)
    load = mod.ops_named("tt.load")[0]
    assert load.loc.line == 26  # `y = _load_and_scale(x_ptr, offs, n)`
    assert load.inner_loc.line == 8  # the tl.load inside _load_block, kept for hovers
    sin = mod.ops_named("math.sin")[0]
    assert (sin.loc.line, sin.inner_loc.line) == (26, 14)
    assert 8 not in mod.linemap.src_lines()


def test_ttgir_callsite_into_triton_stdlib_maps_to_user_line():
    mod = parse_mlir(fixture("matmul_leaky.ttgir"), "examples/matmul.py")
    files = {op.loc.file for op in mod.ops if op.loc}
    assert files == {"/src/examples/matmul.py"}  # never triton/language/standard.py
    leaky = [op for op in mod.ops if op.inner_loc and op.inner_loc.line == 8]
    assert leaky and all(op.loc.line == 46 for op in leaky)  # `accumulator = _leaky_relu(accumulator)`


def test_ttgir_flash_attention_layouts_loops_and_convert_layout():
    mod = parse_mlir(fixture("flash_attention.ttgir"), "examples/flash_attention.py")
    assert {"#blocked", "#blocked1", "#mma", "#shared", "#shared1"} <= set(mod.layouts)
    assert mod.layouts["#mma"].startswith("#ttg.nvidia_mma<{versionMajor = 3")
    loop = mod.ops_named("scf.for")[0]
    assert loop.loc.line == 21 and loop.loop_depth == 0
    dots = mod.ops_named("ttng.warp_group_dot")
    assert [d.loc.line for d in dots] == [24, 32] and all(d.loop_depth == 1 for d in dots)
    assert dots[0].result_type == "tensor<128x64xf32, #mma>"
    converts = {op.loc.line: (op, convert_layout_info(op, mod.layouts)) for op in mod.ops_named("ttg.convert_layout")}
    op, info = converts[32]  # p.to(fp16) feeding the second dot, inside the loop
    assert op.loop_depth == 1
    assert (info.src, info.src_kind, info.dst_kind, info.special) == ("#mma", "mma", "dot_op", True)
    assert info.dst.startswith("#ttg.dot_op<{opIdx = 0, parent = #mma")
    op, info = converts[35]  # the epilogue store
    assert (op.loop_depth, info.src, info.dst, info.dst_kind) == (0, "#mma", "#blocked", "blocked")
    alloc = mod.ops_named("ttg.local_alloc")[0]
    assert layout_of(alloc.result_type) == "#shared" and alloc.loc.line == 16
    reduce = mod.ops_named("tt.reduce")[0]  # region op: loc and types come from its closing line
    assert reduce.loc.line == 26 and reduce.result_type.startswith("tensor<128xf32")


def test_layout_of():
    assert layout_of("tensor<128x64xf16, #blocked1>") == "#blocked1"
    assert layout_of("!ttg.memdesc<2x64x64xf16, #shared1, #smem, mutable>") == "#shared1"
    assert layout_of("tensor<128xf32, #ttg.slice<{dim = 1, parent = #mma}>>") == "#ttg.slice<{dim = 1, parent = #mma}>"
    assert layout_of("i32") is None and layout_of("tensor<4xi32>") is None


def test_ttir_and_inline_and_forward_locs():
    text = '''module {
  tt.func @k(%a: i32 loc("a"(#loc))) {
    %0 = arith.addi %a, %a : i32 loc(#loc3)
    %1 = arith.muli %0, %0 : i32 loc("/abs/k.py":7:9)
    %2 = arith.subi %1, %0 : i32 loc(fused[#loc1, #loc2])
    %3 = arith.divsi %1, %0 : i32 loc(unknown)
    tt.return loc(#loc2)
  } loc(#loc)
} loc(#loc)
#loc = loc("/abs/k.py":1:0)
#loc1 = loc(unknown)
#loc2 = loc("/abs/k.py":8:3)
#loc3 = loc("x"(#loc2))
'''
    mod = parse_mlir(text, "k.py")
    by_name = {op.name: op for op in mod.ops}
    assert by_name["arith.addi"].loc == SrcLoc("/abs/k.py", 8, 3)
    assert by_name["arith.muli"].loc == SrcLoc("/abs/k.py", 7, 9)
    assert by_name["arith.subi"].loc.line == 8
    assert by_name["arith.divsi"].loc is None
    assert by_name["tt.func"].loc.line == 1
    assert parse_mlir(fixture("vector_add_div16.ttir"), VECTOR_ADD).ops_named("tt.load")[0].loc.line == 13


# ---------------------------------------------------------------- LLIR
def test_llir_inlined_at_resolves_to_call_line():
    mod = parse_llir(fixture("helpers.llir"), HELPERS)
    assert mod.functions == ["scaled_sin_kernel"]
    assert mod.linemap.src_lines() == {25, 26, 27}
    assert {loc.line for loc in mod.inner.values()} >= {8, 13, 14}
    va = parse_llir(fixture("vector_add_div16.llir"), VECTOR_ADD)
    assert va.linemap.lines_for(13) and va.linemap.get(va.linemap.lines_for(13)[0]).file == "/src/examples/vector_add.py"


# ---------------------------------------------------------------- SASS
def test_sass_widths_and_line_map():
    sass = parse_sass(fixture("vector_add_div16.sass"), VECTOR_ADD)
    ldg = [i for i in sass.instrs if i.kind == "ldg"]
    assert len(ldg) == 4 and all(i.opcode == "LDG.E.128" and i.bits == 128 for i in ldg)
    assert {i.loc.line for i in ldg} == {13, 14}
    assert sass.linemap.src_lines() == {9, 10, 11, 12, 13, 14, 15}
    narrow = parse_sass(fixture("vector_add_nodiv.sass"), VECTOR_ADD)
    assert {(i.opcode, i.bits) for i in narrow.instrs if i.kind == "ldg"} == {("LDG.E", 32)}


def test_sass_spills_hgmma_and_ldgsts():
    helpers = parse_sass(fixture("helpers.sass"), HELPERS)
    assert any(i.kind == "stl" for i in helpers.instrs) and any(i.kind == "ldl" for i in helpers.instrs)
    assert any(i.opcode == "LDG.E.64" and i.bits == 64 for i in helpers.instrs)
    fa = parse_sass(fixture("flash_attention.sass"), "examples/flash_attention.py")
    kinds = {i.kind for i in fa.instrs}
    assert {"hgmma", "ldgsts", "sts", "lds", "bar", "stg", "ldg"} <= kinds
    assert all(i.func == "attn_fwd" for i in fa.instrs)


def test_sass_inlined_at_comment_form():
    text = '''k:
\t//## File "/a/k.py", line 8 inlined at "/a/k.py", line 19 inlined at "/a/k.py", line 26
        /*0010*/                   LDG.E.LTC128B.128 R4, desc[UR4][R2.64] ;
'''
    ins = parse_sass(text, "k.py").instrs[0]
    assert (ins.loc.line, ins.inner_loc.line, ins.bits, ins.offset) == (26, 8, 128, 0x10)


def test_resource_usage_text():
    res = parse_resource_usage(fixture("helpers.res"))
    assert res["STACK"] > 0 and res["REG"] > 0 and res["LOCAL"] == 0
    assert "scaled_sin_kernel" in res["functions"]


# ---------------------------------------------------------------- AMDGCN
def test_amdgcn_linemap_and_memory_kinds():
    mod = parse_amdgcn(fixture("flash_attention_gfx942.amdgcn"), "examples/flash_attention.py")
    assert mod.files[1] == "/src/examples/flash_attention.py" and mod.functions == ["attn_fwd"]
    loads = [i for i in mod.instrs if i.opcode == "global_load_dwordx4"]
    assert loads and all(i.kind == "ld.global" and i.bits == 128 for i in loads)
    assert {i.loc.line for i in loads} == {16, 23, 31}
    assert any(i.kind == "mma" and i.opcode.startswith("v_mfma") for i in mod.instrs)
    assert any(i.kind == "bar" for i in mod.instrs)
    reads = {i.opcode: i.bits for i in mod.instrs if i.kind == "ld.shared"}
    assert reads["ds_read_b64"] == 64 and reads["ds_read2st64_b64"] == 128
    assert mod.linemap.lines_for(24)


# ---------------------------------------------------------------- remarks
def test_remarks_and_vectorization_cause():
    remarks = parse_remarks(fixture("vector_add_nodiv.remarks"))
    assert [(r.line, r.col, r.severity) for r in remarks] == [(13, 16, "remark"), (14, 16, "remark"), (15, 32, "remark")]
    assert remarks[0].file == "/src/examples/vector_add.py"
    v = parse_vectorization(remarks[0].message)
    assert (v["vec"], v["origin_vec"], v["num_elems"], v["causes"]) == (1, 4, 8, ["mask"])
    assert parse_vectorization(remarks[2].message)["num_elems"] == 8  # elemsPerThread on stores
    assert parse_remarks(fixture("vector_add_div16.remarks")) == []


def test_remark_severities():
    text = "/a/k.py:3:5: warning: something odd\n\n  x = 1\n  ^\n/a/k.py:4:1: error: bad thing\nnoise\n"
    rs = parse_remarks(text)
    assert [(r.severity, r.line, r.message) for r in rs] == [("warning", 3, "something odd"), ("error", 4, "bad thing")]
    assert parse_vectorization("pipelining failed") is None


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.glob("*.ptx")))
def test_every_ptx_fixture_maps_its_memory_ops(name):
    ptx = parse_ptx(fixture(name), None)
    mem = [i for i in ptx.instrs if i.kind in ("ld.global", "st.global", "cp.async") and i.bits]
    assert mem and all(i.loc is not None for i in mem)


def test_disassemble_and_resource_usage_of_a_real_cubin():
    """Runs the wheel's nvdisasm / cuobjdump on a cubin compiled here (CPU only)."""
    pytest.importorskip("triton")
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonlens.ir import disassemble, resource_usage

    @triton.jit
    def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))

    src = ASTSource(copy_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 512},
                    {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    with private_triton_cache():  # Triton's shared cache would give a copy of this file elsewhere its locations
        cubin = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["cubin"]
    sass = parse_sass(disassemble(cubin), __file__)
    assert any(i.opcode == "LDG.E.128" for i in sass.instrs)
    assert sass.linemap.src_lines()
    res = resource_usage(cubin)
    assert res["REG"] > 0 and res["LOCAL"] == 0


@pytest.mark.parametrize("arch", [80, 90, 100, 120])
def test_disassembly_without_the_dataflow_pass_and_the_cubin_reader_agree_with_nvdisasm(arch):
    """On a kernel with a loop, a data-dependent branch and spills, for each CUDA target: `disassemble` skips
    nvdisasm's branch-stack dataflow pass (-ndf) and prints what plain `nvdisasm -c -g` prints; and the local loads
    and stores `ir.cubin.local_accesses` reads from the ELF are the disassembly's LDL/STL, at the same offsets, on
    the same source lines."""
    pytest.importorskip("triton")
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonlens.ir import disassemble
    from tritonlens.ir.sass import _run_on_cubin

    @triton.jit
    def loop_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(0, n, 1):
            x = tl.load(x_ptr + i * BLOCK + offs)
            if tl.sum(x) > 0:
                acc += tl.exp(x) * tl.sin(acc)
            else:
                acc -= x
        tl.store(y_ptr + offs, acc)

    src = ASTSource(loop_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                    {"BLOCK": 4096}, {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    with private_triton_cache():  # as the workers compile: not another checkout's cached IR of the same kernel
        cubin = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": 1}).asm["cubin"]
    text = disassemble(cubin)
    assert "BRA" in text and "STL" in text  # a branch, and spill code (4096 floats on 32 threads)
    assert text == _run_on_cubin("nvdisasm", ["-c", "-g"], cubin)

    from tritonlens.ir.cubin import local_accesses

    want = [(i.offset, i.kind, i.loc) for i in parse_sass(text).instrs if i.kind in ("ldl", "stl")]
    assert len(want) > 100 and {k for _, k, _ in want} == {"ldl", "stl"}
    assert any(loc is not None and loc.file == __file__ for _, _, loc in want)  # the kernel's lines (and tl.sum's)
    assert local_accesses(cubin, arch) == want


def test_cubin_reader_declines_what_it_does_not_know():
    from tritonlens.ir.cubin import line_rows, local_accesses

    assert local_accesses(b"not a cubin", 90) is None
    assert local_accesses(b"\x7fELF" + bytes(100), 90) is None
    assert local_accesses(b"", 70) is None  # an architecture whose encodings were not checked
    assert line_rows(b"\xff\xff\xff\xff" + bytes(20)) is None  # 64-bit DWARF
    assert line_rows(bytes(3)) is None


def test_disassemble_reports_a_bad_cubin():
    from tritonlens.ir import ToolError, disassemble

    with pytest.raises(ToolError):
        disassemble(b"not a cubin")


def test_mlir_parse_is_linear_on_a_big_text():
    text = fixture("flash_attention.ttgir")
    start, end = text.index("  tt.func"), text.index("\n} loc(#loc)")
    (small, big), ratio = scaled_parse(lambda t: parse_mlir(t, "examples/flash_attention.py"),
                                       lambda k: text[:start] + text[start:end] * k + text[end:], 13)
    assert len(text[start:end] * 8 * 13) > 1_500_000
    dots = [len(mod.ops_named("ttng.warp_group_dot")) for mod in (small, big)]
    assert dots == [2 * 13, 2 * 8 * 13]
    assert ratio < LINEAR_LIMIT, f"8x the TTGIR took {ratio:.1f}x the time: parsing is no longer linear"
