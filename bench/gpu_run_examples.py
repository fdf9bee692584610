"""Launch every kernel in examples/ on a GPU with real torch tensors and random inputs, at sizes whose dims are
multiples of 16 and at sizes that are not (so captures hold both specializations). Run it under
`tritonlens capture -- python bench/gpu_run_examples.py`; it checks each result against torch."""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import flash_attention  # noqa: E402
import layernorm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402

torch.manual_seed(0)
dev = "cuda"


def check(name, got, want, tol):
    err = (got.float() - want.float()).abs().max().item()
    print(f"{name}: max abs error {err:.3g}")
    assert err < tol, f"{name}: error {err} over {tol}"


def run_vector_add(n):
    x, y = torch.rand(n, device=dev), torch.rand(n, device=dev)
    check(f"vector_add n={n}", vector_add.add(x, y), x + y, 1e-6)


def run_softmax(rows, cols):
    x = torch.randn(rows, cols, device=dev)
    check(f"softmax {rows}x{cols}", softmax.softmax(x), torch.softmax(x, dim=1), 1e-5)


def run_layernorm(m, n):
    x = torch.randn(m, n, device=dev, dtype=torch.float16)
    w = torch.rand(n, device=dev, dtype=torch.float16) + 0.5
    b = torch.randn(n, device=dev, dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty(m, device=dev, dtype=torch.float32)
    rstd = torch.empty(m, device=dev, dtype=torch.float32)
    layernorm.layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5, BLOCK_SIZE=1024, num_warps=8)
    want = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    check(f"layernorm {m}x{n}", y, want, 2e-2)


def run_matmul(m, n, k):
    a = torch.randn(m, k, device=dev, dtype=torch.float16)
    b = torch.randn(k, n, device=dev, dtype=torch.float16)
    c = torch.empty(m, n, device=dev, dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    matmul.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), ACTIVATION="")
    check(f"matmul {m}x{n}x{k}", c, a.float() @ b.float(), 0.5)


def run_attention(zh, seqlen, d=64):
    q, k, v = (torch.randn(zh, seqlen, d, device=dev, dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    scale = d ** -0.5
    grid = (triton.cdiv(seqlen, 128), zh)
    flash_attention.attn_fwd[grid](q, k, v, o, scale, q.stride(1), k.stride(1), v.stride(1), o.stride(1), seqlen,
                                   HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2)
    want = torch.softmax((q.float() @ k.float().transpose(1, 2)) * scale, dim=-1) @ v.float()
    check(f"attention zh={zh} seqlen={seqlen}", o, want, 2e-2)


if __name__ == "__main__":
    for n in (98432, 1003):  # multiple of 16, and not
        run_vector_add(n)
    for shape in ((256, 1024), (100, 781)):
        run_softmax(*shape)
    for shape in ((512, 1024), (100, 1000)):
        run_layernorm(*shape)
    for shape in ((512, 512, 512), (500, 300, 200)):
        run_matmul(*shape)
    for shape in ((4, 512), (4, 500)):
        run_attention(*shape)
    torch.cuda.synchronize()
    print("gpu_run_examples: all kernels ran and matched torch")
