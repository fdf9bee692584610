import triton
import triton.language as tl

LIMIT = 4096


@triton.jit
def scale(x_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == 1:
        x = x * 2.0
    tl.store(x_ptr + offs, x, mask=offs < n)


def run(x, K):
    n = x.numel()
    block = min(max(triton.next_power_of_2(K), 16), 64)
    scale[(triton.cdiv(n, block),)](x, n, 0 if n <= LIMIT else 1, BLOCK=block)


@triton.jit
def from_shape(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run_shape(x):
    from_shape[(1,)](x, x.numel(), BLOCK=triton.next_power_of_2(x.shape[1]))
