"""What each finding's cause costs in the spec's captured launches: a finding's estimated gain is the launch's time
less the time with its cause removed (`Cost.without(cause)`), weighed over the launches by their counts and scaled
to their measured times; a launch the model cannot price (`Cost.unknown`) weighs no finding. And the model's mean
time of a spec's launches, what a fix and a release comparison set side by side."""
from __future__ import annotations

import ast
from typing import Any

from ..facts import kernel_def
from ..registry import cost_cause, cost_weighed
from ..verdict import limit
from ...units import fmt_us
from .estimate import estimate
from .kernel import KernelFacts
from .launch import LAUNCH_US, Cost


def mean_launch_us(metrics: dict[str, Any]) -> float | None:
    """The model's time of a spec's captured launches (its metrics' `launch_costs`, one per recorded launch), weighed
    by how often each launched; None without captured launches, or when the model has no estimate of one of them
    (`unknown`: the others' mean is not the spec's). What a fix and a release comparison set side by side."""
    costs = [c for c in metrics.get("launch_costs") or () if isinstance(c, dict)]
    if any(c.get("unknown") for c in costs):
        return None
    pairs = [(max(1, int(c.get("count") or 1)), float(c["est_us"])) for c in costs
             if isinstance(c.get("est_us"), (int, float))]
    n = sum(w for w, _ in pairs)
    return sum(w * t for w, t in pairs) / n if n else None


# ---------------------------------------------------------------- what each finding's cause costs
CAUSES = frozenset({"narrow", "uncoalesced", "grid", "spill", "fma", "convert", "lanes"})  # what `without` removes


def gain_of(cost: Cost, f) -> float | None:
    """The estimated time a finding's cause costs in the launch; None when the model has no estimate for it."""
    cause = cost_cause(f.code)
    if cause is None or cause not in CAUSES:
        return None
    if cause == "lanes":
        # masked lanes issue no memory requests: only a launch bound by its instructions loses their share
        idle = float(f.data.get("idle") or 0.0)
        return idle * max(0.0, cost.dot_us - cost.memory_us)
    if cause == "fma" and f.data.get("lowering") != "fma":
        return None  # mma.sync instead of wgmma: the model has no rate for it
    if cause == "uncoalesced":
        return cost.gain_us(cause, pointer=f.data.get("pointer", ""))
    return cost.gain_us(cause)


_TAIL_CAUSES = ("narrow", "lanes")  # what the masked branch of the last block has and the full blocks do not


def tail_branch_lines(fn: ast.FunctionDef | None) -> set[int]:
    """Lines of the masked branch of a full/partial block split (`if (pid + 1) * BLOCK <= n: <unmasked> else:
    <masked>`, what the full-block fix writes): both branches access memory, the test compares with `<=` or `<`, and
    only the last block of a launch takes the `else`."""
    out: set[int] = set()
    if fn is None:
        return out

    def accesses(stmts) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("load", "store")
                   for s in stmts for n in ast.walk(s))

    for node in ast.walk(fn):
        if isinstance(node, ast.If) and node.orelse and isinstance(node.test, ast.Compare) \
                and len(node.test.ops) == 1 and isinstance(node.test.ops[0], (ast.LtE, ast.Lt)) \
                and accesses(node.body) and accesses(node.orelse):
            first, last = node.orelse[0].lineno, max(s.end_lineno or s.lineno for s in node.orelse)
            out.update(range(first, last + 1))
    return out


def _tail_findings(ctx, findings: list) -> set[int]:
    """Narrow accesses and idle lanes in the masked branch of a full/partial block split: one program of a launch
    runs it, so they are at most infos whatever the launch (checks/verdict: a ceiling; ids of the findings handled)."""
    lines = tail_branch_lines(kernel_def(ctx)) if ctx.source else set()
    done: set[int] = set()
    for f in findings:
        if cost_cause(f.code) in _TAIL_CAUSES and f.line in lines:
            done.add(id(f))
            f.data["tail_branch"] = True
            limit(f, "info", "in the masked branch for the last, partial block — one program of a launch runs it; "
                  "the full blocks take the unmasked path", "tail")
    return done


def launch_costs(ctx) -> list[tuple[dict[str, Any], Cost]]:
    """(launch, cost) for each recorded launch of the spec (the most launched first); empty without captures."""
    out = []
    facts = None
    for launch in ctx.launches:
        try:
            facts = facts or KernelFacts.of(ctx)
            cost = estimate(ctx, launch, facts)
        except Exception:  # noqa: BLE001 — an estimate that fails leaves the findings as the rules made them
            import logging

            logging.getLogger(__name__).exception("cost model failed on %s", ctx.kernel.name)
            return []
        if cost is not None:
            out.append((launch, cost))
    return out


_SHORT_HOW = {"estimated": "est.", "partly measured": "part measured"}


def weigh(ctx, findings: list) -> list[tuple[dict[str, Any], Cost]]:
    """Record on every cost-weighed finding of a spec with captured launches what its cause costs: its estimated gain,
    the share of the spec's time, the launch's time and bound (`data["est_*"]`, and in its message). The gain is
    weighed over the spec's recorded launches by their counts, each launch's estimate scaled to its measured time
    where the capture timed it (capture --time). The severity that follows is the verdict's (checks/verdict.py).
    Returns the launches' costs (for the metrics)."""
    tail = _tail_findings(ctx, findings)
    costs = launch_costs(ctx)
    if not costs:
        return costs
    unknown = next((c.unknown for _, c in costs if c.unknown), None)
    if unknown:  # a launch the model cannot price: no finding is weighed on the others' share of an unknown total
        for f in findings:
            if cost_weighed(f.code) and f.severity != "error" and id(f) not in tail \
                    and any(gain_of(c, f) is not None for _, c in costs):
                f.data["est_unknown"] = unknown
                f.message += " — cost unknown"
                f.add_detail(f"cost: unknown — {unknown}", replacing="cost: ")
        return costs
    weights = [max(1, int(launch.get("count") or 1)) for launch, _ in costs]
    scales = [(c.measured_us / c.time_us) if c.measured_us and c.time_us > 0 else 1.0 for _, c in costs]
    total = sum(w * s * c.time_us for w, s, (_, c) in zip(weights, scales, costs))
    launches = sum(weights)
    measured = all(c.measured_us for _, c in costs)
    main = costs[0][1]
    # an estimate a trusted measured time contradicts, or of a kernel the calibration does not cover, is no ground to
    # raise a severity on (the verdict reads est_trusted)
    trusted = all(c.confidence in ("measured", "estimated") for _, c in costs)
    how = "measured" if measured else "estimated" if not any(c.measured_us for _, c in costs) else "partly measured"
    where = f"{ctx.gpu.short_name}, {how}"
    for f in findings:
        if not cost_weighed(f.code) or f.severity == "error" or id(f) in tail:
            continue
        gains = [gain_of(c, f) for _, c in costs]
        if all(g is None for g in gains):
            continue
        gain = sum(w * s * (g or 0.0) for w, s, g in zip(weights, scales, gains))
        share = gain / total if total > 0 else 0.0
        per_launch = gain / launches
        launch_us = total / launches
        f.data.update({"est_gain_us": round(per_launch, 3), "est_share": round(share, 4),
                       "est_launch_us": round(launch_us, 3), "est_measured": measured, "est_bound": main.bound,
                       "est_short": launch_us < 2 * LAUNCH_US, "est_confidence": main.confidence,
                       "est_trusted": trusted})
        pct = "<1%" if 0 < share < 0.01 else f"{share:.0%}"
        # the cost in the one-line message; how it was reached (bound, confidence) in the details
        f.data["message_cost"] = f" — ~{pct} of {fmt_us(launch_us)} ({_SHORT_HOW.get(how, how)}, {ctx.gpu.short_name})"
        f.message += f.data["message_cost"]
        f.add_detail(f"cost: ~{fmt_us(per_launch)} of {fmt_us(launch_us)} a launch ({pct}; {where}; {main.bound}"
                     f"{main.confidence_note()})", replacing="cost: ")
    return costs
