"""Kernels chosen to exercise one cause of lost time each, with the same work done well beside them.

`bench/cost_calibration.py` times each pair on a GPU (the real run, under `tritonlens capture --time`) and checks the
captured launches without a GPU: the cost model's estimate against the measured time, and the estimated gain of each
finding against what the well-written twin measured.

| case | costly cause | twin |
|---|---|---|
| one_program_sum | a grid of one program reduces 64 M floats | many programs, one partial sum each |
| column_sum | lanes a row apart read a row-major matrix column by column | lanes along a row, a loop down the rows |
| softmax_spill | a 32768-wide row softmax in 4 warps spills | 16 warps |
| idle_rows | rows of 4100 floats in blocks of 8192 (half the lanes idle, 32-bit accesses) | one flat range |
| tiny | the same kernels on a few thousand elements (launch-bound) | — |
| narrow_flat | a flat elementwise kernel whose length is not a multiple of 16 (32-bit, coalesced) | a length of 16k |
| fma_dot | an fp32 matmul forced onto FMA (input_precision="ieee") | tf32 tensor cores |
"""
import triton
import triton.language as tl


@triton.jit
def sum_one_program(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def sum_partials(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def column_sum_strided(x_ptr, out_ptr, n_rows, n_cols, stride_row, BLOCK: tl.constexpr):
    col = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + rows * stride_row + col, mask=rows < n_rows, other=0.0)
    tl.store(out_ptr + col, tl.sum(acc, axis=0))


@triton.jit
def column_sum_coalesced(x_ptr, out_ptr, n_rows, n_cols, stride_row, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(0, n_rows):
        acc += tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < n_cols)


@triton.jit
def softmax_rows(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


@triton.jit
def scale_rows(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols)
    tl.store(y_ptr + row * stride + offs, x * 2.0, mask=offs < n_cols)


@triton.jit
def scale_flat(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2.0, mask=offs < n)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)
