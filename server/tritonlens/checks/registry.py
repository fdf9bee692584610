"""The catalogue of rules: what the project knows about each code, in one place — its name, default severity,
summary, function and page; the cause the cost model can remove (`cost_cause`: a rule with one is cost-weighed, see
checks/verdict.py); the ways it can be fixed (`fixes`: strategies fixes/ knows by name); the profiler metrics that
confirm it on a GPU (`profile_metrics`). Rule modules register with `@rule`; codes found outside checks/ (compile
errors, specs, baselines) with `register_meta`. Imports nothing of checks/, so every rule module and every presenter
can read it; no other module keeps a table keyed by code."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..model import Finding

DOCS_URL = "https://github.com/tritonlens/tritonlens/blob/main/docs/rules/{code}.md"


@dataclass
class Rule:
    code: str
    name: str
    severity: str  # default severity
    fn: Callable[[Any], Iterable[Finding]] | None  # called with the checks package's CheckContext
    summary: str = ""
    cost_cause: str | None = None  # what the cost model removes to price the finding (checks/costmodel.Cost.without)
    fixes: tuple[str, ...] = ()  # fix strategies, by name (fixes/hints.STRATEGIES; "config": a config edit helps)
    profile_metrics: tuple[str, ...] = ()  # ncu metrics that confirm it (gpu/profile.py)

    @property
    def doc_url(self) -> str:
        return DOCS_URL.format(code=self.code)


RULES: dict[str, Rule] = {}


def doc_link(code: str, url: object = None) -> str | None:
    """The page a finding links to: its rule's page, or `url` only when it is one of the project's own https pages
    (a finding made in a worker, where module code runs, may carry any string — `javascript:`, a look-alike host)."""
    if code in RULES:
        return RULES[code].doc_url
    base = DOCS_URL.split("{code}")[0]
    if isinstance(url, str) and url.startswith(base) and url.endswith(".md") \
            and url[len(base):-3].replace("_", "").isalnum():
        return url
    return None


def rule(code: str, name: str, severity: str, summary: str = "", *, cost_cause: str | None = None,
         fixes: tuple[str, ...] = (), profile_metrics: tuple[str, ...] = ()):
    def register(fn):
        RULES[code] = Rule(code, name, severity, fn, summary or (fn.__doc__ or "").strip().split("\n")[0],
                           cost_cause, tuple(fixes), tuple(profile_metrics))
        return fn
    return register


def register_meta(code: str, name: str, severity: str, summary: str, *, fixes: tuple[str, ...] = ()) -> None:
    """Rules produced outside checks/ (SRC001 from compile errors, SRC002 from specs) still need a catalogue entry."""
    RULES.setdefault(code, Rule(code, name, severity, None, summary, fixes=tuple(fixes)))


def facts(code: str) -> Rule | None:
    """The rule behind a code (None for a code nothing registered). Rules register when checks/ is imported
    (`checks.load_rules`); the codes made outside checks/ are here from the start."""
    return RULES.get(code)


def cost_cause(code: str) -> str | None:
    r = RULES.get(code)
    return r.cost_cause if r is not None else None


def cost_weighed(code: str) -> bool:
    """A finding about time: its severity follows what its cause costs (estimated or measured, checks/verdict.py)."""
    return cost_cause(code) is not None


def fix_strategies(code: str) -> tuple[str, ...]:
    r = RULES.get(code)
    return r.fixes if r is not None else ()


register_meta("SRC001", "compile-error", "error", "Triton could not compile the kernel (or Python could not parse the file)")
register_meta("SRC002", "missing-specialization", "info", "a constexpr has no value from captures, hints, configs or defaults",
              fixes=("missing",))
register_meta("SRC003", "stale-capture", "info",
              "a captured launch no longer fits the kernel's parameters, or one of its arguments could not be recorded")
register_meta("SRC005", "kernel-out-of-reach", "info",
              "a @triton.jit function defined inside another function: it cannot be compiled on its own")
register_meta("SRC006", "module-not-importable", "warning",
              "the kernel's module (or one it imports) raised at import on this machine: its kernels were not compiled")
register_meta("SRC007", "not-compiled-here", "info",
              "tritonlens could not finish a compile (its memory bound or time-out, a crashed worker, a missing "
              "compiler tool, its own bug): a limit of tritonlens, not an error in the kernel")
register_meta("SRC008", "launch-code-not-run", "info",
              "the file's own launch code (its tests, its __main__ block), run without a GPU to learn its kernels' "
              "specs, hung, ran out of memory or failed before it launched one: a limit of tritonlens, not an error")
register_meta("SRC004", "bad-hint", "warning", "a `# tritonlens:` hint comment has a value tritonlens cannot use")
register_meta("TUNE001", "measured-faster-launch", "warning",
              "`tritonlens tune` measured a change faster at the kernel's real launch (outputs equal) that no other "
              "finding carries as a fix")
register_meta("LAUNCH005", "autotune-measurements", "info",
              "what the autotuner measured for the captured keys: configs tried, the chosen one, the spread, and the "
              "dead configs (never within 10% of the best for any key) with the autotuning time they cost",
              fixes=("prune",))
register_meta("BASE001", "regressed-from-baseline", "warning",
              "with --baseline: a kernel got worse than the baseline (new finding, more spills, registers or "
              "conversions, narrower accesses, shared memory over the limit)")


def rule_doc(code: str) -> str | None:
    """The rule's page: `docs/rules/CODE.md` in a checkout, `rule_docs/` inside the package when installed."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package folder
    for folder in (os.path.join(here, "rule_docs"), os.path.join(here, "..", "..", "docs", "rules")):
        p = os.path.join(folder, f"{code}.md")
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return f.read()
    return None
