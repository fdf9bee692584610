"""`tritonlens capture`, `bench` and `profile`: the GPU edges' commands (their arguments and code live in gpu/; their
own entry points, `python -m tritonlens.gpu.capture` and the like, parse the same arguments)."""
from __future__ import annotations

import argparse


class _GpuCommand:
    """One gpu/ module as a command: `add_parser` declares its arguments (the module's `add_arguments`), `run` calls
    the module's `run` with what followed `--` (the user's command) when the command takes one."""

    def __init__(self, name: str, module: str, help: str, takes_command: bool) -> None:
        self.name, self.module, self.help, self.takes_command = name, module, help, takes_command

    def _load(self):
        import importlib

        return importlib.import_module(f"tritonlens.gpu.{self.module}")

    def add_parser(self, sub) -> argparse.ArgumentParser:
        mod = self._load()
        p = sub.add_parser(self.name, help=self.help, description=mod.DESCRIPTION)
        mod.add_arguments(p)
        p.set_defaults(run=self.run)
        return p

    def run(self, args: argparse.Namespace) -> int:
        mod = self._load()
        if self.name == "profile":  # the profiled kernel's findings, joined to its numbers
            return mod.run(args, getattr(args, "after_dashes", None), check=_kernel_report)
        if self.takes_command:
            return mod.run(args, getattr(args, "after_dashes", None))
        return mod.run(args)


def _kernel_report(file: str, kernel: str, target: str, captures: str | None):
    """The report of one kernel of `file`, checked as `tritonlens check` would (captures first)."""
    from ..pipeline import Checker
    from ..settings import Settings

    with Checker(Settings(target=target), capture_file=captures) as checker:
        report = checker.check_file(file, kernels={kernel})
    return next((k for k in report.kernels if k.name == kernel or k.kernel.func_name == kernel), None)


capture = _GpuCommand("capture", "capture", "run a command and record the kernels it compiles: capture -- python x.py",
                      takes_command=True)
bench = _GpuCommand("bench", "bench", "replay captured launches and time them on the local GPU (a static floor "
                    "without one): tritonlens bench FILE[::KERNEL]", takes_command=False)
profile = _GpuCommand("profile", "profile", "profile a kernel with Nsight Compute (needs a GPU)", takes_command=True)
