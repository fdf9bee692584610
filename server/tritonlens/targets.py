"""Which target to compile for. `auto`: the local GPU when one is visible, else cuda:90.

The GPU is found without importing torch: `nvidia-smi` (compute capability) or ROCm's `rocminfo` (gfx arch).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

DEFAULT_TARGET = "cuda:90"


@functools.lru_cache(maxsize=1)
def local_gpu_target() -> str | None:
    if os.environ.get("TRITONLENS_NO_GPU"):
        return None
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=10).stdout
            caps = [ln.strip() for ln in out.splitlines() if re.fullmatch(r"\d+\.\d+", ln.strip())]
            if caps:
                major, minor = caps[0].split(".")
                return f"cuda:{int(major) * 10 + int(minor)}"
        except (OSError, subprocess.SubprocessError):
            pass
    rocminfo = shutil.which("rocminfo")
    if rocminfo:
        try:
            out = subprocess.run([rocminfo], capture_output=True, text=True, timeout=20).stdout
            if m := re.search(r"Name:\s+(gfx[0-9a-f]+)", out):
                return f"hip:{m.group(1)}"
        except (OSError, subprocess.SubprocessError):
            pass
    return None


def resolve_target(setting: str) -> str:
    if setting == "auto":
        return local_gpu_target() or DEFAULT_TARGET
    return setting


def has_local_gpu() -> bool:
    return local_gpu_target() is not None
