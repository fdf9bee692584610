"""`tritonlens capture -- CMD...`: run a program and record every distinct kernel compile it makes.

Each compile becomes one line of `.tritonlens/captures.jsonl` (format in the design doc): the kernel's signature,
constexpr values, divisibility attributes, options and target — exactly what `triton.compile` was given — plus,
when the kernel was launched, the launch itself (grid, scalar values, tensor shapes/strides/dtypes) so that
`tritonlens profile` can replay it. `check` and the language server then compile those specs instead of guessing.

How the hook reaches the program: the child process gets `TRITONLENS_CAPTURE=1` and a private folder on
PYTHONPATH whose `sitecustomize.py` installs the hook when (and only if) the program imports triton, and then runs
any sitecustomize it shadows. The same switch works for programs started another way:

    TRITONLENS_CAPTURE=1 PYTHONPATH=$(python -m tritonlens.gpu.capture --hook-path):$PYTHONPATH pytest

Hook used: triton >= 3.4 `triton.knobs.runtime.jit_post_compile_hook` (chained with any hook already set);
older triton `JITFunction.compiled_hook` / `cache_hook`. The launch is seen by wrapping `JITFunction.run`.
The file is locked while written (several processes may capture at once) and holds JSON only.

Every counted launch (no autotuner trial, no warmup) is also tallied by what it launched — grid, scalar values,
tensor shapes/strides/dtypes/alignment, as `describe_launch` gives them — per compile: the summary lines carry
`"launch_counts": [{"launch": {...}, "count": n}, ...]`, the most-launched distinct launches since the last flush
(at most MAX_LAUNCH_SHAPES; `launches` minus their counts launched in shapes not listed). A launch costs one tuple
key and a dict lookup; the description is made once per distinct launch (see bench/capture_overhead.py).

With `--time` (TRITONLENS_CAPTURE_TIME=1, on a GPU) the real launches are timed too; see `LaunchTimer`.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterator

from ..frontend.captures import CAPTURE_FILE, IDENTITY_FIELDS, MAX_LINE, bounded_lines, identity
from .patching import wrap_once

ENV_SWITCH = "TRITONLENS_CAPTURE"
ENV_FILE = "TRITONLENS_CAPTURE_FILE"  # where to append (absolute); default <workspace>/.tritonlens/captures.jsonl
ENV_ROOT = "TRITONLENS_WORKSPACE"  # the workspace root paths are made relative to; default cwd
ENV_DUMP = "TRITONLENS_CAPTURE_DUMP"  # optional folder: also write each compile's PTX/SASS-relevant asm there
ENV_PACKAGE_ROOT = "TRITONLENS_PACKAGE_ROOT"
ENV_NO_GPU = "TRITONLENS_CAPTURE_NO_GPU"  # a target (cuda:90): record launches without a GPU, for that target
ENV_INTERPRET = "TRITONLENS_CAPTURE_INTERPRET"  # with ENV_NO_GPU: run the kernels in Triton's interpreter
ENV_TALLY = "TRITONLENS_CAPTURE_TALLY"  # optional file: one line per new compile this run's processes wrote
ENV_TIME = "TRITONLENS_CAPTURE_TIME"  # "1": time a few real launches of each distinct launch (LaunchTimer)
VERSION = 2
MAX_LAUNCH_SHAPES = 16  # distinct launches a summary line lists per compile, the most launched first
_MAX_TRACKED = 64  # distinct launches tallied per compile between flushes; launches of further ones count as "other"
TIMED_PER_LAUNCH = 5  # launches timed per distinct launch with --time (the median is written)
# Launch counts are written this often, at exit and on SIGTERM; a compile's first launch and each new autotuner choice
# are written at once, so that a run killed outright (SIGKILL) still says what launched and what the autotuner chose.
FLUSH_EVERY_S = 10.0

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_capture_hook")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Options a capture keeps: those a user can set on a launch or in a Config (the rest follow from the target).
_KEPT_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                 "launch_pdl", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "debug", "sanitize_overflow")


# ---------------------------------------------------------------- records
def _jsonable(value: Any) -> Any:
    """Constexpr values as JSON: tl.constexpr unwrapped, dtypes by name; None when it cannot be represented."""
    if type(value).__name__ == "constexpr" and hasattr(value, "value"):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "dtype" or type(value).__module__.startswith("triton.language"):
        return str(value)  # tl.float16 -> "fp16"; never str() of other objects: a host TensorDescriptor's repr
        # prints its whole base tensor (a GPU read: 0.1 s a launch for an attention's q)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return None


def _index_name(path: Any, arg_names: list[str]) -> str | None:
    """`(2,)` -> the name of parameter 2; `(2, 0)` (element 0 of a tuple argument) -> `name[0]`."""
    if (isinstance(path, tuple) and path and all(isinstance(x, int) and x >= 0 for x in path)
            and path[0] < len(arg_names)):
        return arg_names[path[0]] + "".join(f"[{x}]" for x in path[1:])
    if isinstance(path, str):
        return path
    return None


def _target_string(target: Any) -> str | None:
    if target is None:
        return None
    backend = getattr(target, "backend", None)
    arch = getattr(target, "arch", None)
    if backend is None or arch is None:
        return None
    return f"{backend}:{arch}"


def relative_path(filename: str, root: str) -> str:
    filename = os.path.abspath(filename)
    try:
        rel = os.path.relpath(filename, root)
    except ValueError:
        return filename.replace(os.sep, "/")
    return filename.replace(os.sep, "/") if rel.startswith("..") else rel.replace(os.sep, "/")


def record_from_hook(*, jit_function: Any, compile: dict[str, Any], target: str | None, root: str,
                     triton_version: str) -> dict[str, Any] | None:
    """One capture line from what `jit_post_compile_hook` receives (`compile` is its `compile=` dict)."""
    fn = getattr(jit_function, "fn", None)
    code = getattr(fn, "__code__", None)
    if fn is None or code is None:
        return None
    arg_names = list(getattr(jit_function, "arg_names", []) or code.co_varnames[:code.co_argcount])
    signature_in = compile.get("signature") or {}
    if isinstance(signature_in, dict):
        signature = {str(k): str(v) for k, v in signature_in.items()}
    else:
        signature = dict(zip(arg_names, (str(v) for v in signature_in)))
    constants: dict[str, Any] = {}
    for path, value in (compile.get("constants") or {}).items():
        name = _index_name(path, arg_names)
        if name is not None:
            constants[name] = _jsonable(value)
    configs = compile.get("configs") or [{}]
    attrs: dict[str, dict[str, Any]] = {}
    for path, items in (configs[0] if configs else {}).items():
        name = _index_name(path, arg_names)
        if name is None:
            continue
        for item in items or []:
            if isinstance(item, (list, tuple)) and len(item) == 2 and item[0] == "tt.divisibility":
                attrs[name] = {"divisibility": int(item[1])}
    options: dict[str, Any] = {}
    spec_data = compile.get("specialization_data")
    if isinstance(spec_data, str):
        with contextlib.suppress(ValueError):
            options = {k: v for k, v in json.loads(spec_data).get("options", {}).items()
                       if k in _KEPT_OPTIONS and isinstance(v, (bool, int, float, str))}
    for k in ("num_warps", "num_stages", "num_ctas"):
        if isinstance(compile.get(k), int):
            options[k] = compile[k]
    rec: dict[str, Any] = {
        "version": VERSION,
        "path": relative_path(code.co_filename, root),
        "kernel": fn.__name__,
        "signature": signature,
        "constants": constants,
        "attrs": attrs,
        "options": options,
        "target": target,
        "triton_version": triton_version,
    }
    return rec


def describe_launch(arg_names: list[str], args: tuple, kwargs: dict[str, Any], grid: Any) -> dict[str, Any] | None:
    """Grid, scalar values and tensor geometry of one launch — enough to synthesize inputs and replay it."""
    if grid is None:
        return None
    try:
        grid_list = [int(g) for g in (grid if isinstance(grid, (list, tuple)) else (grid,))]
    except (TypeError, ValueError):
        return None
    values = dict(zip(arg_names, args))
    values.update({k: v for k, v in kwargs.items() if k in arg_names})
    out: dict[str, Any] = {}
    for name in arg_names:
        if name not in values:
            continue
        v = values[name]
        if hasattr(v, "data_ptr") and hasattr(v, "shape") and hasattr(v, "dtype"):
            try:
                out[name] = {"tensor": {"shape": [int(s) for s in v.shape], "stride": [int(s) for s in v.stride()],
                                        "dtype": str(v.dtype).removeprefix("torch."),
                                        "align16": int(v.data_ptr()) % 16 == 0}}
            except Exception:  # noqa: BLE001 — an exotic tensor type: keep the rest of the launch
                out[name] = {"unknown": type(v).__name__}
        elif v is None or isinstance(v, (bool, int, float, str)):
            out[name] = {"value": v}
        else:
            jv = _jsonable(v)
            out[name] = {"value": jv} if jv is not None else {"unknown": type(v).__name__}
    return {"grid": grid_list, "args": out}


_TENSOR_TYPES: set[type] = set()  # types seen to be tensors (data_ptr, shape, stride, dtype): the fast path


def _arg_key(v: Any) -> Any:
    """What `describe_launch` records of one argument, as a hashable value, made without building the description:
    this runs on every launch (a torch tensor: its shape, strides, dtype and 16-byte alignment, ~1 µs)."""
    t = type(v)
    if t is int or v is None:
        return v
    if t in _TENSOR_TYPES:
        return (v.shape, v.stride(), v.dtype, not v.data_ptr() & 15)
    if t is float or t is bool or t is str:
        return (t.__name__, v)
    if hasattr(v, "data_ptr") and hasattr(v, "shape"):
        try:
            key = (tuple(v.shape), tuple(v.stride()), v.dtype, not v.data_ptr() & 15)
            hash(key)
        except Exception:  # noqa: BLE001 — an exotic tensor type: described as "unknown"
            return (t.__name__,)
        if t.__module__.startswith("torch"):
            _TENSOR_TYPES.add(t)
        return key
    if t is tuple or t is list:
        return tuple(map(_arg_key, v))
    base = getattr(v, "base", None)
    if base is not None and hasattr(base, "data_ptr") and hasattr(v, "block_shape"):  # a host tensor descriptor
        return (t.__name__, _arg_key(base), tuple(getattr(v, "shape", ())), tuple(getattr(v, "strides", ())),
                tuple(v.block_shape))
    jv = _jsonable(v)
    return (t.__name__, json.dumps(jv) if isinstance(jv, list) else jv)


def launch_key(grid: Any, args: tuple, kwargs: dict[str, Any], _tensors: set = _TENSOR_TYPES) -> tuple | None:
    """A hashable key equal for two launches that `describe_launch` describes alike (grid, scalars, tensor geometry);
    None when the grid is unknown. It may still be unhashable (a grid of lists): the caller's lookup says so. Written
    as a plain loop with the common cases inline: it runs on every launch (~2 µs for 3 tensors and an int)."""
    if grid is None:
        return None
    parts = [tuple(grid) if type(grid) is list else grid]
    for v in args:
        t = type(v)
        if t in _tensors:
            parts.append((v.shape, v.stride(), v.dtype, not v.data_ptr() & 15))
        elif t is int:
            parts.append(v)
        else:
            parts.append(_arg_key(v))
    if kwargs:
        for kv in kwargs.items():
            parts.append(kv if type(kv[1]) is int else (kv[0], _arg_key(kv[1])))
    return tuple(parts)


# ---------------------------------------------------------------- the file
@contextlib.contextmanager
def _locked(f) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt locks a byte range
        import msvcrt

        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
        try:
            yield
        finally:
            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class CaptureWriter:
    """Appends capture lines to one file, once per distinct compile, across threads and processes.

    Every write happens under an exclusive lock on the file, as one `os.write` of whole lines to an O_APPEND
    descriptor, so concurrent writers (`pytest -n 16` under capture) neither lose nor interleave lines; a half line
    left by a killed process is ended before the next line, so it spoils only itself. What other processes wrote is
    read incrementally (from where this writer last stopped), line by line and bounded, to keep the dedupe exact."""

    def __init__(self, file: str, tally: str | None = None) -> None:
        self.file = file
        self.tally = tally  # a file that gets one line per compile this writer adds (the run's own count)
        self._seen: set[str] = set()
        self._scanned = 0  # bytes of the file already read into _seen
        self._lock = threading.Lock()

    def append(self, rec: dict[str, Any]) -> bool:
        """Write `rec` unless the file already holds the same compile. True when written."""
        ident = identity(rec)
        with self._lock:
            if ident in self._seen:
                return False
            with self._open() as f, _locked(f):
                self._scan(f)
                if ident in self._seen:
                    return False
                self._write(f, [rec])
            self._seen.add(ident)
        if self.tally:
            with contextlib.suppress(OSError):
                fd = os.open(self.tally, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, b"1\n")  # one small O_APPEND write: atomic among this run's processes
                finally:
                    os.close(fd)
        return True

    def append_records(self, recs: list[dict[str, Any]]) -> None:
        """Write `recs` as they are (count/choice records: several per compile are meant to be summed)."""
        if not recs:
            return
        with self._lock, self._open() as f, _locked(f):
            self._write(f, recs)

    def _open(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.file)), exist_ok=True)
        return open(self.file, "a+b")

    def _scan(self, f) -> None:
        size = f.seek(0, os.SEEK_END)
        if size < self._scanned:  # the file was truncated or replaced: read it all again
            self._scanned = 0
        f.seek(self._scanned)
        for line in bounded_lines(f):
            if len(line) > MAX_LINE or not line.endswith(b"\n"):
                continue
            with contextlib.suppress(ValueError, RecursionError, AttributeError, TypeError):
                obj = json.loads(line)
                if isinstance(obj, dict) and obj.get("record", "compile") == "compile":
                    self._seen.add(identity(obj))
        self._scanned = size

    def _write(self, f, recs: list[dict[str, Any]]) -> None:
        data = "".join(json.dumps(r, allow_nan=False, default=str) + "\n" for r in recs).encode("utf-8")
        size = f.seek(0, os.SEEK_END)
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:  # O_APPEND: every chunk lands at the end, and the lock keeps other writers out meanwhile
            view = view[os.write(f.fileno(), view):]
        if self._scanned == size:  # nothing unread before our lines: no need to read them back
            self._scanned = size + len(data)


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
            os.makedirs(self.dump_dir, exist_ok=True)
            stem = f"{rec['kernel']}-{identity(rec)}"
            for stage in ("ptx", "amdgcn", "ttgir"):
                if isinstance(asm.get(stage), str):
                    with open(os.path.join(self.dump_dir, f"{stem}.{stage}"), "w", encoding="utf-8") as f:
                        f.write(asm[stage])
            if isinstance(asm.get("cubin"), (bytes, bytearray)):
                with open(os.path.join(self.dump_dir, f"{stem}.cubin"), "wb") as f:
                    f.write(asm["cubin"])
            md = getattr(kernel, "metadata", None)
            n_regs = getattr(kernel, "n_regs", None)
            with open(os.path.join(self.dump_dir, f"{stem}.json"), "w", encoding="utf-8") as f:
                json.dump({"capture": rec, "n_regs": n_regs, "n_spills": getattr(kernel, "n_spills", None),
                           "shared": getattr(md, "shared", None)}, f, default=str)
        except Exception as exc:  # noqa: BLE001
            _warn(f"could not dump the compiled kernel: {type(exc).__name__}: {exc}")

    # ------------------------------------------------ the autotuner: which launches are trials, which the choice
    def autotune_role(self) -> tuple[str | None, Any]:
        """("trial", None) inside the autotuner's benchmark (or its warmup of every config); ("chosen", key) for the
        launch it makes with the config it picked; ("unknown", None) for that launch when no GPU measured the configs
        (the choice is the GPU's to make); (None, None) outside any autotuned launch."""
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
            frame = {"tuner": tuner, "key": _autotune_key(tuner, args, kwargs), "bench": False, "trials": 0}
            if hook.no_gpu_target:
                tuner.cache_results = False  # timings measured without a GPU are no timings: never cache them
            stack.append(frame)
            try:
                return run(tuner, *args, **kwargs)
            finally:
                stack.pop()

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
            try:
                return bench(tuner, *args, **kwargs)
            finally:
                frame["bench"] = was
                if frame["key"] is None and stack and stack[-1] is frame and not was:
                    stack.pop()

        trial.__tritonlens_capture__ = True  # type: ignore[attr-defined]
        return trial

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
                jkey = _jsonable(list(tune_key)) if tune_key is not None else None
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


def _launch_counts(dist: dict[tuple, list], times: dict[tuple, tuple]) -> list[dict[str, Any]]:
    """The `launch_counts` of a summary line: the most-launched distinct launches first (at most MAX_LAUNCH_SHAPES,
    and the timed ones), each with its count and, when timed, its median time and the number of timed launches."""
    items = {key: {"launch": launch, "count": count} for key, (count, launch) in dist.items()}
    for key, (launch, us, n) in times.items():
        item = items.setdefault(key, {"launch": launch, "count": 0})
        item.update(time_us=round(us, 3), timed=n)
    ranked = sorted(items.values(), key=lambda x: -x["count"])
    kept = ranked[:MAX_LAUNCH_SHAPES] + [x for x in ranked[MAX_LAUNCH_SHAPES:] if "timed" in x][:MAX_LAUNCH_SHAPES]
    while kept and len(json.dumps(kept, default=str)) > MAX_LINE // 4:  # a line readers accept, whatever the args
        kept.pop()
    return kept


SLEEP_CYCLES = 500_000  # torch.cuda._sleep before a timed launch: 0.25 ms at 2 GHz, longer than a host submission


class LaunchTimer:
    """`capture --time`: the GPU time of real launches, measured in the user's own run.

    For each distinct launch (launch_key: grid, scalars, tensor geometry) its first TIMED_PER_LAUNCH counted launches
    (no autotuner trial, no warmup, none made while a CUDA graph is being captured) get two CUDA timing events on the
    current stream — the one Triton launches on: the start recorded by Triton's `launch_enter_hook`, which the
    launcher calls after binding the arguments and right before its own argument checks and the driver's
    `cuLaunchKernelEx`, the end by `launch_exit_hook`, right after that call returns. Before the start event a spin
    of SLEEP_CYCLES GPU cycles (about 0.25 ms) is queued, so that the GPU is still busy when the host has submitted the
    launch: the start event fires when the spin ends, right before the kernel. (Without it, on a GPU left idle — a
    program that synchronizes after each launch, as tests do — the events measured the host's submission too: 40-100
    µs for kernels that run in 4.) The number written is the median over those launches of the time between the two
    events on the GPU, in µs: the kernel's run, with the data where the program left it (L2 warm or cold), and, with
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
        self._budget: dict[tuple, int] = {}  # launch_key -> launches timed so far
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
                done = self._budget.get(key, 0) if key is not None else TIMED_PER_LAUNCH
            except TypeError:  # an unhashable grid: counted (not described), never timed
                return
            local.launch_key = key
            if done >= TIMED_PER_LAUNCH or (not done and len(self._budget) >= self.MAX_KEYS):
                return
            if self.hook.autotune_role()[0] in ("trial", "unknown"):
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

    def collect(self, final: bool = False) -> dict[str, dict[tuple, tuple[dict[str, Any], float, int]]]:
        """identity -> {launch_key: (launch, median µs, timed launches)} for the distinct launches whose timed
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
        out: dict[str, dict[tuple, tuple[dict[str, Any], float, int]]] = {}
        with self._lock:
            self._pending = still + self._pending
            waiting = {(i, k) for i, k, _, _ in self._pending}
            for ik, xs in self._samples.items():
                if ik in self._written or not xs or ik in waiting:
                    continue
                if len(xs) >= TIMED_PER_LAUNCH or final:
                    out.setdefault(ik[0], {})[ik[1]] = (self._launches[ik], statistics.median(xs), len(xs))
                    self._written.add(ik)
        return out


def _autotune_key(tuner: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """The key Triton's Autotuner.run caches its choice under (its own computation, repeated); None with one config."""
    try:
        if len(tuner.configs) <= 1:
            return None
        all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
        named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
        key = [named[k] for k in tuner.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)
    except Exception:  # noqa: BLE001 — an autotuner of another triton version
        return None


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

    if no_gpu_target:
        from . import capture_nogpu

        capture_nogpu.install(hook, no_gpu_target, interpret=os.environ.get(ENV_INTERPRET, "") not in ("", "0"))
    else:
        _install_compile_hook(hook, JITFunction)
        wrap_once(JITFunction, "run", hook.wrap_run)
    with contextlib.suppress(ImportError):
        from triton.runtime.autotuner import Autotuner

        wrap_once(Autotuner, "run", hook.wrap_autotune_run)
        wrap_once(Autotuner, "_bench", hook.wrap_trials)
        wrap_once(Autotuner, "warmup", hook.wrap_trials)
    atexit.register(hook.flush, True)
    _exit_on_sigterm()
    _installed = hook
    return hook


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


# ---------------------------------------------------------------- the command
def child_env(file: str, root: str, dump_dir: str | None = None, base: dict[str, str] | None = None,
              no_gpu_target: str | None = None, interpret: bool = False, gpu: Any = None,
              timed: bool = False) -> dict[str, str]:
    """The command's environment. Without a GPU (`no_gpu_target`): the virtual GPU `gpu` (a GpuModel) it answers
    as, whose query tools (nvidia-smi, ...) come first on its PATH. `timed`: time real launches (LaunchTimer)."""
    from .capture_nogpu import ENV_GPU

    env = dict(os.environ if base is None else base)
    env[ENV_SWITCH] = "1"
    for key in (ENV_NO_GPU, ENV_INTERPRET, ENV_GPU, ENV_TIME):
        env.pop(key, None)
    if timed:
        env[ENV_TIME] = "1"
    if no_gpu_target:
        env[ENV_NO_GPU] = no_gpu_target
        if gpu is not None:
            from ..device.answers import put_tools_on_path

            env[ENV_GPU] = gpu.key
            put_tools_on_path(gpu, env)
    if interpret:
        env[ENV_INTERPRET] = env["TRITON_INTERPRET"] = "1"
    env[ENV_FILE] = os.path.abspath(file)
    env[ENV_ROOT] = os.path.abspath(root)
    env[ENV_PACKAGE_ROOT] = PACKAGE_ROOT
    if dump_dir:
        env[ENV_DUMP] = os.path.abspath(dump_dir)
    env["PYTHONPATH"] = os.pathsep.join([HOOK_DIR] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens capture",
                                description="Run a command and record the Triton kernels it compiles "
                                            "(and how they were launched) in .tritonlens/captures.jsonl.")
    p.add_argument("--workspace", metavar="DIR", help="workspace root (default: the current folder)")
    p.add_argument("--output", "-o", metavar="FILE", help="capture file (default: WORKSPACE/.tritonlens/captures.jsonl)")
    p.add_argument("--dump", metavar="DIR", help="also write each compile's PTX/cubin there (for comparisons)")
    p.add_argument("--no-gpu", action="store_true",
                   help="record the launches without a GPU: specialize each launch for --target as Triton would and "
                        "do not run the kernel (CPU tensors; see docs/gpu.md)")
    p.add_argument("--target", default=None, metavar="T",
                   help="with --no-gpu: the target the launches are specialized for (default cuda:90)")
    p.add_argument("--gpu", default=None, metavar="NAME",
                   help="with --no-gpu: the GPU the program sees (h100, h200, b200, a100, mi300x, ...; default the "
                        "target's; --target defaults to its arch)")
    p.add_argument("--interpret", action="store_true",
                   help="with --no-gpu: run the kernels in Triton's interpreter (TRITON_INTERPRET=1), for programs "
                        "whose later launches depend on results")
    p.add_argument("--time", action="store_true",
                   help="on a GPU: also record the GPU time of a few real launches of each distinct launch (CUDA "
                        "events around the driver's launch; what `tritonlens bench` compares its replay with)")
    p.add_argument("--hook-path", action="store_true",
                   help="print the folder to put on PYTHONPATH (with TRITONLENS_CAPTURE=1) and exit")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to run")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after the first `--` is the user's command, untouched
    if "--" in argv:
        cut = argv.index("--")
        own, cmd = argv[:cut], argv[cut + 1:]
    else:
        own, cmd = argv, None
    try:
        args = _parser().parse_args(own)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if args.hook_path:
        print(HOOK_DIR)
        return 0
    if cmd is None:
        cmd = args.cmd
    if not cmd:
        print("tritonlens capture: no command given; usage: tritonlens capture -- python train.py ...", file=sys.stderr)
        return 2
    no_gpu_target = gpu = None
    if args.time and args.no_gpu:
        print("tritonlens capture: --time measures real launches: it needs a GPU, not --no-gpu", file=sys.stderr)
        return 2
    if args.no_gpu or args.interpret or args.target or args.gpu:
        if not args.no_gpu:
            print("tritonlens capture: --target, --gpu and --interpret go with --no-gpu", file=sys.stderr)
            return 2
        from ..model import Target
        from ..device.virtual_gpu import for_target, lookup

        try:
            target_text = args.target or (lookup(args.gpu).target if args.gpu else "cuda:90")
            no_gpu_target = str(Target.parse(target_text))
            gpu = for_target(no_gpu_target, args.gpu)
        except ValueError as exc:
            print(f"tritonlens capture: {exc}", file=sys.stderr)
            return 2
    root = os.path.abspath(args.workspace or os.getcwd())
    file = os.path.abspath(args.output or os.path.join(root, CAPTURE_FILE))
    fd, tally = tempfile.mkstemp(prefix="tritonlens-capture-", suffix=".tally")
    os.close(fd)
    try:
        env = child_env(file, root, args.dump, no_gpu_target=no_gpu_target, interpret=args.interpret, gpu=gpu,
                        timed=args.time)
        env[ENV_TALLY] = tally
        code = _run_to_the_end(cmd, env)
        if code is None:
            print(f"tritonlens capture: command not found: {cmd[0]}", file=sys.stderr)
            return 127
        new = _count_lines(tally, compiles_only=False)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tally)
    after = _count_lines(file)
    how = ""
    if no_gpu_target:
        how = (f", specialized for {no_gpu_target} without a GPU, as the virtual {gpu.label()}; the kernels "
               + ("ran in Triton's interpreter" if args.interpret else "were not run"))
    stopped = f"; the program was stopped ({_signal_name(code)}), what it launched until then is kept" \
        if code in (130, 143) or code < 0 else ""
    print(f"tritonlens capture: {new} new compile(s) recorded by this run in {_shown(file)} ({after} in all{how})"
          f"{stopped}", file=sys.stderr)
    if args.interpret and code not in (0, 130):
        print(f"tritonlens capture: the program failed under Triton's interpreter (exit {code}); the launches "
              f"recorded before the failure are kept. The interpreter runs kernels on the CPU in numpy and does not "
              f"support everything the GPU does (see the traceback above); without --interpret the kernels are "
              f"recorded but not run", file=sys.stderr)
    # a signal death is reported the way a shell would (128 + signal)
    return code if code >= 0 else 128 - code


def _count_lines(file: str, compiles_only: bool = True) -> int:
    """Lines in the file; with `compiles_only`, compile lines (summary lines of counts are not compiles)."""
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            return sum(1 for line in bounded_lines(f)
                       if line.strip() and not (compiles_only and '"record": "summary"' in line))
    except OSError:
        return 0


def _run_to_the_end(cmd: list[str], env: dict[str, str]) -> int | None:
    """Run the user's command and wait for it, even when we are interrupted: Ctrl+C reaches the program itself (one
    process group) and a SIGTERM sent to us is passed on, so that it writes its launch counts before it ends. Its exit
    code (negative: killed by that signal); None when the command does not exist."""
    import signal

    try:
        proc = subprocess.Popen(cmd, env=env)
    except FileNotFoundError:
        return None

    def pass_on(signum, frame):
        with contextlib.suppress(OSError):
            proc.send_signal(signum)

    old = None
    with contextlib.suppress(ValueError):  # not the main thread: no handlers
        old = signal.signal(signal.SIGTERM, pass_on)
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue  # the program got the same Ctrl+C: let it finish writing
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def _signal_name(code: int) -> str:
    import signal

    num = -code if code < 0 else code - 128
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _shown(file: str) -> str:
    rel = os.path.relpath(file)
    return file if rel.startswith("..") else rel


if __name__ == "__main__":
    sys.exit(main())
