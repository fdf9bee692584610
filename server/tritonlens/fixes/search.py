"""The search behind one finding's fixes, without a protocol: the candidates in the order they are tried
(`fix_candidates`), the re-compile that proves each (`prove`), and the proven fixes as plain data (`Fix`: a title,
edits, whether it is the preferred one). The editor runs it candidate by candidate in the background and turns each
`Fix` into a code action; `tritonlens check --fix` and the bench scripts run it to the end (`Search.run`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..model import Finding, KernelReport
from . import configs, launch, tail, tuning
from .measured import tuned_change
from .edit import Edit
from ..checks.registry import fix_strategies
from .hints import apply_hint, config_fixable, hint_candidates, outcome

MAX_FIXES_PER_DIAGNOSTIC = 2
MAX_CONFIG_FIXES = 4  # per diagnostic, over all the configs it holds in


def _recompile(checker, path: str, text: str, name: str, group: str | None, variant=None):
    from ..compiler.pool import urgent

    with urgent():  # ahead of the save compiles of the file's other kernels
        return checker.check_file(path, text, kernels={name}, group=group, variant=variant)


def fix_candidates(kr: KernelReport, f: Finding, text: str, code: str, root: str | None = None
                   ) -> tuple[list[Any], int]:
    """The candidates for one finding, in the order they are tried, and how many proven ones are offered. Program
    edits first — where the value is set (launch, constant, heuristics; a pointer and a conditional for a value
    computed at run time), then the configs — the hint edits after them."""
    from_configs = configs.candidates(kr, f, text) if config_fixable(code) else None
    at_launch = list(launch.candidates(kr, f, text, root)) if config_fixable(code) else []
    # A hint would replace the launch's spec rather than change the launch: none where the launch can be edited.
    rest = from_configs if from_configs is not None else [] if at_launch else hint_candidates(kr, f, text)
    limit = (MAX_CONFIG_FIXES if from_configs is not None else MAX_FIXES_PER_DIAGNOSTIC) + \
        len({c.group for c in at_launch})
    # A kernel edit (a mask-free path for full blocks) after the hint edits, counted beside them.
    kernel = list(tail.candidates(kr, f, text)) if "tail" in fix_strategies(code) else []
    # what `tune` measured faster at the real launch for this cause comes first
    measured = tuning.tuned_candidates(kr, f, text, root)
    return measured + at_launch + list(rest) + kernel, limit + len(kernel) + len(measured)


def prove(checker, settings, path: str, text: str, kr: KernelReport, f: Finding, cand: Any,
          group: str | None = None) -> tuple[str | None, bool]:
    """Apply one candidate to a copy of `text` and re-compile what it changes: (what that showed, or None when it
    did not help; whether it traded something away). A launch, constant or heuristics edit leaves the kernel as it
    is: its proof is each spec it changes with the value it gives it (launch.prove)."""
    if getattr(cand, "group", None) is None:
        cand.edits, cand.new_text, cand.shift = apply_hint(text, kr.kernel, cand.values)
    else:
        cand.edits, cand.new_text, cand.shift = cand.apply(text)
    if isinstance(cand, launch.LaunchCandidate):
        shown = launch.prove(checker, path, text, kr, f, cand, group)
        return shown if shown is not None else (None, False)
    report = _recompile(checker, path, cand.new_text, kr.name, group)
    new = next((k for k in report.kernels if k.name == kr.name and k.kernel.branch == kr.kernel.branch), None)
    if new is None:
        return None, False
    if isinstance(cand, tail.TailCandidate):  # proven on the edited kernel's own PTX
        return cand.outcome(kr, new, f, settings) or (None, False)
    own = getattr(cand, "proven_by", None)  # a candidate that knows its own proof (fixes/tuning's prune)
    if callable(own):
        return own(kr, new, f)
    if getattr(cand, "group", None) is None:
        return outcome(kr, new, f, cand, settings), False
    return configs.outcome(kr, new, f, cand), bool(getattr(cand, "traded", False))


@dataclass
class Fix:
    """A proven fix: its title (the candidate's label and what the re-compile showed), its edits of the file's text,
    and whether it is the preferred one. A pointer has no edit, only `show`: the (path, 1-based line) that sets the
    value."""

    title: str
    edits: list[Edit] = field(default_factory=list)
    preferred: bool = False
    pointer: bool = False
    show: tuple[str, int] | None = None
    detail: str = ""  # the whole of what the re-compile showed, when the title had to be cut to fit a menu line


TITLE_MAX = 200  # a quick-fix menu shows one line; what it leaves out goes to Fix.detail


def fit_title(label: str, said: str) -> tuple[str, str]:
    """(the title, the detail it leaves out): the label and what the re-compile showed, cut to fit TITLE_MAX — the
    verdict, as many of its first changes as fit (the cost model's estimate comes first), and a trade ("but ...")."""
    title = f"{label} — {said}"
    if len(title) <= TITLE_MAX:
        return title, ""
    trade = said[said.index("; but ") + 2:] if "; but " in said else ""
    body = said[:said.index("; but ")] if trade else said
    head, _, inner = body.partition(" (")
    items = [x for x in inner.rstrip(")").replace(", ", "; ").split("; ") if x] if inner else []
    tail = f"; {trade}" if trade else ""
    kept: list[str] = []
    for item in items:
        trial = f"{label} — {head} ({'; '.join(kept + [item])}){tail}"
        if len(trial) > TITLE_MAX:
            break
        kept.append(item)
    title = f"{label} — {head}" + (f" ({'; '.join(kept)})" if kept else "") + tail
    if len(title) > TITLE_MAX:
        title = title[:TITLE_MAX - 1].rstrip() + "…"
    return title, said


def make_fix(cand: Any, said: str, traded: bool, proven: list[Fix]) -> Fix:
    """A program edit is preferred unless it trades something away (or another is preferred already); a hint edit
    never is; a pointer has no edit, only the place to look at."""
    title, detail = fit_title(cand.label, said)
    if isinstance(cand, launch.LaunchCandidate) and cand.is_pointer:
        src = cand.source
        at = src.helper_at if src is not None and src.helper_at else (src.path, src.line) if src else None
        return Fix(title, pointer=True, show=(at[0], at[1]) if at else None, detail=detail)
    program = getattr(cand, "group", None) is not None  # a launch or config edit; a hint edit changes no code
    # A fix the cost model estimates no faster on the captured launches is a trade (configs.metric_changes puts it
    # among what got worse), never the preferred one.
    return Fix(title, list(cand.edits), program and not traded and not any(p.preferred for p in proven),
               detail=detail)


def _gpu_here() -> bool:
    from ..device.targets import has_local_gpu

    return has_local_gpu()


def timed(path: str, root: str, kr: KernelReport, cand: Any, said: str,
          log: Callable[[str], None] | None = None, replay: bool = True) -> str | None:
    """A launch fix as the GPU measured it: at the real launch by `tune` when it tried this change (recorded, so
    read on any machine), else (`replay`, a GPU here) its captured launch replayed before and after; a fix measured
    slower is withheld (None), one measured faster says by how much."""
    known = tuned_change(root, path, kr.name, {cand.option: cand.value})
    if known is not None:  # measured by `tune` at the real launch
        if not known.faster:
            if log is not None:
                log(f"{cand.label}: withheld, {known.verdict} at the real launch on {known.gpu}")
            return None
        return f"{known.text()}; {said}"
    if not replay:
        return said
    timing = launch.time_on_gpu(path, root, kr, cand)
    if timing is None:
        return said
    before, after, gpu = timing
    if after >= before:
        if log is not None:
            log(f"{cand.label}: withheld, measured slower on {gpu} ({before:.1f} → {after:.1f} µs)")
        return None
    return f"{before:.1f} → {after:.1f} µs on {gpu} (captured launch); {said}"


class Search:
    """One finding's candidates tried in order: at most `limit` proven fixes, and of a group of alternatives
    (num_warps 8, then 16) only the first that works. `pending()` gives the candidates still to try, `attempt(i)`
    proves one, `decide(i, fix)` records its verdict; `run()` does all three to the end."""

    def __init__(self, kr: KernelReport, f: Finding, text: str, code: str, root: str | None) -> None:
        self.kr, self.finding, self.text, self.root = kr, f, text, root
        self.cands, self.limit = fix_candidates(kr, f, text, code, root)
        self.verdicts: dict[int, Fix | None] = {}
        self.proven: list[Fix] = []
        self._groups: set[str] = set()  # groups already answered by a proven fix
        self.on_decide: Callable[[int], None] | None = None  # told of each verdict (the editor wakes its waiters)

    def pending(self) -> Iterator[int]:
        for i, cand in enumerate(self.cands):
            if len(self.proven) >= self.limit:
                return
            if getattr(cand, "group", None) in self._groups:
                self.decide(i, None)
                continue
            yield i

    def attempt(self, checker, settings, path: str, i: int, group: str | None = None, on_gpu: bool | None = None,
                log: Callable[[str], None] | None = None) -> Fix | None:
        """Prove candidate `i`; a proven launch edit is then timed on the local GPU (`on_gpu` None: when there is
        one), and withheld when measured slower."""
        cand = self.cands[i]
        said, traded = prove(checker, settings, path, self.text, self.kr, self.finding, cand, group)
        if said is not None and isinstance(cand, launch.LaunchCandidate) and not cand.is_pointer and \
                not isinstance(cand, tuning.NewConfigCandidate):
            said = timed(path, self.root or "", self.kr, cand, said, log,
                         replay=on_gpu if on_gpu is not None else _gpu_here())
        return None if said is None else make_fix(cand, said, traded, self.proven)

    def decide(self, i: int, fix: Fix | None) -> None:
        if fix is not None:
            cand = self.cands[i]
            group = getattr(cand, "group", None)
            if group is not None and not getattr(cand, "partial", False):  # a partial one lets the next try
                self._groups.add(group)
            self.proven.append(fix)
        self.verdicts[i] = fix
        if self.on_decide is not None:
            self.on_decide(i)

    def finish(self) -> None:
        for i in range(len(self.cands)):
            self.verdicts.setdefault(i, None)

    def run(self, checker, settings, path: str, group: str | None = None, on_gpu: bool | None = None,
            log: Callable[[str], None] | None = None) -> list[Fix]:
        for i in self.pending():
            self.decide(i, self.attempt(checker, settings, path, i, group, on_gpu, log))
        self.finish()
        return self.proven
