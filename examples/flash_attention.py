"""Flash-attention-style forward pass: online softmax over key/value blocks."""
import triton
import triton.language as tl


# tritonlens: Q=*fp16, K=*fp16, V=*fp16, Out=*fp16, sm_scale=fp32, stride_qm=i32%16, stride_kn=i32%16, stride_vn=i32%16, stride_om=i32%16, seqlen=i32%16, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2
@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, stride_qm, stride_kn, stride_vn, stride_om, seqlen,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = off_hz.to(tl.int64) * seqlen * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=offs_m[:, None] < seqlen, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seqlen, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * stride_kn + offs_d[:, None], mask=cols[None, :] < seqlen, other=0.0)
        qk = tl.dot(q, k)
        qk = tl.where(cols[None, :] < seqlen, qk * qk_scale, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + base + cols[:, None] * stride_vn + offs_d[None, :], mask=cols[:, None] < seqlen, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(tl.float16),
             mask=offs_m[:, None] < seqlen)
