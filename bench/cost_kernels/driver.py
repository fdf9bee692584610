"""Launch every case of kernels.py at its realistic shape (and the tiny ones), timing each with CUDA events (the
median of REPS launches after warm-up). Run under `tritonlens capture --time` so that the launches are captured with
their real run's time; the timings here are written to the JSON file named by the first argument."""
import json
import sys

import torch
import triton

import kernels as k

REPS = 20


def timed(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def main(out_path):
    dev = "cuda"
    res = {}
    # one-program reduction over 64 M floats, and its twin
    n = 64 << 20
    x = torch.randn(n, device=dev)
    out = torch.empty(1, device=dev)
    res["one_program_sum"] = timed(lambda: k.sum_one_program[(1,)](x, out, n, BLOCK=4096))
    parts = torch.empty(triton.cdiv(n, 4096), device=dev)
    res["one_program_sum.twin"] = timed(lambda: k.sum_partials[(triton.cdiv(n, 4096),)](x, parts, n, BLOCK=4096))
    res["one_program_sum.torch"] = timed(lambda: torch.sum(x))
    del x
    # column-wise read of a row-major 8192 x 8192 matrix
    m = torch.randn(8192, 8192, device=dev)
    col = torch.empty(8192, device=dev)
    res["column_sum"] = timed(lambda: k.column_sum_strided[(8192,)](m, col, 8192, 8192, m.stride(0), BLOCK=1024))
    res["column_sum.twin"] = timed(lambda: k.column_sum_coalesced[(8192 // 128,)](m, col, 8192, 8192, m.stride(0),
                                                                                  BLOCK=128))
    res["column_sum.torch"] = timed(lambda: torch.sum(m, dim=0))
    del m
    # a row softmax at 32768 columns: 4 warps spill, 16 do not
    s = torch.randn(4096, 32768, device=dev)
    sy = torch.empty_like(s)
    res["softmax_spill"] = timed(lambda: k.softmax_rows[(4096,)](s, sy, s.stride(0), 32768, BLOCK=32768, num_warps=4))
    res["softmax_spill.twin"] = timed(lambda: k.softmax_rows[(4096,)](s, sy, s.stride(0), 32768, BLOCK=32768,
                                                                      num_warps=16))
    del s, sy
    # rows of 4100 floats in blocks of 8192, and the same work as one flat range
    r = torch.randn(8192, 4100, device=dev)
    ry = torch.empty_like(r)
    res["idle_rows"] = timed(lambda: k.scale_rows[(8192,)](r, ry, r.stride(0), 4100, BLOCK=8192))
    nr = r.numel()
    res["idle_rows.twin"] = timed(lambda: k.scale_flat[(triton.cdiv(nr, 1024),)](r, ry, nr, BLOCK=1024))
    del r, ry
    # narrow but coalesced: a flat length that is not a multiple of 16, and one that is
    f = torch.randn((64 << 20) + 4, device=dev)
    fy = torch.empty_like(f)
    nf = f.numel()
    res["narrow_flat"] = timed(lambda: k.scale_flat[(triton.cdiv(nf, 1024),)](f, fy, nf, BLOCK=1024))
    res["narrow_flat.twin"] = timed(lambda: k.scale_flat[(triton.cdiv(nf - 4, 1024),)](f, fy, nf - 4, BLOCK=1024))
    del f, fy
    # tiny launches: launch-bound whatever the code
    for n_small in (1000, 8200):
        t = torch.randn(n_small, device=dev)
        ty = torch.empty_like(t)
        res[f"tiny_{n_small}"] = timed(lambda: k.scale_rows[(1,)](t, ty, n_small, n_small, BLOCK=8192))
    t2 = torch.randn(2, 4100, device=dev)
    res["tiny_rows"] = timed(lambda: k.scale_rows[(2,)](t2, torch.empty_like(t2), t2.stride(0), 4100, BLOCK=8192))
    # an fp32 matmul on FMA against tf32 tensor cores
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev)
    c = torch.empty(4096, 4096, device=dev)
    grid = (4096 // 64, 4096 // 64)
    res["fma_dot"] = timed(lambda: k.matmul[grid](a, b, c, 4096, 4096, 4096, a.stride(0), b.stride(0), c.stride(0),
                                                 BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, PRECISION="ieee"))
    res["fma_dot.twin"] = timed(lambda: k.matmul[grid](a, b, c, 4096, 4096, 4096, a.stride(0), b.stride(0),
                                                      c.stride(0), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                                                      PRECISION="tf32"))
    res["gpu"] = torch.cuda.get_device_name()
    with open(out_path, "w") as fh:
        json.dump(res, fh, indent=1)
    for key, v in res.items():
        print(f"{key:24} {v if isinstance(v, str) else f'{v:10.1f} us'}")


if __name__ == "__main__":
    main(sys.argv[1])
