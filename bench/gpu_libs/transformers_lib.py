"""A library that imports torch and transformers at import (the address space that reserves is several GB) and reads
its device's capability for a feature flag the kernel uses."""
import torch
import transformers  # noqa: F401 — imported at the top, as model code does
import triton
import triton.language as tl

IS_HOPPER_OR_NEWER: tl.constexpr = tl.constexpr(torch.cuda.get_device_capability()[0] >= 9)


@triton.jit
def silu_mul(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=offs < n)
    if IS_HOPPER_OR_NEWER:
        y = a * tl.sigmoid(a)
    else:
        y = a / (1 + tl.exp(-a))
    tl.store(out_ptr + offs, (y * b).to(out_ptr.dtype.element_ty), mask=offs < n)
