"""A 256x256 fp16 tile with BLOCK_K=128 and 4 pipeline stages: the multi-buffered A and B tiles need far more
shared memory than one block may have on sm_80 or sm_90 (RES001); the launch would fail with OutOfResources.
A second spec that fits in shared memory only once per SM shows RES002 (4 resident warps)."""
import triton
import triton.language as tl


# tritonlens: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, K=i32%16, stride_am=i32%16, stride_bk=i32%16, stride_cm=i32%16, BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_warps=8, num_stages=4
@triton.jit
def matmul_fp16(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
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
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16))
