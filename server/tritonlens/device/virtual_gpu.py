"""The GPU tritonlens answers as when none is present, and the facts of the one that is: one device model.

Real libraries ask the device about itself when imported (Triton's driver for the backend, then torch for the name,
capability, SM count and shared memory) and size launches from the answers. Every door — the workers' imports, the
autotune-config evaluator, `capture --no-gpu`, the rules' limits and the report — reads the same `GpuModel`: a
default per target (`DEFAULT_FOR_TARGET`), another named by `--gpu` / `tritonlens.gpu`, the real one on a machine
that has it.

Figures are the vendors' data sheets (`GpuModel.source`); dense (not sparse) tensor-core rates. Sizes the CUDA
runtime reports (shared memory per block and per SM, registers, L2) are those `cudaGetDeviceProperties` gives for
the part, the values `torch.cuda.get_device_properties` then shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

KB = 1024
MB = 1024 * KB
MIB = MB
TB_S = 1e12
TFLOPS = 1e12


@dataclass(frozen=True)
class GpuModel:
    key: str  # the name `--gpu` takes: "h100", "h200", ...
    name: str  # what torch.cuda.get_device_name() / nvidia-smi print
    target: str  # the compile target: "cuda:90", "hip:gfx942"
    sms: int  # streaming multiprocessors (compute units on AMD)
    warp_size: int
    shared_per_block: int  # bytes without opt-in
    shared_per_block_optin: int  # bytes a block may opt in to
    shared_per_sm: int
    regs_per_sm: int  # 32-bit registers per SM
    regs_per_block: int
    max_threads_per_sm: int
    max_threads_per_block: int
    l2_bytes: int
    memory_mib: int  # as nvidia-smi reports memory.total
    memory_bandwidth: float  # bytes per second (peak)
    memory_bus_width: int  # bits
    clock_mhz: int  # boost clock of the SMs
    memory_clock_mhz: int
    peak_flops: dict[str, float] = field(default_factory=dict)  # "fp32", "tf32", "fp16", "bf16", "fp8": dense FLOP/s
    source: str = ""
    gcn_arch_name: str = ""  # AMD: torch's gcnArchName

    @property
    def capability(self) -> tuple[int, int]:
        backend, _, arch = self.target.partition(":")
        if backend == "cuda":
            return int(arch) // 10, int(arch) % 10
        return (9, 4) if arch == "gfx942" else (9, 5) if arch == "gfx950" else (9, 0)

    @property
    def is_cuda(self) -> bool:
        return self.target.startswith("cuda")

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    def label(self) -> str:
        """How findings name it: `H100 SXM (132 SMs)`."""
        return f"{self.short_name} ({self.sms} {'SMs' if self.is_cuda else 'CUs'})"

    @property
    def short_name(self) -> str:
        return _SHORT.get(self.key, self.name)

    def describe(self) -> dict[str, Any]:
        """Plain data for reports and capture records."""
        return {"gpu": self.key, "name": self.name, "target": self.target, "sms": self.sms,
                "memory_bandwidth": self.memory_bandwidth, "clock_mhz": self.clock_mhz,
                "peak_flops": dict(self.peak_flops)}


_NV_SHEETS = "https://www.nvidia.com/en-us/data-center/"
GPUS: dict[str, GpuModel] = {g.key: g for g in (
    GpuModel("a100-80gb", "NVIDIA A100-SXM4-80GB", "cuda:80", 108, 32, 48 * KB, 163 * KB, 164 * KB, 65536, 65536,
             2048, 1024, 40 * MB, 81920, 2.039 * TB_S, 5120, 1410, 1593,
             {"fp32": 19.5 * TFLOPS, "tf32": 156 * TFLOPS, "fp16": 312 * TFLOPS, "bf16": 312 * TFLOPS},
             _NV_SHEETS + "a100/ (A100 80GB SXM data sheet)"),
    GpuModel("rtx3090", "NVIDIA GeForce RTX 3090", "cuda:86", 82, 32, 48 * KB, 99 * KB, 100 * KB, 65536, 65536,
             1536, 1024, 6 * MB, 24576, 0.936 * TB_S, 384, 1695, 9751,
             {"fp32": 35.6 * TFLOPS, "tf32": 35.6 * TFLOPS, "fp16": 71 * TFLOPS, "bf16": 71 * TFLOPS},
             "NVIDIA Ampere GA102 GPU architecture whitepaper (RTX 3090)"),
    GpuModel("l40s", "NVIDIA L40S", "cuda:89", 142, 32, 48 * KB, 99 * KB, 100 * KB, 65536, 65536,
             1536, 1024, 96 * MB, 46068, 0.864 * TB_S, 384, 2520, 9001,
             {"fp32": 91.6 * TFLOPS, "tf32": 183 * TFLOPS, "fp16": 362 * TFLOPS, "bf16": 362 * TFLOPS,
              "fp8": 733 * TFLOPS},
             _NV_SHEETS + "l40s/ (L40S data sheet)"),
    GpuModel("rtx4090", "NVIDIA GeForce RTX 4090", "cuda:89", 128, 32, 48 * KB, 99 * KB, 100 * KB, 65536, 65536,
             1536, 1024, 72 * MB, 24564, 1.008 * TB_S, 384, 2520, 10501,
             {"fp32": 82.6 * TFLOPS, "tf32": 82.6 * TFLOPS, "fp16": 165.2 * TFLOPS, "bf16": 165.2 * TFLOPS,
              "fp8": 330.3 * TFLOPS},
             "NVIDIA Ada GPU architecture whitepaper (RTX 4090; FP16/BF16 with FP32 accumulate)"),
    GpuModel("h100", "NVIDIA H100 80GB HBM3", "cuda:90", 132, 32, 48 * KB, 227 * KB, 228 * KB, 65536, 65536,
             2048, 1024, 50 * MB, 81559, 3.35 * TB_S, 5120, 1980, 2619,
             {"fp32": 67 * TFLOPS, "tf32": 494.7 * TFLOPS, "fp16": 989.4 * TFLOPS, "bf16": 989.4 * TFLOPS,
              "fp8": 1978.9 * TFLOPS},
             _NV_SHEETS + "h100/ (H100 SXM data sheet)"),
    GpuModel("h200", "NVIDIA H200", "cuda:90", 132, 32, 48 * KB, 227 * KB, 228 * KB, 65536, 65536,
             2048, 1024, 60 * MB, 143771, 4.8 * TB_S, 6144, 1980, 3201,
             {"fp32": 67 * TFLOPS, "tf32": 494.7 * TFLOPS, "fp16": 989.4 * TFLOPS, "bf16": 989.4 * TFLOPS,
              "fp8": 1978.9 * TFLOPS},
             _NV_SHEETS + "h200/ (H200 SXM data sheet)"),
    GpuModel("b200", "NVIDIA B200", "cuda:100", 148, 32, 48 * KB, 227 * KB, 228 * KB, 65536, 65536,
             2048, 1024, 126 * MB, 183359, 8.0 * TB_S, 8192, 1965, 3996,
             {"fp32": 75 * TFLOPS, "tf32": 1100 * TFLOPS, "fp16": 2250 * TFLOPS, "bf16": 2250 * TFLOPS,
              "fp8": 4500 * TFLOPS},
             _NV_SHEETS + "dgx-b200/ (HGX B200 data sheet, per GPU)"),
    GpuModel("rtx5090", "NVIDIA GeForce RTX 5090", "cuda:120", 170, 32, 48 * KB, 99 * KB, 100 * KB, 65536, 65536,
             1536, 1024, 96 * MB, 32607, 1.792 * TB_S, 512, 2407, 14001,
             {"fp32": 104.8 * TFLOPS, "tf32": 104.8 * TFLOPS, "fp16": 209.5 * TFLOPS, "bf16": 209.5 * TFLOPS,
              "fp8": 419 * TFLOPS},
             "NVIDIA RTX Blackwell GPU architecture whitepaper (RTX 5090; FP16/BF16 with FP32 accumulate)"),
    GpuModel("mi250x", "AMD Instinct MI250X", "hip:gfx90a", 110, 64, 64 * KB, 64 * KB, 64 * KB, 65536, 65536,
             2048, 1024, 8 * MB, 65520, 1.6384 * TB_S, 4096, 1700, 1600,
             {"fp32": 47.9 * TFLOPS / 2, "fp16": 383 * TFLOPS / 2, "bf16": 383 * TFLOPS / 2},
             "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html (one of its two GCDs)",
             "gfx90a:sramecc+:xnack-"),
    GpuModel("mi300x", "AMD Instinct MI300X", "hip:gfx942", 304, 64, 64 * KB, 64 * KB, 64 * KB, 65536, 65536,
             2048, 1024, 4 * MB, 196592, 5.3 * TB_S, 8192, 2100, 1300,
             {"fp32": 163.4 * TFLOPS, "tf32": 653.7 * TFLOPS, "fp16": 1307.4 * TFLOPS, "bf16": 1307.4 * TFLOPS,
              "fp8": 2614.9 * TFLOPS},
             "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (data sheet)",
             "gfx942:sramecc+:xnack-"),
    GpuModel("mi355x", "AMD Instinct MI355X", "hip:gfx950", 256, 64, 160 * KB, 160 * KB, 160 * KB, 65536, 65536,
             2048, 1024, 4 * MB, 294896, 8.0 * TB_S, 8192, 2400, 1600,
             {"fp32": 157.3 * TFLOPS, "fp16": 2516.6 * TFLOPS, "bf16": 2516.6 * TFLOPS, "fp8": 5033.2 * TFLOPS},
             "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html (data sheet)",
             "gfx950:sramecc+:xnack-"),
)}

_SHORT = {"a100-80gb": "A100 80GB", "rtx3090": "RTX 3090", "l40s": "L40S", "rtx4090": "RTX 4090",
          "h100": "H100 SXM", "h200": "H200", "b200": "B200", "rtx5090": "RTX 5090", "mi250x": "MI250X",
          "mi300x": "MI300X", "mi355x": "MI355X"}

# The GPU a target stands for when none is named: the data-centre part most kernels of that arch run on.
DEFAULT_FOR_TARGET: dict[str, str] = {
    "cuda:80": "a100-80gb", "cuda:86": "rtx3090", "cuda:89": "l40s", "cuda:90": "h100", "cuda:100": "b200",
    "cuda:120": "rtx5090", "hip:gfx90a": "mi250x", "hip:gfx942": "mi300x", "hip:gfx950": "mi355x",
}


def names() -> list[str]:
    return sorted(GPUS)


def lookup(name: str) -> GpuModel:
    """A GPU by its key or any spelling of its name (`H100`, `nvidia h200`, `mi300x`). ValueError when unknown."""
    text = name.strip().lower().replace("nvidia", "").replace("amd", "").replace("instinct", "")
    text = text.replace("geforce", "").replace(" ", "").replace("_", "").replace("-", "")
    if not text:
        raise ValueError(f"no GPU named: one of {', '.join(names())}")
    for key, gpu in GPUS.items():
        if text in (key.replace("-", ""), gpu.short_name.lower().replace(" ", ""),
                    gpu.name.lower().replace(" ", "").replace("-", "")):
            return gpu
    for key, gpu in GPUS.items():  # "a100" -> a100-80gb, "h100sxm" -> h100
        if key.replace("-", "").startswith(text) or text.startswith(key.replace("-", "")):
            return gpu
    raise ValueError(f"unknown GPU {name!r}: one of {', '.join(names())}")


def for_target(target: str, name: str | None = None) -> GpuModel:
    """The GPU a compile for `target` stands for: the one `name` gives, else the target's default. A named GPU of
    another arch than the target is refused (its answers would contradict the compile)."""
    target = str(target)
    if name:
        gpu = lookup(name)
        if gpu.target != target and not _same_family(gpu.target, target):
            raise ValueError(f"GPU {gpu.short_name} is {gpu.target}, not {target}")
        return gpu
    key = DEFAULT_FOR_TARGET.get(target)
    if key is None:
        backend, _, arch = target.partition(":")
        if backend == "cuda" and arch.isdigit():  # nearest lower arch of the table
            lower = [t for t in DEFAULT_FOR_TARGET if t.startswith("cuda:") and int(t[5:]) <= int(arch)]
            key = DEFAULT_FOR_TARGET[max(lower, key=lambda t: int(t[5:]))] if lower else "a100-80gb"
        else:
            key = "mi300x"
    return GPUS[key]


def _same_family(a: str, b: str) -> bool:
    return a.startswith("cuda:") and b.startswith("cuda:") and a[5:] == b[5:].rstrip("a")


def from_local_name(name: str, target: str) -> GpuModel:
    """The model of a real GPU from the name its driver gives, else the target's default."""
    try:
        gpu = lookup(name)
        if gpu.target == target:
            return gpu
    except ValueError:
        pass
    return for_target(target)


def resolve(target: str, name: str | None = None, local: bool = True) -> GpuModel:
    """The GPU a compile for `target` stands for, in every door and finding: the one `name` gives (`--gpu`,
    `tritonlens.gpu`) when it is of that arch, else the local GPU when `target` is its target, else the target's
    default. Lenient where `for_target` refuses: an extra target of another arch than the named GPU gets its own
    default."""
    if name:
        try:
            return for_target(target, name)
        except ValueError:
            pass
    from .targets import local_gpu_name, local_gpu_target

    if local and local_gpu_target() == str(target):
        return from_local_name(local_gpu_name() or "", str(target))
    return for_target(target)


def compile_target(setting: str, name: str = "", local: bool = True) -> str:
    """The target a `target` setting compiles for: `auto` is the named GPU's arch (`--gpu`), else the local GPU's
    (with `local`), else cuda:90."""
    from .targets import resolve_target

    return resolve_target(setting, lookup(name).target if name else None, local)


def validate(name: str, target: str) -> str | None:
    """What is wrong with naming GPU `name` for target setting `target` (`auto` or a target), None when nothing."""
    try:
        gpu = lookup(name)
        if target != "auto":
            for_target(target, gpu.key)
    except ValueError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------- what libraries read
def torch_properties(gpu: GpuModel) -> SimpleNamespace:
    """Stand-in for `torch.cuda.get_device_properties(i)` (`_CudaDeviceProperties`): the attributes torch exposes."""
    major, minor = gpu.capability
    return SimpleNamespace(
        name=gpu.name, major=major, minor=minor, total_memory=gpu.memory_bytes,
        multi_processor_count=gpu.sms, is_integrated=False, is_multi_gpu_board=False,
        max_threads_per_multi_processor=gpu.max_threads_per_sm, max_threads_per_block=gpu.max_threads_per_block,
        warp_size=gpu.warp_size, L2_cache_size=gpu.l2_bytes, regs_per_multiprocessor=gpu.regs_per_sm,
        shared_memory_per_block=gpu.shared_per_block, shared_memory_per_block_optin=gpu.shared_per_block_optin,
        shared_memory_per_multiprocessor=gpu.shared_per_sm, clock_rate=gpu.clock_mhz * 1000,
        memory_clock_rate=gpu.memory_clock_mhz * 1000, memory_bus_width=gpu.memory_bus_width,
        gcnArchName=gpu.gcn_arch_name or gpu.target.partition(":")[2],
        uuid="00000000-0000-0000-0000-000000000000", pci_bus_id=0, pci_device_id=0, pci_domain_id=0,
    )


def nvidia_smi_fields(gpu: GpuModel, index: int = 0) -> dict[str, str]:
    """`nvidia-smi --query-gpu=FIELD` values for this GPU (csv, no units)."""
    major, minor = gpu.capability
    return {
        "index": str(index), "name": gpu.name, "uuid": f"GPU-00000000-0000-0000-0000-{index:012d}",
        "compute_cap": f"{major}.{minor}", "memory.total": f"{gpu.memory_mib} MiB", "memory.used": "0 MiB",
        "memory.free": f"{gpu.memory_mib} MiB", "driver_version": "580.00", "count": "1",
        "clocks.max.sm": f"{gpu.clock_mhz} MHz", "clocks.sm": f"{gpu.clock_mhz} MHz",
        "clocks.max.memory": f"{gpu.memory_clock_mhz} MHz", "pci.bus_id": "00000000:00:00.0",
        "utilization.gpu": "0 %", "temperature.gpu": "30", "power.draw": "0.00 W",
    }
