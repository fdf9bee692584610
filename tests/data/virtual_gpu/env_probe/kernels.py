import triton
import triton.language as tl

from .device import DEVICE

IS_HIP = tl.constexpr(DEVICE == "hip")


@triton.jit
def negate(x_ptr, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if IS_HIP:
        x = x * 1.0
    tl.store(x_ptr + offs, -x, mask=offs < n)
