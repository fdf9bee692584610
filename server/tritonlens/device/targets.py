"""Which target to compile for. `auto`: the local GPU when one is visible, else cuda:90.

The GPU is found without importing torch: `nvidia-smi` (compute capability) or ROCm's `rocminfo` (gfx arch).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

from ..source import split_lines

DEFAULT_TARGET = "cuda:90"


@functools.lru_cache(maxsize=1)
def local_gpu_target() -> str | None:
    if os.environ.get("TRITONLENS_NO_GPU"):
        return None
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=index,uuid,compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout
            if cap := _visible_cuda_cap(out, os.environ.get("CUDA_VISIBLE_DEVICES")):
                major, minor = cap.split(".")
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


def _visible_cuda_cap(smi_csv: str, visible: str | None) -> str | None:
    """The compute capability of the GPU a CUDA program would use first: the first of CUDA_VISIBLE_DEVICES (an
    index or a UUID prefix), else GPU 0. `smi_csv` is `nvidia-smi --query-gpu=index,uuid,compute_cap` output."""
    rows = []
    for ln in split_lines(smi_csv):
        parts = [p.strip() for p in ln.split(",")]
        if len(parts) == 3 and re.fullmatch(r"\d+\.\d+", parts[2]):
            rows.append(parts)
    if not rows:
        return None
    if visible is not None:
        first = visible.split(",")[0].strip()
        if first == "" or first.startswith("-"):
            return None  # CUDA_VISIBLE_DEVICES="" hides every GPU
        for index, uuid, cap in rows:
            if first == index or (first.startswith(("GPU-", "MIG-")) and uuid.startswith(first[:12])):
                return cap
        if first.isdigit():
            return None
    return rows[0][2]


@functools.lru_cache(maxsize=1)
def local_gpu_name() -> str | None:
    """The name the driver gives the GPU `local_gpu_target` names (`NVIDIA H200`, rocminfo's marketing name)."""
    target = local_gpu_target()
    if target is None:
        return None
    try:
        if target.startswith("hip"):
            out = subprocess.run([shutil.which("rocminfo") or "rocminfo"], capture_output=True, text=True,
                                 timeout=20).stdout
            m = re.search(r"Name:\s+gfx[0-9a-f]+\s*\n\s*Marketing Name:\s+(.+?)\s*$", out, re.M)
            return m.group(1) if m else None
        out = subprocess.run([shutil.which("nvidia-smi") or "nvidia-smi", "--query-gpu=index,uuid,name",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [[p.strip() for p in ln.split(",", 2)] for ln in split_lines(out) if ln.count(",") >= 2]
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")[0].strip()
    for index, uuid, name in rows:
        if not visible or visible == index or (visible.startswith(("GPU-", "MIG-")) and uuid.startswith(visible[:12])):
            return name
    return None


@functools.lru_cache(maxsize=1)
def local_gpu_sms() -> int | None:
    """SMs (CUs on AMD) of the GPU `local_gpu_target` names: the CUDA driver's multiprocessor count (through ctypes,
    no torch, no context created), or rocminfo's `Compute Unit` of the first GPU agent. None when unknown."""
    target = local_gpu_target()
    if target is None:
        return None
    if target.startswith("hip"):
        try:
            out = subprocess.run([shutil.which("rocminfo") or "rocminfo"], capture_output=True, text=True,
                                 timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        m = re.search(r"Name:\s+gfx[0-9a-f]+.*?Compute Unit:\s+(\d+)", out, re.S)
        return int(m.group(1)) if m else None
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        dev, count = ctypes.c_int(), ctypes.c_int()
        if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(dev), 0) != 0:
            return None
        # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
        if lib.cuDeviceGetAttribute(ctypes.byref(count), 16, dev) != 0:
            return None
        return count.value or None
    except (OSError, AttributeError):
        return None


def resolve_target(setting: str, gpu_target: str | None = None, local: bool = True) -> str:
    """The target `setting` names; `auto`: the named GPU's target (`gpu_target`, from `--gpu`), else the local
    GPU's (with `local`), else cuda:90."""
    if setting == "auto":
        return gpu_target or (local_gpu_target() if local else None) or DEFAULT_TARGET
    return setting


def has_local_gpu() -> bool:
    return local_gpu_target() is not None
