"""What the GPU said of each candidate `tune` timed at the real launch (gpu/trials' events), as verdicts: kept only
when its outputs are the unchanged launch's within tolerance and it is faster than the unchanged launch by more than
that launch's own spread over its repeats, at the launch that carries the time, and no slower at any other launch it
was timed at. Pure: reads the events, decides, writes nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

# what check reads back lives in the report stage (TUNE001 reads it there; the fixes read it for their titles)
from ..report.tuning import Tuned, positive_number, tuned, tuned_change  # noqa: F401

MIN_NOISE = 0.02  # a difference under 2% is not called faster whatever the spread measured


@dataclass
class Verdict:
    target: str
    label: str
    verdict: str  # faster | no faster | slower | other outputs | failed | faulted | not timed
    why: str = ""
    before_us: float | None = None
    after_us: float | None = None
    noise: float | None = None
    launches: int = 0
    max_rel_diff: float | None = None
    per_launch: list[dict[str, Any]] = field(default_factory=list)

    @property
    def speedup(self) -> float | None:
        return self.before_us / self.after_us if self.before_us and self.after_us else None

    @property
    def kept(self) -> bool:
        return self.verdict == "faster"


def verdicts(targets: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[Verdict]:
    """One verdict per candidate of each target (in the targets' order)."""
    base: dict[tuple, list[float]] = {}
    results: dict[tuple, list[dict[str, Any]]] = {}
    order: dict[tuple, list[tuple]] = {}  # target -> (run, key) in the order timed
    faults = {e.get("label") for e in events if e.get("event") == "fault"}
    reach = {e.get("target"): str(e.get("why") or "") for e in events if e.get("event") == "out_of_reach"}
    for e in events:
        t, run, key = e.get("target"), e.get("run", 0), e.get("key")
        if e.get("event") == "baseline":
            times = [x for x in (positive_number(v) for v in e.get("times_us") or []) if x is not None]
            if times:
                base[(t, run, key)] = times
                order.setdefault(t, []).append((run, key))
        elif e.get("event") == "result":
            results.setdefault((t, e.get("label")), []).append(e)
    out = []
    for target in targets:
        tid = target["id"]
        for cand in target["candidates"]:
            lab = cand["label"]
            v = Verdict(tid, lab, "not timed")
            if tid in reach:
                v.why = reach[tid]
            elif lab in faults:
                v.verdict, v.why = "faulted", "the launch faulted (the command was run again without it)"
            rows = [r for r in results.get((tid, lab), []) if (tid, r.get("run", 0), r.get("key")) in base]
            if rows and lab not in faults:
                keys = order.get(tid, [])
                rows.sort(key=lambda r: keys.index((r.get("run", 0), r.get("key"))))
                _judge(v, rows, base, tid)
            out.append(v)
    return out


def _judge(v: Verdict, rows: list[dict[str, Any]], base: dict[tuple, list[float]], tid: str) -> None:
    slower_somewhere = False
    for i, r in enumerate(rows):
        times = base[(tid, r.get("run", 0), r.get("key"))]
        med = median(times)
        noise = max(MIN_NOISE, (max(times) - min(times)) / med)
        t = positive_number(r.get("time_us"))
        entry = {"before_us": round(med, 3), "after_us": round(t, 3) if t else None, "noise": round(noise, 4),
                 "same": r.get("same") is True}
        v.per_launch.append(entry)
        if i == 0:
            v.before_us, v.after_us, v.noise, v.launches = med, t, noise, len(rows)
            v.max_rel_diff = positive_number(r.get("max_rel_diff")) or 0.0
        if isinstance(r.get("error"), str):
            v.verdict, v.why = "failed", r["error"][:200]
            return
        if r.get("same") is not True:
            v.verdict, v.why = "other outputs", str(r.get("why") or "outputs differ")[:200]
            return
        if t is not None and t > max(times) * (1 + noise):
            slower_somewhere = True
    first = v.per_launch[0]
    t = first["after_us"]
    times = base[(tid, rows[0].get("run", 0), rows[0].get("key"))]
    if t is not None and t < min(times) * (1 - v.noise) and not slower_somewhere:
        v.verdict = "faster"
    elif slower_somewhere or (t is not None and t > max(times) * (1 + v.noise)):
        v.verdict = "slower"
        v.why = "slower at a launch it reaches" if t is not None and t <= max(times) * (1 + v.noise) else ""
    else:
        v.verdict, v.why = "no faster", f"within the unchanged launch's noise ({v.noise:.0%})"
