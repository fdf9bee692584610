"""A CPU driver for Liger-Kernel's RMSNorm and SwiGLU: the shapes its own tests launch on a GPU, as CPU bf16 tensors,
forward and backward. Under `tritonlens capture --no-gpu` every launch is recorded for cuda:90 and none is run, so
the outputs are garbage; only the launches matter. Liger-Kernel must be importable (PYTHONPATH=<liger>/src)."""
import torch

from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.swiglu import LigerSiLUMulFunction

DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # device-agnostic: the same script runs on a GPU machine

for rows, cols in [(615, 123), (256, 512), (63, 41), (4, 8)]:
    for casting_mode in ("none", "llama", "gemma"):
        for affine in (True, False):
            x = torch.randn(rows, cols, dtype=DTYPE, device=DEVICE, requires_grad=True)
            w = torch.randn(cols, dtype=DTYPE, device=DEVICE, requires_grad=True) if affine else None
            y = LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, casting_mode, True)
            y.backward(torch.randn_like(y))

for rows, cols in [(252, 431), (512, 512)]:
    a = torch.randn(rows, cols, dtype=DTYPE, device=DEVICE, requires_grad=True)
    b = torch.randn(rows, cols, dtype=DTYPE, device=DEVICE, requires_grad=True)
    c = LigerSiLUMulFunction.apply(a, b)
    c.backward(torch.randn_like(c))
