"""`tritonlens` on the command line: one argparse parser, one small module per command — `check` (and `--fix`),
`cost`, `ir`, `baseline` (baseline save, diff, report), `explain`, `serve`, the GPU edges' `capture`, `bench` and `profile`
(`gpu_commands`: their arguments live in gpu/), `doctor`. The flags every compiling command shares are declared once
(`common.compile_flags`). A presenter: it reads the stages' results, and no stage imports it."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .. import __version__
from ..compare import cli as compare
from . import baseline, check, cost, doctor, explain, ir, serve, tune
from .common import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError
from .gpu_commands import bench, capture, profile

__all__ = ["EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "UsageError", "build_parser", "main"]

# The commands, in the order `tritonlens --help` lists them. Each is a module (or object) with `add_parser(subparsers)`
# — which declares its arguments and may `set_defaults(run=...)` for each parser it adds — and `run(args) -> int`, its
# exit code. A new command (such as `compare`) is one more entry here.
COMMANDS = [check, cost, ir, baseline, compare, explain, serve, capture, bench, profile, tune, doctor]

# Commands that run a user's program: everything after their first `--` is that program's command line, untouched.
_TAKE_A_COMMAND = ("capture", "profile", "tune")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tritonlens", description="What the Triton compiler did to your kernels.")
    p.add_argument("--version", action="version", version=f"tritonlens {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        before = set(sub.choices)
        command.add_parser(sub)
        for name, parser in sub.choices.items():  # what it added runs its `run`, unless it said otherwise
            if name not in before and parser.get_default("run") is None and hasattr(command, "run"):
                parser.set_defaults(run=command.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    after_dashes = None
    if argv and argv[0] in _TAKE_A_COMMAND and "--" in argv:
        cut = argv.index("--")
        argv, after_dashes = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_OK
    args.after_dashes = after_dashes
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except UsageError as exc:
        print(f"tritonlens {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 — the CLI reports, it does not dump tracebacks on users
        if os.environ.get("TRITONLENS_DEBUG"):
            raise
        print(f"tritonlens: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
