"""A kernel's tuning as every presenter shows it: LAUNCH005, one finding on the autotune decorator that says what the
autotuner measured for the captured keys (configs tried per key, the chosen one, the spread, the dead configs and
the autotuning time they cost, and the cost model's estimate of the chosen config's launch beside the measured
time), with the whole summary in `data["tuning"]` (and `tuning` in `check --format json`). Its fix prunes the dead
configs (fixes/tuning)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import os

from ..checks.tuning import (KeyTuning, ProposalTiming, PrunePlan, TuningSummary, judge_proposals,
                             parse_proposal_timings, prune_plan, same_config, untimed_configs)
from ..model import Finding, KernelReport
from ..settings import Settings
from ..source import split_lines

CODE = "LAUNCH005"
PROPOSALS = "proposals.jsonl"  # in .tritonlens/: `tritonlens tune` appends what it measured at the real launch


def _estimates(kr: KernelReport, summary: TuningSummary) -> list[str]:
    """For each key, the cost model's estimate of the chosen config's captured launch against the autotuner's time."""
    out = []
    for kt in summary.keys:
        chosen = kt.chosen_config
        if chosen is None or chosen.time_us is None:
            continue
        cs = next((cs for cs in kr.compiled if cs.spec.autotune == "chosen"
                   and same_config(chosen, cs.spec.constants, cs.spec.options)), None)
        costs = (cs.metrics.get("launch_costs") or []) if cs is not None else []
        cost = next((c for c in costs if chosen.grid is None or c.get("grid") == list(chosen.grid)), {})
        est = cost.get("est_us")
        if cost.get("unknown"):
            out.append(f"key ({kt.key_text()}): the cost model has no estimate of the chosen config's launch "
                       f"({cost['unknown']}), the autotuner measured {chosen.time_us:.1f} µs")
        elif isinstance(est, (int, float)):
            out.append(f"key ({kt.key_text()}): the cost model estimates the chosen config's launch at {est:.1f} µs, "
                       f"the autotuner measured {chosen.time_us:.1f} µs ({est / chosen.time_us:.2f}×)")
    return out


def launched_keys(kr: KernelReport) -> list[tuple]:
    """The autotune keys (the values of the key's arguments, in the key's order) of every captured launch the
    autotuner's choice made, or a launch captured without a GPU (whose choice was the GPU's to make)."""
    names = list(kr.kernel.autotune_key or [])
    out: list[tuple] = []
    if not names:
        return out
    for cs in kr.compiled:
        if cs.spec.autotune not in ("chosen", "unknown"):
            continue
        for rec in cs.spec.launch_records or []:
            args = rec.get("args") if isinstance(rec, dict) else None
            values = [args.get(n, {}).get("value") if isinstance(args, dict) and isinstance(args.get(n), dict)
                      else None for n in names]
            if all(v is not None for v in values):
                out.append(tuple(values))
    return out


def plan_of(kr: KernelReport, summary: TuningSummary) -> PrunePlan:
    return prune_plan(summary, kr.kernel, launched_keys(kr))


def tuning_finding(kr: KernelReport, summary: TuningSummary | None, settings: Settings) -> Finding | None:
    """LAUNCH005 for a kernel with tuning lines in its captures; None without any (or when switched off)."""
    if summary is None:
        return None
    k = kr.kernel
    keys = summary.key_lines()
    estimates = _estimates(kr, summary)
    head = (f"the autotuner measured {sum(len(kt.timed) for kt in summary.keys)} config timings over "
            f"{len(summary.keys)} captured key{'s' if len(summary.keys) != 1 else ''}")
    untimed = [c.label() for c in untimed_configs(k, summary.keys)]
    waiting = [f"{len(untimed)} config{'s' if len(untimed) != 1 else ''} of the autotune list not timed in the "
               f"captured run ({'; '.join(untimed[:3])}{'; …' if len(untimed) > 3 else ''}): capture again to have "
               f"the autotuner time {'them' if len(untimed) != 1 else 'it'}"] if untimed else []
    plan = plan_of(kr, summary) if summary.dead else None
    pruning = [plan.text()] if plan is not None else []
    message = _short_line(summary, len(untimed))
    data: dict[str, Any] = {"tuning": summary.to_json(), "estimates": estimates,
                            "dead": [d.config.label() for d in summary.dead], "untimed": untimed, "merge_key": CODE}
    if plan is not None:
        data["prune"] = plan.to_json()
    line = k.decorator_line
    # no severity of its own: the verdict gives it the registered default, or the user's setting
    return Finding(k.path, line, 1, line, 1, CODE, "", message, kernel=k.name, data=data,
                   details=[head, *keys, summary.dead_line(), *pruning, *waiting, *estimates])


def _short_line(summary: TuningSummary, untimed: int) -> str:
    """LAUNCH005's one line: how many configs never came near the best and what timing them cost
    ("autotuner: 6 of 8 configs never within 10% of the best — 2.41 s of tuning")."""
    if not summary.dead:
        line = f"autotuner: every one of {summary.offered} configs came within {summary.margin:.0%} of the best"
    else:
        cost = summary.dead_cost_s
        line = (f"autotuner: {len(summary.dead)} of {summary.offered} configs never within {summary.margin:.0%} of "
                f"the best" + (f" — {cost:.2f} s of tuning" if cost is not None else ""))
    return line + (f"; {untimed} not timed in the capture" if untimed else "")


def summary_of(tunings: list[dict[str, Any]]) -> TuningSummary | None:
    from ..checks.tuning import summarize

    return summarize([kt for kt in map(KeyTuning.from_record, tunings) if kt is not None])


def tuning_table(summary: TuningSummary) -> list[list[str]]:
    """Rows (header first) of configs × captured keys: each config's measured time per key, the chosen marked `*`,
    failures `failed`, and whether it is dead."""
    keys = summary.keys
    configs: dict[tuple, Any] = {}
    for kt in keys:
        for c in kt.configs:
            configs.setdefault(c.ident, c)
    dead = {d.config.ident for d in summary.dead}
    rows = [["config"] + [f"key {kt.key_text()}" for kt in keys] + ["dead"]]
    for ident, c in configs.items():
        row = [c.label()]
        for kt in keys:
            hit = next((x for x in kt.configs if x.ident == ident), None)
            mark = "*" if hit is not None and hit is kt.chosen_config else ""
            row.append("—" if hit is None else "failed" if hit.time_us is None else f"{hit.time_us:.1f} µs{mark}")
        row.append("dead" if ident in dead else "")
        rows.append(row)
    return rows


def tuning_markdown(summary: TuningSummary | None) -> str:
    """The hover's section: the table of measured times and the summary lines."""
    if summary is None:
        return ""
    rows = tuning_table(summary)
    esc = [[cell.replace("|", "\\|") for cell in row] for row in rows]
    table = "\n".join(["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])] +
                      ["| " + " | ".join(r) + " |" for r in esc[1:]])
    lines = [f"- {line}" for line in summary.key_lines() + [summary.dead_line()]]
    return "**What the autotuner measured** (`*` chosen)\n\n" + table + "\n\n" + "\n".join(lines)


def tuning_brief(summary: TuningSummary | None) -> str:
    """The code lens's words: `autotuned: 8 configs × 2 keys, 6 dead (1.5 s of tuning)`."""
    if summary is None:
        return ""
    cost = summary.dead_cost_s
    dead = f", {len(summary.dead)} dead" + (f" ({cost:.1f} s of tuning)" if cost is not None else "") \
        if summary.dead else ", none dead"
    return f"autotuned: {summary.offered} configs × {len(summary.keys)} key{'s' if len(summary.keys) != 1 else ''}{dead}"


def proposal_lines(root: str | None, path: str) -> tuple[list[dict[str, Any]], str]:
    """The lines of `.tritonlens/proposals.jsonl` (a workspace file, read as bounded, validated data) and `path`
    relative to the workspace, as the lines name kernel files."""
    from ..frontend.untrusted import UntrustedFile, has_controls, loads, read_text
    from ..sidecar import sidecar_path

    if not root:
        return [], ""
    file = sidecar_path(root, PROPOSALS)
    try:
        text = read_text(file, root=root) if os.path.lexists(file) else ""
    except (OSError, UntrustedFile):
        return [], ""
    lines = []
    for line in split_lines(text):
        try:
            rec = loads(line, file) if len(line) <= 1 << 16 else None
        except UntrustedFile:
            continue
        if isinstance(rec, dict) and not has_controls(rec):
            lines.append(rec)
    return lines, os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")


def proposal_timings(root: str | None, path: str, kernel: str) -> dict[frozenset, ProposalTiming]:
    """What `.tritonlens/proposals.jsonl` says a GPU measured of this kernel's proposed configs (empty when none);
    the lines `tune` wrote are read by fixes/measured."""
    lines, rel = proposal_lines(root, path)
    return parse_proposal_timings([r for r in lines if r.get("source") != "tune"], rel, kernel)


def weigh_proposals(kr: KernelReport, root: str | None) -> None:
    """LAUNCH004 findings judged by what a GPU measured of the configs proposed for them (checks/tuning)."""
    if root and any(f.code == "LAUNCH004" for f in kr.findings):
        judge_proposals(kr.findings, proposal_timings(root, kr.kernel.path, kr.name))


# ---------------------------------------------------------------- what `tune` measured at the real launch
@dataclass(frozen=True)
class Tuned:
    """One change `tune` measured at the real launch of a kernel (a line of `.tritonlens/proposals.jsonl`)."""

    proposal: str  # the whole config it makes: "BLOCK_M=16, ..., num_warps=4, num_stages=3"
    values: tuple[tuple[str, int], ...]  # what it sets (constexprs and options)
    finding: str | None  # the code of the finding whose cause it went after
    verdict: str
    chosen_us: float
    time_us: float
    gpu: str
    change: str = ""  # in words: "BLOCK_SIZE_M 32 → 16, BLOCK_SIZE_K 32 → 64"

    @property
    def faster(self) -> bool:
        return self.verdict == "faster"

    def text(self) -> str:
        on = f" on {self.gpu}" if self.gpu else ""
        return (f"measured {self.chosen_us:.1f} → {self.time_us:.1f} µs ({self.chosen_us / self.time_us:.2f}×) at the "
                f"real launch{on}, outputs equal within tolerance")


def tuned(root: str | None, path: str, kernel: str) -> list[Tuned]:
    """What `tune` measured of this kernel's changes (validated; the latest line of a change wins)."""
    lines, rel = proposal_lines(root, path)
    out: dict[str, Tuned] = {}
    for r in lines:
        if r.get("source") != "tune" or r.get("path") != rel or r.get("kernel") != kernel:
            continue
        label, values = r.get("proposal"), r.get("set")
        before, after = positive_number(r.get("chosen_us")), positive_number(r.get("time_us"))
        if not isinstance(label, str) or len(label) > 1024 or not isinstance(values, dict) or before is None \
                or after is None or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                            for k, v in values.items()):
            continue
        code = r.get("finding") if isinstance(r.get("finding"), str) and len(r["finding"]) <= 16 else None
        gpu = r.get("gpu") if isinstance(r.get("gpu"), str) and len(r["gpu"]) <= 64 else ""
        change = r.get("change") if isinstance(r.get("change"), str) and len(r["change"]) <= 512 else ""
        out[label] = Tuned(label, tuple(sorted(values.items())), code, str(r.get("verdict") or "")[:32], before,
                           after, gpu, change)
    return list(out.values())


def tuned_change(root: str | None, path: str, kernel: str, change: dict[str, Any]) -> Tuned | None:
    """The measurement of exactly this change (`{"num_warps": 8}`), when `tune` made one."""
    want = tuple(sorted(change.items()))
    return next((t for t in tuned(root, path, kernel) if t.values == want), None)


def positive_number(v: Any) -> float | None:
    """A time or ratio read from a JSON line: a finite positive number below 1e12, else None."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e12 else None


TUNED_CODE = "TUNE001"


def tuned_finding(kr: KernelReport, root: str | None, text: str | None = None) -> Finding | None:
    """TUNE001: what `tune` measured faster at the kernel's real launch that no other finding of it carries as a
    fix — a change that went after no finding here, or one the fixes cannot write (no literal autotune list: configs
    built by code or read from a data file, launch values computed by the caller). One finding a kernel, on its
    decorator, for the fastest; every one in its data."""
    if not root:
        return None
    shown = {f.code for f in kr.findings}
    from ..frontend.config_spans import config_sources

    # a literal list in the file: the fix adds the config to it
    writable = bool(text is not None and kr.kernel.autotune_configs and
                    config_sources(kr.kernel.path, text, kr.kernel.def_line))
    rows = [t for t in tuned(root, kr.kernel.path, kr.name)
            if t.faster and (t.finding is None or t.finding not in shown or not writable)]
    if not rows:
        return None
    best = min(rows, key=lambda t: t.time_us / t.chosen_us)
    k = kr.kernel
    where = [] if writable else ["no literal autotune list to add it to: set it where the launch's values are made "
                                 "(configs built by code or read from a file, or computed by the caller)"]
    message = (f"faster launch measured: {best.change or best.proposal}, {best.chosen_us:.1f} → {best.time_us:.1f} µs "
               f"({best.chosen_us / best.time_us:.2f}×{', ' + best.gpu if best.gpu else ''})")
    details = [f"{t.change or t.proposal}: {t.chosen_us:.1f} → {t.time_us:.1f} µs ({t.chosen_us / t.time_us:.2f}×) at "
               f"the real launch{' on ' + t.gpu if t.gpu else ''}, outputs equal within tolerance (the config: "
               f"{t.proposal})" for t in sorted(rows, key=lambda t: t.time_us / t.chosen_us)] + where
    data = {"tuned": [{"proposal": t.proposal, "change": t.change, "before_us": t.chosen_us, "after_us": t.time_us,
                       "gpu": t.gpu, "finding": t.finding} for t in sorted(rows, key=lambda t: t.time_us / t.chosen_us)],
            "writable": writable, "merge_key": TUNED_CODE}
    line = k.decorator_line if k.is_autotuned else k.def_line
    return Finding(k.path, line, 1, line, 1, TUNED_CODE, "", message, kernel=k.name, data=data, details=details)


def note_withheld(kr: KernelReport, root: str | None) -> None:
    """Each finding whose cause `tune` went after says what it measured no faster (or with other outputs) at the
    real launch, and why those changes are not offered."""
    if not root:
        return
    rows = [t for t in tuned(root, kr.kernel.path, kr.name) if not t.faster]
    for f in kr.findings:
        mine = [t for t in rows if t.finding == f.code]
        if not mine:
            continue
        f.data["tuned_withheld"] = [{"proposal": t.proposal, "change": t.change, "verdict": t.verdict,
                                     "before_us": t.chosen_us, "after_us": t.time_us} for t in mine]
        shown = "; ".join(f"{t.change or t.proposal} {t.chosen_us:.1f} → {t.time_us:.1f} µs ({t.verdict})"
                          for t in mine[:4])
        f.add_detail(f"tune measured {len(mine)} change{'s' if len(mine) != 1 else ''} for this cause no faster at "
                     f"the real launch{' on ' + mine[0].gpu if mine[0].gpu else ''}, withheld: {shown}"
                     f"{'; …' if len(mine) > 4 else ''}")
