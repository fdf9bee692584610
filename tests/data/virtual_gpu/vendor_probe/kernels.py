import triton
import triton.language as tl

from .device import WIDE

VECTOR = tl.constexpr(4 if WIDE else 1)


@triton.jit
def copy_rows(src, dst, n, BLOCK: tl.constexpr = 512):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, VECTOR), VECTOR)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
