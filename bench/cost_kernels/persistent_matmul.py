"""Triton's persistent-matmul tutorial kernel in its flattened form (python/tutorials/09-persistent-matmul.py of
Triton 3.0-3.2, the form production fp8 row-wise GEMMs still take): one program per SM, one loop of
`k_tiles * tiles_per_SM` trips, `tiles_per_SM` one more for the first `num_tiles % NUM_SMS` programs, the output
tile advanced inside the loop when `ki == 0` and stored when `ki == k_tiles - 1`.

    tritonlens capture [--no-gpu] -- python bench/cost_kernels/persistent_matmul.py [M N K] [fp8|bf16]
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                             BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    tiles_per_SM = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        tiles_per_SM += 1

    tile_id = start_pid - NUM_SMS
    ki = -1

    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)

    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    pid_m = 0
    pid_n = 0
    offs_am = tl.arange(0, BLOCK_SIZE_M)
    offs_bn = tl.arange(0, BLOCK_SIZE_N)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)

    for _ in range(0, k_tiles * tiles_per_SM):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            group_id = tile_id // num_pid_in_group
            first_pid_m = group_id * GROUP_SIZE_M
            group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
            pid_m = first_pid_m + (tile_id % group_size_m)
            pid_n = (tile_id % num_pid_in_group) // group_size_m

            start_m = pid_m * BLOCK_SIZE_M
            start_n = pid_n * BLOCK_SIZE_N
            offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
            offs_am = tl.where(offs_am < M, offs_am, 0)
            offs_bn = tl.where(offs_bn < N, offs_bn, 0)
            offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
            offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

        a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)

        if ki == k_tiles - 1:
            offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
            c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
            if c_ptr.dtype.element_ty == tl.float8e4nv:
                c = accumulator.to(tl.float8e4nv)
            else:
                c = accumulator.to(tl.float16)
            tl.store(c_ptrs, c, mask=c_mask)
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)


def matmul_persistent(a, b, c, sms):
    """The tutorial's launch: its fp8 or fp16 config, one program per SM (or per tile, when there are fewer)."""
    M, K = a.shape
    N = b.shape[1]
    fp8 = a.dtype == torch.float8_e4m3fn
    cfg = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=128 if fp8 else 64, GROUP_SIZE_M=8,
               num_stages=3, num_warps=8)
    tiles = triton.cdiv(M, cfg["BLOCK_SIZE_M"]) * triton.cdiv(N, cfg["BLOCK_SIZE_N"])
    matmul_kernel_persistent[(min(sms, tiles),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        NUM_SMS=sms, **cfg)
    return c


def main(argv):
    dims = [int(x) for x in argv if x.isdigit()]
    m, n, k = dims if len(dims) == 3 else (8192, 8192, 8192)
    fp8 = "bf16" not in argv
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sms = torch.cuda.get_device_properties(0).multi_processor_count if dev == "cuda" else 132
    dtype = torch.float8_e4m3fn if fp8 else torch.float16
    a = torch.empty(m, k, device=dev, dtype=torch.float16).normal_().to(dtype) if dev == "cuda" else \
        torch.empty(m, k, dtype=dtype)
    b = torch.empty(k, n, device=dev, dtype=torch.float16).normal_().to(dtype).T.contiguous().T if dev == "cuda" \
        else torch.empty(n, k, dtype=dtype).T
    c = torch.empty(m, n, device=dev, dtype=dtype)
    for _ in range(12):  # capture --time times the launches after the first
        matmul_persistent(a, b, c, sms)


if __name__ == "__main__":
    main(sys.argv[1:])
