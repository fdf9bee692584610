"""A library that initialises CUDA when imported: a module constant the kernel reads comes from the device's
properties (as libraries size blocks from the SM count and shared memory), and a workspace buffer is allocated on the
device at import."""
import torch
import triton
import triton.language as tl

_PROPS = torch.cuda.get_device_properties(torch.cuda.current_device())  # initialises CUDA
ROWS_PER_PROGRAM: tl.constexpr = tl.constexpr(4 if _PROPS.multi_processor_count >= 100 else 2)
BLOCK = 1024 if _PROPS.shared_memory_per_block_optin >= 200 * 1024 else 512
_WORKSPACE = torch.empty(1 << 20, device="cuda")  # a buffer many libraries allocate up front


@triton.jit
def scale_rows(x_ptr, n_cols, stride, BLOCK: tl.constexpr = 1024):
    row0 = tl.program_id(0) * ROWS_PER_PROGRAM
    cols = tl.arange(0, BLOCK)
    for r in tl.static_range(ROWS_PER_PROGRAM):
        ptrs = x_ptr + (row0 + r) * stride + cols
        x = tl.load(ptrs, mask=cols < n_cols)
        tl.store(ptrs, x * 2, mask=cols < n_cols)


def scale(x):
    scale_rows[(x.shape[0] // ROWS_PER_PROGRAM,)](x, x.shape[1], x.stride(0), BLOCK=BLOCK)
    return x
