"""Drives Triton's fused-attention tutorial (python/tutorials/06-fused-attention.py of the Triton repository, passed by
path) at its benchmark's shapes (batch 4, 32 heads, head dim 64, N_CTX 1024..16384):
forward causal and not, backward causal, fp16 — the launches the tutorial's benchmark makes. (Its fp8 forward does not
compile with Triton 3.6 on sm_90: "PassManager::run failed" in make_ttgir, on the GPU as on the CPU; left out.)"""
import importlib.util
import os
import sys

import torch
import triton

# Loaded under its own file name, so that captures name the tutorial's file and its lines.
tutorial = os.path.abspath(sys.argv[1])
spec = importlib.util.spec_from_file_location("fused_attention", tutorial)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

BATCH, H, D = 4, 32, 64
NO_GPU = bool(os.environ.get("TRITONLENS_CAPTURE_NO_GPU"))


def bench(fn):
    if NO_GPU:  # recorded, not run: launch a few times so that the capture counts launches
        for _ in range(3):
            fn()
        return float("nan")
    return triton.testing.do_bench(fn, warmup=5, rep=20)


top = int(sys.argv[2]) if len(sys.argv) > 2 else 14  # N_CTX up to 2**top
for n_ctx in [2 ** i for i in range(10, top + 1)]:
    for causal in (True, False):
        q, k, v = (torch.randn((BATCH, H, n_ctx, D), dtype=torch.float16, device="cuda", requires_grad=True)
                   for _ in range(3))
        fn = lambda: mod.attention(q, k, v, causal, 1.3)  # noqa: E731
        print(f"fwd N_CTX={n_ctx} causal={causal}: {bench(fn) * 1e3:.1f} us", flush=True)
        if causal:
            o = fn()
            do = torch.randn_like(o)
            print(f"bwd N_CTX={n_ctx}: {bench(lambda: o.backward(do, retain_graph=True)) * 1e3:.1f} us", flush=True)
