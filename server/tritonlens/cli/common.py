"""What the commands share: exit codes, the flags of a compile (declared once), the settings they make, the files a
path names."""
from __future__ import annotations

import argparse
import os

from ..settings import target_arg

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(ValueError):
    """A combination of flags that cannot work (exit 2)."""


def gpu_arg(value: str) -> str:
    from ..device.virtual_gpu import lookup

    try:
        return lookup(value).key
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def env_arg(value: str) -> tuple[str, str]:
    name, sep, text = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {value!r}")
    return name, text


def device_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", type=gpu_arg, default=None, metavar="NAME",
                   help="the GPU to answer as and report for (h100, h200, b200, a100, l40s, rtx4090, rtx5090, mi300x, "
                        "...; default: the local GPU with --target auto, else the target's default; --target auto "
                        "then means its arch)")
    p.add_argument("--env", type=env_arg, action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the compile workers' imports (repeatable)")


def memory_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help="resident memory bound of each compile worker, 0 for none (default 8192); a compile past it is "
                        "reported as tritonlens's limit (SRC007), not as an error")


def compile_flags(p: argparse.ArgumentParser, several_files: bool = True) -> None:
    """The flags of every command that compiles: the target and GPU, the compile's bounds, how modules are loaded;
    with `several_files`, also the extra targets, the captures and the worker count."""
    p.add_argument("--target", type=target_arg, default="auto",
                   help="cuda:80 | cuda:90 | cuda:100 | hip:gfx942 | auto (local GPU, else cuda:90)")
    if several_files:
        p.add_argument("--extra-target", action="append", type=target_arg, default=[], dest="extra_targets",
                       help="also compile for this target (repeatable)")
        p.add_argument("--captures", metavar="FILE", help="captured launches (default: .tritonlens/captures.jsonl)")
        p.add_argument("--all-captures", action="store_true",
                       help="compile every captured spec, autotuner trials included (default: a representative set)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per compile (default 60)")
    memory_flag(p)
    if several_files:
        p.add_argument("--workers", type=int, default=None,
                       help="compile processes (default: the cores available, up to 16, about 2 GB of memory each)")
    p.add_argument("--module-execution", choices=("definitions", "full"), default="definitions",
                   help="definitions (default): import only what the kernels need; full: run the whole module")
    if several_files:
        p.add_argument("--no-auto-capture", action="store_true",
                       help="do not run a kernel file's own launch code (its tests, its __main__ block) without a GPU "
                            "to learn the specs of kernels that have no capture or hint (default: run it, sandboxed, "
                            "at most --auto-capture-timeout seconds per file)")
        p.add_argument("--auto-capture-timeout", type=float, default=20.0, metavar="SECONDS",
                       help="seconds a file's launch code may run without a GPU (default 20)")
    device_flags(p)


def settings_from(args):
    from ..settings import Settings

    s = Settings(target=args.target, extra_targets=list(getattr(args, "extra_targets", [])),
                 compile_timeout=args.timeout, module_execution=args.module_execution)
    if getattr(args, "memory_mb", None) is not None:
        s.compile_memory_mb = max(0, args.memory_mb)
    if getattr(args, "workers", None):
        s.max_workers = max(1, args.workers)
    else:
        from ..settings import default_workers

        s.max_workers = default_workers(editor=False)
    s.all_captures = bool(getattr(args, "all_captures", False))
    s.auto_capture = not getattr(args, "no_auto_capture", True)
    if getattr(args, "auto_capture_timeout", None):
        s.auto_capture_timeout = max(1.0, float(args.auto_capture_timeout))
    if getattr(args, "storm_threshold", None):
        s.storm_threshold = args.storm_threshold
    s.gpu = getattr(args, "gpu", "") or ""
    s.env = dict(getattr(args, "env", None) or [])
    if s.gpu:
        from ..device.virtual_gpu import validate

        problem = validate(s.gpu, s.target)
        if problem:
            raise UsageError(f"--gpu: {problem}")
    return s


def rel(path: str) -> str:
    """A path as the CLI prints it: relative to the current folder when under it, control and format characters
    escaped (a file name is the workspace's to choose, and a terminal would obey what it holds)."""
    from ..frontend.untrusted import printable

    try:
        shown = os.path.relpath(path)
    except ValueError:
        return printable(path)
    return printable(path if shown.startswith("..") else shown)
