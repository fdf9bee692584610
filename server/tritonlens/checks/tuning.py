"""What the autotuner measured, and what it says about advice.

Triton's Autotuner times every config it benchmarks for a key (`configs_timings`); `capture` keeps those times
(tuning lines, see gpu/capture_record.tuning_record). They are measured truth about the alternatives, at no extra
GPU cost. This module reads them (`KeyTuning.from_record`: untrusted data, checked field by field), summarizes a
kernel's tuning (`summarize`: configs tried per key, the chosen one, the spread, dead configs and the autotuning time
they cost) and judges a finding's advice by them (`judge`): a finding that advises a config change says in
`Finding.data["advises"]` which way (see `DIRECTIONS`), and `judge` attaches a `MeasuredAdvice` — the evidence the
severity verdict reads — with the measured configs in that direction, like for like: a trial counts only when it
differs from the chosen config in the advised knob alone (`like_for_like`), or is a config proposed for the finding.
It decides no severity.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

DEAD_MARGIN = 0.10  # a config never within this share of the best time for any captured key is dead
_MAX_CONFIGS = 512

# The directions a finding can advise (Finding.data["advises"]: a list of these; "smaller:NAME" a constexpr below the
# chosen config's, "smaller:NAME:AT_MOST" one of at most that value).
DIRECTIONS = ("more_programs", "more_warps", "fewer_stages", "smaller:NAME", "smaller:NAME:AT_MOST")


@dataclass(frozen=True)
class MeasuredConfig:
    """One config the autotuner timed (or pruned) for one key."""

    kwargs: tuple[tuple[str, Any], ...]
    options: tuple[tuple[str, int], ...]  # num_warps, num_stages, num_ctas, maxnreg as the Config set them
    time_us: float | None = None  # median of the autotuner's timing runs; None: failed (or never timed)
    grid: tuple[int, ...] | None = None  # the grid its trial launched
    bench_s: float | None = None  # wall time its benchmark took (compile and timing runs)

    @property
    def ident(self) -> tuple:
        return (self.kwargs, self.options)

    @property
    def programs(self) -> int | None:
        return math.prod(self.grid) if self.grid else None

    def value(self, name: str) -> Any:
        return dict(self.kwargs).get(name, dict(self.options).get(name))

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.kwargs] + \
            [f"{k}={v}" for k, v in self.options if not (k == "num_ctas" and v == 1)]
        return ", ".join(parts) or "(no values)"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"config": self.label(), "kwargs": dict(self.kwargs), **dict(self.options),
                               "time_us": self.time_us}
        if self.grid is not None:
            out["programs"] = self.programs
        return out


def _int(v: Any, limit: int = 1 << 40) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < limit


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e12 else None


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 256)


def _config(raw: Any) -> MeasuredConfig | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("kwargs", {}), dict):
        return None
    kwargs = tuple((k, v) for k, v in list(raw.get("kwargs", {}).items())[:64]
                   if isinstance(k, str) and len(k) <= 256 and _scalar(v))
    options = tuple((k, raw[k]) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if _int(raw.get(k), 1 << 16))
    grid = raw.get("grid")
    grid = tuple(grid) if isinstance(grid, list) and 1 <= len(grid) <= 3 and all(_int(g) for g in grid) else None
    return MeasuredConfig(kwargs, options, _num(raw.get("time_us")), grid, _num(raw.get("bench_s")))


@dataclass(frozen=True)
class KeyTuning:
    """What the autotuner measured for one key of one kernel: the configs it timed, the one it chose, and how many
    it offered (those not timed were pruned)."""

    key: tuple
    configs: tuple[MeasuredConfig, ...]
    chosen: int | None = None
    offered: int = 0
    pruned: tuple[MeasuredConfig, ...] = ()
    bench_s: float | None = None
    cached: bool = False  # read from the autotuner's disk cache: measured by an earlier run
    args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def from_record(cls, raw: Any) -> "KeyTuning | None":
        """A tuning line (or its copy on a Spec) as data; None when it holds no usable config."""
        if not isinstance(raw, dict):
            return None
        configs = tuple(c for c in map(_config, (raw.get("configs") or [])[:_MAX_CONFIGS]) if c is not None)
        if not configs or not isinstance(raw.get("configs"), list):
            return None
        key = raw.get("key")
        key_t = tuple(k if _scalar(k) else repr(k)[:64] for k in key[:64]) if isinstance(key, list) else ()
        chosen = raw.get("chosen")
        pruned = raw.get("pruned") if isinstance(raw.get("pruned"), list) else []
        args = raw.get("args") if isinstance(raw.get("args"), dict) else {}
        return cls(key_t, configs, chosen if _int(chosen, len(configs)) else None,
                   raw["offered"] if _int(raw.get("offered"), 1 << 20) else len(configs),
                   tuple(c for c in map(_config, pruned[:_MAX_CONFIGS]) if c is not None),
                   _num(raw.get("bench_s")), raw.get("cached") is True, args)

    @property
    def chosen_config(self) -> MeasuredConfig | None:
        return self.configs[self.chosen] if self.chosen is not None else None

    @property
    def timed(self) -> list[MeasuredConfig]:
        return [c for c in self.configs if c.time_us is not None]

    @property
    def best(self) -> MeasuredConfig | None:
        timed = self.timed
        return min(timed, key=lambda c: c.time_us) if timed else None  # type: ignore[arg-type, return-value]

    @property
    def worst(self) -> MeasuredConfig | None:
        timed = self.timed
        return max(timed, key=lambda c: c.time_us) if timed else None  # type: ignore[arg-type, return-value]

    def key_text(self) -> str:
        return key_text(self.key)

    def cost_s(self, config: MeasuredConfig) -> float | None:
        """The autotuning time this config cost for this key: its benchmark's wall time, else an even share."""
        if config.bench_s is not None:
            return config.bench_s
        return self.bench_s / len(self.configs) if self.bench_s is not None and self.configs else None


def key_text(key: tuple) -> str:
    """An autotuner key as the user wrote its values: `16, 8192, 8192, float16, ...` (torch's dtype prefix off)."""
    return ", ".join(str(k).removeprefix("torch.") for k in key) if key else "(no key)"


def config_ident(cfg: MeasuredConfig) -> tuple:
    """A config as the autotune list and the tuning lines both name it: its kwargs, num_warps and num_stages (with
    Triton's defaults 4 and 3), num_ctas only when not 1."""
    ctas = cfg.value("num_ctas")
    return (tuple(sorted(cfg.kwargs)), cfg.value("num_warps") or 4, cfg.value("num_stages") or 3,
            ctas if ctas not in (None, 1) else 1)


def list_configs(kernel) -> list[MeasuredConfig]:
    """The kernel's literal autotune configs (KernelInfo.autotune_configs) as configs, untimed."""
    return [c for c in map(_config, getattr(kernel, "autotune_configs", None) or []) if c is not None]


def untimed_configs(kernel, tunings: list["KeyTuning"]) -> list[MeasuredConfig]:
    """The autotune list's configs that no captured key timed or pruned: added after the capture (a proposal applied),
    so the autotuner has not measured them yet."""
    seen = {config_ident(c) for kt in tunings for c in kt.configs + kt.pruned}
    return [c for c in list_configs(kernel) if config_ident(c) not in seen]


def same_config(cfg: MeasuredConfig, constants: dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether a compiled spec (its constexpr values and options) is this config."""
    return all(constants.get(k) == v for k, v in cfg.kwargs) and \
        all(options.get(k) == v for k, v in cfg.options if k in ("num_warps", "num_stages", "num_ctas"))


# ---------------------------------------------------------------- a kernel's tuning
@dataclass
class DeadConfig:
    config: MeasuredConfig
    best_ratio: float | None  # its best time over the best config's, over the keys it was timed for (None: failed)
    keys: int  # keys it was timed (or failed) for
    cost_s: float | None  # the autotuning time it cost over those keys


@dataclass
class TuningSummary:
    """A kernel's tuning over its captured keys (see `summarize`)."""

    keys: list[KeyTuning]
    dead: list[DeadConfig]
    margin: float = DEAD_MARGIN
    offered: int = 0  # distinct configs over all keys (timed or pruned)

    @property
    def dead_cost_s(self) -> float | None:
        costs = [d.cost_s for d in self.dead if d.cost_s is not None]
        return sum(costs) if costs else None

    @property
    def bench_s(self) -> float | None:
        times = [k.bench_s for k in self.keys if k.bench_s is not None]
        return sum(times) if times else None

    def key_lines(self) -> list[str]:
        out = []
        for kt in self.keys:
            best, worst, chosen = kt.best, kt.worst, kt.chosen_config
            if best is None:
                out.append(f"key ({kt.key_text()}): {len(kt.configs)} configs, none ran")
                continue
            pruned = kt.offered - len(kt.configs)
            tried = f"{len(kt.timed)} of {kt.offered} configs timed" + (f" ({pruned} pruned)" if pruned > 0 else "")
            failed = len(kt.configs) - len(kt.timed)
            if failed:
                tried += f", {failed} failed"
            spread = f"spread {best.time_us:.1f}–{worst.time_us:.1f} µs ({worst.time_us / best.time_us:.2f}×)" \
                if worst is not None and best.time_us else ""
            pick = f"chosen {chosen.label()}: {chosen.time_us:.1f} µs" if chosen is not None and \
                chosen.time_us is not None else f"best {best.label()}: {best.time_us:.1f} µs"
            if chosen is not None and chosen.programs is not None:
                pick += f", {chosen.programs} programs"
            when = f", {kt.bench_s:.2f} s of autotuning" if kt.bench_s is not None else \
                (", read from the autotuner's cache" if kt.cached else "")
            out.append(f"key ({kt.key_text()}): {tried}; {pick}; {spread}{when}")
        return out

    def dead_line(self) -> str:
        if not self.dead:
            return f"no dead configs: every config came within {self.margin:.0%} of the best for some key"
        cost = self.dead_cost_s
        costs = f", {cost:.2f} s of autotuning" if cost is not None else ""
        shown = "; ".join(d.config.label() + (f" ({d.best_ratio:.2f}× the best at best)" if d.best_ratio
                                               else " (failed)") for d in self.dead[:4])
        more = f"; and {len(self.dead) - 4} more" if len(self.dead) > 4 else ""
        return (f"{len(self.dead)} of {self.offered} configs never came within {self.margin:.0%} of the best for any "
                f"of {len(self.keys)} captured key{'s' if len(self.keys) != 1 else ''}{costs}: {shown}{more}")

    def to_json(self) -> dict[str, Any]:
        keys = []
        for kt in self.keys:
            best, worst, chosen = kt.best, kt.worst, kt.chosen_config
            keys.append({"key": list(kt.key), "offered": kt.offered, "timed": len(kt.timed),
                         "failed": len(kt.configs) - len(kt.timed), "pruned": kt.offered - len(kt.configs),
                         "chosen": chosen.to_json() if chosen else None, "best_us": best.time_us if best else None,
                         "worst_us": worst.time_us if worst else None, "bench_s": kt.bench_s, "cached": kt.cached,
                         "configs": [c.to_json() for c in kt.configs]})
        return {"keys": keys, "margin": self.margin, "offered": self.offered, "bench_s": self.bench_s,
                "dead": [{**d.config.to_json(), "best_ratio": d.best_ratio, "keys": d.keys, "cost_s": d.cost_s}
                         for d in self.dead],
                "dead_cost_s": self.dead_cost_s}


def summarize(tunings: list[KeyTuning], margin: float = DEAD_MARGIN) -> TuningSummary | None:
    """A kernel's tuning: one entry per captured key (the latest measurement of a key wins), and its dead configs —
    timed for some key and never within `margin` of that key's best time (or failed wherever timed)."""
    by_key: dict[tuple, KeyTuning] = {}
    for kt in tunings:
        by_key[kt.key] = kt
    if not by_key:
        return None
    keys = list(by_key.values())
    ratios: dict[tuple, list[float | None]] = {}
    costs: dict[tuple, float] = {}
    configs: dict[tuple, MeasuredConfig] = {}
    seen: set[tuple] = set()
    for kt in keys:
        best = kt.best
        for c in kt.pruned:
            seen.add(c.ident)
        for c in kt.configs:
            seen.add(c.ident)
            configs.setdefault(c.ident, c)
            ratio = c.time_us / best.time_us if c.time_us is not None and best is not None and best.time_us else None
            ratios.setdefault(c.ident, []).append(ratio)
            cost = kt.cost_s(c)
            if cost is not None:
                costs[c.ident] = costs.get(c.ident, 0.0) + cost
    dead = []
    for ident, rs in ratios.items():
        finite = [r for r in rs if r is not None]
        if finite and min(finite) <= 1 + margin:
            continue
        dead.append(DeadConfig(configs[ident], min(finite) if finite else None, len(rs), costs.get(ident)))
    dead.sort(key=lambda d: -(d.best_ratio or math.inf))
    return TuningSummary(keys, dead, margin, len(seen))


# ---------------------------------------------------------------- what a GPU measured of proposed configs
MAX_TIMINGS = 4096  # lines of .tritonlens/proposals.jsonl read


@dataclass(frozen=True)
class ProposalTiming:
    """One proposed config (LAUNCH004's fitting tile) timed on the captured launch against the chosen config, same
    inputs, outputs compared (bench/autotune/time_proposals.py writes `.tritonlens/proposals.jsonl`)."""

    proposal: str  # its label, as fixes/tuning.label writes it: "BLOCK_M=16, ..., num_warps=4, num_stages=3"
    chosen_us: float
    time_us: float
    same: bool  # every output tensor equal (or within fp tolerance) to the chosen config's
    gpu: str = ""

    @property
    def faster(self) -> bool:
        return self.same and self.time_us < self.chosen_us

    def value(self, name: str) -> int | None:
        for part in self.proposal.split(","):
            k, _, v = part.strip().partition("=")
            if k == name and v.lstrip("-").isdigit():
                return int(v)
        return None

    def text(self) -> str:
        on = f" on {self.gpu}" if self.gpu else ""
        if not self.same:
            return f"withheld: its outputs differ from the chosen config's{on}"
        return (f"measured {self.chosen_us:.1f} → {self.time_us:.1f} µs ({self.chosen_us / self.time_us:.2f}×) on the "
                f"captured launch{on}, outputs equal")


def label_parts(label_text: str) -> frozenset:
    """A config label as a set of `name=value` parts: the same config whatever the order its names were listed in."""
    return frozenset(p.strip() for p in label_text.split(",") if p.strip())


def parse_proposal_timings(lines: list, rel_path: str, kernel: str) -> dict[frozenset, ProposalTiming]:
    """The decoded lines of `.tritonlens/proposals.jsonl` (untrusted: each field checked) that are this kernel's (a
    line naming another file or kernel is not), by the proposal's label; the latest line wins."""
    out: dict[frozenset, ProposalTiming] = {}
    for rec in lines[:MAX_TIMINGS]:
        if not isinstance(rec, dict):
            continue
        name, times = rec.get("proposal"), (rec.get("chosen_us"), rec.get("time_us"))
        if not isinstance(name, str) or len(name) > 1024 or not all(
                isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 1e9 for t in times):
            continue
        if ("path" in rec and rec["path"] != rel_path) or ("kernel" in rec and rec["kernel"] != kernel):
            continue
        same = rec.get("outputs_close", rec.get("outputs_equal"))
        gpu = rec.get("gpu") if isinstance(rec.get("gpu"), str) and len(rec["gpu"]) <= 64 else ""
        out[label_parts(name)] = ProposalTiming(name, float(times[0]), float(times[1]), same is True, gpu)
    return out


def judge_proposals(findings: list, timings: dict[frozenset, ProposalTiming]) -> None:
    """A finding whose advice is a smaller tile (`smaller:NAME:AT_MOST`, LAUNCH004) against what the GPU measured of
    the configs proposed for it: every one slower (or computing something else) — the finding says so and is at
    most an info (a ceiling for the verdict); one faster — it says by how much."""
    for f in findings:
        advice = next((a for a in f.data.get("advises") or [] if isinstance(a, str) and a.count(":") == 2), None)
        if advice is None or not timings:
            continue
        _, name, upto = advice.split(":")
        if not upto.isdigit():
            continue
        there = [t for t in timings.values() if (t.value(name) or 1 << 30) <= int(upto)]
        if not there:
            continue
        faster = [t for t in there if t.faster]
        if faster:
            best = min(faster, key=lambda t: t.time_us)
            f.add_detail(f"proposed {best.proposal}: {best.text()}")
            f.data["proposal_measured"] = {"outcome": "faster", "proposal": best.proposal, "time_us": best.time_us,
                                           "chosen_us": best.chosen_us}
            continue
        best = min(there, key=lambda t: t.time_us)
        n = "the one config" if len(there) == 1 else f"all {len(there)} configs"
        f.add_detail(f"{n} proposed with {name} ≤ {upto} measured no faster on the captured launch — best "
                     f"{best.time_us:.1f} µs ({best.proposal}) vs {best.chosen_us:.1f} µs chosen")
        f.data["proposal_measured"] = {"outcome": "slower", "proposal": best.proposal, "time_us": best.time_us,
                                       "chosen_us": best.chosen_us}
        from .verdict import limit

        limit(f, "info", "the configs proposed for it measured no faster on the GPU", "measured_proposal", said=True)


# ---------------------------------------------------------------- pruning the dead configs
@dataclass
class PrunePlan:
    """What pruning the dead configs from the literal autotune list would do: `configs` the dead configs still in the
    list (never the chosen config of any key), `positions` their 0-based places in it, `saves_s` the autotuning time
    they cost over the captured keys (their recorded trial times); `why_not` when pruning is not offered."""

    configs: list[MeasuredConfig] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    saves_s: float | None = None
    why_not: str | None = None
    keys: int = 0

    def text(self) -> str:
        if self.why_not:
            return f"pruning not offered: {self.why_not}"
        if not self.configs:
            return "no dead config is left in the autotune list"
        saves = f", saving {self.saves_s:.2f} s of autotuning over the {self.keys} captured key" \
            f"{'s' if self.keys != 1 else ''} (their recorded trial times)" if self.saves_s is not None else ""
        return f"pruning the {len(self.configs)} dead config{'s' if len(self.configs) != 1 else ''} still in the " \
            f"autotune list{saves}"

    def to_json(self) -> dict[str, Any]:
        return {"configs": [c.label() for c in self.configs], "positions": self.positions, "saves_s": self.saves_s,
                "why_not": self.why_not}


def prune_plan(summary: TuningSummary, kernel, launched_keys: list[tuple]) -> PrunePlan:
    """Which dead configs the literal list can lose. Offered only when every key the captured launches ran (their
    values of the autotune key's arguments, `launched_keys`) has the autotuner's timings: a config dead at the keys
    measured may win at one that was not."""
    listed = list_configs(kernel)
    if not listed:
        return PrunePlan(why_not="the kernel has no literal autotune list to remove configs from")
    if not launched_keys:
        return PrunePlan(why_not="no captured launch says which keys the program runs")
    measured = [kt.key for kt in summary.keys]
    missing = [k for k in dict.fromkeys(launched_keys) if not any(tuple(m[:len(k)]) == k for m in measured)]
    if missing:
        n = len(dict.fromkeys(launched_keys))
        return PrunePlan(why_not=f"{len(missing)} of the {n} keys the captured launches ran have no autotuner "
                                 f"timings in the capture (key {key_text(missing[0])}): capture them on a GPU "
                                 "(tritonlens capture) first, a config dead at the keys measured may win there")
    chosen = {config_ident(kt.chosen_config) for kt in summary.keys if kt.chosen_config is not None}
    dead = {config_ident(d.config): d for d in summary.dead}
    plan = PrunePlan(keys=len(summary.keys))
    costs = []
    for i, c in enumerate(listed):
        ident = config_ident(c)
        if ident in dead and ident not in chosen:
            plan.configs.append(c)
            plan.positions.append(i)
            if dead[ident].cost_s is not None:
                costs.append(dead[ident].cost_s)
    if len(plan.positions) >= len(listed):  # never an empty list (a chosen config is never dead: defensive)
        return PrunePlan(why_not="every config of the list is dead")
    plan.saves_s = sum(costs) if costs else None
    return plan


# ---------------------------------------------------------------- advice judged by measurement
@dataclass(frozen=True)
class MeasuredAdvice:
    """The evidence the severity verdict reads (`Finding.data[MeasuredAdvice.FIELD]`): what the autotuner measured
    in the direction a finding advises, for the key of the finding's launch, like for like (`like_for_like`).
    `outcome`: "slower" — every like-for-like config measured in that direction was slower than the chosen one (the
    advice is contradicted: not a warning); "faster" — one was faster; "none alike" — configs timed that way all
    differ from the chosen one in other values too (`unlike` of them: a 16-row tile with another N and K says nothing
    of the 16-row tile with the chosen N and K), so the advice is not judged by them and stays as the cost model
    ranks it; "none measured" — no config the autotuner timed goes that way (the advice stands unmeasured)."""

    FIELD = "measured_advice"
    OUTCOMES = ("slower", "faster", "none alike", "none measured")

    outcome: str  # one of OUTCOMES
    direction: str  # as advised: "more_programs", "smaller:BLOCK_M", ...
    key: tuple = ()
    chosen_us: float | None = None
    best_us: float | None = None  # the fastest like-for-like config measured in that direction
    best_config: str | None = None
    measured: int = 0  # like-for-like configs timed in that direction
    timed: int = 0  # configs timed for the key
    unlike: int = 0  # configs timed in that direction that differ from the chosen one in other values too

    def to_data(self) -> dict[str, Any]:
        return {**asdict(self), "key": list(self.key), "text": self.text()}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "MeasuredAdvice | None":
        raw = data.get(cls.FIELD) if isinstance(data, dict) else None
        if not isinstance(raw, dict) or raw.get("outcome") not in cls.OUTCOMES:
            return None
        counts = [raw.get(k) if _int(raw.get(k)) else 0 for k in ("measured", "timed", "unlike")]
        return cls(raw["outcome"], str(raw.get("direction", "")), tuple(raw.get("key") or ()), _num(raw.get("chosen_us")),
                   _num(raw.get("best_us")), raw.get("best_config") if isinstance(raw.get("best_config"), str) else None,
                   *counts)

    @property
    def contradicts(self) -> bool:
        return self.outcome == "slower"

    @property
    def judged(self) -> bool:
        """Whether a like-for-like trial went the advised way (the advice is judged by a measurement)."""
        return self.outcome in ("slower", "faster")

    def text(self) -> str:
        what = _direction_text(self.direction)
        key = f"key {key_text(self.key)}" if self.key else "its key"
        chosen = f"{self.chosen_us:.1f} µs chosen" if self.chosen_us is not None else "the chosen config"
        if self.outcome == "none measured":
            return f"not measured: none of the {self.timed} configs the autotuner timed ({key}) has {what}"
        if self.outcome == "none alike":
            n = "the one config" if self.unlike == 1 else f"the {self.unlike} configs"
            return (f"not judged by the autotuner ({key}): it timed no config that differs from the chosen one "
                    f"{_knob_text(self.direction)}; {n} with {what} it timed "
                    f"differ{'s' if self.unlike == 1 else ''} in other values too")
        if self.outcome == "slower":
            n = "the one config" if self.measured == 1 else f"all {self.measured} configs"
            said = f"{n} with {what} {'was' if self.measured == 1 else 'were'} slower — best"
        else:
            said = f"a config with {what} was faster —"
        return f"measured by the autotuner ({key}): {said} {self.best_us:.1f} µs ({self.best_config}) vs {chosen}"


_DIRECTION_TEXT = {"more_programs": "more programs", "more_warps": "more warps", "fewer_stages": "fewer stages",
                   "smaller": "a smaller {name}"}


def _direction_text(direction: str) -> str:
    kind, _, rest = direction.partition(":")
    name, _, upto = rest.partition(":")
    if kind == "smaller" and upto:
        return f"{name} ≤ {upto}"
    return _DIRECTION_TEXT.get(kind, direction).format(name=name)


def _knob(direction: str) -> str | None:
    """The one value a direction changes: "num_warps", "num_stages", NAME of "smaller:NAME[:AT_MOST]"; None for
    "more_programs" (any one value that gives more programs)."""
    kind, _, rest = direction.partition(":")
    if kind in ("more_warps", "fewer_stages"):
        return "num_warps" if kind == "more_warps" else "num_stages"
    if kind == "smaller":
        return rest.partition(":")[0] or None
    return None


def _knob_text(direction: str) -> str:
    knob = _knob(direction)
    return f"only in {knob}" if knob is not None else "in a single value that gives more programs"


_OPTION_DEFAULTS = (("num_warps", 4), ("num_stages", 3), ("num_ctas", 1), ("maxnreg", None))


def config_values(c: MeasuredConfig) -> dict[str, Any]:
    """Every value a config sets, options with Triton's defaults where it left them out."""
    return {**dict(c.kwargs), **{k: c.value(k) if c.value(k) is not None else d for k, d in _OPTION_DEFAULTS}}


def like_for_like(direction: str, c: MeasuredConfig, chosen: MeasuredConfig) -> bool:
    """Whether `c` differs from the chosen config in `direction`'s knob alone (same other constexprs and options): only
    such a trial says what taking the advice on the chosen config does. Call with a config in that direction."""
    a, b = config_values(c), config_values(chosen)
    changed = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    knob = _knob(direction)
    return len(changed) == 1 and (knob is None or changed == {knob})


def _is_candidate(c: MeasuredConfig, candidates: frozenset) -> bool:
    """Whether `c` is one of the configs proposed for the finding (labels' `name=value` parts, see `label_parts`)."""
    if not candidates:
        return False
    values = config_values(c)
    parts = frozenset(f"{k}={v}" for k, v in values.items() if v is not None and not (k == "num_ctas" and v == 1))
    return parts in candidates


def _in_direction(direction: str, c: MeasuredConfig, chosen: MeasuredConfig) -> bool:
    kind, _, name = direction.partition(":")
    if kind == "more_programs":
        return c.programs is not None and chosen.programs is not None and c.programs > chosen.programs
    if kind in ("more_warps", "fewer_stages"):
        opt = "num_warps" if kind == "more_warps" else "num_stages"
        a, b = c.value(opt), chosen.value(opt)
        return isinstance(a, int) and isinstance(b, int) and (a > b if kind == "more_warps" else a < b)
    if kind == "smaller" and name:  # "smaller:NAME" or "smaller:NAME:AT_MOST"
        name, _, upto = name.partition(":")
        a, b = c.value(name), chosen.value(name)
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a < b and \
            (not upto.isdigit() or a <= int(upto))
    return False


def _alike(direction: str, c: MeasuredConfig, chosen: MeasuredConfig, candidates: frozenset) -> bool:
    """A config in `direction` that counts for or against the advice: like for like, or a proposed config itself."""
    return like_for_like(direction, c, chosen) or _is_candidate(c, candidates)


def candidate_parts(labels: Any) -> frozenset:
    """Config labels (`fixes.tuning.label`: "BLOCK_M=16, ..., num_warps=4, num_stages=3") as sets of parts; anything
    else (untrusted finding data) is left out."""
    return frozenset(label_parts(t) for t in (labels if isinstance(labels, list) else [])[:64]
                     if isinstance(t, str) and len(t) <= 1024)


def measured_advice(tuning: KeyTuning, direction: str, candidates: frozenset = frozenset()) -> MeasuredAdvice | None:
    """What the autotuner measured for `tuning`'s key in `direction`, against the config it chose: only the trials that
    differ from it in that direction alone, or that are one of `candidates` (see `candidate_parts`), count."""
    chosen = tuning.chosen_config
    if chosen is None or chosen.time_us is None:
        return None
    timed = [c for c in tuning.timed if c is not chosen]
    there = [c for c in timed if _in_direction(direction, c, chosen)]
    if not there:
        return MeasuredAdvice("none measured", direction, tuning.key, chosen.time_us, timed=len(tuning.timed))
    alike = [c for c in there if _alike(direction, c, chosen, candidates)]
    if not alike:
        return MeasuredAdvice("none alike", direction, tuning.key, chosen.time_us, timed=len(tuning.timed),
                              unlike=len(there))
    best = min(alike, key=lambda c: c.time_us)  # type: ignore[arg-type, return-value]
    outcome = "slower" if best.time_us >= chosen.time_us else "faster"  # type: ignore[operator]
    return MeasuredAdvice(outcome, direction, tuning.key, chosen.time_us, best.time_us, best.label(), len(alike),
                          len(tuning.timed), len(there) - len(alike))


def spec_tunings(ctx) -> list[KeyTuning]:
    """The keys for which the autotuner measured the configs and chose this spec's config."""
    raw = getattr(ctx.spec, "tuning", None)
    out = []
    for rec in (raw if isinstance(raw, list) else [])[:64]:
        kt = KeyTuning.from_record(rec)
        if kt is not None and kt.chosen_config is not None and \
                same_config(kt.chosen_config, ctx.spec.constants, ctx.spec.options):
            out.append(kt)
    return out


def _for_finding(tunings: list[KeyTuning], f) -> KeyTuning:
    """The key whose chosen launch is the finding's (its programs), else the first."""
    programs = f.data.get("programs")
    return next((kt for kt in tunings if kt.chosen_config is not None and kt.chosen_config.programs == programs),
                tunings[0])


def waiting_configs(ctx, tuning: KeyTuning, direction: str) -> list[MeasuredConfig]:
    """Configs of the kernel's autotune list in `direction` from the chosen config that the captured run never timed
    (nor pruned): the advice is already in the list, and the autotuner decides on its next run. Any config that way
    waits, like for like or not (a proposal re-balances the other dimensions): once timed, only a like-for-like one
    (or the proposal itself) judges the advice, and an unlike one leaves it standing for the next proposal."""
    chosen = tuning.chosen_config
    if chosen is None:
        return []
    return [c for c in untimed_configs(ctx.kernel, [tuning]) if _in_direction(direction, c, chosen)]


def judge(ctx, findings: list) -> None:
    """Attach to each finding that advises a config change (`data["advises"]`) what the autotuner measured that way
    for the spec's key, like for like (a MeasuredAdvice in `data["measured_advice"]`), and say it in the details —
    except when only unlike trials went that way: then the data says so and the details are the rule's. Configs
    proposed for the finding (`data["candidates"]`: labels) count as like for like. No severity is set here: the
    verdict reads the evidence. A finding whose advice none of the measured configs took, but that a config of the
    autotune list the capture never timed does take (a proposal applied since), is dropped: the advice is done, and
    what the autotuner measures of it on the next run is LAUNCH005's to show."""
    tunings = spec_tunings(ctx)
    if not tunings:
        return
    done = []
    for f in findings:
        advises = f.data.get("advises")
        if not isinstance(advises, list) or not advises:
            continue
        kt = _for_finding(tunings, f)
        cands = candidate_parts(f.data.get("candidates"))
        verdicts = [v for v in (measured_advice(kt, d, cands) for d in advises if isinstance(d, str)) if v is not None]
        if not verdicts:
            continue
        # The first direction is the advice itself (the evidence); a broader one after it (a smaller tile, where the
        # advice is a tile of at most 16) is said too when only it was measured.
        evidence = verdicts[0]
        if not evidence.judged and waiting_configs(ctx, kt, evidence.direction):
            done.append(f)
            continue
        f.data[MeasuredAdvice.FIELD] = evidence.to_data()
        if evidence.outcome != "none alike":  # unlike trials say nothing of the advice: the data says why
            f.add_detail(f"autotuner: {evidence.text()}")
        if evidence.contradicts:  # a ceiling for the verdict (checks/verdict), said in the details already
            from .verdict import limit

            f.message += "; the autotuner measured that way slower"

            limit(f, "info", "the autotuner measured the advised direction slower", "measured", said=True)
        broader = next((v for v in verdicts[1:] if v.judged), None)
        if not evidence.judged and broader is not None:
            f.add_detail(f"autotuner: {broader.text()}")
    for f in done:
        findings.remove(f)
