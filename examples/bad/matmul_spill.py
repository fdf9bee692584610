"""A 128x128 fp32 tile accumulated with FMA by 4 warps: 128 accumulators per thread plus operands do not fit
in 255 registers, so ptxas spills to local memory (SASS001). With num_warps=8 each thread holds half the tile and
nothing spills."""
import triton
import triton.language as tl


# tritonlens: a_ptr=*fp32, b_ptr=*fp32, c_ptr=*fp32, K=i32%16, stride_am=i32%16, stride_bk=i32%16, stride_cm=i32%16, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=3
@triton.jit
def matmul_spill(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc)
