"""Rules on small kernels in the styles of LLM training / inference code (matmul operands, strided loads, persistent
tiles), compiled for real here: each test asserts a finding's code, line and cause, or its absence, on the variant
that fixes it."""
import textwrap

import pytest
from conftest import evidence


HEAD = "import triton\nimport triton.language as tl\n\n\n"


def check(checker, tmp_path, name: str, body: str, code: str | None = None):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    report = checker.check_file(str(path))
    assert not report.problems, report.problems
    found = report.all_findings()
    assert not [f for f in found if f.code == "SRC001"], [f.message for f in found if f.code == "SRC001"]
    return [f for f in found if code is None or f.code == code]


# ---------------------------------------------------------------- PTX001: dot operands copied with cp.async
_TF32_DOT = """\
    # tritonlens: a_ptr=*fp32, b_ptr=*fp32, c_ptr=*fp32, K=i32%16, BM=64, BN=64, BK=32, num_warps=4, num_stages=3
    @triton.jit
    def tf32_dot(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(B_LOAD)
            acc = tl.dot(a, B_OPERAND, acc, input_precision="tf32")
        tl.store(c_ptr + rm[:, None] * 1024 + rn[None, :], acc)
"""
_N_MAJOR = ("b_ptr + (k + rk)[:, None] * 1024 + rn[None, :]", "b")
_K_MAJOR = ("b_ptr + rn[:, None] * K + (k + rk)[None, :]", "tl.trans(b)")


def _tf32(major):
    return _TF32_DOT.replace("B_LOAD", major[0]).replace("B_OPERAND", major[1])


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_cp_async_narrowed_by_a_transposed_shared_layout(checkers, tmp_path, target):
    # wgmma / tcgen05 take tf32 B K-major: Triton copies an N-contiguous B into a transposed shared tile one
    # element per cp.async. The global addresses are contiguous, so "contiguity" would send the user the wrong way.
    c = checkers(target)
    loads = check(c, tmp_path, "tf32_n.py", _tf32(_N_MAJOR), "PTX001")
    assert [f.line for f in loads] == [14]  # `b = tl.load(...)`, not the K-contiguous A on line 13
    f = loads[0]
    assert f.column == 13 and f.data["cause"] == "shared-layout"
    assert "shared-memory layout" in evidence(f) and "tl.trans" in evidence(f)
    # counted per thread per pipelined copy (prologue copies + the loop's), not summed over the copies
    copies = f.data["copies"]
    assert copies >= 3 and f"(16 per thread in each of {copies} pipelined copies" in evidence(f)
    assert not check(c, tmp_path, "tf32_k.py", _tf32(_K_MAJOR), "PTX001")


def test_cp_async_capped_by_shared_swizzle_vector(checkers, tmp_path):
    # sm_120 has no wgmma: an int8 mma.sync B operand gets a swizzled tile with vec = 8 bytes -> 64-bit cp.async
    body = _tf32(_N_MAJOR).replace("*fp32", "*i8").replace("c_ptr=*i8", "c_ptr=*i32").replace(
        "BK=32", "BK=64").replace("BM=64, BN=64", "BM=128, BN=128").replace(
        'input_precision="tf32"', "out_dtype=tl.int32").replace("dtype=tl.float32", "dtype=tl.int32")
    c = checkers("cuda:120")
    loads = check(c, tmp_path, "i8_n.py", body, "PTX001")
    assert [f.line for f in loads] == [14] and loads[0].data["cause"] == "shared-layout"
    assert "swizzle vec = 8" in evidence(loads[0]) and "64 bits" in evidence(loads[0])
    fixed = body.replace(*[_N_MAJOR[0], _K_MAJOR[0]]).replace("acc = tl.dot(a, b,", "acc = tl.dot(a, tl.trans(b),")
    assert not check(c, tmp_path, "i8_k.py", fixed, "PTX001")


# ---------------------------------------------------------------- PTX001: a stride is not an alignment problem
# 2048 elements: 8 per thread on hip too, where a wavefront is 64 lanes
_COPY = """\
    # tritonlens: x_ptr=*fp16, y_ptr=*fp16, stride=STRIDE, n=i32%16, BLOCK=2048, num_warps=4
    @triton.jit
    def copy(x_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(1)
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X_PTRS, mask=offs < n)
        tl.store(y_ptr + row * n + offs, x, mask=offs < n)
"""


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_inner_stride_is_reported_as_a_stride(checkers, tmp_path, target):
    c = checkers(target)
    strided = _COPY.replace("X_PTRS", "x_ptr + offs * stride")
    loads = check(c, tmp_path, "strided.py", strided.replace("STRIDE", "i32"), "PTX001")
    assert [f.line for f in loads] == [10]
    assert loads[0].data["cause"] == "stride" and loads[0].data["params"] == ["stride"]
    assert "not contiguous" in evidence(loads[0]) and "stride=1" in evidence(loads[0])
    # the fix the message names: a stride that is 1 at run time, specialized
    assert not check(c, tmp_path, "unit.py", strided.replace("STRIDE", "1"), "PTX001")


def test_row_stride_is_still_an_alignment_cause(checkers, tmp_path):
    c = checkers("cuda:90")
    row = _COPY.replace("X_PTRS", "x_ptr + row * stride + offs")
    loads = check(c, tmp_path, "row.py", row.replace("STRIDE", "i32"), "PTX001")
    assert [f.line for f in loads] == [10]
    assert loads[0].data["cause"] == "pointer" and loads[0].data["params"] == ["stride"]
    assert not check(c, tmp_path, "row16.py", row.replace("STRIDE", "i32%16"), "PTX001")


# ---------------------------------------------------------------- TTGIR001: a persistent kernel's epilogue
_PERSISTENT = """\
    # tritonlens: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, M=i32%16, N=i32%16, K=i32%16, stride_am=i32%16, stride_bk=i32%16, stride_cm=i32%16, NUM_SMS=132, BM=128, BN=128, BK=64, num_warps=8
    @triton.jit
    def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                          NUM_SMS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        num_n = tl.cdiv(N, BN)
        for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_n, NUM_SMS, flatten=False):
            rm = (tile // num_n) * BM + tl.arange(0, BM)
            rn = (tile % num_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in tl.range(0, tl.cdiv(K, BK), num_stages=4):
                a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BK + rk)[None, :])
                b = tl.load(b_ptr + (k * BK + rk)[:, None] * stride_bk + rn[None, :])
                acc = tl.dot(a, b, acc)
            tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))
"""


@pytest.mark.parametrize("target", ["cuda:90", "cuda:100"])
def test_persistent_epilogue_conversion_is_not_an_in_loop_storm(checkers, tmp_path, target):
    # the accumulator's mma → blocked conversion for the store sits in the tile loop, outside the K loop: once per
    # tile, as in any matmul's epilogue (examples/matmul.py is not reported for it either)
    c = checkers(target)
    report_metrics = c.check_file(str(_write(tmp_path, "persistent.py", _PERSISTENT))).kernels[0].compiled[0].metrics
    assert report_metrics["convert_layout"] >= 1
    assert not check(c, tmp_path, "persistent.py", _PERSISTENT, "TTGIR001")


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return path


# ---------------------------------------------------------------- RES001: a loop's own num_stages
def test_shared_over_limit_names_the_loop_num_stages(checkers, tmp_path):
    # gfx942 has 64 KB of LDS; the K loop's tl.range(num_stages=4) keeps 3 stages of 32 KB, whatever the launch's
    # num_stages (2 by default on hip): the message must point at the loop, not at "num_stages (now 2)"
    c = checkers("hip:gfx942")
    over = check(c, tmp_path, "persistent_hip.py", _PERSISTENT, "RES001")
    assert [f.line for f in over] == [7] and over[0].data["shared"] == 98304
    assert "tl.range(..., num_stages=4) on line 15" in evidence(over[0]) and "now 2" not in evidence(over[0])
    fixed = _PERSISTENT.replace("num_stages=4", "num_stages=2")
    assert not check(c, tmp_path, "persistent_hip2.py", fixed, "RES001")


def test_low_occupancy_on_hip_counts_wavefronts_per_cu(checkers, tmp_path):
    c = checkers("hip:gfx942")
    body = _PERSISTENT.replace("num_stages=4", "num_stages=3").replace("num_warps=8", "num_warps=4")
    occ = check(c, tmp_path, "persistent_hip4.py", body, "RES002")
    assert [f.line for f in occ] == [7] and occ[0].data["limiter"] == "shared"
    assert "4 of 32 wavefronts per CU" in evidence(occ[0]) and "B of LDS per block (65536 B per CU)" in evidence(occ[0])


# ---------------------------------------------------------------- PTX001 on hip: buffer loads
_ROW_SCALE = """\
    # tritonlens: x_ptr=*bf16, y_ptr=*bf16, stride=i32%16, N=NTYPE, BLOCK_N=4096, num_warps=8
    @triton.jit
    def row_scale(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, (x * 2.0).to(tl.bfloat16), mask=cols < N)
"""


def test_hip_buffer_loads_are_checked(checkers, tmp_path):
    # triton 3.6 lowers these to `amdg.buffer_load` / `amdg.buffer_store` (not tt.load): they were skipped
    c = checkers("hip:gfx942")
    found = check(c, tmp_path, "row_scale.py", _ROW_SCALE.replace("NTYPE", "i32"))
    assert {(f.code, f.line) for f in found if f.code.startswith("PTX")} == {("PTX001", 10), ("PTX002", 11)}
    load = next(f for f in found if f.code == "PTX001")
    assert load.data["cause"] == "mask" and load.data["params"] == ["N"] and "buffer_load_ushort" in evidence(load)
    fixed = check(c, tmp_path, "row_scale16.py", _ROW_SCALE.replace("NTYPE", "i32%16"))
    assert not [f for f in fixed if f.code.startswith("PTX")]


# ---------------------------------------------------------------- causes stay inside their kernel
def test_ptx001_params_come_from_this_kernel_only(checkers, tmp_path):
    """Two kernels with the same parameter names assign the same local from different ones; a narrow load in the
    first must name only what reaches it there (`pad`), not what the second kernel's `base` uses (`stride`)."""
    found = check(checkers("cuda:90"), tmp_path, "two_kernels.py", """\
        # tritonlens: x_ptr=*fp32, pad=i32, stride=i32, BLOCK=512
        @triton.jit
        def rows_a(x_ptr, pad, stride, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            base = row * pad
            x = tl.load(x_ptr + base + offs)
            tl.store(x_ptr + base + offs, x * 2)


        # tritonlens: x_ptr=*fp32, pad=i32%16, stride=i32, BLOCK=512
        @triton.jit
        def rows_b(x_ptr, pad, stride, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            base = row * stride + pad
            x = tl.load(x_ptr + base + offs)
            tl.store(x_ptr + base + offs, x * 2)
        """, "PTX001")
    first = [f for f in found if f.kernel == "rows_a"]
    assert first, [f.message for f in found]
    for f in first:
        assert f.data["params"] == ["pad"], f.data
        assert "stride" not in f.message.split("[")[0]


def test_stride_of_the_row_of_a_linearized_tile_is_not_named_as_the_inner_stride(checkers, tmp_path):
    # `offs // D` is the row of a flattened (rows × D) tile: constant over consecutive offs, so `stride_r` is a row
    # stride. Only `stride_c`, which multiplies `offs % D`, can be the reason the addresses are not contiguous.
    c = checkers("cuda:90")
    loads = check(c, tmp_path, "linear.py", """\
        # tritonlens: x_ptr=*fp16, y_ptr=*fp16, stride_r=i32, stride_c=i32, D=i32%16, n=i32%16, BLOCK=1024
        @triton.jit
        def flat_copy(x_ptr, y_ptr, stride_r, stride_c, D, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            r = offs // D
            col = offs % D
            x = tl.load(x_ptr + r * stride_r + col * stride_c, mask=offs < n)
            tl.store(y_ptr + offs, x, mask=offs < n)
        """, "PTX001")
    assert [f.line for f in loads] == [11]
    assert loads[0].data["cause"] == "stride" and loads[0].data["params"] == ["stride_c"]
    why = loads[0].details[0]  # the rule's account; the spec is a detail line of its own
    assert "stride_c=1" in why and "stride_r" not in why


def test_strides_inside_a_row_index_are_not_the_inner_stride(checkers, tmp_path):
    # Paged KV: the page and in-page strides build the row offset `(...)[:, None]`; the columns are `offs_d`. Those
    # strides are not why the load is narrow — they are row strides whose divisibility is unknown.
    c = checkers("cuda:90")
    loads = check(c, tmp_path, "paged.py", """\
        # tritonlens: k_ptr=*fp16, out_ptr=*fp16, table_ptr=*i32, stride_page=i32, stride_tok=i32, PAGE=16, BN=32, D=64
        @triton.jit
        def gather_k(k_ptr, out_ptr, table_ptr, stride_page, stride_tok, PAGE: tl.constexpr, BN: tl.constexpr,
                     D: tl.constexpr):
            offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
            offs_d = tl.arange(0, D)
            page = tl.load(table_ptr + offs_n // PAGE).to(tl.int64)
            in_page = offs_n % PAGE
            k = tl.load(k_ptr + (page * stride_page + in_page * stride_tok)[:, None] + offs_d[None, :])
            tl.store(out_ptr + offs_n[:, None] * D + offs_d[None, :], k)
        """, "PTX001")
    assert [f.line for f in loads] == [13]
    assert loads[0].data["cause"] == "pointer"
    assert sorted(loads[0].data["params"]) == ["stride_page", "stride_tok"]
    assert "not contiguous" not in loads[0].message


def test_unswizzled_pipeline_buffer_is_not_blamed_for_a_narrow_cp_async(checkers, tmp_path):
    # A row loop pipelined with tl.range(num_stages=...) copies each row into an unswizzled shared buffer
    # (vec = 1, maxPhase = 1) — no dot consumes it. The copy is narrow because the row stride is not known to be a
    # multiple of 16; blaming the shared layout ("the dot operand's layout") would send the user the wrong way.
    c = checkers("cuda:90")
    loads = check(c, tmp_path, "rows.py", """\
        # tritonlens: BLOCK=1024, num_warps=8
        @triton.jit
        def row_scale(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
            for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=4):
                cols = tl.arange(0, BLOCK)
                x = tl.load(in_ptr + r * stride + cols, mask=cols < n_cols, other=0.0)
                tl.store(out_ptr + r * BLOCK + cols, x * 2.0)
        """, "PTX001")
    assert [f.line for f in loads] == [10]  # the tl.load (the helper prepends the imports)
    assert loads[0].data["cause"] != "shared-layout", loads[0].message
    assert "dot" not in loads[0].message and "stride" in loads[0].message
