"""FlagGems' own autotuned kernels at a model's shapes, for `tritonlens capture --time` on a GPU: mm, addmm and bmm at
a decode shape (M = 16, N = K = 8192; bmm 4 × 16 × 8192 × 8192) and a prefill shape (8192³; bmm 4 × 4096³), fp16 and
(addmm) bf16, and softmax over a 32k vocabulary, called as a model calls them (torch ops under `flag_gems.use_gems()`,
which picks the GPU's own variants: on sm_90 mm is FlagGems' TMA kernel); each checked against torch.

    tritonlens capture --time -- python bench/autotune/flag_gems_run.py [NAME...]
"""
import sys
import time

import torch

import flag_gems

DECODE, PREFILL = (16, 8192, 8192), (8192, 8192, 8192)


def _mm(dtype, shape):
    M, N, K = shape
    a, b = torch.randn((M, K), device="cuda", dtype=dtype), torch.randn((K, N), device="cuda", dtype=dtype)
    return (lambda: torch.mm(a, b)), (lambda: a @ b)


def _addmm(dtype, shape):
    M, N, K = shape
    a, b = torch.randn((M, K), device="cuda", dtype=dtype), torch.randn((K, N), device="cuda", dtype=dtype)
    bias = torch.randn((N,), device="cuda", dtype=dtype)
    return (lambda: torch.addmm(bias, a, b)), (lambda: torch.addmm(bias, a, b))


def _bmm(dtype, shape):
    B, M, N, K = shape
    a, b = torch.randn((B, M, K), device="cuda", dtype=dtype), torch.randn((B, K, N), device="cuda", dtype=dtype)
    return (lambda: torch.bmm(a, b)), (lambda: torch.bmm(a, b))


def _softmax(dtype, shape):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    return (lambda: torch.softmax(x, -1)), (lambda: torch.softmax(x, -1))


CASES = {
    "mm-decode-fp16": (_mm, torch.float16, DECODE), "mm-prefill-fp16": (_mm, torch.float16, PREFILL),
    "addmm-decode-fp16": (_addmm, torch.float16, DECODE), "addmm-prefill-fp16": (_addmm, torch.float16, PREFILL),
    "addmm-decode-bf16": (_addmm, torch.bfloat16, DECODE), "addmm-prefill-bf16": (_addmm, torch.bfloat16, PREFILL),
    "bmm-decode-fp16": (_bmm, torch.float16, (4, 16, 8192, 8192)),
    "bmm-prefill-fp16": (_bmm, torch.float16, (4, 4096, 4096, 4096)),
    "softmax-fp16": (_softmax, torch.float16, (4096, 32768)),
}


def main(names):
    torch.manual_seed(0)
    for name in names:
        make, dtype, shape = CASES[name]
        started = time.perf_counter()
        try:
            ours, ref = make(dtype, shape)
            with flag_gems.use_gems():
                for _ in range(3):  # the first call autotunes; the others launch the chosen config
                    out = ours()
                torch.cuda.synchronize()
            want = ref()  # torch's own kernel, outside use_gems
            err = ((out.float() - want.float()).norm() / want.float().norm()).item()
            print(f"{name}: {shape} {dtype}: {time.perf_counter() - started:.1f} s, rel. error vs torch {err:.2e}",
                  flush=True)
        except Exception as exc:  # noqa: BLE001 — one op failing leaves the others' captures
            print(f"{name}: failed: {type(exc).__name__}: {exc}", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
