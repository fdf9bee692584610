"""The capture record: one JSON line per distinct compile, made from what Triton's compile hook was given (signature,
constexprs, divisibility attributes, options, target) and the launch (grid, scalar values, tensor shapes, strides,
dtypes: `describe_launch`); `launch_key` tells distinct launches apart cheaply. Also the environment variables the
`capture` command passes to the hook in the user's program. Pure: no file, no triton import."""
from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from ..launch_values import encode, is_unrecorded_encoded


ENV_SWITCH = "TRITONLENS_CAPTURE"
ENV_FILE = "TRITONLENS_CAPTURE_FILE"  # where to append (absolute); default <workspace>/.tritonlens/captures.jsonl
ENV_ROOT = "TRITONLENS_WORKSPACE"  # the workspace root paths are made relative to; default cwd
ENV_DUMP = "TRITONLENS_CAPTURE_DUMP"  # optional folder: also write each compile's PTX/SASS-relevant asm there
ENV_PACKAGE_ROOT = "TRITONLENS_PACKAGE_ROOT"
ENV_NO_GPU = "TRITONLENS_CAPTURE_NO_GPU"  # a target (cuda:90): record launches without a GPU, for that target
ENV_INTERPRET = "TRITONLENS_CAPTURE_INTERPRET"  # with ENV_NO_GPU: run the kernels in Triton's interpreter
ENV_TALLY = "TRITONLENS_CAPTURE_TALLY"  # optional file: one line per new compile this run's processes wrote
ENV_TIME = "TRITONLENS_CAPTURE_TIME"  # "1": time a few real launches of each distinct launch (LaunchTimer)
VERSION = 2  # compile and summary lines (unchanged since version 2: readers of version 2 keep reading them)
TUNING_VERSION = 3  # the tuning line, added in version 3
MAX_TUNING_CONFIGS = 512  # configs a tuning line lists (the frontend reader's bound too)
MAX_LAUNCH_SHAPES = 16  # distinct launches a summary line lists per compile, the most launched first
_MAX_TRACKED = 64  # distinct launches tallied per compile between flushes; launches of further ones count as "other"
TIMED_PER_LAUNCH = 10  # launches timed per distinct launch with --time, after its first (median and minimum written)

# Options a capture keeps: those a user can set on a launch or in a Config (the rest follow from the target).
_KEPT_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                 "launch_pdl", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "debug", "sanitize_overflow")


# ---------------------------------------------------------------- records
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
            constants[name] = encode(value)
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


def _tensor_fields(v: Any) -> dict[str, Any]:
    return {"shape": [int(s) for s in v.shape], "stride": [int(s) for s in v.stride()],
            "dtype": str(v.dtype).removeprefix("torch."), "align16": int(v.data_ptr()) % 16 == 0}


def _is_descriptor(v: Any) -> bool:
    """A host tensor descriptor (triton.tools.tensor_descriptor.TensorDescriptor, Gluon's): a base tensor, the
    shape and strides the kernel addresses through it, and the block it moves per load or store (TMA)."""
    base = getattr(v, "base", None)
    return base is not None and hasattr(base, "data_ptr") and hasattr(v, "block_shape") and hasattr(v, "strides")


def descriptor_fields(v: Any) -> dict[str, Any]:
    """What a capture keeps of a host tensor descriptor: its base tensor (as a tensor argument is kept), its shape,
    strides and block shape, and its padding where it says one. Never its repr (it prints the base tensor's values:
    a GPU read)."""
    out: dict[str, Any] = {"base": _tensor_fields(v.base), "shape": [int(s) for s in v.shape],
                           "strides": [int(s) for s in v.strides], "block_shape": [int(s) for s in v.block_shape]}
    padding = getattr(v, "padding", None)
    if isinstance(padding, str):
        out["padding"] = padding
    return out


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
                out[name] = {"tensor": _tensor_fields(v)}
            except Exception:  # noqa: BLE001 — an exotic tensor type: keep the rest of the launch
                out[name] = {"unknown": type(v).__name__}
                continue
            index = index_values(v)
            if index is not None:
                out[name]["tensor"]["values"] = index
        elif _is_descriptor(v):
            try:
                out[name] = {"descriptor": descriptor_fields(v)}
            except Exception:  # noqa: BLE001 — a descriptor of another triton version: keep the rest
                out[name] = {"unknown": type(v).__name__}
        else:  # a scalar, a tuple, a dtype: as launch_values writes it; what it cannot say is marked, not dropped
            jv = encode(v)
            out[name] = {"unknown": type(v).__name__} if is_unrecorded_encoded(jv) else {"value": jv}
    return {"grid": grid_list, "args": out}


MAX_INDEX_VALUES = 512  # elements of an integer tensor whose values a launch's description keeps


def index_values(v: Any) -> list[int] | None:
    """The values of a small integer tensor argument (at most MAX_INDEX_VALUES elements: an MoE kernel's expert
    offsets, a ragged batch's row starts), which the kernel may load to bound its loops: what the cost model needs to
    count those loops' trips (ir/counts.py). Read once per distinct launch (describe_launch), a copy to the host for a
    GPU tensor; None for any other tensor, and while a CUDA graph is being captured (no copy may run then)."""
    try:
        if v.dtype.is_floating_point or v.dtype.is_complex or str(v.dtype) == "torch.bool" \
                or v.numel() > MAX_INDEX_VALUES:
            return None
        if getattr(v, "is_cuda", False) and _graph_capturing():
            return None
        return [int(x) for x in v.reshape(-1).tolist()]
    except Exception:  # noqa: BLE001 — not a torch tensor, or one that cannot be read: no values
        return None


def _graph_capturing() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 — no CUDA here (a no-GPU capture's tensors only say they are on it)
        return False


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
        return (t.__name__, v) if v == v else ("float", "nan")  # every NaN the same launch
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
    return (t.__name__, json.dumps(encode(v), sort_keys=True))


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


def config_fields(config: Any) -> dict[str, Any]:
    """A triton.Config as a tuning line lists it: its kwargs (launch_values) and the options it sets."""
    out: dict[str, Any] = {"kwargs": {str(k): encode(v) for k, v in (getattr(config, "kwargs", None) or {}).items()}}
    for opt in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(config, opt, None)
        if isinstance(v, int) and not isinstance(v, bool):
            out[opt] = v
    return out


def _us(ms: Any) -> float | None:
    """A time the autotuner measured (ms; inf for a config that failed to compile or launch) in µs, None for inf."""
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 <= ms < 1e9:
        return round(float(ms) * 1000.0, 3)
    return None


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 — a config of another triton version
        return False


def tuning_record(*, tuner: Any, jit_function: Any, key: tuple | None, timings: dict[Any, Any],
                  measured: dict[int, tuple[float, Any]], chosen_grid: Any, args: tuple, kwargs: dict[str, Any],
                  benchmarked: bool, target: str | None, root: str, triton_version: str) -> dict[str, Any] | None:
    """One tuning line from what Triton's Autotuner kept after benchmarking one key: `configs_timings` (config ->
    the [median, 20th, 80th percentile] ms its `do_bench` measured, inf where the config failed), the configs it
    offered, and what the hook saw on the way (`measured`: id(config) -> (wall s of `_bench`, the trial's grid)).
    `benchmarked` False: the autotuner read the timings from its disk cache (measured by an earlier run)."""
    fn = getattr(jit_function, "fn", None)
    code = getattr(fn, "__code__", None)
    if fn is None or code is None or not timings:
        return None
    chosen = tuner.cache.get(key) if key is not None else None
    chosen = chosen if chosen is not None else getattr(tuner, "best_config", None)
    configs: list[dict[str, Any]] = []
    chosen_index = None
    for config, times in list(timings.items())[:MAX_TUNING_CONFIGS]:
        entry = config_fields(config)
        ts = times if isinstance(times, (list, tuple)) else [times]
        entry["time_us"] = _us(ts[0]) if ts else None
        if len(ts) >= 3 and entry["time_us"] is not None:
            entry["time_us_p20"], entry["time_us_p80"] = _us(ts[1]), _us(ts[2])
        wall, grid = measured.get(id(config), (None, None))
        if isinstance(wall, float):
            entry["bench_s"] = round(wall, 4)
        if grid is None and config is chosen:
            grid = chosen_grid
        described = describe_launch([], (), {}, grid)
        if described is not None:
            entry["grid"] = described["grid"]
        if config is chosen:
            chosen_index = len(configs)
        configs.append(entry)
    if chosen_index is None and chosen is not None:  # a cache that hands back a copy of the chosen config
        best = getattr(tuner, "best_config", None)
        listed = list(timings)[:len(configs)]
        chosen_index = next((i for i, c in enumerate(listed) if c is best), None)
        if chosen_index is None:
            chosen_index = next((i for i, c in enumerate(listed) if _same(c, chosen)), None)
    timed = {id(c) for c in timings}
    offered = list(getattr(tuner, "configs", []) or [])
    pruned = [config_fields(c) for c in offered if id(c) not in timed][:MAX_TUNING_CONFIGS]
    arg_names = list(getattr(jit_function, "arg_names", []) or [])
    launch = describe_launch(arg_names, args, kwargs, chosen_grid if chosen_grid is not None else [1])
    rec: dict[str, Any] = {
        "version": TUNING_VERSION,
        "record": "tuning",
        "path": relative_path(code.co_filename, root),
        "kernel": fn.__name__,
        "target": target,
        "triton_version": triton_version,
        "key": encode(list(key)) if key is not None else None,
        "configs": configs,
        "chosen": chosen_index,
        "offered": len(offered),
        "pruned": pruned,
        "cached": not benchmarked,
    }
    bench_time = getattr(tuner, "bench_time", None)
    if benchmarked and isinstance(bench_time, (int, float)):
        rec["bench_s"] = round(float(bench_time), 4)
    if launch is not None:
        rec["args"] = launch["args"]
    return rec
