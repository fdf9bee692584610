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

The parts: `capture_record` (the line format), `capture_file` (the writer), `capture_hook` (the hook and its launch
timer, inside the user's program); this module is the command that runs the program with the hook on its path.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from ..frontend.captures import CAPTURE_FILE, bounded_lines
from ..frontend.untrusted import printable
from ..reads import open_file
from .capture_record import (ENV_DUMP, ENV_FILE, ENV_INTERPRET, ENV_NO_GPU, ENV_PACKAGE_ROOT, ENV_ROOT, ENV_SWITCH,
                             ENV_TALLY, ENV_TIME)

# What the command, the bootstrap and the tests reach through `tritonlens.gpu.capture`.
from .capture_file import CaptureWriter
from .capture_hook import (FLUSH_EVERY_S, LaunchTimer, _Hook, _launch_counts, install,
                           install_on_import)
from .capture_record import (MAX_LAUNCH_SHAPES, TIMED_PER_LAUNCH, VERSION, describe_launch,
                             launch_key, record_from_hook, relative_path)
from ..frontend.captures import identity
from ..settings import target_arg

__all__ = ["CaptureWriter", "FLUSH_EVERY_S", "LaunchTimer", "MAX_LAUNCH_SHAPES", "TIMED_PER_LAUNCH", "VERSION", "_Hook",
           "_launch_counts", "child_env", "describe_launch", "identity", "install", "install_on_import", "launch_key",
           "main", "record_from_hook", "relative_path"]

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_capture_hook")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


DESCRIPTION = ("Run a command and record the Triton kernels it compiles (and how they were launched) in "
               ".tritonlens/captures.jsonl.")


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """(our arguments, the user's command): everything after the first `--` is the command, untouched."""
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens capture", description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workspace", metavar="DIR", help="workspace root (default: the current folder)")
    p.add_argument("--output", "-o", metavar="FILE", help="capture file (default: WORKSPACE/.tritonlens/captures.jsonl)")
    p.add_argument("--dump", metavar="DIR", help="also write each compile's PTX/cubin there (for comparisons)")
    p.add_argument("--no-gpu", action="store_true",
                   help="record the launches without a GPU: specialize each launch for --target as Triton would and "
                        "do not run the kernel (CPU tensors; see docs/gpu.md)")
    p.add_argument("--target", default=None, metavar="T", type=target_arg,
                   help="with --no-gpu: the target the launches are specialized for (default: --gpu's arch, else "
                        "cuda:90)")
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


def main(argv: list[str] | None = None) -> int:
    own, cmd = split_command(list(sys.argv[1:] if argv is None else argv))
    try:
        args = _parser().parse_args(own)
    except SystemExit as exc:
        return 2 if exc.code else 0
    return run(args, cmd)


def run(args: argparse.Namespace, cmd: list[str] | None = None) -> int:
    """The command, its arguments parsed (`cmd`: what followed `--`, else `args.cmd`)."""
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
        from ..device.run import run_devices

        try:  # the device of the program's run: the target it specializes for, the GPU it sees
            run = run_devices(args.target or "auto", args.gpu or "", local=False, strict=True)[0]
            no_gpu_target, gpu = run.target, run.gpu
        except ValueError as exc:
            print(f"tritonlens capture: {exc}", file=sys.stderr)
            return 2
    root = os.path.abspath(args.workspace or os.getcwd())
    file = os.path.abspath(args.output or os.path.join(root, CAPTURE_FILE))
    try:
        start = os.path.getsize(file)  # where this run's lines begin (for the paths it recorded)
    except OSError:
        start = 0
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
    for line in _paths_said(file, start, root):
        print(f"tritonlens capture: {line}", file=sys.stderr)
    if args.interpret and code not in (0, 130):
        print(f"tritonlens capture: the program failed under Triton's interpreter (exit {code}); the launches "
              f"recorded before the failure are kept. The interpreter runs kernels on the CPU in numpy and does not "
              f"support everything the GPU does (see the traceback above); without --interpret the kernels are "
              f"recorded but not run", file=sys.stderr)
    # a signal death is reported the way a shell would (128 + signal)
    return code if code >= 0 else 128 - code


MAX_PATHS_SHOWN = 3


def _paths_said(file: str, start: int, root: str) -> list[str]:
    """What to say about the kernel files of the compiles written from byte `start` of the capture file on: those
    outside the workspace (generated code a library wrote to a cache folder, an installed package), which are kept
    with their absolute path, and those with no file at their path (code made by exec: nothing to check)."""
    outside: dict[str, int] = {}
    missing: dict[str, int] = {}
    try:  # a workspace file (reads): a committed link out of it, to /dev/zero or a FIFO is not read
        # inside its own folder: the workspace's .tritonlens/, or wherever --output put it
        with open_file(file, os.path.dirname(os.path.abspath(file))) as f:
            f.seek(start)
            for raw in bounded_lines(f):
                if b'"record": "summary"' in raw or b'"record": "tuning"' in raw:
                    continue
                with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
                    obj = json.loads(raw)
                    path = obj.get("path") if isinstance(obj, dict) else None
                    if not isinstance(path, str) or obj.get("record", "compile") != "compile":
                        continue
                    where = path if os.path.isabs(path) else os.path.join(root, path)
                    into = outside if os.path.isabs(path) and os.path.isfile(where) else \
                        missing if not os.path.isfile(where) else None
                    if into is not None:
                        into[path] = into.get(path, 0) + 1
    except OSError:
        return []
    out = []
    for paths, what in ((outside, "outside the workspace, kept with their absolute path (`tritonlens check PATH` "
                                  "from this workspace reads them)"),
                        (missing, "whose source was no file at its recorded path when the run ended (removed, or "
                                  "made without a file): kept, but nothing can check them")):
        if paths:
            shown = ", ".join(printable(p) for p in list(paths)[:MAX_PATHS_SHOWN])
            more = f" and {len(paths) - MAX_PATHS_SHOWN} more" if len(paths) > MAX_PATHS_SHOWN else ""
            out.append(f"{sum(paths.values())} compile(s) of kernels {what}: {shown}{more}")
    return out


def _count_lines(file: str, compiles_only: bool = True) -> int:
    """Lines in the file; with `compiles_only`, compile lines (summary lines of counts are not compiles)."""
    try:  # a workspace file (reads)
        with open_file(file) as f:
            return sum(1 for line in bounded_lines(f)
                       if line.strip() and not (compiles_only and b'"record": "summary"' in line))
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
