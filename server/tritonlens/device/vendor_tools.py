"""Stand-ins for the vendor's GPU query tools (`nvidia-smi`; `rocm-smi` and `rocminfo` for AMD), put first on the
PATH of a process that answers as a virtual GPU (device.answers): a library that learns its device by running the
tool gets the same GPU as from Triton and torch. They print what the real tool prints for that GPU for the usual
invocations — `nvidia-smi -L`, `nvidia-smi --query-gpu=a,b --format=csv[,noheader][,nounits]`, the plain table;
`rocm-smi --showproductname` / `--showmeminfo vram` / `--showid`, `rocminfo` — and fail as the tool does on a
field it does not know. Never installed where a real GPU is.
"""
from __future__ import annotations

import os
import sys

from .virtual_gpu import GpuModel, lookup, nvidia_smi_fields

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCRIPT = """#!{python}
# tritonlens: a stand-in for {tool}, answering as the virtual GPU {name}
import sys
sys.path.insert(0, {root!r})
from tritonlens.device.vendor_tools import main
sys.exit(main({tool!r}, {key!r}, sys.argv[1:]))
"""


def tools_for(gpu: GpuModel) -> tuple[str, ...]:
    return ("nvidia-smi",) if gpu.is_cuda else ("rocm-smi", "rocminfo")


def write_tools(folder: str, gpu: GpuModel, python: str) -> list[str]:
    """Write the stand-ins for `gpu` into `folder` (replacing another GPU's); their paths."""
    written = []
    for tool in ("nvidia-smi", "rocm-smi", "rocminfo"):
        path = os.path.join(folder, tool)
        if tool not in tools_for(gpu):
            if os.path.exists(path):
                os.unlink(path)
            continue
        text = _SCRIPT.format(python=python, tool=tool, name=gpu.name, root=_PACKAGE_ROOT, key=gpu.key)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o755)
        written.append(path)
    return written


def main(tool: str, key: str, argv: list[str]) -> int:
    gpu = lookup(key)
    out, code = {"nvidia-smi": nvidia_smi, "rocm-smi": rocm_smi, "rocminfo": rocminfo}[tool](gpu, argv)
    (sys.stdout if code == 0 else sys.stderr).write(out)
    return code


# ---------------------------------------------------------------- nvidia-smi
_UNITS = ("MiB", "MHz", "%", "W")
_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "driver_version": "driver_version",
            "memory.total": "memory.total", "compute_capability": "compute_cap"}


def _smi_fields(gpu: GpuModel) -> dict[str, str]:
    fields = nvidia_smi_fields(gpu)
    fields.update({"serial": "[N/A]", "persistence_mode": "Enabled", "mig.mode.current": "Disabled",
                   "power.limit": "700.00 W", "memory.reserved": "0 MiB", "pstate": "P0",
                   "display_mode": "Disabled", "vbios_version": "[N/A]", "gpu_serial": "[N/A]"})
    return fields


def _unit(value: str) -> str | None:
    return next((u for u in _UNITS if value.endswith(" " + u)), None)


def nvidia_smi(gpu: GpuModel, argv: list[str]) -> tuple[str, int]:
    fields = _smi_fields(gpu)
    query = next((a.split("=", 1)[1] for a in argv if a.startswith("--query-gpu=")), None)
    if query is None and "--query-gpu" in argv[:-1]:
        query = argv[argv.index("--query-gpu") + 1]
    if query is not None:
        fmt = next((a.split("=", 1)[1] for a in argv if a.startswith("--format=")), "")
        if not fmt and "--format" in argv[:-1]:
            fmt = argv[argv.index("--format") + 1]
        opts = set(fmt.split(","))
        if "csv" not in opts:
            return 'Format must be specified. Use "--format=csv" for csv output.\n', 2
        names = [n.strip() for n in query.split(",") if n.strip()]
        for n in names:
            if _ALIASES.get(n, n) not in fields:
                return f'Field "{n}" is not a valid field to query.\n', 2
        values = [fields[_ALIASES.get(n, n)] for n in names]
        lines = []
        if "noheader" not in opts:
            lines.append(", ".join(f"{n} [{_unit(v)}]" if _unit(v) else n for n, v in zip(names, values)))
        if "nounits" in opts:
            values = [v.rsplit(" ", 1)[0] if _unit(v) else v for v in values]
        lines.append(", ".join(values))
        return "\n".join(lines) + "\n", 0
    if "-L" in argv or "--list-gpus" in argv:
        return f"GPU 0: {gpu.name} (UUID: {fields['uuid']})\n", 0
    if any(a.startswith("--query-compute-apps") for a in argv):
        return "", 0
    if "-q" in argv or "--query" in argv:
        return _smi_query(gpu, fields), 0
    if argv and argv[0] not in ("-i", "--id") and not argv[0].startswith("--id="):
        return "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", 2
    return _smi_table(gpu, fields), 0


def _smi_table(gpu: GpuModel, f: dict[str, str]) -> str:
    name = gpu.name[:28]
    return (
        "+-----------------------------------------------------------------------------------------+\n"
        f"| NVIDIA-SMI {f['driver_version']:<18} Driver Version: {f['driver_version']:<14} CUDA Version: 12.8     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
        "|=========================================+========================+======================|\n"
        f"|   0  {name:<30}  On | {f['pci.bus_id']:<16}  Off |                    0 |\n"
        f"| N/A   30C    P0             70W /  700W |  {'0MiB / ' + f['memory.total'].replace(' ', ''):>21} |"
        "      0%      Default |\n"
        "+-----------------------------------------+------------------------+----------------------+\n"
        "\n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| Processes:                                                                              |\n"
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
        "|=========================================================================================|\n"
        "|  No running processes found                                                             |\n"
        "+-----------------------------------------------------------------------------------------+\n")


def _smi_query(gpu: GpuModel, f: dict[str, str]) -> str:
    return (f"\n==============NVSMI LOG==============\n\nDriver Version                            : "
            f"{f['driver_version']}\nCUDA Version                              : 12.8\n\nAttached GPUs"
            f"                             : 1\nGPU {f['pci.bus_id']}\n    Product Name                          : "
            f"{gpu.name}\n    GPU UUID                              : {f['uuid']}\n    FB Memory Usage\n"
            f"        Total                             : {f['memory.total']}\n"
            f"        Used                              : 0 MiB\n        Free                              : "
            f"{f['memory.total']}\n    Clocks\n        SM                                : {f['clocks.sm']}\n")


# ---------------------------------------------------------------- ROCm
_ROCM_HEAD = "============================ ROCm System Management Interface ============================\n"
_ROCM_TAIL = "==========================================================================================\n" \
             "================================== End of ROCm SMI Log ===================================\n"


def _gfx(gpu: GpuModel) -> str:
    return gpu.target.partition(":")[2]


def rocm_smi(gpu: GpuModel, argv: list[str]) -> tuple[str, int]:
    body = []
    if "--showproductname" in argv:
        body += ["====================================== Product Info ======================================",
                 f"GPU[0]\t\t: Card Series: \t\t{gpu.name}", "GPU[0]\t\t: Card Model: \t\t0x74a1",
                 "GPU[0]\t\t: Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]",
                 f"GPU[0]\t\t: GFX Version: \t\t{_gfx(gpu)}"]
    if "--showmeminfo" in argv:
        body += ["================================== Memory Usage (Bytes) ==================================",
                 f"GPU[0]\t\t: VRAM Total Memory (B): {gpu.memory_bytes}", "GPU[0]\t\t: VRAM Total Used Memory (B): 0"]
    if "--showid" in argv or "-i" in argv:
        body += ["=========================================== ID ===========================================",
                 "GPU[0]\t\t: Device Name: \t\t" + gpu.name, "GPU[0]\t\t: Device ID: \t\t0x74a1"]
    if not body:
        body = ["========================================= Concise Info =========================================",
                "Device  Node  IDs    Temp    Power  Partitions     SCLK  MCLK    Fan  Perf  PwrCap  VRAM%  GPU%",
                f"0       1     0x74a1 30.0°C  100W   SPX, NPS1      {gpu.clock_mhz}Mhz {gpu.memory_clock_mhz}Mhz"
                "  0%   auto  750.0W  0%     0%"]
    return _ROCM_HEAD + "\n".join(body) + "\n" + _ROCM_TAIL, 0


def rocminfo(gpu: GpuModel, argv: list[str]) -> tuple[str, int]:
    return ("ROCk module is loaded\n=====================    \nHSA System Attributes    \n"
            "=====================    \n\n==========               \nHSA Agents               \n"
            "==========               \n*******                  \nAgent 1                  \n"
            "*******                  \n  Name:                    CPU                                \n"
            "  Device Type:             CPU                                \n"
            "*******                  \nAgent 2                  \n*******                  \n"
            f"  Name:                    {_gfx(gpu)}                             \n"
            f"  Marketing Name:          {gpu.name}                \n"
            "  Vendor Name:             AMD                                \n"
            "  Device Type:             GPU                                \n"
            f"  Compute Unit:            {gpu.sms}                                \n"
            f"  Wavefront Size:          {gpu.warp_size}(0x{gpu.warp_size:x})                           \n"
            f"  Max Clock Freq. (MHz):   {gpu.clock_mhz}                               \n"
            f"      Name:                    amdgcn-amd-amdhsa--{gpu.gcn_arch_name or _gfx(gpu)}\n"
            "*** Done ***             \n", 0)
