"""Configs the kernel's autotune list does not have, made from a finding's cause: a dot tile larger than the launch's
M or N (LAUNCH004) gets the tile that fits (`BLOCK_M = 16` for a decode M = 16), on the config the autotuner chose
and on the configs it measured fastest for that key. Each is a fix that adds a `triton.Config(...)` to the literal
list, proven like a launch fix: the spec the finding came from is re-compiled with the new value (it must compile
and lose the finding). Without a GPU it is offered as compiled, not timed, and says so; `bench/autotune/` times
proposals on the captured launch (a proposed config changes the grid, which only the program's own launch code
computes)."""
from __future__ import annotations

from typing import Any, Iterator

from ..frontend.config_spans import config_sources
from ..model import KernelReport, Finding, SpecVariant
from ..checks.tuning import ProposalTiming, label_parts
from ..report.tuning import TUNED_CODE, proposal_timings
from ..sidecar import find_workspace_root
from .configs import holding
from .edit import Edit, Position, Range, apply_edits
from .launch import LaunchCandidate
from ..source import split_lines

CODES = {"LAUNCH004"}
MAX_PROPOSALS = 3


def _measured(kr: KernelReport) -> list:
    tuning = getattr(kr, "tuning", None)
    return [c for kt in (tuning.keys if tuning is not None else []) for c in kt.configs + kt.pruned]


def _config_names(kr: KernelReport) -> list[str]:
    """The constexprs the configs set: the literal list's, else (configs built by code, a library's own tuner) the
    ones the autotuner measured."""
    names: list[str] = []
    kwargs = [cfg.get("kwargs") or {} for cfg in kr.kernel.autotune_configs or []] or \
        [dict(c.kwargs) for c in _measured(kr)]
    for kw in kwargs:
        for k in kw:
            if k not in names:
                names.append(k)
    return names


def _existing(kr: KernelReport) -> set[tuple]:
    """The configs the kernel has: its literal list's and every one the autotuner timed or pruned."""
    out = set()
    for cfg in kr.kernel.autotune_configs or []:
        out.add((tuple(sorted((cfg.get("kwargs") or {}).items())), cfg.get("num_warps", 4), cfg.get("num_stages", 3)))
    for c in _measured(kr):
        out.add((tuple(sorted(c.kwargs)), c.value("num_warps") or 4, c.value("num_stages") or 3))
    return out


def proposals(kr: KernelReport, f: Finding, constants: dict[str, Any], options: dict[str, Any]) -> list[dict[str, Any]]:
    """New configs from `f`'s cause: {"kwargs": {...}, "num_warps": w, "num_stages": s} — the chosen config (the
    spec's `constants` and `options`) with the tile that fits, then the configs the autotuner measured fastest for
    the same key with it; none the kernel already has, at most MAX_PROPOSALS."""
    name, fit = f.data.get("name"), f.data.get("fit")
    names = _config_names(kr)
    if not isinstance(name, str) or not isinstance(fit, int) or name not in names:
        return []
    bases = [({k: constants[k] for k in names if k in constants}, options.get("num_warps", 4),
              options.get("num_stages", 3))]
    tuning = getattr(kr, "tuning", None)
    for kt in (tuning.keys if tuning is not None else []):
        chosen = kt.chosen_config
        if chosen is None or any(constants.get(k) != v for k, v in chosen.kwargs):
            continue
        for c in sorted(kt.timed, key=lambda c: c.time_us):
            bases.append((dict(c.kwargs), c.value("num_warps") or 4, c.value("num_stages") or 3))
    have = _existing(kr)
    out: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    for kwargs, warps, stages in bases:
        if name not in kwargs or kwargs[name] <= fit:
            continue
        new = {**kwargs, name: fit}
        ident = (tuple(sorted(new.items())), warps, stages)
        if ident in have or ident in seen:
            continue
        seen.add(ident)
        out.append({"kwargs": new, "num_warps": warps, "num_stages": stages})
        if len(out) >= MAX_PROPOSALS:
            break
    return out


LINE_MAX = 120  # a config longer than this at its indent continues its options on the next line


def config_text(prefix: str, cfg: dict[str, Any], indent: int = 0) -> str:
    """The `triton.Config(...)` call of a proposal, as the list writes them (options on a continuation line, under
    the call's opening parenthesis, when one line would be longer than LINE_MAX)."""
    kwargs = ", ".join(f"{k!r}: {v!r}" for k, v in cfg["kwargs"].items()).replace("'", '"')
    head, opts = f"{prefix}({{{kwargs}}},", f"num_stages={cfg['num_stages']}, num_warps={cfg['num_warps']})"
    if indent + len(head) + 1 + len(opts) + 1 <= LINE_MAX:
        return f"{head} {opts}"
    return f"{head}\n{' ' * (indent + len(prefix) + 1)}{opts}"


def label(cfg: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in cfg["kwargs"].items()]
    return ", ".join(parts + [f"num_warps={cfg['num_warps']}", f"num_stages={cfg['num_stages']}"])


class NewConfigCandidate(LaunchCandidate):
    """A config added to the autotune list: the configs already there stay, and the autotuner times the new one
    against them on its next run, so a metric that got worse on the proven spec (a narrower cp.async, a lower
    occupancy) trades nothing away by itself — only the cost model's estimate that it is no faster does (then it is
    offered, never preferred, and `check --fix` leaves it). A time measured on the GPU (`measured`, from
    `.tritonlens/proposals.jsonl`) replaces that estimate: measured faster with the same outputs, it is preferred;
    measured slower, or with other outputs, it is withheld (never a candidate)."""

    measured: ProposalTiming | None = None

    def trades(self, worse: list[str]) -> list[str]:
        if self.measured is not None and self.measured.faster:
            return []  # the measured time is the truth about the launch; a new warning still counts (outcome_of)
        return [w for w in worse if w.startswith("est. no faster")]

    @property
    def writes(self) -> bool:
        """Whether it edits the file (a literal list to add it to)."""
        return self._edit is not None


def proposal_candidates(kr: KernelReport, f: Finding, text: str | None, measured: bool = True
                        ) -> list[tuple[dict[str, Any], NewConfigCandidate]]:
    """Each proposed config with its candidate, proven on the spec the finding came from with the new values
    (`launch.prove`); the candidate carries the edit that adds it after the last `triton.Config(...)` of the literal
    list when there is one (`text` given and the list literal), else none (configs built by code: proven and timed,
    not written). With `measured` (the fixes), what `.tritonlens/proposals.jsonl` says a GPU measured decides: a
    proposal measured slower is left out; without it (the bench that measures them), every proposal is there."""
    if f.code not in CODES:
        return []
    held = holding(kr, f)
    if not held:
        return []
    cs = held[0]
    index = kr.compiled.index(cs)
    sources = config_sources(kr.kernel.path, text, kr.kernel.def_line) if text is not None else None
    timings = proposal_timings(find_workspace_root(kr.kernel.path), kr.kernel.path, kr.name) if measured else {}
    from .measured import tuned

    by_tune = {label_parts(t.proposal): t for t in tuned(find_workspace_root(kr.kernel.path), kr.kernel.path, kr.name)} \
        if measured else {}
    out = []
    for cfg in proposals(kr, f, cs.spec.constants, cs.spec.options):
        measured = timings.get(label_parts(label(cfg)))
        at_launch = by_tune.get(label_parts(label(cfg)))  # `tune` timed this very config at the real launch
        if at_launch is not None:
            measured = ProposalTiming(at_launch.proposal, at_launch.chosen_us, at_launch.time_us, True, at_launch.gpu) \
                if at_launch.faster else None
            if measured is None:
                continue  # no faster at the real launch: withheld
        if measured is not None and not measured.faster:
            continue  # measured slower (or other outputs) on the captured launch: withheld
        cand = _new_config(kr, cs, index, sources, text, cfg, f.data["name"], measured)
        out.append((cfg, cand))
    return out


def _new_config(kr: KernelReport, cs, index: int, sources, text: str | None, cfg: dict[str, Any], name: str,
                measured: Any) -> NewConfigCandidate:
    """The candidate that adds `cfg` after the literal list's last `triton.Config(...)` (no edit without one), proven
    on spec `index` with the config's values."""
    variant = SpecVariant(kr.name, cs.spec.key(),
                          options=tuple((k, cfg[k]) for k in ("num_warps", "num_stages")
                                        if cs.spec.options.get(k) != cfg[k]),
                          constants=tuple((k, v) for k, v in cfg["kwargs"].items() if cs.spec.constants.get(k) != v))
    edit = None
    if sources and text is not None:
        last = sources[-1]
        lines = split_lines(text)
        line, col = last.call[0], last.call[1]
        call_text = lines[line - 1][col:] if line - 1 < len(lines) else ""
        prefix = call_text.split("(", 1)[0].strip() or "triton.Config"
        edit = Edit.insert(last.call[2] - 1, last.call[3], ",\n" + " " * col + config_text(prefix, cfg, col))
    why = measured.text() if measured is not None else "the autotuner times it on its next run"
    cand = NewConfigCandidate(f"Add a config {label(cfg)} to the autotune list ({why})", None, name,
                              cfg["kwargs"].get(name), variant, index, where="config", edit=edit)
    cand.measured = measured
    cand.group = f"config:{label(cfg)}"
    return cand


def tuned_candidates(kr: KernelReport, f: Finding, text: str, root: str | None) -> list[NewConfigCandidate]:
    """The configs `tune` measured faster at the real launch for `f`'s cause (fixes/measured), each a config added
    to the literal autotune list; the slower ones are not candidates. Only for kernels with a literal list."""
    from .measured import tuned

    names = _config_names(kr)
    held = holding(kr, f)
    if not names or not held or not kr.kernel.autotune_configs:
        return []
    cs = held[0]
    sources = config_sources(kr.kernel.path, text, kr.kernel.def_line)
    if not sources:
        return []
    out = []
    for t in tuned(root or find_workspace_root(kr.kernel.path), kr.kernel.path, kr.name):
        listed = {d.get("proposal") for d in f.data.get("tuned") or () if isinstance(d, dict)}
        if not t.faster or (t.proposal not in listed if f.code == TUNED_CODE else t.finding != f.code):
            continue
        values = dict(t.values)
        cfg = {"kwargs": {k: values.get(k, cs.spec.constants.get(k)) for k in names},
               "num_warps": values.get("num_warps", cs.spec.options.get("num_warps", 4)),
               "num_stages": values.get("num_stages", cs.spec.options.get("num_stages", 3))}
        if (tuple(sorted(cfg["kwargs"].items())), cfg["num_warps"], cfg["num_stages"]) in _existing(kr):
            continue
        changed = next((k for k in values if k in names), next(iter(values), ""))
        out.append(_new_config(kr, cs, kr.compiled.index(cs), sources, text, cfg, changed,
                               ProposalTiming(t.proposal, t.chosen_us, t.time_us, True, t.gpu)))
    return out


def candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[LaunchCandidate]:
    """One fix per proposed config that the literal list can take: insert it after the list's last
    `triton.Config(...)`; proven on the spec the finding came from with the new tile (compiled on the CPU)."""
    for _, cand in proposal_candidates(kr, f, text):
        if cand.writes:
            yield cand


# ---------------------------------------------------------------- LAUNCH005: prune the dead configs
PRUNE_CODE = "LAUNCH005"


def _range(span) -> Range:
    return Range(Position(span[0] - 1, span[1]), Position(span[2] - 1, span[3]))


class PruneCandidate:
    """Remove the dead configs (LAUNCH005's `data["prune"]`) from the literal autotune list: every one the
    autotuner timed at the captured keys and never found within the margin of the best, none the chosen config of
    any key. Proven by checking the edited text again: it parses, the list lost exactly those configs, and every
    captured spec still compiles."""

    group = "prune"

    def __init__(self, label: str, edits: list[Edit], positions: list[int], kept: int):
        self.label, self.edits, self.positions, self.kept = label, edits, positions, kept
        self.values: dict[str, str] = {}
        self.new_text = ""
        self.shift = 0
        self.traded = False

    def apply(self, text: str) -> tuple[list[Edit], str, int]:
        return list(self.edits), apply_edits(text, self.edits), 0

    def proven_by(self, old: KernelReport, new: KernelReport, f: Finding) -> tuple[str | None, bool]:
        left = new.kernel.autotune_configs or []
        if len(left) != self.kept or any(g.code == "SRC001" for g in new.findings) or \
                sum(1 for cs in new.compiled if cs.artifacts is not None and cs.artifacts.ok) < \
                sum(1 for cs in old.compiled if cs.artifacts is not None and cs.artifacts.ok):
            return None, False
        return f"{self.kept} config{'s' if self.kept != 1 else ''} left, each key's choice kept", False


def _removals(sources, positions: list[int]) -> list[Edit]:
    """Edits deleting the configs at `positions` (0-based) with their separating commas: each up to the next
    config, and the list's tail (after the last config kept) in one piece."""
    drop = set(positions)
    kept = [i for i in range(len(sources)) if i not in drop]
    last_kept = kept[-1]
    edits = []
    for i in sorted(drop):
        if i < last_kept:
            a, b = sources[i].call, sources[i + 1].call
            edits.append(Edit(_range((a[0], a[1], b[0], b[1])), ""))
    if any(i > last_kept for i in drop):
        a, b = sources[last_kept].call, sources[-1].call
        edits.append(Edit(_range((a[2], a[3], b[2], b[3])), ""))
    return edits


def prune_candidates(kr: KernelReport, f: Finding, text: str) -> Iterator[PruneCandidate]:
    """The one prune fix of a LAUNCH005 finding, when its plan offers one and the list is literal in `text`."""
    plan = f.data.get("prune") if f.code == PRUNE_CODE else None
    if not isinstance(plan, dict) or plan.get("why_not") or not plan.get("positions"):
        return
    sources = config_sources(kr.kernel.path, text, kr.kernel.def_line)
    listed = kr.kernel.autotune_configs or []
    positions = [p for p in plan["positions"] if isinstance(p, int)]
    if not sources or len(sources) != len(listed) or not positions or max(positions) >= len(sources) or \
            len(positions) >= len(sources):
        return
    n = len(positions)
    saves = plan.get("saves_s")
    said = f" (saves {saves:.2f} s of autotuning at the captured keys)" if isinstance(saves, (int, float)) else ""
    yield PruneCandidate(f"Remove the {n} dead config{'s' if n != 1 else ''} from the autotune list{said}",
                         _removals(sources, positions), positions, len(sources) - n)
