"""A module that puts a workspace on the device when it is imported."""
import torch
import triton.language as tl

WORKSPACE_BYTES = tl.constexpr(1 << 20)
WORKSPACE = torch.empty(WORKSPACE_BYTES.value, dtype=torch.uint8, device="cuda")
