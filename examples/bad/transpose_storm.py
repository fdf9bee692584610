"""Adding a transposed tile to an accumulator inside a loop: tl.trans gives the tile a different layout, and
converting it back goes through shared memory with barriers on every iteration (TTGIR001)."""
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, N=i32%16, BLOCK_M=64, BLOCK_N=64, num_warps=4
@triton.jit
def both_axes(x_ptr, out_ptr, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_M):
        x = tl.load(x_ptr + (start + offs_m)[:, None] * BLOCK_N + offs_n[None, :])
        row = tl.sum(x, axis=1)
        col = tl.sum(x, axis=0)
        acc += row[:, None] * col[None, :]
        acc += tl.trans(x)
    tl.store(out_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)
