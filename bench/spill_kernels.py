"""Two kernels for `tritonlens profile`: one that spills registers, one that does not.

`tile_spill` gives one warp a 64x128 fp32 tile (256 values per thread, plus a sorted copy) — more live values than
255 registers hold, so ptxas spills to local memory. `tile_ok` does the same work with 4 warps and a 64x32 tile.
Run as a script (on a GPU) to launch both.
"""
import triton
import triton.language as tl


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_rows=i32%16, ROWS=64, COLS=128, num_warps=1
@triton.jit
def tile_spill(x_ptr, out_ptr, n_rows, ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    r = pid * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, COLS)
    offs = r[:, None] * COLS + c[None, :]
    mask = r[:, None] < n_rows
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    s = tl.sort(x, dim=1)
    y = tl.cumsum(s * x, axis=1) / (tl.sum(x * x, axis=1)[:, None] + 1.0)
    tl.store(out_ptr + offs, y + s, mask=mask)


# tritonlens: x_ptr=*fp32, out_ptr=*fp32, n_rows=i32%16, ROWS=64, COLS=32, num_warps=4
@triton.jit
def tile_ok(x_ptr, out_ptr, n_rows, ROWS: tl.constexpr, COLS: tl.constexpr):
    pid = tl.program_id(0)
    r = pid * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, COLS)
    offs = r[:, None] * COLS + c[None, :]
    mask = r[:, None] < n_rows
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    s = tl.sort(x, dim=1)
    y = tl.cumsum(s * x, axis=1) / (tl.sum(x * x, axis=1)[:, None] + 1.0)
    tl.store(out_ptr + offs, y + s, mask=mask)


def main(repeat: int = 3) -> None:
    import torch

    rows = 64 * 1024
    for kernel, cols in ((tile_spill, 128), (tile_ok, 32)):
        x = torch.randn(rows, cols, device="cuda")
        out = torch.empty_like(x)
        for _ in range(repeat):
            kernel[(rows // 64,)](x, out, rows, ROWS=64, COLS=cols, num_warps=1 if cols == 128 else 4)
    torch.cuda.synchronize()
    print("spill_kernels: launched tile_spill and tile_ok")


if __name__ == "__main__":
    main()
