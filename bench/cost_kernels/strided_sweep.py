"""Lanes a row apart, walking their rows COLS columns a trip (suite.row_walk_tiles), swept over COLS, the shape and the
programs' size, beside the coalesced column walk: what a warp request that touches many lines a few sectors each
costs in DRAM time. Timed with CUDA events (min and median of 20 after a first launch); with `once`, each launch runs
once, for ncu (bench/gpu_strided_ncu.sh). With `holdout`, other shapes, element types and tiles, timed after the
cost model's EFF_SECTOR was fitted on the sweep.
Usage: python3 bench/cost_kernels/strided_sweep.py [OUT.json | once] [holdout]"""
import json
import sys

import torch
import triton

import suite as s

ONCE = len(sys.argv) > 1 and sys.argv[1] == "once"
HOLDOUT = "holdout" in sys.argv[2:]
RESULTS = []


def run(name, go, nbytes):
    go()
    torch.cuda.synchronize()
    if ONCE:
        return
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ts = []
    for _ in range(20):
        ev[0].record(); go(); ev[1].record(); torch.cuda.synchronize(); ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
    ts.sort()
    RESULTS.append({"name": name, "min_us": ts[0], "median_us": ts[10], "bytes": nbytes,
                    "tb_s": nbytes / ts[10] / 1e6})
    print(f"{name:44s} min {ts[0]:8.1f}  median {ts[10]:8.1f} us  {nbytes / ts[10] / 1e6:5.2f} TB/s", flush=True)


def holdout():
    for r, c, dtype, cols, block, warps in ((65536, 2048, torch.bfloat16, 16, 128, 4),
                                            (65536, 2048, torch.bfloat16, 8, 64, 4),
                                            (32768, 4096, torch.float32, 8, 128, 8),
                                            (32768, 4096, torch.float32, 16, 64, 2),
                                            (131072, 512, torch.float16, 32, 128, 4),
                                            (131072, 512, torch.float16, 64, 128, 4),
                                            (16384, 8192, torch.float32, 4, 64, 4)):
        x = torch.randn(r, c, device="cuda", dtype=dtype)
        out = torch.empty(r, device="cuda", dtype=torch.float32)
        run(f"holdout_row_walk_tiles_{r}x{c}_{str(dtype)[6:]}_cols{cols}_b{block}w{warps}",
            lambda: s.row_walk_tiles[(triton.cdiv(r, block),)](x, out, r, c, BLOCK=block, COLS=cols, num_warps=warps),
            x.numel() * x.element_size())
        del x, out


def main():
    if HOLDOUT:
        holdout()
        return finish()
    for r, c in ((65536, 1024), (262144, 256)):
        x = torch.randn(r, c, device="cuda")
        out = torch.empty(r, device="cuda")
        for cols in (4, 8, 16, 32, 64):
            run(f"row_walk_tiles_{r}x{c}_cols{cols}", lambda: s.row_walk_tiles[(triton.cdiv(r, 128),)](
                x, out, r, c, BLOCK=128, COLS=cols, num_warps=4), x.numel() * 4)
        for block, warps in ((32, 1), (64, 2), (256, 8)):
            run(f"row_walk_tiles_{r}x{c}_cols8_b{block}w{warps}", lambda: s.row_walk_tiles[(triton.cdiv(r, block),)](
                x, out, r, c, BLOCK=block, COLS=8, num_warps=warps), x.numel() * 4)
        run(f"row_walk_lanes_{r}x{c}", lambda: s.row_walk_lanes[(triton.cdiv(r, 128),)](
            x, out, r, c, BLOCK=128, num_warps=4), x.numel() * 4)
        del x, out
    r, c = 1024, 65536
    x = torch.randn(r, c, device="cuda")
    out = torch.empty(c, device="cuda")
    for block, warps in ((128, 4), (512, 4), (1024, 4)):
        run(f"column_walk_lanes_{r}x{c}_b{block}w{warps}", lambda: s.column_walk_lanes[(triton.cdiv(c, block),)](
            x, out, r, c, BLOCK=block, num_warps=warps), x.numel() * 4)
    finish()


def finish():
    if not ONCE:
        with open(sys.argv[1] if len(sys.argv) > 1 else "strided-sweep.json", "w", encoding="utf-8") as f:
            json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    main()
