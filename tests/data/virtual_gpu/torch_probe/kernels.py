import triton
import triton.language as tl

from .device import SM_ARCH

ARCH = tl.constexpr(SM_ARCH)


# tritonlens: x_ptr=*fp32, n=i32, BLOCK=1024
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(ARCH == "sm_90" or ARCH == "sm_80" or ARCH == "sm_100")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
