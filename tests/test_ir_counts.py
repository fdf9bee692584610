"""ir/counts: loop trips, dots and accesses read from the IR that Triton really compiled (on the CPU, for sm_90),
evaluated with a launch's arguments and grid — for the loops whose trips the Python hides: a negative step, a local
bound, a loop in an inlined helper, a persistent tile loop over `num_programs`, `tl.range`, a bound that depends on
the program id (causal attention) or on an enclosing loop's variable."""
import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from tritonlens.compiler.worker import private_triton_cache  # noqa: E402
from tritonlens.ir import parse_mlir  # noqa: E402
from tritonlens.ir.counts import count_ir, elem_bits  # noqa: E402


@triton.jit
def reverse_sum(x_ptr, out_ptr, K, BK: tl.constexpr):
    acc = tl.zeros([BK], tl.float32)
    for k in range(K, 0, -BK):
        offs = k - BK + tl.arange(0, BK)
        acc += tl.load(x_ptr + offs, mask=offs >= 0, other=0.0)
    tl.store(out_ptr + tl.arange(0, BK), acc)


@triton.jit
def local_bound(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    lo = pid * N
    hi = lo + N
    acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        acc += tl.load(x_ptr + start + tl.arange(0, BLOCK_N))
    tl.store(out_ptr + pid * BLOCK_N + tl.arange(0, BLOCK_N), acc)


@triton.jit
def _blocks_sum(x_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, tl.cdiv(n, BLOCK)):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    return acc


@triton.jit
def with_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), _blocks_sum(x_ptr, n, BLOCK))


@triton.jit
def _num_blocks(n, BLOCK: tl.constexpr):
    return tl.cdiv(n, BLOCK)


@triton.jit
def bound_from_helper(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(_num_blocks(n, BLOCK)):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n
    for tile in tl.range(pid, tiles, tl.num_programs(0)):
        rm = (tile // num_n) * BM + tl.arange(0, BM)
        rn = (tile % num_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros([BM, BN], tl.float32)
        for k in tl.range(0, K, BK, num_stages=3):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def causal_blocks(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    """Row block m reads column blocks 0..m (a causal mask's triangle), then for each of them the blocks after it."""
    m = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, (m + 1) * BLOCK, BLOCK):
        for j in range(start, (m + 1) * BLOCK, BLOCK):
            acc += tl.load(x_ptr + m * stride + j + tl.arange(0, BLOCK))
    tl.store(out_ptr + m * BLOCK + tl.arange(0, BLOCK), acc)


def _compile(fn, signature, constants, stage="ttgir", warps=4):
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
    with private_triton_cache():
        out = triton.compile(ASTSource(fn, signature, constants, attrs), target=GPUTarget("cuda", 90, 32),
                             options={"num_warps": warps})
    text = out.asm[stage]
    return count_ir(text, parse_mlir(text, __file__))


FLAT = {"x_ptr": "*fp32", "out_ptr": "*fp32"}


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_a_negative_step_counts_its_trips(stage):
    c = _compile(reverse_sum, {**FLAT, "K": "i32", "BK": "constexpr"}, {"BK": 128}, stage)
    (load,) = [a for a in c.accesses if a.kind == "load"]
    t = c.trips({"K": 1000}, [1])
    assert t.of(load.loop) == 8  # ceil(1000 / 128): the AST saw a negative step and counted once
    assert load.line == reverse_sum.fn.__code__.co_firstlineno + 5 and load.elems == 128 and load.bytes == 512
    (store,) = [a for a in c.accesses if a.kind == "store"]
    assert store.loop is None and t.of(store.loop) == 1


def test_a_local_bound_is_evaluated_per_program():
    c = _compile(local_bound, {**FLAT, "N": "i32", "BLOCK_N": "constexpr"}, {"BLOCK_N": 128})
    (load,) = [a for a in c.accesses if a.kind == "load"]
    assert c.trips({"N": 4096}, [64]).of(load.loop) == 32


def test_a_loop_in_an_inlined_helper_is_counted_where_the_kernel_calls_it():
    c = _compile(with_helper, {**FLAT, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128})
    (load,) = [a for a in c.accesses if a.kind == "load"]
    assert c.trips({"n": 1000}, [1]).of(load.loop) == 8
    assert load.line == with_helper.fn.__code__.co_firstlineno + 2  # the call's line in the kernel


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_a_bound_a_helper_returns_is_evaluated(stage):
    c = _compile(bound_from_helper, {**FLAT, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256}, stage)
    (load,) = [a for a in c.accesses if a.kind == "load"]
    t = c.trips({"n": 100_000}, [1])
    assert t.of(load.loop) == 391 and not t.unknown  # ceil(100000 / 256)


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_a_persistent_tile_loop_counts_tiles_per_program_and_the_dots_in_it(stage):
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    c = _compile(persistent_matmul, sig, {"BM": 128, "BN": 128, "BK": 64}, stage, warps=8)
    assert [lp.parent for lp in c.loops] == [None, 0]
    t = c.trips({"M": 8192, "N": 8192, "K": 4096}, [132])
    tiles = 64 * 64
    assert t.of(0) == pytest.approx(tiles / 132, rel=0.01)  # 31.03 tiles a program on average ...
    assert t.most_of(0) == 32  # ... the first programs take 32
    (dot,) = c.dots
    assert (dot.m, dot.n, dot.k, dot.a_type, dot.operand_kind) == (128, 128, 64, "bf16", "bf16")
    assert dot.op == ("tt.dot" if stage == "ttir" else "ttng.warp_group_dot")
    assert t.of(dot.loop) == pytest.approx(tiles / 132 * 64, rel=0.01)  # K / BK trips per tile
    total_flops = dot.flops * t.of(dot.loop) * 132
    assert total_flops == pytest.approx(2 * 8192 * 8192 * 4096, rel=0.01)
    loads = [a for a in c.accesses if a.kind == "load" and a.loop == 1]
    assert sorted(a.elems for a in loads) == [128 * 64, 64 * 128] and all(a.elem == "bf16" for a in loads)


def test_a_bound_on_the_program_id_and_on_an_outer_loop_is_averaged():
    c = _compile(causal_blocks, {**FLAT, "stride": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    (load,) = [a for a in c.accesses if a.kind == "load"]
    t = c.trips({"stride": 4096}, [8])
    # program m runs (m+1)(m+2)/2 inner trips: 1, 3, 6, ..., 36 for m = 0..7, mean 15
    assert t.of(load.loop) == pytest.approx(15.0)
    assert t.most_of(load.loop) == 36


def test_an_unknown_bound_counts_once_and_says_so():
    c = _compile(local_bound, {**FLAT, "N": "i32", "BLOCK_N": "constexpr"}, {"BLOCK_N": 128})
    t = c.trips({}, [4])
    assert t.unknown == {0} and t.of(0) == 1


def test_element_widths():
    assert [elem_bits(e) for e in ("f8E4M3FN", "bf16", "f32", "i1", "f64")] == [8, 16, 32, 8, 64]


@triton.jit
def gated_matmul(a_ptr, g_ptr, u_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A gated projection: two independent dots of the same A tile a trip."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    gate = tl.zeros([BM, BN], tl.float32)
    up = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        gate = tl.dot(a, tl.load(g_ptr + (k + rk)[:, None] * BN + rn[None, :]), gate)
        up = tl.dot(a, tl.load(u_ptr + (k + rk)[:, None] * BN + rn[None, :]), up)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], (gate * tl.sigmoid(gate) * up).to(tl.bfloat16))


@triton.jit
def tiny_attention(q_ptr, k_ptr, v_ptr, o_ptr, seq, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """P·V after softmax(Q·Kᵀ): the second dot consumes the first's result."""
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, seq, BN):
        kt = tl.load(k_ptr + (start + rn)[None, :] * D + rd[:, None])
        p = tl.math.exp2(tl.dot(q, kt))
        v = tl.load(v_ptr + (start + rn)[:, None] * D + rd[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc.to(tl.bfloat16))


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_a_dot_on_another_dots_result_is_chained_two_independent_dots_are_not(stage):
    from tritonlens.checks.costmodel import kernel_class

    bf = {"a_ptr": "*bf16", "g_ptr": "*bf16", "u_ptr": "*bf16", "c_ptr": "*bf16", "K": "i32", "BM": "constexpr",
          "BN": "constexpr", "BK": "constexpr"}
    gated = _compile(gated_matmul, bf, {"BM": 64, "BN": 64, "BK": 64}, stage)
    assert len(gated.dots) == 2 and not any(d.chained for d in gated.dots)
    assert kernel_class(gated) == "gemm"
    sig = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "o_ptr": "*bf16", "seq": "i32", "BM": "constexpr",
           "BN": "constexpr", "D": "constexpr"}
    attn = _compile(tiny_attention, sig, {"BM": 64, "BN": 64, "D": 64}, stage)
    assert [d.chained for d in attn.dots] == [False, True]
    assert kernel_class(attn) == "attention"


@triton.jit
def branches(x_ptr, y_ptr, out_ptr, n, ignore, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    label = tl.load(y_ptr + row)
    if label == ignore:
        tl.store(out_ptr + row * BLOCK + offs, tl.zeros([BLOCK], tl.float32))
        return
    if label > 0:
        x = tl.load(x_ptr + row * BLOCK + offs)
    else:
        x = tl.load(x_ptr + (row + n) * BLOCK + offs) * 2.0
    tl.store(out_ptr + row * BLOCK + offs, x)


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_alternatives_a_program_takes_one_of_count_their_largest(stage):
    """An early `return` splits the body into CFG blocks (`cf.cond_br`), an if/else into the arms of an `scf.if`:
    one program runs one of each, so the most it moves is the heavier side, not the sum."""
    c = _compile(branches, {"x_ptr": "*fp32", "y_ptr": "*i64", "out_ptr": "*fp32", "n": "i32", "ignore": "i32",
                            "BLOCK": "constexpr"}, {"BLOCK": 256}, stage)
    tiles = [a for a in c.accesses if a.elems == 256]
    stores = [a for a in tiles if a.kind == "store"]
    loads = [a for a in tiles if a.kind == "load"]
    assert len(stores) == 2 and len(loads) == 2, c.accesses
    assert len({a.block for a in stores}) == 2  # the ignored row's block and the main one
    assert {a.arms[-1][1] for a in loads} == {0, 1} and len({a.arms[-1][0] for a in loads}) == 1  # one if, two arms
    items = [((a.line, a.col), a.bytes) for a in tiles]
    assert c.most_on_one_path(items) == 2 * 1024  # one load and the main path's store, 1 KB each
    assert sum(w for _, w in items) == 4 * 1024
