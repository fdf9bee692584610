import triton
import triton.language as tl

from .device import BLOCK_LIST, IS_HOPPER, NUM_SMS

HOPPER = tl.constexpr(IS_HOPPER)
SMS = tl.constexpr(NUM_SMS)


# tritonlens: x_ptr=*fp32, n=i32, BLOCK=128
@triton.jit
def persistent_scale(x_ptr, n, BLOCK: tl.constexpr):
    # one program per SM, looping over the blocks
    for start in range(tl.program_id(0) * BLOCK, n, SMS * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        if HOPPER:
            x = x * 2.0
        tl.store(x_ptr + offs, x, mask=offs < n)


def scale(x):
    grid = (min(NUM_SMS, triton.cdiv(x.numel(), BLOCK_LIST[0])),)
    persistent_scale[grid](x, x.numel(), BLOCK=BLOCK_LIST[-1])
    return x
