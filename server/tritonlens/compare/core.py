"""Every spec `check` would compile, compiled on two sides — two Triton releases, or two targets — and paired.

A side is an interpreter (`envs.Release`: its workers import that side's triton) and a target. Both sides see the
same files, captures and settings; discovery and specs are made here, once per side, by the same front end, so the
two sides differ in the compiler (or the target) only, and the same rules read both outputs. What each spec is on
either side is the record `report/baseline.py` keeps for a baseline (metrics, findings, IR hashes); `judge` says
what got worse and what better, and which of the regressions fail the gate (`Thresholds`). Pure except
`compile_side` and `run`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..checks.costmodel import mean_launch_us
from ..model import OWN_FAILURES, CompiledSpec, KernelReport
from ..report.baseline import Change, compare_metrics, ir_hash, kernel_record, normalise_ir
from .envs import Release

# What a regression can be, in the order they are shown; each is a name `--fail-on` takes.
KINDS = ("compile", "spills", "shared", "tensor-cores", "widths", "time", "occupancy", "registers", "conversions",
         "instructions", "findings")
DEFAULT_FAIL_ON = frozenset({"compile", "spills", "shared", "tensor-cores", "widths", "time"})


@dataclass(frozen=True)
class Side:
    release: Release
    target: str

    @property
    def label(self) -> str:
        return f"{self.release.label}, {self.target}"


@dataclass
class Thresholds:
    """How much worse a spec may get before the gate fails (growth beyond the number fails)."""

    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    spill_bytes: int = 0  # spill bytes a spec may gain
    registers: int = 0  # registers per thread a spec may gain
    occupancy_pct: float = 0.0  # percent of resident warps a spec may lose
    conversions: int = 0  # convert_layout ops a spec may gain
    time_pct: float = 10.0  # percent the estimated time may grow
    instructions_pct: float = 10.0  # percent the ISA instruction count may change before it counts


@dataclass
class Regression:
    kind: str  # one of KINDS
    text: str
    size: float = 0.0  # how much worse, to order regressions of a kind (bytes for spills, else relative growth)
    gated: bool = False  # past its threshold and in fail_on: sets the exit code

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "gated": self.gated}


@dataclass
class SpecPair:
    """One spec of a kernel on both sides (either record may be None: a spec only one side has)."""

    path: str
    kernel: str
    def_line: int
    label: str
    describe: str
    a: dict | None
    b: dict | None
    a_extra: dict = field(default_factory=dict)  # error message, spill lines, instruction count, IR texts
    b_extra: dict = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    appeared: list[dict] = field(default_factory=list)  # findings only the second side has
    gone: list[dict] = field(default_factory=list)
    ir_changed: list[str] = field(default_factory=list)
    unverified: str = ""  # why the pair could not be compared (tritonlens's own failure on a side)
    knobs: list[str] = field(default_factory=list)  # spec values that differ besides the target (`num_stages 3 → 2`)
    capture_id: str = ""  # a captured spec's identity: what `tritonlens bench` results are keyed by

    @property
    def gated(self) -> bool:
        return any(r.gated for r in self.regressions)

    @property
    def status(self) -> str:
        if self.a is None or self.b is None:
            return "only-a" if self.b is None else "only-b"
        if self.unverified:
            return "unverified"
        if self.regressions:
            return "regressed"
        if self.improvements:
            return "improved"
        if self.changes or self.appeared or self.gone or self.ir_changed:
            return "changed"
        return "same"

    def rank(self) -> tuple:
        """Gated regressions first, the worst kind and the biggest growth first; then other regressions, then
        improvements, then the rest."""
        order = {"regressed": 0, "improved": 1, "changed": 2, "unverified": 3, "only-a": 4, "only-b": 4, "same": 5}
        worst = min((KINDS.index(r.kind), -r.size) for r in self.regressions) if self.regressions else (99, 0)
        return (not self.gated, order[self.status], worst, self.path, self.def_line, self.label)


@dataclass
class Outcome:
    sides: tuple[Side, Side]
    pairs: list[SpecPair]
    thresholds: Thresholds
    seconds: dict[str, float] = field(default_factory=dict)  # "a", "b" compile time; "environment": making it
    problems: list[str] = field(default_factory=list)

    @property
    def gated(self) -> list[SpecPair]:
        return [p for p in self.pairs if p.gated]

    def counts(self) -> dict[str, int]:
        out = {"specs": len(self.pairs), "compared": sum(1 for p in self.pairs if p.a and p.b and not p.unverified)}
        for p in self.pairs:
            out[p.status] = out.get(p.status, 0) + 1
        out["gated"] = len(self.gated)
        return out


# ---------------------------------------------------------------- judging one pair
def _num(metrics: dict, name: str) -> int | None:
    v = metrics.get(name)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _occupancy(metrics: dict) -> tuple[int | None, float | None]:
    occ = metrics.get("occupancy")
    if not isinstance(occ, dict):
        return None, None
    share = occ.get("occupancy")
    return occ.get("warps"), float(share) if isinstance(share, (int, float)) else None


def _pct(a: float, b: float) -> float:
    return (b - a) / a * 100.0 if a else float("inf")


def _spill_where(extra: dict) -> str:
    lines, looped = extra.get("spill_lines") or [], extra.get("spill_in_loop") or []
    if not lines:
        return ""
    shown = ", ".join(str(n) for n in lines[:4]) + (f" and {len(lines) - 4} more" if len(lines) > 4 else "")
    return f"; spill code on line{'s' if len(lines) > 1 else ''} {shown}" + (
        f", inside a loop (line{'s' if len(looped) > 1 else ''} {', '.join(map(str, looped[:4]))})" if looped
        else ", outside loops")


def judge(pair: SpecPair, th: Thresholds, target_b: str = "") -> None:
    """Fill `pair.regressions` and `pair.improvements` from its two records (and extras)."""
    a, b = pair.a, pair.b
    if a is None or b is None:
        return
    ka, kb = a.get("compiled"), b.get("compiled")
    if ka in OWN_FAILURES or kb in OWN_FAILURES:
        side = "first" if ka in OWN_FAILURES else "second"
        err = (pair.a_extra if ka in OWN_FAILURES else pair.b_extra).get("error", "")
        pair.unverified = f"not compared: tritonlens could not compile it on the {side} side ({err[:200]})"
        return
    if ka == "ok" and kb != "ok":
        pair.regressions.append(Regression("compile", f"compiled, now fails: {kb}: {pair.b_extra.get('error', '')}"
                                           .rstrip(": "), float("inf"), "compile" in th.fail_on))
        return
    if ka != "ok" and kb == "ok":
        pair.improvements.append(f"failed ({ka}), now compiles")
        return
    if ka != "ok":
        return  # fails on both sides: nothing to compare
    ma, mb = a.get("metrics", {}), b.get("metrics", {})

    def worse(kind: str, text: str, size: float, past: bool) -> None:
        pair.regressions.append(Regression(kind, text, size, past and kind in th.fail_on))

    sa, sb = _num(ma, "spill_bytes") or 0, _num(mb, "spill_bytes") or 0
    if sb > sa:
        text = (f"spills appeared: 0 B → {sb} B" if sa == 0 else f"spill bytes {sa} B → {sb} B") + \
            _spill_where(pair.b_extra)
        worse("spills", text, float(sb - sa), sb - sa > th.spill_bytes)  # ranked by the bytes gained
    elif sb < sa:
        pair.improvements.append(f"spill bytes {sa} B → {sb} B")
    def count(kind: str, name: str, label: str, allowed: int) -> None:
        x, y = _num(ma, name), _num(mb, name)
        if x is None or y is None or x == y:
            return
        if y > x:
            worse(kind, f"{label} {x} → {y}", _pct(x, y), y - x > allowed)
        else:
            pair.improvements.append(f"{label} {x} → {y}")

    count("registers", "registers", "registers", th.registers)
    sha, shb = _num(ma, "shared"), _num(mb, "shared")
    if sha is not None and shb is not None and shb != sha:
        from ..device.limits import target_limits

        lim = target_limits(target_b or b.get("target", ""))
        over = lim is not None and shb > lim.shared_per_block >= sha
        if shb > sha:
            worse("shared", f"shared memory {sha} B → {shb} B" + (
                f", over the {lim.shared_per_block} B per-block limit of {lim.name}: the launch fails" if over
                else ""), _pct(sha, shb), over)
        else:
            pair.improvements.append(f"shared memory {sha} B → {shb} B")
    (wa, oa), (wb, ob) = _occupancy(ma), _occupancy(mb)
    if oa and ob and oa != ob:  # the share of the SM's warp slots: comparable across GPUs of other sizes
        text = f"occupancy {oa:.0%} → {ob:.0%} (resident warps per SM {wa} → {wb})"
        if ob < oa:
            drop = (oa - ob) / oa * 100.0
            worse("occupancy", text, drop, drop > th.occupancy_pct)
        else:
            pair.improvements.append(text)
    dots = (_num(ma, "dots") or 0, _num(mb, "dots") or 0)
    # Tensor-core instructions: mma (Ampere on), wgmma (Hopper), tcgen05.mma (Blackwell: not among the metrics,
    # counted in the PTX by `extras`), MFMA on AMD (its `mma`).
    tca = (_num(ma, "mma") or 0) + (_num(ma, "wgmma") or 0) + pair.a_extra.get("tcgen05", 0)
    tcb = (_num(mb, "mma") or 0) + (_num(mb, "wgmma") or 0) + pair.b_extra.get("tcgen05", 0)
    if dots[0] and dots[1]:
        if tca and not tcb:
            worse("tensor-cores", f"dots left the tensor cores: {tca} tensor-core instructions → 0 (fma "
                                  f"{ma.get('fma')} → {mb.get('fma')})", float("inf"), True)
        elif tcb and not tca:
            pair.improvements.append(f"dots now on tensor cores: 0 → {tcb} tensor-core instructions")
        elif (_num(ma, "wgmma") or 0) and not (_num(mb, "wgmma") or 0) and (_num(mb, "mma") or 0):
            worse("tensor-cores", f"wgmma → mma: {ma.get('wgmma')} wgmma → 0, mma {ma.get('mma')} → "
                                  f"{mb.get('mma')}", 1.0, True)
    for c in compare_metrics(ma, mb, b.get("target", "")):
        if c.name.endswith("widths"):
            if c.regressed:
                worse("widths", f"{c.text()} ({c.why})", 1.0, True)
            elif c.why == "" and _mean(c.new) > _mean(c.old):
                pair.improvements.append(c.text())
    count("conversions", "convert_layout", "convert_layout ops", th.conversions)
    ta, tb = mean_launch_us(ma), mean_launch_us(mb)
    if ta and tb and abs(_pct(ta, tb)) > th.time_pct:  # the model's resolution: smaller moves are not listed
        if tb > ta:
            worse("time", f"estimated time {ta:.3g} µs → {tb:.3g} µs (+{_pct(ta, tb):.0f}%)", _pct(ta, tb), True)
        else:
            pair.improvements.append(f"estimated time {ta:.3g} µs → {tb:.3g} µs ({_pct(ta, tb):.0f}%)")
    ia, ib = pair.a_extra.get("instructions"), pair.b_extra.get("instructions")
    isa = pair.b_extra.get("isa", "ISA")
    # A few instructions more or fewer is the ordinary churn of a release: a change past the threshold is one.
    if ia and ib and pair.a_extra.get("isa") == isa and abs(_pct(ia, ib)) > th.instructions_pct:
        if ib > ia:
            worse("instructions", f"{isa} instructions {ia} → {ib} (+{_pct(ia, ib):.0f}%)", _pct(ia, ib), True)
        else:
            pair.improvements.append(f"{isa} instructions {ia} → {ib} ({_pct(ia, ib):.0f}%)")
    gating = sorted({r["code"] for r in pair.appeared if r["severity"] in ("error", "warning")})
    if gating:
        worse("findings", f"new findings: {', '.join(gating)}", float(len(gating)), True)


def _mean(widths: Any) -> float:
    if not isinstance(widths, dict) or not widths:
        return 0.0
    n = sum(widths.values())
    return sum(int(k) * v for k, v in widths.items()) / n if n else 0.0


# ---------------------------------------------------------------- pairing
def pair_key(cs: CompiledSpec) -> str:
    """The spec without its target: the same specialization compiled for two targets pairs up."""
    return replace(cs.spec, target="").key()


_ISA = {"ptx": "PTX", "amdgcn": "AMDGCN"}
# The layers whose normalised text is compared (and shown side by side): LLVM IR is large and the SASS is made on
# demand by a disassembler; TTGIR and the ISA say what changed.
_COMPARED_IR = ("ttir", "ttgir", "ptx", "amdgcn")


def extras(cs: CompiledSpec, paths: list[str], with_text: bool) -> dict[str, Any]:
    """What a spec record lacks: the error's message, where the spill code is, the ISA's instruction count, a hash of
    each compared layer's normalised IR, and (with_text) those texts for the side-by-side view."""
    out: dict[str, Any] = {}
    art = cs.artifacts
    if art is None:
        return out
    if art.error is not None:
        out["error"] = art.error.message.strip().splitlines()[0][:400] if art.error.message.strip() else ""
        return out
    spill = next((f for f in cs.findings if f.code == "SASS001"), None)
    if spill is not None:
        out["spill_lines"] = sorted(int(k) for k in spill.data.get("lines", {}))
        out["spill_in_loop"] = list(spill.data.get("in_loop", []))
    texts = {s: normalise_ir(s, art.asm[s], paths) for s in _COMPARED_IR if s in art.asm and art.asm.get(s)}
    out["ir_hash"] = {s: ir_hash(t) for s, t in texts.items()}
    for stage, name in _ISA.items():
        if stage in texts:
            out["isa"], out["instructions"] = name, count_instructions(stage, texts[stage])
    if "ptx" in texts:
        out["tcgen05"] = sum(1 for line in texts["ptx"].splitlines() if "tcgen05.mma" in line)
    if with_text:
        out["ir"] = texts
    return out


def count_instructions(stage: str, normalised: str) -> int:
    """Instructions of a kernel's PTX or AMDGCN text: lines that are not directives, labels, braces or blank."""
    n = 0
    for line in normalised.splitlines():
        s = line.strip()
        if not s or s[0] in ".{}/;" or s.endswith(":") or s.startswith(("//", "@@", "#")):
            continue
        if stage == "amdgcn" and not s[0].isalpha():
            continue
        n += 1
    return n


def pair_reports(a_reports: list, b_reports: list, rel: Callable[[str], str], th: Thresholds,
                 target_b: str = "", with_text: bool = False) -> list[SpecPair]:
    """Pair the two sides' `FileReport`s by file, kernel and spec (without its target), and judge each pair."""
    from ..report.baseline import match_findings

    b_by_file = {r.path: r for r in b_reports}
    pairs: list[SpecPair] = []
    for ra in a_reports:
        rb = b_by_file.get(ra.path)
        path = rel(ra.path)
        paths = sorted({os.path.dirname(ra.path) + os.sep, ra.path}, key=len, reverse=True)
        b_kernels = {kr.kernel.key: kr for kr in (rb.kernels if rb else [])}
        for ka in ra.kernels:
            kb = b_kernels.get(ka.kernel.key)
            pairs.extend(_pair_kernel(path, ka, kb, paths, th, target_b, with_text, match_findings))
    return pairs


def _pair_kernel(path: str, ka: KernelReport, kb: KernelReport | None, paths: list[str], th: Thresholds,
                 target_b: str, with_text: bool, match_findings) -> list[SpecPair]:
    rec_a, _ = kernel_record(ka, paths, with_ir=False)
    rec_b, _ = kernel_record(kb, paths, with_ir=False) if kb is not None else ({"specs": {}}, {})
    out = []
    for cs, other in match_specs(ka.compiled, kb.compiled if kb else []):
        if cs is None:
            out.append(SpecPair(path, ka.kernel.key, ka.kernel.def_line, other.spec.label, other.spec.describe(),
                                None, rec_b["specs"].get(other.spec.key())))
            continue
        sp = SpecPair(path, ka.kernel.key, ka.kernel.def_line, cs.spec.label, cs.spec.describe(),
                      rec_a["specs"].get(cs.spec.key()), rec_b["specs"].get(other.spec.key()) if other else None)
        sp.capture_id = cs.spec.capture_id
        sp.a_extra = extras(cs, paths, with_text)
        if other is not None:
            sp.b_extra = extras(other, paths, with_text)
            sp.knobs = knob_changes(cs, other)
        _fill(sp, rec_a.get("def_line"), rec_b.get("def_line"), th, target_b, match_findings)
        out.append(sp)
    return out


def knob_changes(a: CompiledSpec, b: CompiledSpec) -> list[str]:
    va = {**a.spec.options, **a.spec.constants}
    vb = {**b.spec.options, **b.spec.constants}
    return [f"{k} {va.get(k)!r} → {vb.get(k)!r}" for k in list(va) + [k for k in vb if k not in va]
            if va.get(k) != vb.get(k)]


def match_specs(a: list[CompiledSpec], b: list[CompiledSpec]) -> list[tuple[CompiledSpec | None, CompiledSpec | None]]:
    """Pairs of the two sides' specs: the same specialization but the target; else the same label (`hint line 7`,
    `capture 3`: a target's own defaults, such as AMD's num_stages, differ); else in order when as many are left."""
    pairs: dict[int, CompiledSpec] = {}
    left = list(b)
    for same in (lambda x, y: pair_key(x) == pair_key(y),
                 lambda x, y: bool(x.spec.label) and x.spec.label == y.spec.label):
        for i, cs in enumerate(a):
            if i in pairs:
                continue
            hit = next((o for o in left if same(cs, o)), None)
            if hit is not None:
                pairs[i] = hit
                left.remove(hit)
    rest = [i for i in range(len(a)) if i not in pairs]
    if rest and len(rest) == len(left):
        pairs.update(zip(rest, left))
        left = []
    out: list[tuple[CompiledSpec | None, CompiledSpec | None]] = [(cs, pairs.get(i)) for i, cs in enumerate(a)]
    return out + [(None, o) for o in left]


def _fill(sp: SpecPair, def_a, def_b, th: Thresholds, target_b: str, match_findings) -> None:
    if sp.a is None or sp.b is None:
        return
    sp.changes = [c for c in compare_metrics(sp.a.get("metrics", {}), sp.b.get("metrics", {}),
                                             sp.b.get("target", ""))]
    sp.appeared, sp.gone, _ = match_findings(sp.a.get("findings", []), sp.b.get("findings", []), def_a, def_b)
    ha, hb = sp.a_extra.get("ir_hash", {}), sp.b_extra.get("ir_hash", {})
    sp.ir_changed = [s for s in _COMPARED_IR if (s in ha or s in hb) and ha.get(s) != hb.get(s)]
    judge(sp, th, target_b)


# ---------------------------------------------------------------- running
def compile_side(files: list[str], side: Side, settings, capture_file: str | None = None,
                 on_kernel: Callable[[KernelReport, int, int], None] | None = None) -> list:
    """Every file checked on one side: its target, and workers under its interpreter (with an artefact cache of its
    own when that is not this interpreter, so that the two releases' compiles never meet)."""
    from ..compiler.cache import ArtifactCache, default_cache_dir
    from ..compiler.pool import CompileService
    from ..pipeline import Checker

    s = replace(settings, target=side.target, extra_targets=[])
    service = CompileService(s.max_workers, s.compile_memory_mb, python=side.release.python)
    cache = None
    if side.release.origin != "installed":
        cache = ArtifactCache(os.path.join(default_cache_dir(), "compare", side.release.slug))
    try:
        with Checker(s, service=service, cache=cache, capture_file=capture_file) as checker:
            return list(checker.check_files(files, on_kernel))
    finally:
        service.shutdown()


def run(files: list[str], sides: tuple[Side, Side], settings, th: Thresholds, *, capture_file: str | None = None,
        rel: Callable[[str], str] = os.path.relpath, with_text: bool = False,
        progress: Callable[[str, KernelReport, int, int], None] | None = None) -> Outcome:
    seconds: dict[str, float] = {}
    reports = []
    for name, side in zip("ab", sides):
        start = time.perf_counter()
        cb = (lambda kr, done, total, _n=name: progress(_n, kr, done, total)) if progress else None
        reports.append(compile_side(files, side, settings, capture_file, cb))
        seconds[name] = time.perf_counter() - start
    problems = [msg for r in reports[0] for msg in r.problems]
    pairs = pair_reports(reports[0], reports[1], rel, th, sides[1].target, with_text)
    pairs.sort(key=SpecPair.rank)
    for p in pairs:
        p.regressions.sort(key=lambda r: (not r.gated, KINDS.index(r.kind), -r.size))
    return Outcome(sides, pairs, th, seconds, problems)
