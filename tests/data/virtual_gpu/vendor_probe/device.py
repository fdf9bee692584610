"""A library with its own runtime: the device comes from an environment variable, an accelerator module of torch,
the vendor's query tool, or torch — else it refuses to load."""
import os
import subprocess

import torch


def _from_tool():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [line.split(", ") for line in out.strip().splitlines()]
    return rows[0] if rows and rows[0][0] else None


def detect():
    named = os.environ.get("VENDORLIB_DEVICE")
    if named:
        return named, None
    if hasattr(torch, "npu"):
        return "npu", None
    row = _from_tool()
    if row is not None:
        return "cuda", row
    if torch.cuda.device_count() > 0:
        return "cuda", None
    raise RuntimeError("no device detected: set VENDORLIB_DEVICE or install the vendor's driver")


DEVICE, TOOL_ROW = detect()
if TOOL_ROW is not None and TOOL_ROW[0] != torch.cuda.get_device_name(0):
    raise RuntimeError(f"nvidia-smi says {TOOL_ROW[0]}, torch says {torch.cuda.get_device_name(0)}")
WIDE = TOOL_ROW is not None and float(TOOL_ROW[1]) >= 9.0
