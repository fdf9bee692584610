"""Where the captured GPU time goes: each kernel's captured launches with the time `capture --time` measured for
them (count × time per launch, from the specs' `launch_costs`), its share of all the captured time, its bound, how
far it runs from the physical floor (checks/cost/floor.py), its worst finding and the best change `tune` measured
faster. Read by the report's ranked table and roofline (report/roofline.py) and the editor's hover.

Pure: reads the kernel reports and, read-only, `.tritonlens/proposals.jsonl` (report/tuning.tuned). A launch nothing timed
keeps its estimate and floor and no measured time: nothing is invented.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..device import virtual_gpu
from ..model import SEVERITY_RANK, Finding, KernelReport
from ..units import fmt_us
from .tuning import tuned

# the cost model's parts of a launch (Cost.describe()), in the order the stacked bar draws them
PARTS = (("memory_us", "memory"), ("dot_us", "tensor cores / FMA"), ("issue_us", "issue"),
         ("program_us", "per program"), ("tile_us", "tile"), ("spill_us", "spills"), ("convert_us", "conversions"),
         ("mio_us", "shared memory"))


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e18 else None


@dataclass
class LaunchTime:
    """One captured launch of a spec, as the cost model described it."""

    spec: str  # the spec's label
    grid: list[int]
    count: int
    measured_us: float | None  # capture --time's time per launch
    est_us: float | None
    floor_us: float | None
    flops: float
    dram_bytes: int
    bound: str
    floor_kind: str  # the dots' operand type when the floor is theirs
    dot_kinds: tuple[str, ...]  # the operand types of its dots ("tf32", "fp16 on FMA", ...)
    parts: dict[str, float]

    @property
    def total_us(self) -> float:
        return self.count * (self.measured_us or 0.0)

    @property
    def intensity(self) -> float | None:
        """FLOPs per DRAM byte; None without FLOPs or bytes."""
        return self.flops / self.dram_bytes if self.flops > 0 and self.dram_bytes > 0 else None


@dataclass
class ProvenFix:
    change: str  # what `tune` changed, in words (else the whole config it timed)
    before_us: float
    after_us: float
    gpu: str

    @property
    def speedup(self) -> float:
        return self.before_us / self.after_us


@dataclass
class KernelTime:
    path: str
    kernel: str  # the name in captures and proposals
    display: str
    gpu: virtual_gpu.GpuModel | None
    launches: list[LaunchTime] = field(default_factory=list)
    worst: Finding | None = None
    fixes: list[ProvenFix] = field(default_factory=list)  # measured faster, best first
    share: float | None = None  # of all the captured time in the set it was ranked in

    @property
    def captured_us(self) -> float:
        return sum(x.total_us for x in self.launches)

    @property
    def timed(self) -> bool:
        return any(x.measured_us is not None for x in self.launches)

    @property
    def count(self) -> int:
        return sum(x.count for x in self.launches)

    @property
    def top(self) -> LaunchTime | None:
        """The launch that carries the most time (measured, else estimated, else launched most)."""
        if not self.launches:
            return None
        return max(self.launches, key=lambda x: (x.total_us, x.count * (x.est_us or 0.0), x.count))

    @property
    def per_launch_us(self) -> float | None:
        timed = [x for x in self.launches if x.measured_us is not None]
        n = sum(x.count for x in timed)
        return sum(x.total_us for x in timed) / n if n else None

    @property
    def floor_ratio(self) -> float | None:
        """Measured ÷ the physical floor, over the timed launches weighed by their counts."""
        timed = [x for x in self.launches if x.measured_us is not None and x.floor_us]
        floor = sum(x.count * (x.floor_us or 0.0) for x in timed)
        return sum(x.total_us for x in timed) / floor if floor > 0 else None

    @property
    def bound(self) -> str:
        top = self.top
        return top.bound if top is not None else ""

    @property
    def best_fix(self) -> ProvenFix | None:
        return self.fixes[0] if self.fixes else None


def launches_of(kr: KernelReport) -> list[LaunchTime]:
    out = []
    for cs in kr.compiled:
        for c in (cs.metrics or {}).get("launch_costs") or ():
            if not isinstance(c, dict):
                continue
            grid = c.get("grid") if isinstance(c.get("grid"), list) else []
            out.append(LaunchTime(
                spec=cs.spec.label, grid=[int(g) for g in grid if isinstance(g, int)],
                count=max(int(_num(c.get("count")) or 1), 1), measured_us=_num(c.get("measured_us")),
                est_us=_num(c.get("est_us")), floor_us=_num(c.get("floor_us")), flops=_num(c.get("flops")) or 0.0,
                dram_bytes=int(_num(c.get("dram_bytes")) or 0),
                bound=str(c.get("bound") or ("no estimate" if c.get("unknown") else "")),
                floor_kind=str(c.get("floor_kind") or ""),
                dot_kinds=tuple(sorted(k for k in (c.get("dot_flops") or {}) if isinstance(k, str))),
                parts={k: v for k, _ in PARTS if (v := _num(c.get(k))) is not None and v > 0}))
    return out


def worst_finding(findings: Iterable[Finding]) -> Finding | None:
    """The most severe finding, the largest estimated gain first among equals; hints are left out."""
    ranked = [f for f in findings if f.severity in ("error", "warning", "info")]
    if not ranked:
        return None
    return min(ranked, key=lambda f: (SEVERITY_RANK.get(f.severity, 9), -(_num(f.data.get("est_gain_us")) or 0.0),
                                      f.line))


def proven_fixes(root: str | None, path: str, kernel: str) -> list[ProvenFix]:
    """The changes `tune` measured faster at this kernel's real launch, best first."""
    fixes = [ProvenFix(t.change or t.proposal, t.chosen_us, t.time_us, t.gpu) for t in tuned(root, path, kernel)
             if t.faster]
    return sorted(fixes, key=lambda f: -f.speedup)


def kernel_time(kr: KernelReport, root: str | None, gpu_name: str = "") -> KernelTime:
    target = next((cs.spec.target for cs in kr.compiled), "")
    try:
        gpu = virtual_gpu.resolve(target, gpu_name or None) if target else None
    except ValueError:
        gpu = None
    return KernelTime(kr.kernel.path, kr.name, kr.kernel.display_name, gpu, launches_of(kr),
                      worst_finding(kr.findings), proven_fixes(root, kr.kernel.path, kr.name))


def ranked(times: list[KernelTime]) -> list[KernelTime]:
    """The kernels by captured time, most first, each with its share of the total; kernels with captured launches
    but no timing after them, launched most first; kernels with no captured launch left out."""
    total = sum(t.captured_us for t in times)
    for t in times:
        t.share = t.captured_us / total if total > 0 and t.timed else None
    with_launches = [t for t in times if t.launches]
    return sorted(with_launches, key=lambda t: (not t.timed, -t.captured_us, -t.count))


def file_times(kernels: list[KernelReport], gpu_name: str = "") -> dict[str, KernelTime]:
    """A file's kernels by name with their shares of the file's captured time (no proven fixes: the editor's lines
    do not show them)."""
    return {kt.kernel: kt for kt in ranked([kernel_time(kr, None, gpu_name) for kr in kernels])}


def share_line(kt: KernelTime | None) -> str:
    """The editor's line on a kernel: `38.2% of this file's captured GPU time: 1.20 ms over 23 launches, 1.36× its
    physical floor`; empty when none of its launches was timed."""
    if kt is None or kt.share is None:
        return ""
    ratio = kt.floor_ratio
    return (f"{kt.share:.1%} of this file's captured GPU time: {fmt_us(kt.captured_us)} over {kt.count:,} launches"
            + (f", {ratio:.2f}× its physical floor" if ratio is not None else ""))
