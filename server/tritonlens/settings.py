"""Typed settings. The editor sends `tritonlens.*` as initializationOptions (camelCase); the CLI builds them from flags.
A bad value falls back to its default and is reported in `Settings.problems`, never raised."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .model import SEVERITIES, Target

_CAMEL = {
    "target": "target", "extraTargets": "extra_targets", "compileOn": "compile_on",
    "compileTimeout": "compile_timeout", "compileMemoryMB": "compile_memory_mb", "maxWorkers": "max_workers", "moduleExecution": "module_execution",
    "stormThreshold": "storm_threshold", "rules": "rules", "interpreter": "interpreter",
    "allCaptures": "all_captures", "maxCapturedSpecs": "max_captured_specs",
    "maskedLaneThreshold": "masked_lane_threshold", "gridFillThreshold": "grid_fill_threshold", "smCount": "sm_count",
    "gpu": "gpu", "env": "env", "severityFromCost": "severity_from_cost",
    "autoCapture": "auto_capture", "autoCaptureTimeout": "auto_capture_timeout",
}


_WORKER_MEMORY = 2 << 30  # a compile worker with triton imported and a large kernel in flight: about 1-2 GB


def default_workers(editor: bool = True) -> int:
    """Compile workers from the cores this process may use (one left for the editor and the language server when
    `editor`), bounded by memory (about 2 GB per worker) and 16."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 0
    n = cores - 1 if editor and cores > 2 else cores
    if memory:
        n = min(n, max(1, memory // _WORKER_MEMORY))
    return max(1, min(n, 16))


# The resident-memory bound of one compile worker, in MB. A worker that imports torch and transformers holds about
# 1-1.5 GB resident, CUDA initialisation adds about 0.5 GB, and a large kernel's compile 1-2 GB: 8 GB leaves twice
# that. It bounds resident memory, not address space (see compiler/pool.py): what an import reserves costs nothing.
DEFAULT_MEMORY_MB = 8192


@dataclass
class Settings:
    target: str = "auto"
    extra_targets: list[str] = field(default_factory=list)
    compile_on: str = "save"  # save | change
    compile_timeout: float = 60.0
    # Resident memory of one compile worker, in MB (0 = unbounded): a compile past it is a finding naming the limit.
    compile_memory_mb: int = DEFAULT_MEMORY_MB
    max_workers: int = field(default_factory=default_workers)  # 0 from a client: the same default
    module_execution: str = "definitions"  # definitions | full
    storm_threshold: int = 3
    rules: dict[str, str] = field(default_factory=dict)  # code -> severity | "off"
    interpreter: list[str] = field(default_factory=list)
    # Captured specs compiled per kernel: a representative set (every constexpr value and launch option launched,
    # the autotuner's choice and the most launched first) of at most this many; all of them, trials included, with
    # all_captures.
    all_captures: bool = False
    max_captured_specs: int = 12
    # LAUNCH001: report a mask that turns off at least this share of a block's lanes in a captured launch.
    masked_lane_threshold: float = 0.25
    # LAUNCH002: report a captured grid that keeps busy less than this share of the SMs (fewer programs than SMs),
    # or of the program slots over its waves (a last wave mostly empty).
    grid_fill_threshold: float = 0.75
    # LAUNCH002: SMs (CUs) of the GPU the launches run on; 0 = the local GPU when it is the target, else a table.
    sm_count: int = 0
    # The GPU compiles stand for (virtual_gpu: "h100", "h200", "mi300x", ...): what imports see without a GPU, and
    # the SM count and limits findings use. "" = the target's default, or the local GPU with target auto.
    gpu: str = ""
    # Severity of a cost finding on captured launches from what its cause costs there (checks/costmodel); off: each
    # rule's own default, the estimate still in the message.
    severity_from_cost: bool = True
    # Environment variables for the compile workers' imports (a library that reads its device from one); the workers
    # start with a clean environment, so these (a value, or None: this process's own) are all of the user's they see.
    env: dict[str, str | None] = field(default_factory=dict)
    # A kernel with no capture and no hint gets its specs from the file's own launch code (its tests, its __main__
    # block, the workspace's tests that import it), run without a GPU, sandboxed, for at most this many seconds.
    auto_capture: bool = True
    auto_capture_timeout: float = 20.0
    problems: list[str] = field(default_factory=list, compare=False)

    @classmethod
    def from_dict(cls, data: Any) -> "Settings":
        s = cls()
        if data is None:
            return s
        if not isinstance(data, dict):
            s.problems.append(f"settings must be an object, got {type(data).__name__}; using defaults")
            return s
        if isinstance(data.get("tritonlens"), dict):  # {"tritonlens": {...}} as didChangeConfiguration sends it
            data = data["tritonlens"]
        for key, value in data.items():
            attr = _CAMEL.get(key, key if key in {f.name for f in fields(cls)} else None)
            if attr is None or attr == "problems":
                s.problems.append(f"unknown setting tritonlens.{key} ignored")
                continue
            try:
                setattr(s, attr, _VALIDATORS[attr](value))
            except (TypeError, ValueError) as exc:
                s.problems.append(f"tritonlens.{key}: {exc}; using the default {getattr(cls(), attr)!r}")
        return s


def canonical_target(text: str) -> str:
    """A target as a user writes it (`auto`, `cuda:90`, `sm:90a`... `hip:gfx942`) made canonical: the one place such
    text is read (settings, `--target` of every command). ValueError when it is no target."""
    if text.strip().lower() == "auto":
        return "auto"
    return str(Target.parse(text))


def _target(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("expected a string like 'auto', 'cuda:90' or 'hip:gfx942'")
    return canonical_target(v)


def target_arg(value: str) -> str:
    """`--target` as the command lines take it (check, compare, bench, capture, ...): `auto`, or a target made
    canonical; argparse's error when it is neither."""
    import argparse

    try:
        return canonical_target(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _targets(v: Any) -> list[str]:
    if not isinstance(v, list):
        raise TypeError("expected a list of targets")
    return [_target(x) for x in v if _target(x) != "auto"]


def _choice(*options: str):
    def check(v: Any) -> str:
        if v not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {v!r}")
        return v
    return check


def _positive(kind):
    def check(v: Any):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"expected a positive number, got {v!r}")
        return kind(v)
    return check


def _fraction(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise ValueError(f"expected a fraction in (0, 1], got {v!r}")
    return float(v)


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1 << 20:
        raise ValueError(f"expected a non-negative integer, got {v!r}")
    return v


def _workers(v: Any) -> int:
    """A positive count, or 0 for the default (from the cores available, see default_workers)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"expected a whole number of workers (0: from the cores), got {v!r}")
    return v or default_workers()


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"expected true or false, got {v!r}")
    return v


def _gpu(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("expected a GPU name like 'h100', 'h200' or 'mi300x'")
    if not v.strip():
        return ""
    from .device.virtual_gpu import lookup

    return lookup(v).key


def _env(v: Any) -> dict[str, str | None]:
    """NAME: value sets a variable for the workers; NAME: null passes this process's own value (the workers start
    with a clean environment: nothing else of it reaches the code they import)."""
    if not isinstance(v, dict) or not all(isinstance(k, str) and k and "=" not in k and "\0" not in k for k in v):
        raise TypeError("expected an object mapping environment variable names to values")
    if not all(x is None or isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v.values()):
        raise TypeError("expected string values (or null: pass this process's value)")
    return {k: None if x is None else str(x) for k, x in v.items()}


def _rules(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        raise TypeError("expected an object mapping rule codes to a severity or 'off'")
    out = {}
    for code, sev in v.items():
        if sev not in (*SEVERITIES, "off"):
            raise ValueError(f"rule {code}: expected one of {', '.join(SEVERITIES)}, off; got {sev!r}")
        out[str(code).upper()] = sev
    return out


def _interpreter(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise TypeError("expected a list of strings")


_VALIDATORS = {
    "target": _target, "extra_targets": _targets, "compile_on": _choice("save", "change"),
    "compile_timeout": _positive(float), "compile_memory_mb": _count, "max_workers": _workers,
    "module_execution": _choice("definitions", "full"), "storm_threshold": _positive(int), "rules": _rules,
    "interpreter": _interpreter, "all_captures": _flag, "max_captured_specs": _positive(int),
    "masked_lane_threshold": _fraction, "grid_fill_threshold": _fraction, "sm_count": _count,
    "gpu": _gpu, "env": _env, "severity_from_cost": _flag, "auto_capture": _flag,
    "auto_capture_timeout": _positive(float),
}
