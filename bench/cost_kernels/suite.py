"""The cost model's calibration suite: one kernel per class of real work, written as experts write them (loops whose
trip counts only the IR tells: a negative step, a local bound, a persistent tile loop, `tl.range`, a loop in a
helper, a bound loaded from memory), launched at production shapes by suite_driver.py. The classes: dense GEMM (bf16,
fp8, persistent, decode, split-K), attention forward and backward, MoE grouped GEMM, row-wise norms and softmax (small
and huge grids), quantization, reductions, elementwise."""
import triton
import triton.language as tl


# ---------------------------------------------------------------- dense GEMM
@triton.jit
def _k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    return acc


@triton.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B with grouped tile order; the K loop sits in a helper."""
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = _k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk, BM, BN, BK)
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def gemm_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_SMS: tl.constexpr):
    """A persistent GEMM: one program per SM walks the output tiles."""
    start = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n
    for tile in tl.range(start, tiles, NUM_SMS, flatten=False):
        pid_m = tile // num_n
        pid_n = tile % num_n
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k in tl.range(0, K, BK, num_stages=3):
            a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak)
            b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def gemm_reverse_k(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The K loop walked backwards (`range(K, 0, -BK)`), as some split layouts do."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(K, 0, -BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k - BK + rk)[None, :])
        b = tl.load(b_ptr + (k - BK + rk)[:, None] * stride_bk + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def gemm_split_k(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    """Split-K: program (tile, s) walks the s-th share of K (`range(lo, hi, BK)` from locals) and adds its partial
    tile into an fp32 C with atomics — for few output tiles over a long K (a decode or down projection)."""
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_n = tl.cdiv(N, BN)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    share = tl.cdiv(K, SPLIT_K * BK) * BK
    lo = pid_k * share
    hi = tl.minimum(lo + share, K)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(lo, hi, BK):
        a = tl.load(a_ptr + (rm % M)[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc = tl.dot(a, b, acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=mask, sem="relaxed")


# ---------------------------------------------------------------- MoE grouped GEMM
@triton.jit
def moe_grouped_gemm(a_ptr, b_ptr, c_ptr, offs_ptr, N, K, stride_am, stride_be, stride_bk, stride_cm,
                     E: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_SMS: tl.constexpr):
    """A persistent grouped GEMM over experts: rows offs[e]..offs[e+1] of A times expert e's weight. Each expert's
    tile count comes from the offsets in memory, so its loop's trips are data, not arguments."""
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    done = 0
    for e in range(E):
        row0 = tl.load(offs_ptr + e)
        rows = tl.load(offs_ptr + e + 1) - row0
        tiles = tl.cdiv(rows, BM) * num_n
        first = (pid - done % NUM_SMS + NUM_SMS) % NUM_SMS
        for t in range(first, tiles, NUM_SMS):
            pid_m = t // num_n
            pid_n = t % num_n
            rm = pid_m * BM + tl.arange(0, BM)
            rn = pid_n * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a_rows = row0 + tl.minimum(rm, rows - 1)
            acc = tl.zeros([BM, BN], dtype=tl.float32)
            for k in range(0, K, BK):
                a = tl.load(a_ptr + a_rows.to(tl.int64)[:, None] * stride_am + (k + rk)[None, :])
                b = tl.load(b_ptr + e.to(tl.int64) * stride_be + (k + rk)[:, None] * stride_bk + rn[None, :])
                acc = tl.dot(a, b, acc)
            c_rows = (row0 + rm).to(tl.int64)
            tl.store(c_ptr + c_rows[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
                     mask=(rm[:, None] < rows) & (rn[None, :] < N))
        done += tiles


# ---------------------------------------------------------------- attention forward
@triton.jit
def _attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, lo, hi, offs_m, qk_scale,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD)
    for start_n in range(lo, hi, BLOCK_N):
        k = tl.load(k_base + (start_n + offs_n)[None, :] * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, stride_h, stride_n, sm_scale,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash attention forward, one (query block, batch·head) per program; keys walked in `range(lo, hi, BLOCK_N)`."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD)
    base = bh.to(tl.int64) * stride_h
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    lo = 0
    hi = (start_m + 1) * BLOCK_M if CAUSAL else seq
    acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, stride_n, stride_n, lo, hi, offs_m,
                                qk_scale, BLOCK_M, BLOCK_N, HEAD, CAUSAL)
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :], acc.to(o_ptr.dtype.element_ty))


# ---------------------------------------------------------------- attention backward
@triton.jit
def attention_bwd_dkdv(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, d_ptr, dk_ptr, dv_ptr, seq, stride_h, stride_n, sm_scale,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash attention backward for one block of keys: the query blocks walked in `range(lo, seq, BLOCK_M)` (from
    the key block on when causal), four dots a trip (qk, dv, dp, dk)."""
    start_n = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_h
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD)
    k = tl.load(k_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :])
    v = tl.load(v_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, HEAD], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD], dtype=tl.float32)
    lo = start_n * BLOCK_N if CAUSAL else 0
    for start_m in range(lo, seq, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        qT = tl.load(q_ptr + base + offs_m[None, :] * stride_n + offs_d[:, None])
        m = tl.load(m_ptr + bh * seq + offs_m)
        qkT = tl.dot(k, qT) * (sm_scale * 1.44269504)
        pT = tl.math.exp2(qkT - m[None, :])
        if CAUSAL:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :])
        dv += tl.dot(pT.to(do.dtype), do)
        di = tl.load(d_ptr + bh * seq + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - di[None, :])
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
    tl.store(dv_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :], dv.to(dv_ptr.dtype.element_ty))
    tl.store(dk_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :], (dk * sm_scale).to(dk_ptr.dtype.element_ty))


@triton.jit
def attention_bwd_dq(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, d_ptr, dq_ptr, seq, stride_h, stride_n, sm_scale,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash attention backward for one block of queries: the key blocks walked in `range(0, hi, BLOCK_N)` (up to
    the query block when causal), three dots a trip (qk, dp, dq)."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :])
    do = tl.load(do_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :])
    m = tl.load(m_ptr + bh * seq + offs_m)
    di = tl.load(d_ptr + bh * seq + offs_m)
    dq = tl.zeros([BLOCK_M, HEAD], dtype=tl.float32)
    hi = (start_m + 1) * BLOCK_M if CAUSAL else seq
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kT = tl.load(k_ptr + base + offs_n[None, :] * stride_n + offs_d[:, None])
        vT = tl.load(v_ptr + base + offs_n[None, :] * stride_n + offs_d[:, None])
        qk = tl.dot(q, kT) * (sm_scale * 1.44269504)
        p = tl.math.exp2(qk - m[:, None])
        if CAUSAL:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - di[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
    tl.store(dq_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :], (dq * sm_scale).to(dq_ptr.dtype.element_ty))


# ---------------------------------------------------------------- row-wise norms and softmax
@triton.jit
def rms_norm(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    """One row per program, the row in one block."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_looped(x_ptr, w_ptr, b_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    """One row per program in blocks: three passes over the row (mean, variance, normalize) — the second and third
    read what the first left in L1/L2."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, 0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + row * stride + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_online(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    """A row softmax over long rows: an online max/sum pass, then a normalizing pass that re-reads the row."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    m_row = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - m_row), 0)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, (tl.exp(x - m_row) / total).to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------- quantization
@triton.jit
def quant_fp8_row(x_ptr, q_ptr, s_ptr, stride, n_cols, BLOCK: tl.constexpr):
    """Per-row fp8 quantization: an amax pass over the row, then a scaling pass that re-reads it."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    amax = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        amax = tl.maximum(amax, tl.abs(tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)))
    scale = tl.maximum(tl.max(amax, 0), 1e-12) / 448.0
    tl.store(s_ptr + row, scale)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(q_ptr + row * stride + cols, (x / scale).to(q_ptr.dtype.element_ty), mask=mask)


@triton.jit
def quant_fp8_group(x_ptr, q_ptr, s_ptr, n_groups, GROUP: tl.constexpr, GROUPS_PER_PROGRAM: tl.constexpr):
    """Per-group (1 x GROUP) fp8 quantization, several groups per program."""
    pid = tl.program_id(0)
    g = pid * GROUPS_PER_PROGRAM + tl.arange(0, GROUPS_PER_PROGRAM)
    cols = tl.arange(0, GROUP)
    mask = g[:, None] < n_groups
    x = tl.load(x_ptr + g[:, None] * GROUP + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), 1), 1e-12) / 448.0
    tl.store(q_ptr + g[:, None] * GROUP + cols[None, :], (x / scale[:, None]).to(q_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + g, scale, mask=g < n_groups)


# ---------------------------------------------------------------- reductions
@triton.jit
def row_sum(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    """The sum of each row, walked backwards in blocks (`range(n_cols, 0, -BLOCK)`)."""
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for end in range(n_cols, 0, -BLOCK):
        cols = end - BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols >= 0, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, 0))


@triton.jit
def sum_grid_stride(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A few programs each sum a strided share of a flat tensor (a grid-stride loop over num_programs)."""
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(acc, 0))


# ---------------------------------------------------------------- elementwise
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def silu_mul(g_ptr, u_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (g * tl.sigmoid(g) * u).to(out_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------- strided lanes (LAUNCH003)
@triton.jit
def row_walk_lanes(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """A lane per row, a loop over the row's columns: each warp request touches a sector per lane, and the next
    trips read the rest of those sectors."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, n_cols):
        acc += tl.load(x_ptr + rows * n_cols + c, mask=rows < n_rows, other=0.0)
    tl.store(out_ptr + rows, acc, mask=rows < n_rows)


@triton.jit
def row_walk_tiles(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, COLS: tl.constexpr):
    """row_walk_lanes with COLS contiguous columns a lane a trip: whole sectors each request."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, COLS), dtype=tl.float32)
    for c in range(0, n_cols, COLS):
        cols = c + tl.arange(0, COLS)
        acc += tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=rows[:, None] < n_rows, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


@triton.jit
def column_walk_lanes(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """A lane per column, a loop over rows: coalesced (the twin of row_walk_lanes)."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(0, n_rows):
        acc += tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < n_cols)
