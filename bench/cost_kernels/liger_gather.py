"""Liger-Kernel's MoE token gather-sum at the hold-out shapes, launched directly with its autotuner's chosen config and
timed (CUDA events, median of 10); with a second argument each shape launches once, for ncu (bench/gpu_gather_ncu.sh).
Usage: python3 bench/cost_kernels/liger_gather.py LIGER_SRC [once]"""
import sys

import torch

sys.path.insert(0, sys.argv[1])  # Liger-Kernel's src folder
from liger_kernel.ops.fused_moe_kernels import _token_gather_weighted_sum_kernel as tuned  # noqa: E402

fn = tuned.fn
for T, K, H in ((8192, 6, 2048), (256, 2, 4096), (4096, 2, 4096)):
    Y = torch.randn(T * K, H, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(T * K, device="cuda", dtype=torch.bfloat16)
    s_rev = torch.randperm(T * K, device="cuda", dtype=torch.int32)
    out = torch.empty(T, H, device="cuda", dtype=torch.bfloat16)

    def go():
        fn[(T,)](Y, w, s_rev, out, H, K, Y.stride(0), 1, out.stride(0), 1, BLOCK_H=128, BLOCK_K=4, w_is_None=False,
                 num_warps=4, num_stages=4)

    go()
    torch.cuda.synchronize()
    if len(sys.argv) > 2:  # under ncu: the one launch
        continue
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ts = []
    for _ in range(10):
        ev[0].record(); go(); ev[1].record(); torch.cuda.synchronize(); ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
    print(f"T={T} K={K} H={H}: median {sorted(ts)[5]:.1f} us", flush=True)
