"""Launch the rule-tripping kernels of examples/bad on a GPU with random inputs, so `tritonlens capture` records real
launches of them and `tritonlens profile` can replay them (PROF001 evidence for SASS001, TTGIR002, TTGIR001)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "bad"))

import matmul_spill  # noqa: E402

torch.manual_seed(0)
M = N = K = 1024
a = torch.randn(M, K, device="cuda")
b = torch.randn(K, N, device="cuda")
c = torch.empty(M, N, device="cuda")
grid = (M // 128, N // 128)
for num_warps in (4, 8):  # 4 spills, 8 does not
    matmul_spill.matmul_spill[grid](a, b, c, K, a.stride(0), b.stride(0), c.stride(0),
                                    BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=num_warps)
    err = ((c - a @ b).abs().max() / (a @ b).abs().max()).item()
    print(f"matmul_spill num_warps={num_warps}: relative error {err:.2e}")
    assert err < 1e-4
torch.cuda.synchronize()
