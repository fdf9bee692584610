"""Launch sites the way library code writes them: the kernel picked by a conditional, block sizes from a helper
that returns a tuple or from a branch, constants shadowed by parameters and loops."""
import triton
import triton.language as tl

BLOCK = 32


@triton.jit
def norm_fwd(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def shifted_fwd(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def settings(n):
    return triton.next_power_of_2(n), 4


def forward(x, shifted):
    n = x.shape[-1]
    block, num_warps = settings(n)
    fn = shifted_fwd if shifted else norm_fwd
    fn[(1,)](x, n, BLOCK=block, num_warps=num_warps)


def small(x):
    n = x.numel()
    if n <= 4096:
        block = triton.next_power_of_2(n)
        norm_fwd[(1,)](x, n, block)


def shadowed(x, BLOCK):
    norm_fwd[(1,)](x, x.numel(), BLOCK)
    for BLOCK in (64, 128):
        shifted_fwd[(1,)](x, x.numel(), BLOCK)
