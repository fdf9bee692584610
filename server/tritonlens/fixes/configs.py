"""Quick fixes that edit a kernel's literal `@triton.autotune(configs=[triton.Config(...), ...])`: when a finding holds
in some configs only, change THOSE configs (num_warps up, num_stages down, a BLOCK kwarg halved — in the module
constant the Config reads, `{"BLOCK_N": BN}`, when nothing else reads it) or remove a config that can never launch.
Like every fix, each candidate is re-compiled on a copy and offered with what that showed
("In config 1 (BLOCK_N=256, num_stages=5): num_stages 5 → 4 — removes RES001; shared 240.0 KB → 192.0 KB").
Configs built by code (a comprehension, a function) get no fix: there is no literal to edit."""
from __future__ import annotations

from typing import Any, Iterator

from ..checks.costmodel import mean_launch_us
from ..frontend.config_spans import ConfigSource, Span, config_sources
from ..frontend.specs import CONFIG_LABEL
from ..frontend.value_sources import config_constant
from ..model import CompiledSpec, Finding, KernelReport
from ..report.kernel import config_labels
from ..units import fmt_bytes, fmt_us
from .edit import Edit, Position, Range, apply_edits, fit_argument

MAX_STAGE_STEPS = 3  # num_stages tried downwards from the config's value, first that removes the finding wins


def config_index(cs: CompiledSpec) -> int | None:
    """1-based index of the autotune config a spec was made from ("hint line 5 × autotune config 2/3" -> 2)."""
    m = CONFIG_LABEL.search(cs.spec.label or "")
    return int(m.group(1)) if m else None


def holding(kr: KernelReport, f: Finding) -> list[CompiledSpec]:
    keys = set(f.data.get("specs") or [])
    return [cs for cs in kr.compiled if cs.spec.key() in keys]


def _range(span: Span) -> Range:
    return Range(Position(span[0] - 1, span[1]), Position(span[2] - 1, span[3]))


class ConfigCandidate:
    """One edit of one Config call: `group` names the alternatives of which only the first that works is offered."""

    def __init__(self, config: int, label: str, edits: list[Edit], group: str, what: str = "",
                 removes: bool = False, change: dict[str, Any] | None = None):
        self.config, self.label, self.edits, self.group = config, label, edits, group
        self.what, self.removes = what, removes
        self.traded = False  # set by `outcome`: a metric got worse or a finding appeared
        self.change: dict[str, Any] = change or {}  # the option or constexpr the edit sets: {"num_warps": 8}
        self.values: dict[str, str] = {}
        self.new_text = ""
        self.shift = 0

    def apply(self, text: str) -> tuple[list[Edit], str, int]:
        edits = [fit_argument(text, e) for e in self.edits]
        return edits, apply_edits(text, edits), 0


def _set_option(src: ConfigSource, name: str, value: int) -> Edit:
    if name in src.options:
        return Edit(_range(src.options[name]), str(value))
    line, col = src.close_paren
    return Edit.insert(line - 1, col, f", {name}={value}")


def _short_label(text: str, limit: int = 3) -> str:
    parts = text.split(", ")
    return ", ".join(parts[:limit]) + (", …" if len(parts) > limit else "")


def candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[ConfigCandidate] | None:
    """Config edits for the configs `f` holds in; None when the finding does not come from literal configs (the
    hint fixes apply then), an empty iterator when the configs are built by code."""
    held = [i for i in (config_index(cs) for cs in holding(kr, f)) if i is not None]
    if not held:
        return None
    sources = config_sources(kr.kernel.path, text, kr.kernel.def_line)
    if sources is None:
        return iter(())
    labels = config_labels([cs.spec for cs in kr.compiled])
    by_index = {cs_i: cs for cs in kr.compiled if (cs_i := config_index(cs)) is not None}
    return _each(kr, f, sources, sorted(set(held)), labels, by_index, text)


def _block_edit(kr: KernelReport, src: ConfigSource, k: str, v: int, text: str) -> tuple[Edit, str]:
    """Halve block kwarg `k` (value `v`) of one Config: in the Config, or in the module constant it reads when nothing
    else reads that constant. (edit, what the label adds)."""
    half = str(v // 2)
    name = src.names.get(k)
    if name is not None:
        span = src.kwargs[k]
        const = config_constant(kr.kernel.path, text, kr.kernel.func_name or kr.name, name, (span[0], span[1]))
        if const is not None and const.span is not None and not const.shared:
            return Edit.replace(*const.span, half), \
                f" (sets {name} = {half} on line {const.line})"
        return Edit(_range(span), half), \
            f" ({name} is read elsewhere too: the Config gets {half})"
    return Edit(_range(src.kwargs[k]), half), ""


def _block_values(kr: KernelReport, src: ConfigSource, text: str) -> list[tuple[str, int]]:
    """The Config's BLOCK kwargs with their values, literal or read from a module constant, largest first."""
    values = dict(src.values)
    for k, name in src.names.items():
        span = src.kwargs[k]
        const = config_constant(kr.kernel.path, text, kr.kernel.func_name or kr.name, name, (span[0], span[1]))
        if const is not None:
            values[k] = const.value
    return sorted(((k, v) for k, v in values.items() if k in src.kwargs and "BLOCK" in k.upper()
                   and isinstance(v, int) and not isinstance(v, bool) and v >= 32), key=lambda kv: -kv[1])


def _each(kr: KernelReport, f: Finding, sources: list[ConfigSource], held: list[int], labels: dict[str, str],
          by_index: dict[int, CompiledSpec], text: str) -> Iterator[ConfigCandidate]:
    for n in held:
        if n > len(sources):
            continue
        src = sources[n - 1]
        cs = by_index[n]
        name = f"In config {n} ({_short_label(labels.get(cs.spec.key(), ''))})"
        warps = cs.spec.options.get("num_warps")
        stages = cs.spec.options.get("num_stages")
        blocks = _block_values(kr, src, text)
        limiter = f.data.get("limiter")
        if f.code == "SASS001" and isinstance(warps, int) and warps < 16 and \
                isinstance(src.values.get("num_warps", warps), int):
            yield ConfigCandidate(n, f"{name}: num_warps {warps} → {warps * 2}",
                                  [_set_option(src, "num_warps", warps * 2)], f"{n}:warps",
                                  change={"num_warps": warps * 2})
        if f.code in ("RES001", "RES002") and limiter != "registers" and isinstance(stages, int) and \
                isinstance(src.values.get("num_stages", stages), int):
            for s in range(stages - 1, max(0, stages - 1 - MAX_STAGE_STEPS), -1):
                yield ConfigCandidate(n, f"{name}: num_stages {stages} → {s}", [_set_option(src, "num_stages", s)],
                                      f"{n}:stages", change={"num_stages": s})
        for k, v in blocks[:1] if f.code != "SASS001" else blocks[:2]:
            edit, where = _block_edit(kr, src, k, v, text)
            yield ConfigCandidate(n, f"{name}: {k} {v} → {v // 2}{where}", [edit], f"{n}:{k}", change={k: v // 2})
        if f.code == "RES001" and len(sources) > 1:
            yield ConfigCandidate(n, f"Remove config {n} ({_short_label(labels.get(cs.spec.key(), ''))})",
                                  [Edit(_range(src.remove), "")], f"{n}:remove",
                                  removes=True)


# ---------------------------------------------------------------- what the re-compile showed
def _has(cs: CompiledSpec, code: str) -> bool:
    return any(g.code == code for g in cs.findings)


def _ok(cs: CompiledSpec) -> bool:
    return cs.artifacts is not None and cs.artifacts.ok


def _mean_width(widths: dict[str, dict[str, int]] | None) -> dict[str, float]:
    out = {}
    for kind, by_bits in (widths or {}).items():
        n = sum(by_bits.values())
        if n:
            out[kind] = sum(int(b) * c for b, c in by_bits.items()) / n
    return out


EST_GAIN_MIN = 0.02  # an estimated gain under this share of the launch is no gain: the fix is not preferred


def metric_changes(m0: dict[str, Any], m1: dict[str, Any], code: str = "") -> tuple[list[str], list[str]]:
    """(every metric that changed, as "1.2 KB spilled → 0" / "registers 255 → 128" / "occupancy 25% → 50%" / ...;
    the ones that got worse): spills, shared memory, registers (right after the spill for a SASS001 fix), occupancy,
    global access widths, layout conversions."""
    changed, worse = [], []
    # The cost model's estimate of the captured launches first: what the change is worth, not only what it removed.
    t0, t1 = mean_launch_us(m0), mean_launch_us(m1)
    if t0 is not None and t1 is not None:
        if t1 < t0 * (1 - EST_GAIN_MIN):
            changed.append(f"est. {fmt_us(t0)} → {fmt_us(t1)} a launch")
        else:
            text = f"est. no faster ({fmt_us(t0)} → {fmt_us(t1)} a launch)"
            changed.append(text)
            worse.append(text)

    def num(key: str, label: str, fmt=str, bad_if_up: bool | None = True) -> None:
        a, b = m0.get(key), m1.get(key)
        if a is None or b is None or a == b:
            return
        text = f"{fmt(a)} spilled → {0 if not b else fmt(b)}" if key == "spill_bytes" else \
            f"{label} {fmt(a)} → {fmt(b)}"
        changed.append(text)
        if bad_if_up is not None and (b > a) == bad_if_up:
            worse.append(text)

    num("spill_bytes", "spilled", fmt_bytes)
    for key in ("registers", "shared") if code == "SASS001" else ("shared", "registers"):
        num(key, key, fmt_bytes if key == "shared" else str, bad_if_up=None)
    o0, o1 = (m.get("occupancy") or {} for m in (m0, m1))
    if o0.get("occupancy") is not None and o1.get("occupancy") is not None and \
            round(o0["occupancy"], 2) != round(o1["occupancy"], 2):
        text = f"occupancy {o0['occupancy']:.0%} → {o1['occupancy']:.0%}"
        changed.append(text)
        if o1["occupancy"] < o0["occupancy"]:
            worse.append(text)
    w0, w1 = _mean_width(m0.get("global_widths")), _mean_width(m1.get("global_widths"))
    for kind in sorted(set(w0) & set(w1)):
        if round(w0[kind]) != round(w1[kind]):
            text = f"{kind} {w0[kind]:.0f} → {w1[kind]:.0f}-bit (mean)"
            changed.append(text)
            if w1[kind] < w0[kind]:
                worse.append(text)
    num("convert_layout", "conversions")
    return changed, worse


def outcome(old: KernelReport, new: KernelReport, f: Finding, cand: ConfigCandidate) -> str | None:
    old_cfgs = {config_index(cs) for cs in old.compiled} - {None}
    new_cfgs = {config_index(cs) for cs in new.compiled} - {None}
    errors = lambda kr: sum(1 for g in kr.findings if g.code == "SRC001")  # noqa: E731
    if errors(new) > errors(old):
        return None
    if cand.removes:
        if len(new_cfgs) != len(old_cfgs) - 1 or not any(_ok(cs) for cs in new.compiled):
            return None
        left = {config_index(cs) for cs in new.compiled if _ok(cs) and _has(cs, f.code)} - {None}
        gone = f"removes {f.code}" if not left else f"{f.code} left in {len(left)} of {len(new_cfgs)} configs"
        return f"{gone}; {len(new_cfgs)} config{'s' if len(new_cfgs) != 1 else ''} left"
    if new_cfgs != old_cfgs:
        return None
    before = [cs for cs in holding(old, f) if config_index(cs) == cand.config]
    after = [cs for cs in new.compiled if config_index(cs) == cand.config]
    if not before or not after or not all(_ok(cs) for cs in after) or any(_has(cs, f.code) for cs in after):
        return None
    changed, worse = metric_changes(before[0].metrics, after[0].metrics, f.code)
    had = {(g.code, g.line) for g in before[0].findings}
    worse += [f"adds {c} on line {ln}" for c, ln in sorted({(g.code, g.line) for g in after[0].findings
                                                            if g.severity in ("warning", "error")
                                                            and (g.code, g.line) not in had})][:3]
    cand.traded = bool(worse)
    return f"removes {f.code}" + (f"; {'; '.join(changed)}" if changed else "") + \
        (f"; but {', '.join(worse[:4])}" if worse else "")
