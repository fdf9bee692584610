"""The hook that runs inside the user's program (installed by the `sitecustomize` of `_capture_hook/`): Triton's
post-compile hook records each compile, the wrapped `JITFunction.run` counts launches per distinct launch and the
autotuner's choices, and with `--time` `LaunchTimer` times a few real launches of each. Summary lines are written at
exit, on SIGTERM and every FLUSH_EVERY_S."""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import threading
import time
from typing import Any, Callable

from ..frontend.captures import CAPTURE_FILE, IDENTITY_FIELDS, MAX_LINE, identity
from .capture_file import CaptureWriter
from .capture_record import (ENV_DUMP, ENV_FILE, ENV_INTERPRET, ENV_NO_GPU, ENV_ROOT, ENV_TALLY, ENV_TIME,
                             MAX_LAUNCH_SHAPES, TIMED_PER_LAUNCH, VERSION, _MAX_TRACKED, _target_string,
                             describe_launch, launch_key, record_from_hook, tuning_record)
from .patching import wrap_once
from ..launch_values import encode
from ..writes import make_folder, write_file

# Launch counts are written this often, at exit and on SIGTERM; a compile's first launch and each new autotuner choice
# are written at once, so that a run killed outright (SIGKILL) still says what launched and what the autotuner chose.
FLUSH_EVERY_S = 10.0
# What is running the launches now, in words ("launched by `test_add` in this file, no GPU"): set by an automatic
# capture (gpu/autocapture_run.py) before each launcher and test, written with each compile as `launched_by`.
LAUNCHED_BY: list[str] = [""]

# ---------------------------------------------------------------- the hook (runs inside the user's program)
class _Hook:
    """Records compiles (one line each), launch counts and autotuner choices (summary lines, at exit and every
    FLUSH_EVERY_S). `target` is set when recording without a GPU: the target the specializations were computed for."""

    def __init__(self, writer: CaptureWriter, root: str, dump_dir: str | None, target: str | None = None) -> None:
        self.writer = writer
        self.root = root
        self.dump_dir = dump_dir
        self.no_gpu_target = target
        self.local = threading.local()
        self._kernels: dict[int, tuple[Any, str]] = {}  # id(compiled kernel) -> (kernel, identity)
        self._counts: dict[str, dict[str, Any]] = {}  # identity -> the identity fields, launches, chosen keys
        self._counts_lock = threading.Lock()
        self._last_flush = time.monotonic()
        self.timer: LaunchTimer | None = None  # set by install() with --time
        import triton

        self.triton_version = getattr(triton, "__version__", "?")

    # jit_post_compile_hook(key, repr, fn, compile, is_manual_warmup, already_compiled)
    def post_compile(self, *, key=None, repr=None, fn=None, compile=None, is_manual_warmup=False,
                     already_compiled=False, **_: Any) -> None:
        self.local.last_identity = None
        try:
            jit_function = getattr(fn, "jit_function", fn)
            rec = record_from_hook(jit_function=jit_function, compile=compile or {}, target=self._target(),
                                   root=self.root, triton_version=self.triton_version)
            if rec is None:
                return
            role, _ = self.autotune_role()
            if role is not None:
                rec["autotune"] = "trial" if role == "unknown" else role
            if LAUNCHED_BY[0]:
                rec["launched_by"] = LAUNCHED_BY[0]
            if self.no_gpu_target:
                rec["no_gpu"] = True
                if self.gpu:
                    rec["gpu"] = self.gpu
            ident = self.local.last_identity = identity(rec)
            if not self.no_gpu_target:
                self._remember_kernel(jit_function, key, (compile or {}).get("device", 0), ident)
            self._dump(jit_function, key, compile or {}, rec)
            frames = getattr(self.local, "frames", None)
            if frames:
                frames[-1].append(rec)
            else:
                self.writer.append(rec)
                self.note_compile(rec)
        except Exception as exc:  # noqa: BLE001 — never break the user's program
            _warn(f"could not record a compile: {type(exc).__name__}: {exc}")

    @property
    def gpu(self) -> str | None:
        """The virtual GPU a run without one answers as (its virtual_gpu key)."""
        from ..device.answers import current

        gpu = current() if self.no_gpu_target else None
        return gpu.key if gpu is not None else None

    def _target(self) -> str | None:
        if self.no_gpu_target:
            return self.no_gpu_target
        try:
            from triton.runtime import driver

            return _target_string(driver.active.get_current_target())
        except Exception:  # noqa: BLE001
            return None

    def _remember_kernel(self, jit_function: Any, key: Any, device: Any, ident: str) -> None:
        """So that later launches, which hit Triton's cache and compile nothing, are counted for this compile."""
        with contextlib.suppress(Exception):
            kernel = jit_function.device_caches[device][0].get(key)
            if kernel is not None:
                self._kernels[id(kernel)] = (kernel, ident)

    def _dump(self, jit_function: Any, key: Any, compile: dict[str, Any], rec: dict[str, Any]) -> None:
        """Optional: the JIT's own PTX/AMDGCN next to the capture, to compare with a CPU replay."""
        if not self.dump_dir or self.no_gpu_target:
            return
        try:
            device = compile.get("device", 0)
            kernel = jit_function.device_caches[device][0].get(key)
            if hasattr(kernel, "result"):
                kernel = kernel.result()
            asm = getattr(kernel, "asm", {}) or {}
            folder = make_folder(self.dump_dir)  # what is written there never goes through a link out of it
            stem = f"{rec['kernel']}-{identity(rec)}"
            for stage in ("ptx", "amdgcn", "ttgir"):
                if isinstance(asm.get(stage), str):
                    write_file(os.path.join(folder, f"{stem}.{stage}"), asm[stage], folder)
            if isinstance(asm.get("cubin"), (bytes, bytearray)):
                write_file(os.path.join(folder, f"{stem}.cubin"), asm["cubin"], folder)
            md = getattr(kernel, "metadata", None)
            n_regs = getattr(kernel, "n_regs", None)
            write_file(os.path.join(folder, f"{stem}.json"),
                       json.dumps({"capture": rec, "n_regs": n_regs, "n_spills": getattr(kernel, "n_spills", None),
                                   "shared": getattr(md, "shared", None)}, default=str), folder)
        except Exception as exc:  # noqa: BLE001
            _warn(f"could not dump the compiled kernel: {type(exc).__name__}: {exc}")

    # ------------------------------------------------ the autotuner: which launches are trials, which the choice
    def autotune_role(self) -> tuple[str | None, Any]:
        """("trial", None) inside the autotuner's benchmark (or its warmup of every config); ("chosen", key) for the
        launch it makes with the config it picked; ("unknown", None) for that launch when no GPU measured the configs
        (the choice is the GPU's to make); (None, None) outside any autotuned launch."""
        if getattr(self.local, "unchosen", False):  # a kept kernel of an autotuned launch no GPU chose (no GPU)
            return "unknown", None
        stack = getattr(self.local, "tuning", None)
        if not stack:
            return None, None
        frame = stack[-1]
        if frame["bench"]:
            return "trial", None
        tuner, key = frame["tuner"], frame["key"]
        if self.no_gpu_target and key is not None and getattr(tuner, "_tritonlens_trials", {}).get(key, 0) > 1:
            return "unknown", None
        return "chosen", key

    def wrap_autotune_run(self, run: Callable) -> Callable:
        hook = self

        def autotune_and_note(tuner, *args, **kwargs):
            stack = hook.local.__dict__.setdefault("tuning", [])
            if stack and stack[-1]["tuner"] is tuner and not stack[-1]["bench"]:
                return run(tuner, *args, **kwargs)  # a subclass's run calling Autotuner.run: noted once, outside
            frame = {"tuner": tuner, "key": _autotune_key(tuner, args, kwargs), "bench": False, "trials": 0,
                     "measured": {}, "grid": None, "chosen_grid": None}
            if hook.no_gpu_target:
                tuner.cache_results = False  # timings measured without a GPU are no timings: never cache them
            before = tuner.__dict__.get("configs_timings")
            stack.append(frame)
            try:
                return run(tuner, *args, **kwargs)
            finally:
                stack.pop()
                after = tuner.__dict__.get("configs_timings")
                if after is not None and after is not before and not hook.no_gpu_target:
                    hook.note_tuning(tuner, frame, after, args, kwargs)

        autotune_and_note.__tritonlens_capture__ = True  # type: ignore[attr-defined]
        return autotune_and_note

    def wrap_trials(self, bench: Callable) -> Callable:
        """Autotuner._bench / .warmup: every launch inside is a trial of one config."""
        hook = self

        def trial(tuner, *args, **kwargs):
            stack = hook.local.__dict__.setdefault("tuning", [])
            frame = stack[-1] if stack and stack[-1]["tuner"] is tuner else None
            if frame is None:  # warmup() is called on its own
                frame = {"tuner": tuner, "key": None, "bench": False, "trials": 0}
                stack.append(frame)
            was, frame["bench"] = frame["bench"], True
            frame["trials"] += 1
            if frame["key"] is not None:
                trials = tuner.__dict__.setdefault("_tritonlens_trials", {})
                trials[frame["key"]] = max(trials.get(frame["key"], 0), frame["trials"])
            frame["grid"] = None
            started = time.perf_counter()
            try:
                return bench(tuner, *args, **kwargs)
            finally:
                frame["bench"] = was
                config = kwargs.get("config")
                if config is not None and "measured" in frame:  # _bench: its wall time (compile and timing runs)
                    frame["measured"][id(config)] = (time.perf_counter() - started, frame["grid"])
                if frame["key"] is None and stack and stack[-1] is frame and not was:
                    stack.pop()

        trial.__tritonlens_capture__ = True  # type: ignore[attr-defined]
        return trial

    def note_tuning(self, tuner: Any, frame: dict[str, Any], timings: dict[Any, Any], args: tuple,
                    kwargs: dict[str, Any]) -> None:
        """What the autotuner measured for one key (its own `configs_timings`, kept after its benchmark): one tuning
        line. Costs no GPU time: the times are the autotuner's; the grids and wall times were seen on the way."""
        try:
            jit_function = tuner.fn
            # down to the JITFunction: through @triton.heuristics (it has arg_names and fn too) and other wrappers
            for _ in range(8):
                if hasattr(jit_function, "arg_names") and hasattr(getattr(jit_function, "fn", None), "__code__"):
                    break
                jit_function = jit_function.fn
            rec = tuning_record(tuner=tuner, jit_function=jit_function, key=frame["key"], timings=timings,
                                measured=frame["measured"], chosen_grid=frame["chosen_grid"], args=args,
                                kwargs=kwargs, benchmarked=frame["trials"] > 0, target=self._target(),
                                root=self.root, triton_version=self.triton_version)
            if rec is not None:
                self.writer.append_records([rec])
        except Exception as exc:  # noqa: BLE001 — never break the user's program
            _warn(f"could not record the autotuner's timings: {type(exc).__name__}: {exc}")

    # ------------------------------------------------ launches
    def count_launch(self, ident: str | None, launch: tuple | None = None, key: tuple | None = None) -> None:
        """One launch of the compile `ident`, outside the autotuner's benchmark. `launch` is (arg_names, args,
        kwargs, grid), what `describe_launch` takes; `key` its launch_key when already made."""
        role, tune_key = self.autotune_role()
        if ident is None or role in ("trial", "unknown"):
            return
        if key is None and launch is not None:
            key = launch_key(launch[3], launch[1], launch[2])
        with self._counts_lock:
            entry = self._counts.get(ident)
            if entry is None:
                return
            entry["launches"] += 1
            if key is not None:
                try:
                    slot = entry["dist"].get(key)
                except TypeError:  # an unhashable grid: counted, not described
                    slot, key = None, None
                if slot is not None:
                    slot[0] += 1
                elif key is not None and len(entry["dist"]) < _MAX_TRACKED and launch is not None:
                    described = describe_launch(*launch)
                    if described is not None:
                        entry["dist"][key] = [1, described]
            news = not entry["written"]  # its first launch, or a choice of the autotuner not written yet
            if role == "chosen":
                news = news or not entry["chosen_written"]
                entry["chosen"] = entry["chosen_written"] = True
                jkey = encode(list(tune_key)) if tune_key is not None else None
                if jkey is not None and jkey not in entry["all_keys"]:
                    entry["all_keys"].append(jkey)
                    entry["keys"].append(jkey)
                    news = True
            entry["written"] = True
            due = news or time.monotonic() - self._last_flush > FLUSH_EVERY_S
        if due:
            self.flush()

    def note_compile(self, rec: dict[str, Any]) -> None:
        ident = identity(rec)
        with self._counts_lock:
            if ident not in self._counts:
                # launches, chosen, keys: since the last flush; written, chosen_written, all_keys: ever
                # dist: launch_key -> [count, describe_launch(...)] since the last flush
                self._counts[ident] = {"rec": {k: rec.get(k) for k in IDENTITY_FIELDS}, "launches": 0, "keys": [],
                                       "chosen": False, "no_gpu": bool(rec.get("no_gpu")), "written": False,
                                       "chosen_written": False, "all_keys": [], "dist": {}}

    def flush(self, final: bool = False) -> None:
        """Write what launched since the last flush: one summary line per compile (readers sum them), with the
        distinct launches it made and, with --time, the real launches' times read so far (`final`: at exit, waiting
        for the last timed launches to end)."""
        timed = self.timer.collect(final) if self.timer is not None else {}
        with self._counts_lock:
            self._last_flush = time.monotonic()
            out = []
            for ident, entry in self._counts.items():
                times = timed.pop(ident, {})
                if not entry["launches"] and not entry["chosen"] and not times:
                    continue
                rec = {"version": VERSION, "record": "summary", **entry["rec"], "triton_version": self.triton_version,
                       "launches": entry["launches"], "autotune": "chosen" if entry["chosen"] else None}
                if entry["keys"]:
                    rec["autotune_keys"] = entry["keys"]
                if entry["no_gpu"]:
                    rec["no_gpu"] = True
                    if self.gpu:
                        rec["gpu"] = self.gpu
                counts = _launch_counts(entry["dist"], times)
                if counts:
                    rec["launch_counts"] = counts
                out.append(rec)
                entry.update(launches=0, chosen=False, keys=[], dist={})
        try:
            self.writer.append_records(out)
        except Exception as exc:  # noqa: BLE001
            _warn(f"could not write launch counts: {type(exc).__name__}: {exc}")

    # wraps JITFunction.run: the compiles made by one launch get that launch's grid and arguments
    def wrap_run(self, run):
        hook = self

        def run_and_capture(jit_self, *args, grid=None, warmup=False, **kwargs):
            frames = getattr(hook.local, "frames", None)
            if frames is None:
                frames = hook.local.frames = []
            frames.append([])
            seen_grid: dict[str, Any] = {}
            call_grid = grid
            if callable(grid) and not warmup:
                def call_grid(meta, _grid=grid):
                    g = _grid(meta)
                    seen_grid.setdefault("grid", g)
                    return g
            elif grid is not None:
                seen_grid["grid"] = grid
            hook.local.launched = None
            timing = hook.timer is not None and not warmup
            if timing:  # what the launch hook needs to key the launch (its grid is known only inside `run`)
                hook.local.launch_ctx = (args, kwargs, seen_grid)
                hook.local.launch_key = hook.local.timed = None
            ret = None
            try:
                ret = run(jit_self, *args, grid=call_grid, warmup=warmup, **kwargs)
                return ret
            finally:
                recs = frames.pop()
                for rec in recs:
                    try:
                        if not warmup:
                            launch = describe_launch(list(jit_self.arg_names), args, kwargs, seen_grid.get("grid"))
                            if launch is not None:
                                rec["launch"] = launch
                        hook.writer.append(rec)
                        hook.note_compile(rec)
                    except Exception as exc:  # noqa: BLE001
                        _warn(f"could not record a launch: {type(exc).__name__}: {exc}")
                stack = getattr(hook.local, "tuning", None)
                if stack and not warmup:  # the grid of an autotuner's trial, or of its launch with the chosen config
                    slot = "grid" if stack[-1]["bench"] else "chosen_grid"
                    if stack[-1].get(slot, 0) is None:
                        stack[-1][slot] = seen_grid.get("grid")
                if not warmup:
                    known = hook._kernels.get(id(ret)) if ret is not None else None
                    ident = known[1] if known else getattr(hook.local, "launched", None)
                    key = timed = None
                    if timing:
                        key, timed = hook.local.launch_key, hook.local.timed
                        hook.local.launch_ctx = hook.local.launch_key = hook.local.timed = None
                        hook.local.timing_start = None  # a launch that raised between the two hooks
                    launch = (getattr(jit_self, "arg_names", ()), args, kwargs, seen_grid.get("grid"))
                    hook.count_launch(ident, launch, key)
                    if timed is not None and ident is not None and key is not None:
                        hook.timer.add(ident, key, launch, timed)

        run_and_capture.__tritonlens_capture__ = True  # type: ignore[attr-defined]
        return run_and_capture

    # wraps CompiledKernel.__getitem__: the launches a library makes with the compiled kernel it kept
    def wrap_compiled_launch(self, getitem):
        """`kernel[grid](*args)` on a CompiledKernel that `JITFunction.run` returned — how a library that caches the
        compiled kernel launches it after its first call (FlagGems' LibEntry: the first call goes through
        `JITFunction.run`, later ones call the kernel it kept). Counted and, with --time, timed like a launch through
        `run`. Triton's own `run` launches through `CompiledKernel.run`, never `__getitem__`: nothing is counted
        twice. A kernel no compile of this process recorded (loaded by other means) is left alone."""
        hook = self

        def getitem_and_capture(kernel, grid):
            runner = getitem(kernel, grid)
            known = hook._kernels.get(id(kernel))
            if known is None or known[0] is not kernel:
                return runner
            ident = known[1]
            fn = getattr(getattr(kernel, "src", None), "fn", None)
            arg_names = list(getattr(fn, "arg_names", None) or ())

            def launch_and_capture(*args, **kwargs):
                timing = hook.timer is not None
                if timing:  # what the launch hook keys the launch by, as for a launch through `run`
                    hook.local.launch_ctx = (args, {}, {"grid": grid})
                    hook.local.launch_key = hook.local.timed = None
                try:
                    return runner(*args, **kwargs)
                finally:
                    try:
                        key = timed = None
                        if timing:
                            key, timed = hook.local.launch_key, hook.local.timed
                            hook.local.launch_ctx = hook.local.launch_key = hook.local.timed = None
                            hook.local.timing_start = None
                        launch = (arg_names, args, {}, grid)
                        hook.count_launch(ident, launch, key)
                        if timed is not None and key is not None:
                            hook.timer.add(ident, key, launch, timed)
                    except Exception as exc:  # noqa: BLE001 — never break the user's launch
                        _warn(f"could not record a launch: {type(exc).__name__}: {exc}")

            return launch_and_capture

        getitem_and_capture.__tritonlens_capture__ = True  # type: ignore[attr-defined]
        return getitem_and_capture


def _launch_counts(dist: dict[tuple, list], times: dict[tuple, tuple]) -> list[dict[str, Any]]:
    """The `launch_counts` of a summary line: the most-launched distinct launches first (at most MAX_LAUNCH_SHAPES,
    and the timed ones), each with its count and, when timed, its median and minimum time and the number of timed
    launches."""
    items = {key: {"launch": launch, "count": count} for key, (count, launch) in dist.items()}
    for key, (launch, us, n, *low) in times.items():
        item = items.setdefault(key, {"launch": launch, "count": 0})
        item.update(time_us=round(us, 3), timed=n)
        if low:
            item["time_min_us"] = round(low[0], 3)
    ranked = sorted(items.values(), key=lambda x: -x["count"])
    kept = ranked[:MAX_LAUNCH_SHAPES] + [x for x in ranked[MAX_LAUNCH_SHAPES:] if "timed" in x][:MAX_LAUNCH_SHAPES]
    while kept and len(json.dumps(kept, default=str)) > MAX_LINE // 4:  # a line readers accept, whatever the args
        kept.pop()
    return kept


SLEEP_CYCLES = 500_000  # torch.cuda._sleep before a timed launch: 0.25 ms at 2 GHz, longer than a host submission


class LaunchTimer:
    """`capture --time`: the GPU time of real launches, measured in the user's own run.

    For each distinct launch (launch_key: grid, scalars, tensor geometry) its first counted launch is left untimed (the
    first launch of a compile loads the module, and a new launch finds its tensors cold in the TLB), and the next
    TIMED_PER_LAUNCH counted launches
    (no autotuner trial, no warmup, none made while a CUDA graph is being captured) get two CUDA timing events on the
    current stream — the one Triton launches on: the start recorded by Triton's `launch_enter_hook`, which the
    launcher calls after binding the arguments and right before its own argument checks and the driver's
    `cuLaunchKernelEx`, the end by `launch_exit_hook`, right after that call returns. Before the start event a spin
    of SLEEP_CYCLES GPU cycles (about 0.25 ms) is queued, so that the GPU is still busy when the host has submitted the
    launch: the start event fires when the spin ends, right before the kernel. (Without it, on a GPU left idle — a
    program that synchronizes after each launch, as tests do — the events measured the host's submission too: 40-100
    µs for kernels that run in 4.) The number written is the median over those launches of the time between the two
    events on the GPU, in µs (and their minimum, which says how wide their spread was: a launch timed too few times
    or with too wide a spread is shown but trusted by no estimate, see model.timing_reliable): the kernel's run, with the data where the program left it (L2 warm or cold), and, with
    programmatic dependent launch, the overlap with the kernel before. Not Triton's Python launch path, nor other
    streams' work. A launch whose host submission outlasts the spin (a pause of the process) still counts the wait:
    the median of several launches keeps such a one out.

    Events are read without waiting: at each flush those whose end has completed are read (cudaEventQuery); at exit the
    last ones are waited for, event by event. No device-wide synchronize, none per launch; a launch not timed costs a
    dict lookup."""

    MAX_KEYS = 1024  # distinct launches timed per process

    def __init__(self, hook: "_Hook") -> None:
        import torch

        self.torch = torch
        self.hook = hook
        self._budget: dict[tuple, int] = {}  # launch_key -> launches seen so far (the first is not timed)
        self._pending: list[tuple[str, tuple, Any, Any]] = []  # (identity, key, start event, end event)
        self._samples: dict[tuple[str, tuple], list[float]] = {}
        self._launches: dict[tuple[str, tuple], dict[str, Any]] = {}
        self._written: set[tuple[str, tuple]] = set()
        self._lock = threading.Lock()
        self.sleep_cycles = SLEEP_CYCLES

    def install(self) -> bool:
        """Add the launch hooks: to triton.knobs' hook chains (3.4+: ours runs last before the launch and first after
        it), else chained with CompiledKernel's (3.0-3.3). False when this triton has neither."""
        try:
            from triton import knobs

            enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
            if hasattr(enter, "add") and hasattr(leave, "add"):
                enter.add(self.enter)
                leave.add(self.exit)
                return True
            owner: Any = knobs.runtime
        except (ImportError, AttributeError):
            from triton.compiler.compiler import CompiledKernel as owner
        if not hasattr(owner, "launch_enter_hook"):
            return False
        prev_enter, prev_exit = owner.launch_enter_hook, owner.launch_exit_hook

        def enter(md, _prev=prev_enter):
            if _prev is not None:
                _prev(md)
            self.enter(md)

        def leave(md, _prev=prev_exit):
            self.exit(md)
            if _prev is not None:
                _prev(md)

        owner.launch_enter_hook, owner.launch_exit_hook = enter, leave
        return True

    def enter(self, metadata: Any = None) -> None:
        local = self.hook.local
        ctx = getattr(local, "launch_ctx", None)
        if ctx is None:  # not a launch through JITFunction.run (or already seen): nothing to key it by
            return
        local.launch_ctx = None
        try:
            args, kwargs, seen = ctx
            key = launch_key(seen.get("grid"), args, kwargs)
            try:
                done = self._budget.get(key, 0) if key is not None else TIMED_PER_LAUNCH + 1
            except TypeError:  # an unhashable grid: counted (not described), never timed
                return
            local.launch_key = key
            if done > TIMED_PER_LAUNCH or (not done and len(self._budget) >= self.MAX_KEYS):
                return
            if self.hook.autotune_role()[0] in ("trial", "unknown"):
                return
            if not done:  # its first launch: seen, not timed
                self._budget[key] = 1
                return
            cuda = self.torch.cuda
            if cuda.is_current_stream_capturing():
                return
            start = cuda.Event(enable_timing=True)
            spin = getattr(cuda, "_sleep", None)
            if spin is not None and self.sleep_cycles:
                # Keep the GPU busy until the launch is queued: the start event then fires when the spin ends, right
                # before the kernel, not when an idle GPU reached it while the host was still submitting.
                spin(self.sleep_cycles)
            start.record()
            self._budget[key] = done + 1
            local.timing_start = start
        except Exception as exc:  # noqa: BLE001 — never break the user's launch
            _warn(f"could not time a launch: {type(exc).__name__}: {exc}")

    def exit(self, metadata: Any = None) -> None:
        local = self.hook.local
        start = getattr(local, "timing_start", None)
        if start is None:
            return
        local.timing_start = None
        try:
            end = self.torch.cuda.Event(enable_timing=True)
            end.record()
            local.timed = (start, end)
        except Exception as exc:  # noqa: BLE001
            _warn(f"could not time a launch: {type(exc).__name__}: {exc}")

    def add(self, ident: str, key: tuple, launch: tuple, events: tuple[Any, Any]) -> None:
        """A timed launch of the compile `ident`; `launch` is what describe_launch takes (made once per key)."""
        with self._lock:
            if (ident, key) not in self._launches:
                described = describe_launch(*launch)
                if described is None:
                    return
                self._launches[(ident, key)] = described
            self._pending.append((ident, key, *events))

    def collect(self, final: bool = False) -> dict[str, dict[tuple, tuple[dict[str, Any], float, int, float]]]:
        """identity -> {launch_key: (launch, median µs, timed launches, min µs)} for the distinct launches whose timed
        launches have all ended (`final`: all of them, waiting for the last), each given once."""
        import statistics

        with self._lock:
            pending, self._pending = self._pending, []
        still = []
        for ident, key, start, end in pending:
            try:
                if not end.query():
                    if not final:
                        still.append((ident, key, start, end))
                        continue
                    end.synchronize()
                self._samples.setdefault((ident, key), []).append(start.elapsed_time(end) * 1000.0)
            except Exception as exc:  # noqa: BLE001 — a context gone at exit: that sample is lost
                _warn(f"could not read a launch's time: {type(exc).__name__}: {exc}")
        out: dict[str, dict[tuple, tuple[dict[str, Any], float, int, float]]] = {}
        with self._lock:
            self._pending = still + self._pending
            waiting = {(i, k) for i, k, _, _ in self._pending}
            for ik, xs in self._samples.items():
                if ik in self._written or not xs or ik in waiting:
                    continue
                if len(xs) >= TIMED_PER_LAUNCH or final:
                    out.setdefault(ik[0], {})[ik[1]] = (self._launches[ik], statistics.median(xs), len(xs), min(xs))
                    self._written.add(ik)
        return out


def _autotune_key(tuner: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """The key Triton's Autotuner.run caches its choice under (its own computation, repeated); None with one config."""
    try:
        if len(tuner.configs) <= 1:
            return None
        all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
        named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
        own = getattr(type(tuner), "get_key", None)
        if callable(own):  # a library's autotuner with its own key (FlagGems' LibTuner: rounded by a strategy)
            key = own(tuner, named)
            return tuple(key) if isinstance(key, (tuple, list)) else None
        key = [named[k] for k in tuner.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)
    except Exception:  # noqa: BLE001 — an autotuner of another triton version
        return None


def _wrap_subclass_runs(autotuner: type, hook: "_Hook") -> None:
    """A library's autotuner that overrides `run` (FlagGems' LibTuner benchmarks in its own run, with its own cache)
    is noted as Triton's is: the subclasses defined so far, and every one defined later (at the library's import)."""
    def wrap(cls: type) -> None:
        if "run" in cls.__dict__:
            wrap_once(cls, "run", hook.wrap_autotune_run)

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            wrap(sub)
            walk(sub)

    walk(autotuner)
    previous = autotuner.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kwargs):
        if isinstance(previous, classmethod):
            previous.__func__(cls, **kwargs)
        else:
            super(autotuner, cls).__init_subclass__(**kwargs)
        wrap(cls)

    autotuner.__init_subclass__ = classmethod(init_subclass)  # type: ignore[method-assign]


def _warn(msg: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"tritonlens capture: {msg}\n")


_installed: _Hook | None = None


def install(file: str | None = None, root: str | None = None, dump_dir: str | None = None,
            no_gpu_target: str | None = None) -> _Hook:
    """Install the capture hook in this process (triton must be importable). Idempotent. With `no_gpu_target`
    (or TRITONLENS_CAPTURE_NO_GPU) launches are recorded for that target and not run (see capture_nogpu)."""
    global _installed
    if _installed is not None:
        return _installed
    root = os.path.abspath(root or os.environ.get(ENV_ROOT) or os.getcwd())
    file = file or os.environ.get(ENV_FILE) or os.path.join(root, CAPTURE_FILE)
    no_gpu_target = no_gpu_target or os.environ.get(ENV_NO_GPU) or None
    hook = _Hook(CaptureWriter(file, os.environ.get(ENV_TALLY) or None), root, dump_dir or os.environ.get(ENV_DUMP) or None, no_gpu_target)
    from triton.runtime.jit import JITFunction

    if os.environ.get(ENV_TIME, "") not in ("", "0") and not no_gpu_target:
        try:
            timer = LaunchTimer(hook)
            if timer.install():
                hook.timer = timer
            else:
                _warn("--time: this triton has no launch hooks; launches are counted, not timed")
        except Exception as exc:  # noqa: BLE001 — no torch, no CUDA: count without times
            _warn(f"--time: launches are counted, not timed: {type(exc).__name__}: {exc}")

    with contextlib.suppress(ImportError):
        import triton.runtime.jit as triton_jit

        wrap_once(triton_jit, "serialize_specialization_data", _serialize_or_skip)
    if no_gpu_target:
        from . import capture_nogpu

        capture_nogpu.install(hook, no_gpu_target, interpret=os.environ.get(ENV_INTERPRET, "") not in ("", "0"))
    else:
        _install_compile_hook(hook, JITFunction)
        wrap_once(JITFunction, "run", hook.wrap_run)
        with contextlib.suppress(ImportError, AttributeError):
            from triton.compiler.compiler import CompiledKernel

            wrap_once(CompiledKernel, "__getitem__", hook.wrap_compiled_launch)
    with contextlib.suppress(ImportError):
        from triton.runtime.autotuner import Autotuner

        wrap_once(Autotuner, "run", hook.wrap_autotune_run)
        wrap_once(Autotuner, "_bench", hook.wrap_trials)
        wrap_once(Autotuner, "warmup", hook.wrap_trials)
        _wrap_subclass_runs(Autotuner, hook)
    atexit.register(hook.flush, True)
    _exit_on_sigterm()
    _installed = hook
    return hook


def _serialize_or_skip(serialize: Callable) -> Callable:
    """Triton serializes a compile's specialization for a compile hook (ours) with `json.dumps`, which raises on a
    constexpr JSON cannot say (a `@triton.jit` function passed as `ACT`): under capture, such a launch would fail in
    the user's program. Then the hook gets the options alone; the record marks that constexpr unrecorded
    (launch_values)."""
    def serialize_or_options(name, signature, constants, attrs, options, key):
        try:
            return serialize(name, signature, constants, attrs, options, key)
        except (TypeError, ValueError):
            return json.dumps({"name": name, "options": getattr(options, "__dict__", {})}, default=lambda _: None)

    serialize_or_options.__tritonlens_capture__ = True  # type: ignore[attr-defined]
    return serialize_or_options


def _exit_on_sigterm() -> None:
    """A run stopped by SIGTERM (a time-out, a job scheduler) writes its launch counts first: Python runs no atexit on
    a signal's default action. SIGTERM then ends the program as Ctrl+C does, by an exception (SystemExit, status
    128 + 15), so that locks held at that moment are released and atexit flushes — a flush inside the handler could
    wait forever on a lock its own thread holds. A handler the program set itself is left alone, and so is an ignored
    SIGTERM. Only the main thread may set handlers: imported elsewhere, the incremental writes must do."""
    import signal

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, stop)
    except (ValueError, OSError, AttributeError):
        pass


def _install_compile_hook(hook: _Hook, JITFunction: Any) -> None:
    try:
        from triton import knobs
    except ImportError:
        knobs = None
    if knobs is not None and hasattr(knobs.runtime, "jit_post_compile_hook"):
        previous = knobs.runtime.jit_post_compile_hook

        def chained(**kw):
            hook.post_compile(**kw)
            if previous is not None:
                return previous(**kw)
            return None

        knobs.runtime.jit_post_compile_hook = chained
    elif hasattr(JITFunction, "compiled_hook"):  # triton 3.0-3.3: called after each compile
        previous_old = JITFunction.compiled_hook

        def chained_old(*a, **kw):
            hook.post_compile(**kw)
            return previous_old(*a, **kw) if previous_old is not None else False

        JITFunction.compiled_hook = chained_old
    else:  # older still: called before each compile; returning False lets the compile go on
        previous_old = getattr(JITFunction, "cache_hook", None)

        def chained_cache(*a, **kw):
            hook.post_compile(**kw)
            return previous_old(*a, **kw) if previous_old is not None else False

        JITFunction.cache_hook = chained_cache


def install_on_import() -> None:
    """What the bootstrap calls: install now if triton is loaded, else as soon as it is imported. Without a GPU,
    the process answers as the virtual GPU from the start (capture_nogpu.answer_as): torch.cuda as soon as torch is
    imported, Triton's driver as soon as triton is."""
    if os.environ.get(ENV_NO_GPU):
        from .capture_nogpu import ENV_GPU, answer_as

        answer_as(os.environ.get(ENV_GPU), os.environ[ENV_NO_GPU])
    if "triton" in sys.modules and hasattr(sys.modules["triton"], "jit"):
        install()
        return
    from ..device.answers import when_imported

    when_imported("triton", install)
