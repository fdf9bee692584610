"""A driver for the kernels of this folder: one forward step of a GPT-2-small-sized layer (4 sequences of 1024
tokens, hidden size 768, 12 heads of 64, MLP 3072), plus a ragged last batch (1 sequence of 1000 tokens) whose
sizes are not multiples of 16 — so the captures hold both specializations a real run makes.

    tritonlens capture --no-gpu -- python examples/driver.py      # CPU tensors: launches recorded, not run
    DEVICE=cuda tritonlens capture -- python examples/driver.py   # on a GPU: launched, and checked against torch

Device-agnostic through DEVICE (environment variable; default "cuda" when torch sees a GPU, else "cpu"). Under
`--no-gpu` torch sees tritonlens's virtual GPU and the tensors are made on the CPU, but the kernels are not executed,
so the outputs are zeros: the results are only compared with torch when the kernels really ran
(TRITONLENS_CAPTURE_NO_GPU, which `--no-gpu` sets, is unset).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flash_attention  # noqa: E402
import layernorm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402

DEVICE = os.environ.get("DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
VERIFY = DEVICE != "cpu" and not os.environ.get("TRITONLENS_CAPTURE_NO_GPU")  # --no-gpu: recorded, not run

HIDDEN, HEADS, HEAD_DIM, MLP = 768, 12, 64, 3072


# Host wrappers for the examples that launch their kernel directly (vector_add.add and softmax.softmax exist).
def layer_norm(x, w, b, eps=1e-5):
    m, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(m, device=x.device, dtype=torch.float32)
    rstd = torch.empty(m, device=x.device, dtype=torch.float32)
    layernorm.layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK_SIZE=1024, num_warps=8)
    return y


def linear(a, b, activation=""):
    m, k = a.shape
    _, n = b.shape
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    matmul.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), ACTIVATION=activation)
    return c


def attention(q, k, v):
    zh, seqlen, d = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(seqlen, 128), zh)
    flash_attention.attn_fwd[grid](q, k, v, o, d ** -0.5, q.stride(1), k.stride(1), v.stride(1), o.stride(1), seqlen,
                                   HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2)
    return o


def check(name, got, want, tol):
    if VERIFY:
        err = (got.float() - want.float()).abs().max().item()
        assert err < tol, f"{name}: max abs error {err} over {tol}"


def layer(batch, seqlen):
    tokens = batch * seqlen
    f16 = dict(device=DEVICE, dtype=torch.float16)
    x = torch.randn(tokens, HIDDEN, **f16)
    w, b = torch.rand(HIDDEN, **f16) + 0.5, torch.randn(HIDDEN, **f16) * 0.1
    h = layer_norm(x, w, b)
    check("layer_norm", h, torch.nn.functional.layer_norm(x.float(), (HIDDEN,), w.float(), b.float(), 1e-5), 2e-2)

    w_qkv = torch.randn(HIDDEN, 3 * HIDDEN, **f16) * HIDDEN ** -0.5
    qkv = linear(h, w_qkv)
    check("qkv projection", qkv, h.float() @ w_qkv.float(), 0.5)
    q, k, v = (t.reshape(batch, seqlen, HEADS, HEAD_DIM).transpose(1, 2).reshape(batch * HEADS, seqlen, HEAD_DIM)
               .contiguous() for t in qkv.split(HIDDEN, dim=1))
    o = attention(q, k, v)
    if VERIFY:
        want = torch.softmax((q.float() @ k.float().transpose(1, 2)) * HEAD_DIM ** -0.5, dim=-1) @ v.float()
        check("attention", o, want, 2e-2)

    # the attention probabilities of one sequence, as an unfused implementation would materialise them
    scores = (q[:HEADS].float() @ k[:HEADS].float().transpose(1, 2)).reshape(HEADS * seqlen, seqlen)
    check("softmax", softmax.softmax(scores), torch.softmax(scores, dim=1), 1e-5)

    w_up = torch.randn(HIDDEN, MLP, **f16) * HIDDEN ** -0.5
    up = linear(h, w_up, activation="leaky_relu")
    check("mlp up", up, torch.nn.functional.leaky_relu(h.float() @ w_up.float(), 0.01), 0.5)

    residual, branch = x.float().reshape(-1), up[:, :HIDDEN].float().reshape(-1)
    out = vector_add.add(residual, branch)  # the residual add, in fp32
    check("residual", out, residual + branch, 1e-6)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    layer(batch=4, seqlen=1024)  # full batches
    layer(batch=1, seqlen=1000)  # the ragged last batch: 1000 tokens, not a multiple of 16
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    print(f"driver: one layer at 4x1024 and 1x1000 tokens on {DEVICE}"
          + (", results match torch" if VERIFY else " (launches recorded, kernels not run)"))
