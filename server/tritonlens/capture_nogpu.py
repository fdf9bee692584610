"""`tritonlens capture --no-gpu`: the specializations a run launches, recorded on a machine without a GPU.

The specialization of a launch is a function of its arguments (dtypes, 16-byte alignment of data pointers, which
ints are 1 or multiples of 16, constexpr values, launch options), not of the GPU. So `JITFunction.run` is replaced
by one that does what Triton's own `run` does up to the compile — the same binder
(`create_function_from_signature` with the target's backend, so `native_specialize_impl` decides alignment and
divisibility), the same `_pack_args`, the same `_call_hook` payload — and then hands that payload to the capture
hook instead of compiling and launching. Outputs stay as allocated. Heuristics run unchanged (they only wrap
`run`); the autotuner runs unchanged too, with a benchmarker that times nothing, so every config it would try
(after `prune_configs_by`: early_config_prune, perf_model/top_k) is recorded as a trial, and none is marked as
chosen unless it was the only one.

With `--interpret` the kernels really run, in Triton's interpreter (TRITON_INTERPRET=1), for programs whose later
launches depend on results; each launch is recorded the same way before the interpreter runs it.

What needs a GPU is reported, never papered over: torch.cuda stops the program with a message naming the first
call, and a compiled kernel's fields (n_regs, metadata) or Triton's device queries raise `NoGpuError` saying so.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable

from .model import Target

class NoGpuError(RuntimeError):
    """The program asked for something only a GPU has, in a run recorded without one."""


def gpu_target(text: str) -> Any:
    from triton.backends.compiler import GPUTarget

    target = Target.parse(text)
    return GPUTarget(target.backend, target.arch, target.warp_size)


def _user_frame() -> str:
    """`file:line: code` of the innermost frame that is the program's, not torch's, triton's or ours."""
    skip = ("/torch/", "/triton/", "/tritonlens/", "<frozen ", "importlib")
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename.replace(os.sep, "/")
        if not any(s in name for s in skip):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "(no frame of the program found)"


def needs_gpu(what: str) -> NoGpuError:
    where = _user_frame()
    msg = (f"tritonlens capture --no-gpu: the program needs a GPU at {where}\n  ({what}). The launches recorded "
           f"before it are kept. Make the driver device-agnostic — e.g. `DEVICE = \"cuda\" if "
           f"torch.cuda.is_available() else \"cpu\"` and `device=DEVICE` for its tensors — or capture on a GPU "
           f"machine without --no-gpu.")
    if not getattr(needs_gpu, "said", False):  # printed once even if the program catches the error
        needs_gpu.said = True  # type: ignore[attr-defined]
        sys.stderr.write(msg + "\n")
    return NoGpuError(msg)


def guard_torch_cuda() -> None:
    """torch.cuda initialises lazily on its first real use (a CUDA tensor, a device query, synchronize): that call
    is the one to name. `torch.cuda.is_available()` does not initialise and keeps answering False."""
    import torch.cuda

    if getattr(torch.cuda._lazy_init, "__tritonlens_guard__", False):
        return

    def lazy_init(*_a: Any, **_k: Any) -> None:
        raise needs_gpu("torch.cuda is initialised here: a CUDA tensor, a device query or a synchronize")

    lazy_init.__tritonlens_guard__ = True  # type: ignore[attr-defined]
    torch.cuda._lazy_init = lazy_init


def _no_timing(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    """The autotuner's benchmarker without a GPU: the launch is made (recorded), nothing is timed."""
    kernel_call()
    return [0.0] * len(quantiles) if quantiles else 0.0


class _Unavailable:
    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise needs_gpu(f"{self._what}.{name} asks the GPU driver")


class NoGpuDriver:
    """Triton's `driver.active` for a run without a GPU: the target the launches are specialized for, device 0,
    stream 0; anything that would ask real hardware raises NoGpuError."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.utils = _Unavailable("driver.active.utils")

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_benchmarker(self) -> Callable[..., Any]:
        return _no_timing

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def __getattr__(self, name: str) -> Any:
        raise needs_gpu(f"driver.active.{name} asks the GPU driver")


class NotCompiled:
    """What a launch returns without a GPU (Triton returns the compiled kernel): reading it says why it is empty."""

    def __init__(self, kernel_name: str) -> None:
        self._name = kernel_name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "result":
            raise AttributeError(name)
        raise needs_gpu(f"the program reads `.{name}` of the kernel {self._name}, which --no-gpu does not compile")


def _record_launch(hook: Any, jit_fn: Any, target: Any, args: tuple, kwargs: dict[str, Any], warmup: bool,
                   bound: Callable[[Any], None] | None = None) -> NotCompiled:
    """Triton's JITFunction.run up to the compile: bind and specialize the arguments for `target`, and give the
    capture hook the payload `jit_post_compile_hook` would get. `bound` receives the bound arguments (the grid)."""
    from triton import knobs
    from triton.runtime.jit import compute_cache_key, create_function_from_signature

    state = jit_fn.__dict__.get("_tritonlens_no_gpu")
    if state is None:
        from triton.compiler.compiler import make_backend

        backend = make_backend(target)
        binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
        state = jit_fn.__dict__["_tritonlens_no_gpu"] = (backend, binder, {}, {})
    backend, binder, key_cache, seen = state
    kwargs["debug"] = kwargs.get("debug", jit_fn.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound_args, specialization, options = binder(*args, **kwargs)
    key = compute_cache_key(key_cache, specialization, options)
    if key not in seen:
        options, signature, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound_args, specialization,
                                                                  options)
        jit_fn._call_hook(hook.post_compile, key, signature, 0, constexprs, options, [attrs], warmup)
        seen[key] = (NotCompiled(jit_fn.fn.__name__), getattr(hook.local, "last_identity", None))
    stub, ident = seen[key]
    hook.local.launched = None if warmup else ident
    if bound is not None:
        bound(bound_args)
    return stub


def install(hook: Any, target_text: str, interpret: bool = False) -> None:
    """Replace Triton's launch path in this process (see the module doc)."""
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    from .capture import _wrap_once

    target = gpu_target(target_text)
    driver.set_active(NoGpuDriver(target))
    if "torch" in sys.modules:
        guard_torch_cuda()

    def run_without_gpu(jit_fn, *args, grid, warmup, **kwargs):
        for pre in jit_fn.pre_run_hooks:
            pre(*args, **kwargs)
        call_grid = (lambda b: grid(b)) if callable(grid) and not warmup else None
        return _record_launch(hook, jit_fn, target, args, kwargs, warmup, call_grid)

    _wrap_once(JITFunction, "run", lambda _run: hook.wrap_run(run_without_gpu))
    if interpret:
        from triton.runtime.interpreter import InterpretedFunction

        def interpret_and_record(interp_run):
            def run(interp, *args, grid, warmup, **kwargs):
                shadow = interp.__dict__.get("_tritonlens_shadow")
                if shadow is None:  # the JITFunction triton.jit would have made: its params drive the binder
                    shadow = interp.__dict__["_tritonlens_shadow"] = JITFunction(interp.fn, **{
                        k: v for k, v in interp.kwargs.items()
                        if k in ("do_not_specialize", "do_not_specialize_on_alignment", "debug")})
                call_grid = (lambda b: grid(b)) if callable(grid) and not warmup else None
                _record_launch(hook, shadow, target, args, dict(kwargs), warmup, call_grid)
                return interp_run(interp, *args, grid=grid, warmup=warmup, **kwargs)

            return hook.wrap_run(run)

        _wrap_once(InterpretedFunction, "run", interpret_and_record)
