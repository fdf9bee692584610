"""`tritonlens capture --no-gpu`: the specializations a run launches, recorded on a machine without a GPU.

The specialization of a launch is a function of its arguments (dtypes, 16-byte alignment of data pointers, which
ints are 1 or multiples of 16, constexpr values, launch options), not of the GPU. So `JITFunction.run` is replaced
by one that does what Triton's own `run` does up to the compile — the same binder
(`create_function_from_signature` with the target's backend, so `native_specialize_impl` decides alignment and
divisibility), the same `_pack_args`, the same `_call_hook` payload — and then hands that payload to the capture
hook instead of compiling and launching. Outputs stay as allocated (zeros: device.answers). Heuristics run unchanged (they only wrap
`run`); the autotuner runs unchanged too, with a benchmarker that times nothing, so every config it would try
(after `prune_configs_by`: early_config_prune, perf_model/top_k) is recorded as a trial, and none is marked as
chosen unless it was the only one.

With `--interpret` the kernels really run, in Triton's interpreter (TRITON_INTERPRET=1), for programs whose later
launches depend on results; each launch is recorded the same way before the interpreter runs it.

The program sees one virtual GPU (`--gpu`, default the target's; device.answers): Triton's driver, torch.cuda's
queries (an SM count that shapes grids, rows per program) and the vendor's query tool answer as it, and tensors the
program asks for on the device are made on the CPU — a test suite written for `device="cuda"` runs its launches.
What needs real hardware is reported, never papered over: a use of torch.cuda beyond queries and allocations stops
the program with a message naming the call, and a compiled kernel's fields (n_regs, metadata) raise `NoGpuError`
saying so.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from ..device import answers as device_answers
from ..device.answers import gpu_target, user_frame
from ..device.run import run_devices
from ..device.virtual_gpu import GpuModel
from .patching import wrap_once

ENV_GPU = "TRITONLENS_CAPTURE_GPU"  # the virtual GPU a --no-gpu capture answers as (a virtual_gpu key)


class NoGpuError(RuntimeError):
    """The program asked for something only a GPU has, in a run recorded without one."""


def needs_gpu(what: str) -> NoGpuError:
    where = user_frame()
    msg = (f"tritonlens capture --no-gpu: the program needs a GPU at {where}\n  ({what}). The launches recorded "
           f"before it are kept. Device queries are answered as the virtual GPU and tensors asked for on the device "
           f"are made on the CPU, but this needs real hardware: capture on a GPU machine without --no-gpu, run the "
           f"kernels in Triton's interpreter (--interpret), or keep that call out of a --no-gpu run "
           f"(TRITONLENS_CAPTURE_NO_GPU is set in it).")
    if not getattr(needs_gpu, "said", False):  # printed once even if the program catches the error
        needs_gpu.said = True  # type: ignore[attr-defined]
        sys.stderr.write(msg + "\n")
    return NoGpuError(msg)


def answer_as(gpu_key: str | None, target_text: str) -> GpuModel:
    """Answer every device query of this process as the virtual GPU (`gpu_key`, else the target's default) and make
    the tensors asked for on the device on the CPU (device.answers). Triton's driver is answered when triton is
    imported, torch.cuda when torch is."""
    gpu = run_devices(target_text, gpu_key or "", local=False)[0].gpu  # this process is where the run starts
    device_answers.install(gpu, tensors="cpu", on_hardware=needs_gpu, tools=False, target=target_text)
    return gpu


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
    from triton.runtime.jit import JITFunction

    target = gpu_target(target_text)
    if device_answers.current() is None:  # the bootstrap installs them before the program runs
        answer_as(os.environ.get(ENV_GPU), target_text)

    def run_without_gpu(jit_fn, *args, grid, warmup, **kwargs):
        for pre in jit_fn.pre_run_hooks:
            pre(*args, **kwargs)
        call_grid = (lambda b: grid(b)) if callable(grid) and not warmup else None
        return _record_launch(hook, jit_fn, target, args, kwargs, warmup, call_grid)

    wrap_once(JITFunction, "run", lambda _run: hook.wrap_run(run_without_gpu))
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

        wrap_once(InterpretedFunction, "run", interpret_and_record)
