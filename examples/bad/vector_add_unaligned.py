"""examples/vector_add.py compiled as a launch with a length that is not a multiple of 16 would be: the mask can
no longer be proven aligned, so every load and store falls to 32 bits (PTX001, PTX002)."""
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, y_ptr=*fp32, out_ptr=*fp32, n_elements=i32, BLOCK_SIZE=1024, num_warps=4
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
