import triton
import triton.language as tl

from .buffers import WORKSPACE_BYTES


@triton.jit
def zero(x_ptr, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < min(n, WORKSPACE_BYTES))
