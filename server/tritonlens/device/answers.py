"""The virtual GPU's answers, installed in a process that has no GPU: every door a library asks its device through
answers as one `GpuModel` (virtual_gpu), consistently.

- Triton's driver (`triton.runtime.driver.active`): the target, device 0, stream 0, `utils.get_device_properties`;
  each backend's `driver.is_active()` (the target's vendor's only).
- torch (a CPU-only build too): `torch.cuda.is_available`, `device_count`, `current_device`, `set_device`,
  `device(...)` contexts, `get_device_name`, `get_device_capability`, `get_device_properties`, `mem_get_info`,
  `get_arch_list`, `is_bf16_supported`, `synchronize`, `empty_cache`, memory statistics, and `torch.version.cuda` /
  `torch.version.hip`.
- The vendor's query tools (`nvidia-smi`, or `rocm-smi` / `rocminfo` for an AMD GPU): stand-ins put first on the
  process's PATH, which print what the real tool prints for that GPU (vendor_tools).

A half-answered world is worse than none: a library that learns `cuda` from Triton and then asks torch must hear the
same GPU from torch. What the answers never do is put anything on a device. Tensors asked for on the device go by
`tensors`: "refuse" (tritonlens check: nothing is allocated or launched; the first such use raises
`DeviceUseRefused`, which says so) or "cpu" (`capture --no-gpu`: factory functions, `.to("cuda")` and `.cuda()` make
CPU tensors, which say they are on `cuda:0`, so a driver or test suite written for `device="cuda"` runs its launches
down the GPU's path).
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
import tempfile
import traceback
from contextlib import nullcontext
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

from .virtual_gpu import GpuModel, torch_properties

TENSOR_POLICIES = ("refuse", "cpu")


class DeviceUseRefused(RuntimeError):
    """A module used the device (a tensor on it, a stream, a synchronize) while tritonlens checks it: nothing may be
    allocated or launched then."""


def user_frame() -> str:
    """`file:line: code` of the innermost frame that is the program's, not torch's, triton's or ours."""
    skip = ("/torch/", "/triton/", "/tritonlens/", "<frozen ", "importlib")
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename.replace(os.sep, "/")
        if not any(s in name for s in skip):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "(no frame of the program found)"


def _refuse(what: str) -> BaseException:
    doing = "allocates on the device" if what.startswith(_INIT) else "asks the GPU driver for what only hardware has"
    return DeviceUseRefused(f"the module {doing} at import, at {user_frame()} ({what})")


_INIT = "torch.cuda is initialised there"


@dataclass
class _State:
    gpu: GpuModel
    tensors: str
    on_hardware: Callable[[str], BaseException]
    target: str  # the compile target Triton's driver names (the GPU's own, or one of its arch family)
    device: int = 0


_state: _State | None = None


def current() -> GpuModel | None:
    """The GPU this process answers as, None when the answers are not installed."""
    return _state.gpu if _state is not None else None


def install(gpu: GpuModel, tensors: str = "refuse", on_hardware: Callable[[str], BaseException] | None = None,
            tools: bool = True, target: str | None = None) -> None:
    """Answer as `gpu` from every door of this process (Triton's driver naming `target`, default the GPU's own).
    Installing again (another GPU, another target) changes the answers in place. `on_hardware(what)` makes the
    exception for what only real hardware has (default: the module is refused the device)."""
    global _state
    if tensors not in TENSOR_POLICIES:
        raise ValueError(f"tensors must be one of {TENSOR_POLICIES}")
    first = _state is None
    _state = _State(gpu, tensors, on_hardware or _refuse, str(target or gpu.target))
    if first:
        when_imported("triton", _answer_triton)
        when_imported("torch", _answer_torch)
    else:  # the answers follow the GPU: Triton's target, torch.version's cuda or hip
        for name, answer in (("triton", _answer_triton), ("torch", _answer_torch)):
            if name in sys.modules:
                answer()
    if tools:
        put_tools_on_path(gpu, os.environ)


def _answer_triton() -> None:
    from triton.runtime import driver

    target = _state.target if _state is not None else None
    driver.set_active(VirtualDriver(_gpu(), target))
    _answer_backends(target or _gpu().target)


_VENDOR_BACKEND = {"cuda": "nvidia", "hip": "amd"}


def _answer_backends(target: str) -> None:
    """Each Triton backend's own `driver.is_active()` (what vLLM counts to decide whether Triton can run at all, and
    else swaps `triton.jit` for a placeholder): the target's vendor's is active, the others are not."""
    try:
        from triton.backends import backends

        from ..model import Target

        vendor = _VENDOR_BACKEND.get(Target.parse(target).backend)
    except Exception:  # noqa: BLE001 — a Triton without backends, a target this build does not know: nothing to answer
        return
    for name, backend in backends.items():
        cls = getattr(backend, "driver", None)
        if isinstance(cls, type) and "is_active" in vars(cls):
            active = name == vendor
            setattr(cls, "is_active", staticmethod(lambda active=active: active))


# ---------------------------------------------------------------- Triton's driver
def gpu_target(target: str) -> Any:
    """Triton's GPUTarget for a target string (`cuda:90`, `hip:gfx942`)."""
    from triton.backends.compiler import GPUTarget

    from ..model import Target

    t = Target.parse(target)
    return GPUTarget(t.backend, t.arch, t.warp_size)


def _no_timing(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    """The autotuner's benchmarker without a GPU: the launch is made (recorded), nothing is timed."""
    kernel_call()
    return [0.0] * len(quantiles) if quantiles else 0.0


def _hardware(what: str) -> BaseException:
    return (_state.on_hardware if _state is not None else _refuse)(what)


class _DriverUtils:
    """`driver.active.utils`: the device's properties as Triton's C helper returns them; loading a binary or
    launching asks real hardware."""

    def __init__(self, gpu: GpuModel) -> None:
        self._gpu = gpu

    def get_device_properties(self, device: Any = 0) -> dict[str, int]:
        g = self._gpu
        return {"max_shared_mem": g.shared_per_block_optin, "max_num_regs": g.regs_per_block,
                "multiprocessor_count": g.sms, "warpSize": g.warp_size, "sm_clock_rate": g.clock_mhz * 1000,
                "mem_clock_rate": g.memory_clock_mhz * 1000, "mem_bus_width": g.memory_bus_width}

    def __getattr__(self, name: str) -> Any:
        raise _hardware(f"driver.active.utils.{name} asks the GPU driver")


class VirtualDriver:
    """Triton's `driver.active` answering as `gpu`: its target, device 0, stream 0, its properties; anything that
    would load or launch code raises (`on_hardware`)."""

    def __init__(self, gpu: GpuModel, target: str | None = None) -> None:
        self.gpu = gpu
        self.target = gpu_target(target or gpu.target)
        self.utils = _DriverUtils(gpu)
        self.backend = self.target.backend

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return _state.device if _state is not None else 0

    def set_current_device(self, device: int) -> None:
        _set_device(device)

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return self.gpu.capability

    def get_benchmarker(self) -> Callable[..., Any]:
        return _no_timing

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda

    def __getattr__(self, name: str) -> Any:
        raise _hardware(f"driver.active.{name} asks the GPU driver")


# ---------------------------------------------------------------- torch
def _set_device(device: Any) -> None:
    index = _device_index(device)
    if index is None:
        return
    if index != 0:
        raise _hardware(f"device {index} is asked for; the virtual GPU is one device (0)")
    if _state is not None:
        _state.device = index


def _device_index(device: Any) -> int | None:
    if device is None:
        return None
    if isinstance(device, int):
        return device if device >= 0 else None
    if isinstance(device, str):
        device = device.split(":")
        return int(device[1]) if len(device) > 1 and device[1].isdigit() else 0
    index = getattr(device, "index", None)
    return index if isinstance(index, int) else 0


def _gpu() -> GpuModel:
    assert _state is not None
    return _state.gpu


class _Stream(SimpleNamespace):
    """torch.cuda.current_stream() / default_stream(): stream 0, on which there is never anything to wait for."""

    def __init__(self, *_: Any, **__: Any) -> None:
        super().__init__(cuda_stream=0, device_index=0, priority=0)

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_stream(self, *_: Any) -> None:
        pass

    def wait_event(self, *_: Any) -> None:
        pass


class _Event(SimpleNamespace):
    """torch.cuda.Event(): recorded on stream 0, always complete; the time between two is unknown (NaN) — nothing ran
    on a device to time."""

    def __init__(self, *_: Any, **__: Any) -> None:
        super().__init__(cuda_event=0)

    def record(self, *_: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait(self, *_: Any) -> None:
        pass

    def elapsed_time(self, *_: Any) -> float:
        return float("nan")


class _DeviceContext:
    """`torch.cuda.device(i)` / `device_of(t)`: selects device i of the one there is."""

    def __init__(self, device: Any) -> None:
        self.idx = _device_index(device)
        self.prev_idx = 0

    def __enter__(self) -> None:
        self.prev_idx = _state.device if _state is not None else 0
        _set_device(self.idx)

    def __exit__(self, *_: Any) -> bool:
        _set_device(self.prev_idx)
        return False


def _zero(*_: Any, **__: Any) -> int:
    return 0


def _nothing(*_: Any, **__: Any) -> None:
    return None


_TORCH_CUDA: dict[str, Callable[..., Any]] = {
    "is_available": lambda: True,
    "is_initialized": lambda: True,
    "device_count": lambda: 1,
    "current_device": lambda: _state.device if _state is not None else 0,
    "set_device": _set_device,
    "get_device_name": lambda device=None: _gpu().name,
    "get_device_capability": lambda device=None: _gpu().capability,
    "get_device_properties": lambda device=None: torch_properties(_gpu()),
    "mem_get_info": lambda device=None: (_gpu().memory_bytes, _gpu().memory_bytes),
    "get_arch_list": lambda: [_arch_name(_gpu())],
    "is_bf16_supported": lambda including_emulation=True: _gpu().capability >= (8, 0) or not _gpu().is_cuda,
    "synchronize": _nothing, "empty_cache": _nothing, "ipc_collect": _nothing, "init": _nothing,
    "reset_peak_memory_stats": _nothing, "reset_max_memory_allocated": _nothing,
    "reset_accumulated_memory_stats": _nothing,
    "memory_allocated": _zero, "max_memory_allocated": _zero, "memory_reserved": _zero, "max_memory_reserved": _zero,
    "manual_seed": _nothing, "manual_seed_all": _nothing, "seed": _nothing, "seed_all": _nothing,
    "current_stream": _Stream, "default_stream": _Stream, "set_stream": _nothing,
    "stream": lambda stream=None: nullcontext(),
    "_exchange_device": lambda device: _exchange(device),
    "_maybe_exchange_device": lambda device: _exchange(device),
}


def _exchange(device: int) -> int:
    before = _state.device if _state is not None else 0
    _set_device(device)
    return before


def _arch_name(gpu: GpuModel) -> str:
    backend, _, arch = gpu.target.partition(":")
    return f"sm_{arch}" if backend == "cuda" else arch


def _own_function(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A function object of its own for each name: torch._dynamo keeps one rule per torch function object and
    refuses one object found under two names."""
    def answer(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    answer.__name__ = answer.__qualname__ = name
    answer.__module__ = "torch.cuda"
    return answer


def _answer_torch() -> None:
    """Patch torch.cuda's device queries and torch.version (at `import torch`, or now if it is imported)."""
    import torch
    import torch.cuda
    import torch.version

    gpu = _gpu()
    torch.version.cuda = (getattr(torch.version, "cuda", None) or "12.8") if gpu.is_cuda else None
    torch.version.hip = None if gpu.is_cuda else (getattr(torch.version, "hip", None) or "6.4.43482")
    if getattr(torch.cuda, "__tritonlens_answers__", False):
        return
    torch.cuda.__tritonlens_answers__ = True  # type: ignore[attr-defined]
    for name, fn in _TORCH_CUDA.items():
        setattr(torch.cuda, name, _own_function(fn, name))
    torch.cuda.device = _DeviceContext  # type: ignore[assignment,misc]
    # classes, not functions: code annotates with them (`stream: torch.cuda.Stream | None`) and subclasses them
    torch.cuda.Stream = _Stream  # type: ignore[assignment,misc]
    torch.cuda.Event = _Event  # type: ignore[assignment,misc]
    torch.cuda.device_of = lambda obj: _DeviceContext(getattr(obj, "device", None))  # type: ignore[assignment]
    with_memory = getattr(torch.cuda, "memory", None)
    if with_memory is not None:
        for name in ("mem_get_info", "empty_cache", "memory_allocated", "max_memory_allocated",
                     "reset_peak_memory_stats"):
            setattr(with_memory, name, getattr(torch.cuda, name))

    def lazy_init(*_a: Any, **_k: Any) -> None:
        # torch initialises CUDA lazily on its first real use: a tensor on the device, a stream, an RNG state
        raise _hardware(f"{_INIT}: a tensor on the device, an RNG state or another use of real hardware")

    torch.cuda._lazy_init = lazy_init
    if _state is not None and _state.tensors == "cpu":
        _tensors_on_cpu(torch)


# ---------------------------------------------------------------- tensors made on the CPU (capture --no-gpu)
_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
              "logspace", "eye", "tensor", "as_tensor", "empty_like", "zeros_like", "ones_like", "full_like",
              "rand_like", "randn_like", "randint_like", "empty_strided", "from_numpy", "normal", "tril_indices",
              "triu_indices", "scalar_tensor")
_UNINITIALISED = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")
_TENSOR_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided")


def _on_device(value: Any) -> bool:
    if isinstance(value, str):
        return value.split(":")[0] in ("cuda", "hip")
    return getattr(value, "type", None) in ("cuda", "hip") and type(value).__name__ == "device"


def _cpu_device(kwargs: dict[str, Any]) -> dict[str, Any]:
    if _on_device(kwargs.get("device")):
        kwargs["device"] = "cpu"
    return kwargs


def _tensors_on_cpu(torch: Any) -> None:
    """Factory functions, `Tensor.to(device)`, `.cuda()` and `new_*` put what is asked for on the device on the CPU."""
    def factory(fn: Callable[..., Any]) -> Callable[..., Any]:
        zeroed = fn.__name__ in _UNINITIALISED

        @functools.wraps(fn)
        def on_cpu(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **_cpu_device(kwargs))
            if zeroed and isinstance(out, torch.Tensor):
                # the kernels that would fill it do not run: zeros, not leftover memory, so a size or index the
                # host reads back from a kernel's output (a histogram, a prefix sum) is 0, never garbage
                with torch.no_grad():
                    out.zero_()
            return out
        return on_cpu

    for name in _FACTORIES:
        fn = getattr(torch, name, None)
        if fn is not None and not getattr(fn, "__wrapped__", None):
            setattr(torch, name, factory(fn))
    for name in _TENSOR_METHODS:
        fn = getattr(torch.Tensor, name, None)
        if fn is not None:
            setattr(torch.Tensor, name, factory(fn))
    to = torch.Tensor.to

    @functools.wraps(to)
    def to_cpu(self: Any, *args: Any, **kwargs: Any) -> Any:
        args = tuple("cpu" if i == 0 and (_on_device(a) or (isinstance(a, int) and not isinstance(a, bool)))
                     else a for i, a in enumerate(args))
        return to(self, *args, **_cpu_device(kwargs))

    torch.Tensor.to = to_cpu
    # and a CPU tensor says it is on the device, as the program's tensors would be on a GPU: code that sizes work
    # from `x.device` (`get_device_properties(x.device).multi_processor_count` when `x.device.type == "cuda"`)
    # takes the GPU's path
    real_device = torch._C.TensorBase.device
    on_gpu = torch.device("cuda", 0)

    def device(self: Any) -> Any:
        real = real_device.__get__(self)
        return on_gpu if real.type == "cpu" else real

    torch.Tensor.device = property(device)  # type: ignore[assignment,method-assign]
    torch.Tensor.is_cuda = property(lambda self: real_device.__get__(self).type in ("cpu", "cuda"))  # type: ignore
    torch.Tensor.get_device = lambda self: 0
    torch.Tensor.cuda = lambda self, device=None, non_blocking=False, **_: self
    torch.Tensor.pin_memory = lambda self, *_a, **_k: self
    module_cuda = getattr(torch.nn.Module, "cuda", None)
    if module_cuda is not None:
        torch.nn.Module.cuda = lambda self, device=None: self


# ---------------------------------------------------------------- the vendor's query tools
TOOLS_VAR = "TRITONLENS_GPU_TOOLS"  # a folder of stand-ins written before a sandbox made the process read-only


def prepare_tools(root: str) -> None:
    """Write every virtual GPU's stand-ins, one folder per GPU under `root`, and name `root` in TOOLS_VAR: a
    sandboxed compile worker may run these but write nothing it could run."""
    from .virtual_gpu import lookup, names
    from .vendor_tools import write_tools

    for name in names():
        gpu = lookup(name)
        folder = os.path.join(root, gpu.key)
        os.makedirs(folder, exist_ok=True)
        write_tools(folder, gpu, sys.executable)
    os.environ[TOOLS_VAR] = root


def put_tools_on_path(gpu: GpuModel, env: Any) -> str:
    """Put the stand-ins for `gpu`'s query tools first on env["PATH"]: those prepare_tools wrote, else written now
    into a folder of this process's own. Returns the folder."""
    prepared = os.path.join(os.environ.get(TOOLS_VAR) or "\0", gpu.key)
    if os.path.isdir(prepared):
        folder = prepared
    else:
        from .vendor_tools import write_tools

        folder = _tools_folder()
        write_tools(folder, gpu, sys.executable)
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != folder]
    env["PATH"] = os.pathsep.join([folder, *parts])
    return folder


_tools: list[str] = []


def _tools_folder() -> str:
    if not _tools:
        import atexit
        import shutil

        _tools.append(tempfile.mkdtemp(prefix="tritonlens-gpu-tools-"))
        atexit.register(shutil.rmtree, _tools[0], True)
    return _tools[0]


# ---------------------------------------------------------------- run something when a module is imported
class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Runs its callbacks right after `import NAME` finishes — no cost for programs that never import it. It stays
    on `sys.meta_path` until the module has really run: a library that only asks whether it exists
    (`importlib.util.find_spec("triton")`, as vLLM does before importing it) must not use it up."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.then: list[Callable[[], None]] = []
        self._finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(self.name)
        finally:
            self._finding = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        callbacks = self.then

        def exec_then(module):
            exec_module(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            for then in callbacks:
                try:
                    then()
                except Exception as exc:  # noqa: BLE001 — never break the import itself
                    sys.stderr.write(f"tritonlens: hook not installed: {type(exc).__name__}: {exc}\n")

        loader.exec_module = exec_then  # type: ignore[method-assign]
        return spec


def when_imported(name: str, then: Callable[[], None]) -> None:
    """`then()` now if module `name` is loaded, else as soon as it is imported (once)."""
    if name in sys.modules:
        then()
        return
    watcher = next((f for f in sys.meta_path if isinstance(f, _ImportWatcher) and f.name == name), None)
    if watcher is None:
        watcher = _ImportWatcher(name)
        sys.meta_path.insert(0, watcher)
    if then not in watcher.then:
        watcher.then.append(then)
