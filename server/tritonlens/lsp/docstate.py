"""What the server knows of one open document: the reports of its kernels and the compile in flight. Plain data
that the scheduler fills and the features read."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..model import Finding, KernelInfo, KernelReport


def kernel_key(k: KernelInfo) -> tuple:
    """What must stay the same for a kernel's last report to still hold: its source (with helpers, hints and configs)
    and where it sits in the file (its findings carry line numbers)."""
    return (k.source_hash, k.decorator_line, k.def_line, k.end_line)


@dataclass
class DocState:
    uri: str
    path: str
    version: int | None = None
    generation: int = 0
    kernels: dict[str, KernelReport] = field(default_factory=dict)  # name -> latest report
    # name -> the report of a kernel's first compiled specs while the rest compile: shown as diagnostics, never used
    # for fixes, hovers or lenses (they read `kernels`), dropped when the whole report arrives
    partial: dict[str, KernelReport] = field(default_factory=dict)
    infos: dict[str, KernelInfo] = field(default_factory=dict)  # name -> as discovered in the compiled text
    keys: dict[str, tuple] = field(default_factory=dict)  # name -> kernel_key of the report we hold
    file_findings: list[Finding] = field(default_factory=list)
    text: str = ""  # the text the reports were made from (set when every kernel of it is done)
    seen_text: str | None = None  # the text of the latest compile, as soon as its kernels are discovered
    seen_infos: dict[str, KernelInfo] = field(default_factory=dict)  # its kernels, by key
    group: str | None = None  # job group of the compile in flight
    debounce: asyncio.TimerHandle | None = None
    task: asyncio.Task | None = None
    crashed: str | None = None  # an internal error of the last compile, shown as a diagnostic
    blocked: str | None = None  # why nothing can compile in this environment (doctor), shown instead of findings

    def findings(self) -> list[Finding]:
        out = list(self.file_findings)
        for key, kr in self.kernels.items():
            if key not in self.partial:
                out.extend(kr.findings)
        for kr in self.partial.values():
            out.extend(kr.findings)
        return sorted(out, key=Finding.sort_key)

    def kernel_named(self, name: str, line: int | None = None) -> KernelReport | None:
        """The report for a kernel a client names: by key, else by name (the definition holding 1-based `line` when
        several branches define that name)."""
        if name in self.kernels:
            return self.kernels[name]
        same = [kr for kr in self.kernels.values() if kr.name == name]
        if line is not None:
            for kr in same:
                if kr.kernel.decorator_line <= line <= kr.kernel.end_line:
                    return kr
        return same[0] if same else None

    def current(self, name: str, line: int | None, text: str) -> KernelReport | None:
        """The report for kernel `name` if it holds for `text` (the buffer): made from it, or from an earlier text
        in which the kernel had the same source at the same place. None while its compile is still to come."""
        kr = self.kernel_named(name, line) if text == self.seen_text else None
        info = self.seen_infos.get(kr.kernel.key) if kr is not None else None
        return kr if info is not None and kernel_key(info) == kernel_key(kr.kernel) else None

    def kernel_at(self, line: int) -> KernelReport | None:
        """The kernel whose decorators, hint lines or body hold 1-based `line`."""
        for kr in self.kernels.values():
            k = kr.kernel
            first = min([k.decorator_line] + [h.line for h in k.hints])
            if first <= line <= k.end_line:
                return kr
        return None
