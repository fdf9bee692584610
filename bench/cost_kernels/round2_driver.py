"""Launches for the cost model's second round, under `tritonlens capture --time` on a GPU (bench/gpu_cost_round2.sh):

- persistent: Triton's persistent-matmul tutorial in its flattened form (persistent_matmul.py), one program per SM,
  at 8192³ fp8 and fp16, 2048×28672×8192 fp8 and a decode shape (16×8192×8192 fp8: 32 tiles, fewer than the SMs);
- few: the suite's GEMM (suite.gemm) on grids of 2-16 programs, K 8192-32768, 2-4 pipeline stages: one program's
  serial chain (dependent loads, dots waiting on them, the pipeline's depth) sets the time when the GPU is mostly
  idle — the sweep to fit a per-trip latency on, and `--parts few_holdout` other tiles and warps to check it on;
- moe: the suite's grouped GEMM with 8 and 64 experts over the same tokens.

Timings (suite_driver.timed: median and minimum of 12 after a warm-up) go to the JSON file named by the first argument. Without a
GPU (`capture --no-gpu`) every launch is recorded once and nothing is timed: a dry run of the shapes.

    python3 round2_driver.py OUT.json [--parts persistent,few,few_holdout]
"""
import json
import sys

import torch

import persistent_matmul as pm
import suite as s

from suite_driver import RESULTS, RUNS, timed  # the suite's timing: median and minimum of 12

DEV = "cuda" if RUNS else "cpu"
SMS = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 132


def _matrix(rows, cols, dtype, k_major=False):
    """A rows×cols matrix of `dtype` (fp8 made from fp16 values); `k_major`: stored transposed, as fp8 GEMMs take B."""
    shape = (cols, rows) if k_major else (rows, cols)
    x = torch.empty(shape, device=DEV, dtype=torch.float16)
    if RUNS:
        x.normal_()
    x = x.to(dtype)
    return x.T if k_major else x


def persistent():
    f8, f16 = torch.float8_e4m3fn, torch.float16
    for m, n, k, dtype in ((8192, 8192, 8192, f8), (8192, 8192, 8192, f16), (2048, 28672, 8192, f8),
                           (16, 8192, 8192, f8)):
        a, b = _matrix(m, k, dtype), _matrix(k, n, dtype, k_major=True)
        c = torch.empty(m, n, device=DEV, dtype=dtype)
        name = "fp8" if dtype == f8 else "fp16"
        timed(f"persistent_{name}_{m}x{n}x{k}", "gemm-persistent", lambda: pm.matmul_persistent(a, b, c, SMS))
        del a, b, c


def _few(tiles, ks, stages, bm, bn, bk, warps, cls):
    bf = torch.bfloat16
    for programs in tiles:
        m, n = bm * min(programs, 2), bn * (programs // min(programs, 2))
        for k in ks:
            a, b = _matrix(m, k, bf), _matrix(k, n, bf)
            c = torch.empty(m, n, device=DEV, dtype=bf)
            for st in stages:
                timed(f"few_{programs}p_k{k}_s{st}_{bm}x{bn}x{bk}_w{warps}", cls, lambda: s.gemm[(programs,)](
                    a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                    BM=bm, BN=bn, BK=bk, GROUP_M=1, num_warps=warps, num_stages=st))
            del a, b, c


def few():
    _few((2, 4, 8, 16), (8192, 32768), (2, 3, 4), 128, 128, 64, 4, "few-programs")


def few_holdout():
    _few((4, 8), (16384,), (3,), 64, 128, 64, 4, "few-programs-holdout")
    _few((2, 8), (16384,), (4,), 128, 256, 64, 8, "few-programs-holdout")


def moe():
    """The suite's grouped GEMM (its tile counts loaded from the expert offsets) with 8 and 64 experts over the same
    tokens: 64 experts give each program tiles of many experts, few of each."""
    bf = torch.bfloat16
    n, k = 2048, 4096
    for experts, per_expert in ((8, 2048), (64, 256), (64, 32)):
        offs = torch.arange(0, (experts + 1) * per_expert, per_expert, device=DEV, dtype=torch.int32)
        a = _matrix(experts * per_expert, k, bf)
        w = torch.empty(experts, k, n, device=DEV, dtype=bf)
        c = torch.empty(experts * per_expert, n, device=DEV, dtype=bf)
        timed(f"moe_{experts}x{per_expert}", "moe", lambda: s.moe_grouped_gemm[(SMS,)](
            a, w, c, offs, n, k, a.stride(0), w.stride(0), w.stride(1), c.stride(0), E=experts, BM=128, BN=256,
            BK=64, NUM_SMS=SMS, num_warps=8, num_stages=3))
        del a, w, c


PARTS = ("persistent", "few", "few_holdout", "moe")


def main(out_path, only=None):
    for name in PARTS:
        if not only or name in only:
            globals()[name]()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    argv = sys.argv[1:]
    parts = argv[argv.index("--parts") + 1].split(",") if "--parts" in argv else None
    main(argv[0], parts)
