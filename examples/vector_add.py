"""Element-wise addition: the smallest kernel worth looking at."""
import torch  # noqa: F401  (only the launcher below needs it; tritonlens never runs it)
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, y_ptr=*fp32, out_ptr=*fp32, n_elements=i32%16, BLOCK_SIZE=1024, num_warps=4
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)
    return out


if __name__ == "__main__":
    x = torch.rand(98432, device="cuda")
    y = torch.rand(98432, device="cuda")
    print((add(x, y) - (x + y)).abs().max())
