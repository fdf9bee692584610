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
the program with a message naming the call. What a launch or `kernel.warmup(...)` returns is the compiled kernel a
program sizes its launch from (`n_regs`, `metadata.shared`, `_init_handles()`, then `kernel[grid](...)`, as Triton's
fused-softmax tutorial does): it is compiled on the CPU for the target when the program first reads it, its registers
and spills read from the cubin, and launching it records the launch like any other.

The program's checks of its results pass: without a GPU no kernel computes anything, so `torch.allclose`,
`torch.testing.assert_close`, `torch.equal`, `numpy.testing.assert_allclose` (and `triton.testing.assert_close`)
comparing an output with its reference say nothing — answered as equal, a test goes on to its next launches (the
backward pass after the forward's check, a tutorial's next kernel) instead of stopping at its first check. Not with
`--interpret`, where the kernels really run.

Benchmarks run too, without timing anything: `triton.testing.do_bench` calls the function once and returns NaN for
every time asked, and a `@triton.testing.perf_report` benchmark's `.run()` calls it for a few of its points (the
largest first: the shapes a benchmark chooses are the production ones) and every line (Triton's first), without
plotting or tables.
"""
from __future__ import annotations

import contextlib
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


BENCH_POINTS = 3  # points of a perf_report benchmark's x axis a --no-gpu run calls (the largest, smallest, middle)


class NotCompiled:
    """What a launch returns without a GPU (Triton returns the compiled kernel): compiled on the CPU for the target when
    the program reads it (`n_regs`, `metadata`, `asm`), launched again as a recorded launch (`kernel[grid](...)`);
    what only a loaded binary has (its module, its function handle) says why it is empty."""

    _FIELDS = ("metadata", "asm", "name", "hash", "src", "packed_metadata", "kernel", "metadata_group")

    def __init__(self, kernel_name: str, compile_now: Callable[[], Any] | None = None,
                 relaunch: Callable[..., Any] | None = None) -> None:
        self._name = kernel_name
        self._compile_now = compile_now
        self._relaunch = relaunch
        self._compiled: Any = None
        self._resources: dict[str, int] | None = None

    def _kernel(self, what: str) -> Any:
        if self._compiled is None:
            if self._compile_now is None:
                raise needs_gpu(f"the program reads `{what}` of the kernel {self._name}, which --no-gpu cannot compile")
            self._compiled = self._compile_now()
        return self._compiled

    def _init_handles(self) -> None:
        """What loading the binary tells a program: registers, spills and the most threads a block may have — read
        from the cubin ptxas made on the CPU (cuobjdump -res-usage), as the driver would report them."""
        if self._resources is not None:
            return
        kernel = self._kernel("_init_handles()")
        cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
        if not isinstance(cubin, bytes):
            raise needs_gpu(f"the program loads the kernel {self._name}: only a CUDA cubin's resources are read here")
        from ..ir.sass import resource_usage

        usage = resource_usage(cubin)
        regs = int(usage.get("REG") or 0)
        per_block = max(32, min(1024, (65536 // max(1, regs)) // 32 * 32)) if regs else 1024
        self._resources = {"n_regs": regs, "n_spills": int(usage.get("LOCAL") or 0) // 4, "n_max_threads": per_block}

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        if self._relaunch is None:
            raise needs_gpu(f"the program launches the compiled kernel {self._name} itself")
        relaunch = self._relaunch

        def runner(*args: Any, stream: Any = None) -> Any:
            return relaunch(tuple(grid) if isinstance(grid, (list, tuple)) else (grid,), args)

        return runner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "result":
            raise AttributeError(name)
        if name in ("n_regs", "n_spills", "n_max_threads"):
            self._init_handles()
            return (self._resources or {})[name]
        if name in self._FIELDS:
            return getattr(self._kernel(f".{name}"), name)
        raise needs_gpu(f"the program reads `.{name}` of the kernel {self._name}, which needs it loaded on a GPU")


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
        launch_options = {k: kwargs[k] for k in kwargs if k not in jit_fn.arg_names}
        options, signature, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound_args, specialization,
                                                                  options)
        jit_fn._call_hook(hook.post_compile, key, signature, 0, constexprs, options, [attrs], warmup)

        def compile_now(_sig=signature, _const=constexprs, _attrs=attrs, _opts=options):
            from triton.compiler import ASTSource
            from triton.compiler import compile as triton_compile

            return triton_compile(ASTSource(jit_fn, _sig, _const, _attrs), target=target, options=_opts.__dict__)

        def relaunch(grid, call_args, _opts=launch_options):
            # the compiled kernel launched by hand: the same specialization, with the options it was compiled with
            return jit_fn.run(*call_args, grid=grid, warmup=False, **_opts)

        seen[key] = (NotCompiled(jit_fn.fn.__name__, compile_now, relaunch), getattr(hook.local, "last_identity", None))
    stub, ident = seen[key]
    hook.local.launched = None if warmup else ident
    if not warmup and hook.autotune_role()[0] == "unknown":
        # the autotuner's launch with a config no GPU chose: a library that keeps this kernel and launches it again
        # (FlagGems' LibEntry) launches the GPU's choice, which is unknown here — those launches count for no config
        stub = NotCompiled(jit_fn.fn.__name__, stub._compile_now, _unchosen(hook, stub._relaunch))
    if bound is not None:
        bound(bound_args)
    return stub


def _unchosen(hook: Any, relaunch: Callable[..., Any] | None) -> Callable[..., Any] | None:
    if relaunch is None:
        return None

    def relaunch_unchosen(grid, call_args):
        was, hook.local.unchosen = getattr(hook.local, "unchosen", False), True
        try:
            return relaunch(grid, call_args)
        finally:
            hook.local.unchosen = was

    return relaunch_unchosen


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
    _benchmarks_without_timing()
    if not interpret:
        device_answers.when_imported("torch", _torch_comparisons_pass)
        device_answers.when_imported("numpy", _numpy_comparisons_pass)
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


def _no_bench(fn: Callable[[], Any], *_: Any, quantiles: Any = None, return_mode: str = "mean", **__: Any) -> Any:
    """`triton.testing.do_bench` without a GPU: the function runs once (its launches are recorded), no time is known
    (NaN: one per quantile asked, one sample for `return_mode="all"`)."""
    fn()
    nan = float("nan")
    if quantiles:
        return [nan] * len(quantiles)
    return [nan] if return_mode == "all" else nan


def _bench_points(values: list) -> list:
    """The points of a benchmark's axis to call: the largest (the production shape a benchmark is written for), the
    smallest, one between — at most BENCH_POINTS."""
    if len(values) <= BENCH_POINTS:
        return list(values)
    picks = [len(values) - 1, 0] + [len(values) // 2]
    return [values[i] for i in picks[:BENCH_POINTS]]


def _run_marks(mark: Any, *_: Any, **__: Any) -> None:
    """`perf_report(...)(fn).run(...)` without a GPU: call `fn` at a few points of each benchmark for every line, and
    neither plot nor print (nothing was timed)."""
    benches = mark.benchmarks if isinstance(mark.benchmarks, list) else [mark.benchmarks]
    for bench in benches:
        names = list(getattr(bench, "line_names", None) or bench.line_vals)
        # the lines that launch Triton kernels first (a reference such as cuBLAS's fp16 matmul crawls on a CPU)
        lines = [y for _, y in sorted(enumerate(bench.line_vals), key=lambda iy: "triton" not in (
            f"{iy[1]} {names[iy[0]] if iy[0] < len(names) else ''}").lower())]
        for x in _bench_points(list(bench.x_vals)):
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            for y in lines:
                try:
                    mark.fn(**dict(zip(bench.x_names, xs)), **{bench.line_arg: y}, **dict(bench.args or {}))
                except NoGpuError:
                    raise
                except Exception as exc:  # noqa: BLE001 — a point's failure (a provider not installed) ends it
                    sys.stderr.write(f"tritonlens capture --no-gpu: benchmark {getattr(mark.fn, '__name__', '?')} at "
                                     f"{x}, {y}: {type(exc).__name__}: {exc}\n")


def _benchmarks_without_timing() -> None:
    from triton import testing

    for name in ("do_bench", "do_bench_cudagraph"):
        if hasattr(testing, name):
            setattr(testing, name, _no_bench)
    if hasattr(testing, "Mark"):
        testing.Mark.run = _run_marks


def _equal(*_: Any, **__: Any) -> bool:
    return True


def _no_mismatch(*_: Any, **__: Any) -> None:
    return None


def _torch_comparisons_pass() -> None:
    """Outputs were never computed (see the module doc): comparing them with a reference passes."""
    import torch

    def isclose(a: Any, b: Any, *_: Any, **__: Any) -> Any:
        shape = torch.broadcast_shapes(getattr(a, "shape", ()), getattr(b, "shape", ()))
        return torch.ones(shape, dtype=torch.bool, device="cpu")

    torch.allclose = _equal
    torch.equal = _equal
    torch.isclose = isclose
    torch.Tensor.allclose = _equal
    torch.Tensor.equal = _equal
    torch.testing.assert_close = _no_mismatch
    if hasattr(torch.testing, "assert_allclose"):
        torch.testing.assert_allclose = _no_mismatch
    with contextlib.suppress(ImportError, AttributeError):
        import triton.testing

        triton.testing.assert_close = _no_mismatch


def _numpy_comparisons_pass() -> None:
    import numpy

    for name in ("assert_allclose", "assert_array_almost_equal", "assert_almost_equal", "assert_array_equal",
                 "assert_equal"):
        if hasattr(numpy.testing, name):
            setattr(numpy.testing, name, _no_mismatch)
    numpy.allclose = _equal
