"""The verdict: the one step that sets a finding's severity once the rules have run. Nothing else changes it; the
steps before it only record evidence on the finding (`Finding.data`), and it weighs that evidence in one order:

1. **the rule's proposal** — what the rule chose for this finding (an info for a lone conversion outside loops),
   else its default severity (`data["proposed"]`, kept from the first verdict on);
2. **evidence that the finding is not fully real for the launches that matter** — each a ceiling with its reason
   (`limit`): values tritonlens assumed (no capture, hint or launch site gave them), only autotuner trials, a config
   the autotuner skips at run time, the masked branch of the last partial block, configs the autotuner measured in
   the advised direction that were slower, a test-sized launch of the file's own launch code (bound by the launch
   itself, or a test's grid). The lowest ceiling holds against everything after it but the user;
3. **cost** — for a rule with a cost cause (`registry.cost_weighed`), what removing the cause saves, estimated by the
   model (checks/costmodel: scaled to the captured launches' measured times where the capture timed them) and what
   `tritonlens bench` measured of its specs (`measure`): a warning when the cause costs WARN_SHARE of the launch and
   MIN_GAIN_US a launch in a launch not bound by the launch itself, else an info that says why; an estimate a
   measured time contradicts (`est_trusted` false) may lower but never raise. Off with `severityFromCost: false`;
4. **the user's explicit setting** (`rules: {CODE: severity}`, or its prefix) — last, never overridden.

The message says which step decided, when it was not the rule. Pure: no I/O, run in the checking process on every
kernel report (and on any findings list a presenter makes)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..model import SEVERITY_RANK, Finding
from ..units import fmt_us
from .registry import RULES, cost_weighed

WARN_SHARE = 0.15  # a finding is worth a warning when its cause costs this share of the launch ...
MIN_GAIN_US = 2.0  # ... and at least this much time per launch, in a launch not bound by the launch itself
MINOR_SHARE = 1.0  # % of a file's measured GPU time under which a measured cost finding is an info


@dataclass(frozen=True)
class Verdict:
    severity: str | None  # None: the user turned the code off
    step: str  # "rule", "evidence", "cost" or "user": which step decided
    note: str = ""  # what the message gains to say so


def propose(f: Finding, default: str) -> None:
    """The rule's proposal: what it set on the finding, else its default. Recorded once."""
    if not f.severity:
        f.severity = default
    f.data.setdefault("proposed", f.severity)


def limit(f: Finding, severity: str, reason: str, kind: str, said: bool = False) -> None:
    """Evidence that the finding is not fully real for the launches that matter: it is at most `severity`, because
    `reason`. One ceiling per `kind`; `said`: the message already says it."""
    limits = f.data.get("limits") or []
    if not any(entry[2] == kind for entry in limits):
        f.data["limits"] = [*limits, [severity, reason, kind, said]]  # a new list: a cached finding's is shared


def measure(f: Finding, measured_us: float, share: float | None, every: bool) -> None:
    """What `tritonlens bench` measured of the finding's specs: their time, their share (%) of the file's measured
    GPU time, and whether every spec the finding holds in was measured."""
    f.data["measured_us"] = round(measured_us, 3)
    if share is not None:
        f.data["share"] = round(share, 1)
    f.data["measured_every"] = every


def _rank(severity: str | None) -> int:
    return SEVERITY_RANK.get(severity or "hint", len(SEVERITY_RANK))


def _lower(a: str, b: str) -> str:
    return a if _rank(a) >= _rank(b) else b


def outcome(f: Finding, settings: Any) -> Verdict:
    """The severity the four steps give `f`, and which step decided (pure: `f` is not changed)."""
    data = f.data
    rule = RULES.get(f.code)
    severity = data.get("proposed") or f.severity or (rule.severity if rule else "info")
    verdict = Verdict(severity, "rule")
    # 2. evidence: the lowest ceiling
    ceiling, why, said, kind = None, "", False, ""
    for sev, reason, _kind, was_said in data.get("limits") or ():
        if ceiling is None or _rank(sev) > _rank(ceiling):
            ceiling, why, said, kind = sev, reason, was_said, _kind
    if ceiling is not None and _rank(severity) < _rank(ceiling):
        severity = ceiling
        verdict = Verdict(severity, "evidence", "" if said else f" [{_article(severity)}: {why}]")
    # 3. cost
    if getattr(settings, "severity_from_cost", True) and cost_weighed(f.code) and severity != "error":
        decided = _by_cost(data, severity)
        if decided is not None:
            sev, note = decided
            if ceiling is not None and (_rank(sev) < _rank(ceiling) or kind == "test-launch"):
                # the ceiling holds; a test-sized launch's says why in place of the cost's, unless it has already
                sev = _lower(sev, ceiling)
                note = f" [{_article(sev)}: {why}]" if kind == "test-launch" and not (verdict.note or said) else ""
            if sev != severity or note:
                verdict = Verdict(sev, "cost" if sev != severity else verdict.step, verdict.note + note)
            severity = sev
    # 4. the user's own setting
    explicit = explicit_severity(settings, f.code)
    if explicit is not None:
        if explicit == "off":
            return Verdict(None, "user")
        # what the steps before said is moot: the user's word is the verdict
        return Verdict(explicit, "user", " [severity from your `rules` setting]" if explicit != severity else "")
    return verdict


def _by_cost(data: dict, severity: str) -> tuple[str, str] | None:
    """The cost step: from the estimate (est_* from checks/costmodel) and what bench measured (measured_us, share);
    None when nothing priced the cause."""
    out: tuple[str, str] | None = None
    if "est_share" in data:
        share = float(data.get("est_share") or 0.0)
        gain = float(data.get("est_gain_us") or 0.0)
        short = bool(data.get("est_short"))
        trusted = data.get("est_trusted", True) is not False
        if share >= WARN_SHARE and gain >= MIN_GAIN_US and not short:
            if severity in ("info", "hint") and trusted:
                out = ("warning", "")
            else:
                out = (severity, "" if trusted or severity == "warning" else
                       " — not raised: the estimate disagrees with the measured time")
        elif severity in ("warning", "info"):  # an info says why it is not a warning
            out = ("info", f" — an info: {_why_minor(data.get('est_bound'), share, gain, short)}")
        else:
            out = (severity, "")
    share = data.get("share")
    if data.get("measured_every") and isinstance(share, (int, float)) and share < MINOR_SHARE:
        current = out[0] if out else severity
        if current == "warning":
            out = ("info", (out[1] if out else "") + f" (an info: under {MINOR_SHARE:g}% of it)")
    return out


def _why_minor(bound: str | None, share: float, gain_us: float, short: bool = False) -> str:
    if short or bound == "launch-bound":
        return "a launch this short is bound by the launch itself, whatever the code"
    if bound == "memory-bound":
        return f"memory-bound near the floor, removing it saves under {WARN_SHARE:.0%}"
    if gain_us < MIN_GAIN_US:
        return f"it saves under {fmt_us(MIN_GAIN_US)} a launch"
    return f"it costs under {WARN_SHARE:.0%} of the launch"


def _article(severity: str) -> str:
    return {"info": "an info", "error": "an error"}.get(severity, f"a {severity}")


def explicit_severity(settings: Any, code: str) -> str | None:
    """The user's own severity for a code (its full code first, then its prefix: `SASS`), None when not set."""
    rules = getattr(settings, "rules", None) or {}
    return rules.get(code) or rules.get(code.rstrip("0123456789")) or None


VERDICT = "verdict: "


def verdict_line(note: str) -> str:
    """The detail line that gives the verdict's reason (" — an info: …" → "verdict: an info: …"); "" for none."""
    note = note.strip().lstrip("—").strip()
    if note.startswith("[") and note.endswith("]") or note.startswith("(") and note.endswith(")"):
        note = note[1:-1]
    return f"{VERDICT}{note}" if note else ""


def decide(findings: Iterable[Finding], settings: Any) -> list[Finding]:
    """Apply the verdict to each finding: its severity, and a detail line saying why (replacing what an earlier
    verdict on the same finding said). Findings of codes the user turned off are dropped."""
    out = []
    for f in findings:
        f.data.setdefault("proposed", f.severity or (RULES[f.code].severity if f.code in RULES else "info"))
        v = outcome(f, settings)
        if v.severity is None:
            continue
        f.severity = v.severity
        f.add_detail(verdict_line(v.note), replacing=VERDICT)  # replacing what an earlier verdict said
        f.data["verdict_note"] = v.note
        f.data["decided_by"] = v.step
        f.keep_one_line()
        out.append(f)
    return out
