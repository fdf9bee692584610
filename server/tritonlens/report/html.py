"""`tritonlens report`: one self-contained HTML page of what the compiler did. It opens on where the captured GPU
time goes (kernels ranked by it, report/timeshare; each kernel's roofline drawn as SVG, report/roofline), then the
source with its findings, the TTGIR/PTX/SASS (AMDGCN) of every spec in panes linked line by line to it, metrics, per-line cost bars and, for
kernels with several specs, a config matrix.

A presenter like `cli.py`: it reads `FileReport`s and writes text. The page needs no network: its script, style,
IR and the TextMate grammars of `syntaxes/` (the ones the VS Code extension contributes, so the colours are the
editor's) are all inlined. IR texts are JSON blocks the page parses only when a pane is shown, and a pane renders
only the lines in view.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .. import __version__
from ..checks.registry import doc_link
from ..ir.linemap import same_file
from ..units import fmt_bytes, fmt_us
from .tuning import tuning_table
from . import roofline
from .timeshare import KernelTime, kernel_time, ranked
from .irviews import _PADDING, STAGE_TITLES, view_for
from ..model import CompiledSpec, Finding, KernelReport, Spec
from .kernel import _spec_values, config_labels
from ..settings import Settings
from ..source import split_lines

# The panes of a report: what a reader compares against the source. TTIR and LLIR stay out (LLIR is often
# megabytes and `tritonlens ir` prints it).
PANE_STAGES = {"cuda": ("ttgir", "ptx", "sass"), "hip": ("ttgir", "amdgcn")}
_GRAMMAR_FILES = {"ttir": "ttir", "ttgir": "ttgir", "llir": "llvm-ir", "ptx": "ptx", "sass": "sass",
                  "amdgcn": "amdgcn"}
_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")

# What each cost bar counts, per machine-level stage: (spill kinds, shared-memory kinds).
_COST_KINDS = {
    "sass": ({"ldl", "stl"}, {"lds", "sts", "ldgsts"}),
    "amdgcn": ({"ld.local", "st.local"}, {"ld.shared", "st.shared"}),
    "ptx": ({"ld.local", "st.local"}, {"ld.shared", "st.shared", "cp.async"}),
}


@dataclass
class PageStats:
    bytes: int
    kernels: int
    specs: int
    ir_bytes: int  # IR text embedded in the page


# ---------------------------------------------------------------- grammars
def grammar_dir() -> str | None:
    """`syntaxes/`: inside the package when installed from a wheel (setup.py copies it), at the repository root in
    a checkout, beside `dist/server` in the VS Code extension."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package folder
    for folder in (os.path.join(here, "syntaxes"), os.path.join(here, "..", "..", "syntaxes"),
                   os.path.join(here, "..", "..", "..", "syntaxes")):
        if os.path.isfile(os.path.join(folder, "ptx.tmLanguage.json")):
            return os.path.normpath(folder)
    return None


def load_grammars(folder: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(scope name -> grammar, stage -> scope name) from the .tmLanguage.json files; empty when none are found
    (the page then shows IR uncoloured)."""
    folder = folder or grammar_dir()
    grammars: dict[str, Any] = {}
    stages: dict[str, str] = {}
    if folder is None:
        return grammars, stages
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tmLanguage.json"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            g = json.load(f)
        grammars[g["scopeName"]] = g
        for stage, base in _GRAMMAR_FILES.items():
            if name == f"{base}.tmLanguage.json":
                stages[stage] = g["scopeName"]
    return grammars, stages


# ---------------------------------------------------------------- per-spec data
def line_map_runs(linemap, kernel_path: str) -> list[int]:
    """The IR → source map of one stage as flat runs `[first IR line, count, source line, ...]` over consecutive IR
    lines from the same source line of the kernel's file (lines in triton's own files are left out)."""
    runs: list[int] = []
    for ir_line in sorted(linemap.ir_to_src):
        loc = linemap.ir_to_src[ir_line]
        if not same_file(loc.file, kernel_path):
            continue
        if runs and runs[-3] + runs[-2] == ir_line and runs[-1] == loc.line:
            runs[-2] += 1
        else:
            runs += [ir_line, 1, loc.line]
    return runs


def line_costs(view) -> tuple[str, dict[int, list[int]]]:
    """(stage, source line -> [instructions, spill ops, shared-memory ops]) from the lowest level compiled: SASS,
    AMDGCN, else PTX."""
    stage = next((s for s in ("sass", "amdgcn", "ptx") if s in view.artifacts.asm), None)
    if stage is None:
        return "", {}
    mod = view.module(stage)
    instrs = mod.kernel_instrs() if stage == "ptx" else mod.instrs
    spill, shared = _COST_KINDS[stage]
    out: dict[int, list[int]] = {}
    for i in instrs:
        if i.loc is None or i.opcode in _PADDING or not same_file(i.loc.file, view.kr.kernel.path):
            continue
        c = out.setdefault(i.loc.line, [0, 0, 0])
        c[0] += 1
        c[1] += i.kind in spill
        c[2] += i.kind in shared
    return stage.upper(), out


def is_chosen(spec: Spec) -> bool:
    """Whether captures say the autotuner chose this spec (for some autotune key)."""
    return spec.autotune == "chosen"


def metric_rows(cs: CompiledSpec) -> list[tuple[str, str]]:
    """The metrics table of one spec: (name, value) rows."""
    m = cs.metrics
    art = cs.artifacts
    rows: list[tuple[str, str]] = [("registers", str(m.get("registers", "?")))]
    rows.append(("spills", f"{fmt_bytes(m.get('spill_stores', 0))} stored, {fmt_bytes(m.get('spill_loads', 0))} "
                           f"loaded"))
    rows.append(("stack", fmt_bytes(m.get("stack", 0))))
    rows.append(("shared memory", fmt_bytes(m.get("shared", 0))))
    occ = m.get("occupancy")
    if occ:
        rows.append(("occupancy (estimate)", f"{occ['warps']}/{occ['max_warps']} warps ({occ['occupancy']:.0%}), "
                                             f"{occ['blocks']} blocks per SM, limited by {occ['limiter']}"))
    for kind, widths in (m.get("global_widths") or {}).items():
        rows.append((kind, ", ".join(f"{bits}-bit ×{n}" for bits, n in widths.items())))
    rows.append(("layout conversions", str(m.get("convert_layout", 0))))
    rows.append(("shared allocations", str(m.get("local_alloc", 0))))
    rows.append(("dots", f"{m.get('dots', 0)} (mma {m.get('mma', 0)}, wgmma {m.get('wgmma', 0)}, "
                         f"fma {m.get('fma', 0)})"))
    rows.append(("barriers", str(m.get("bar", 0))))
    if "ldl" in m:
        rows.append(("SASS LDL / STL", f"{m['ldl']} / {m['stl']}"))
    if art is not None:
        rows.append(("compile time", f"{art.compile_time:.2f} s{' (cached)' if art.cached else ''}"))
    return rows


def _global_128_share(m: dict) -> str:
    total = wide = 0
    for widths in (m.get("global_widths") or {}).values():
        for bits, n in widths.items():
            total += n
            wide += n if int(bits) >= 128 else 0
    return f"{wide}/{total}" if total else "–"


def varying(kr: KernelReport) -> tuple[dict[str, list[str]], list[str]]:
    """Which spec values differ across the kernel's specs (name -> value per spec), and one sentence per finding
    present in only some specs that one of those values separates: "PTX001 on line 13 follows n_elements: with
    i32, not with i32%16"."""
    specs = kr.compiled
    values = [_spec_values(cs.spec) for cs in specs]
    names: list[str] = []
    for v in values:
        names += [k for k in v if k not in names]
    differ = {k: [v.get(k, "–") for v in values] for k in names if len({v.get(k) for v in values}) > 1}
    follows: list[str] = []
    keys = [cs.spec.key() for cs in specs]
    for f in kr.findings:
        have = set(f.data.get("specs") or ())
        if not have or len(have) >= len(set(keys)):
            continue
        for name, vals in differ.items():
            with_ = {v for k, v in zip(keys, vals) if k in have}
            without = {v for k, v in zip(keys, vals) if k not in have}
            if with_ and without and not with_ & without:
                follows.append(f"{f.code} on line {f.line} follows {name}: with {', '.join(sorted(with_))}, "
                               f"not with {', '.join(sorted(without))}")
                break
    return differ, list(dict.fromkeys(follows))


# ---------------------------------------------------------------- the page
def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _count(value: Any) -> float:
    """A metric as a number for a bar's width: what is not a finite number counts as 0."""
    return float(value) if type(value) in (int, float) and math.isfinite(value) else 0.0


def _json_block(data: Any) -> str:
    """JSON safe inside a <script> element: no `</script>` can close it early."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def _asset(name: str) -> str:
    with open(os.path.join(_ASSETS, name), encoding="utf-8") as f:
        return f.read()


class _Page:
    def __init__(self, settings: Settings, base: str, baseline: dict[str, list[str]] | None,
                 root: str | None = None) -> None:
        self.settings = settings
        self.base = base
        self.root = root  # the workspace whose `.tritonlens/proposals.jsonl` holds what `tune` measured
        self.times: dict[int, KernelTime] = {}  # by KernelReport identity
        self.baseline = baseline
        self.grammars, self.stage_scopes = load_grammars()
        self.blobs: list[str] = []
        self.codes: set[str] = set()
        self.n_kernels = self.n_specs = self.ir_bytes = 0

    def rel(self, path: str) -> str:
        try:
            rel = os.path.relpath(path, self.base)
        except ValueError:
            return path
        return path if rel.startswith("..") else rel

    # ------------------------------------------------------------ findings
    def finding(self, f: Finding) -> str:
        self.codes.add(f.code)
        specs = " ".join(f.data.get("specs") or ())
        doc = doc_link(f.code, f.data.get("doc"))
        link = f' <a class="doc" href="{_e(doc)}" rel="noreferrer">online</a>' if doc else ""
        return (f'<div class="finding sev-{_e(f.severity)}" data-code="{_e(f.code)}" data-line="{f.line}" '
                f'data-column="{f.column}" data-severity="{_e(f.severity)}"'
                + (f' data-specs="{_e(specs)}"' if specs else "") +
                f'><a class="code" href="#rule-{_e(f.code)}">{_e(f.code)}</a> <span class="sev">{_e(f.severity)}'
                f'</span> <span class="where">{f.line}:{f.column}</span> <span class="msg">{_e(f.message)}</span>'
                f'{link}{_evidence(f)}</div>')

    # ------------------------------------------------------------ kernels
    @staticmethod
    def tuning(summary) -> str:
        """What the autotuner measured (report/tuning): configs × captured keys, the chosen one starred, then the
        summary lines."""
        rows = tuning_table(summary)
        head = "".join(f"<th>{_e(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
        lines = "".join(f"<li>{_e(x)}</li>" for x in summary.key_lines() + [summary.dead_line()])
        return (f'<div class="tuning"><h3>what the autotuner measured (* chosen)</h3><table class="tuning-table">'
                f"<tr>{head}</tr>{body}</table><ul>{lines}</ul></div>")

    def kernel(self, kr: KernelReport, text: str | None, path: str) -> str:
        self.n_kernels += 1
        k = kr.kernel
        idx = self.n_kernels
        start = min([h.line for h in k.hints] + [k.decorator_line, k.def_line])
        end = max(k.end_line, start)
        labels = config_labels([cs.spec for cs in kr.compiled])
        by_line: dict[int, list[Finding]] = {}
        elsewhere: list[Finding] = []
        for f in kr.findings:
            (by_line.setdefault(f.line, []) if start <= f.line <= end else elsewhere).append(f)
        out = [f'<section class="kernel" id="k{idx}" data-kernel="{_e(k.name)}" data-path="{_e(self.rel(path))}" '
               f'data-def-line="{k.def_line}" data-spec="0">',
               f'<h2><span class="kname">{_e(k.display_name)}</span> <span class="kpath">{_e(self.rel(path))}:'
               f'{k.def_line}</span> {self.counts(kr.findings)}</h2>']
        if kr.captures:
            c = kr.captures
            out.append(f'<p class="note captures">{c.get("compiled", 0)} of {c.get("captured", 0)} captured spec(s) '
                       f'compiled' + (f', {c["trials"]} autotuner trial(s) left out' if c.get("trials") else "") +
                       (f'; launched values left out: {_e(", ".join(c["left_out"]))} (--all-captures compiles '
                        f'every one)' if c.get("left_out") else "") + "</p>")
        out.append(self.time_block(kr, idx))
        if kr.tuning is not None:
            out.append(self.tuning(kr.tuning))
        spec_data = [self.spec_data(kr, cs, labels) for cs in kr.compiled]
        self.n_specs += len(kr.compiled)
        if kr.compiled:
            out.append('<div class="spec-tabs">' + "".join(
                f'<button class="spec-tab{" active" if i == 0 else ""}" data-spec="{i}" '
                f'title="{_e(cs.spec.describe())}">{_e(labels.get(cs.spec.key()) or cs.spec.describe())}'
                f'{" ★" if is_chosen(cs.spec) else ""}{"" if cs.artifacts and cs.artifacts.ok else " ✗"}</button>'
                for i, cs in enumerate(kr.compiled)) + "</div>")
        else:
            out.append('<p class="note">not compiled: no complete spec (see the findings)</p>')
        if len(kr.compiled) > 1:
            out.append(self.matrix(kr, labels))
        key = f"{self.rel(path)}::{k.name}"
        if self.baseline is not None:
            # `--baseline` hands its per-kernel changes here: lines of text, "registers 96 → 168".
            changes = self.baseline.get(key) or ["no change since the baseline"]
            out.append('<div class="baseline"><h3>since the baseline</h3><ul>' +
                       "".join(f"<li>{_e(c)}</li>" for c in changes) + "</ul></div>")
        if elsewhere:
            out.append('<div class="elsewhere">' + "".join(self.finding(f) for f in elsewhere) + "</div>")
        out.append('<div class="body"><div class="source">')
        lines = split_lines(text or "")
        for n in range(start, min(end, len(lines)) + 1):
            out.append(f'<div class="src-line" data-source-line="{n}"><span class="cost"></span>'
                       f'<span class="ln">{n}</span><code>{_e(lines[n - 1]) or " "}</code></div>')
            out.extend(self.finding(f) for f in by_line.get(n, []))
        out.append('</div><div class="panes">')
        for i, cs in enumerate(kr.compiled):
            out.append(self.panes(idx, i, kr, cs))
        out.append("</div></div>")
        for i, cs in enumerate(kr.compiled):
            if cs.artifacts is not None and cs.artifacts.ok:
                out.append(f'<table class="spec-metrics" data-spec="{i}"{"" if i == 0 else " hidden"}>'
                           f'<caption>metrics [{_e(cs.spec.describe())}]</caption>' +
                           "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td></tr>" for a, b in metric_rows(cs)) +
                           "</table>")
        out.append(f'<script type="application/json" class="kernel-data">{_json_block(spec_data)}</script>')
        out.append("</section>")
        return "\n".join(out)

    # ------------------------------------------------------------ where the time goes
    def time_block(self, kr: KernelReport, idx: int) -> str:
        """A kernel's roofline (or DRAM bandwidth), the cost model's parts of its heaviest launch and the numbers."""
        kt = self.times.get(id(kr))
        if kt is None or not kt.launches:
            return ""
        drawings = (roofline.roofline_svg(kt, idx) + roofline.bandwidth_svg(kt, idx) +
                    roofline.parts_svg(kt, idx))
        share = f", {kt.share:.1%} of the captured GPU time" if kt.share is not None else ""
        timed = (f"{fmt_us(kt.captured_us)} captured over {kt.count:,} launches{share}" if kt.timed else
                 "no captured launch was timed: the estimate and the physical floor only")
        return (f'<details class="time" open><summary>where the time goes — {_e(timed)}</summary>'
                f'<div class="drawings">{drawings}</div>{roofline.numbers_table(kt)}</details>')

    def ranking(self, reports: list) -> str:
        """The page's first section: kernels ranked by captured GPU time."""
        order = [kr for r in reports for kr in r.kernels]
        ids = {id(kr): i for i, kr in enumerate(order, 1)}
        self.times = {id(kr): kernel_time(kr, self.root, self.settings.gpu) for kr in order}
        rows = ranked(list(self.times.values()))
        by_time = {id(kt): ids[k] for k, kt in self.times.items()}
        if not rows:
            return ('<section id="time"><h1>where the time goes</h1><p class="note">no captured launch: '
                    '<code>tritonlens capture --time -- CMD</code> records each launch with its GPU time; this '
                    'section then ranks the kernels by it, with their rooflines</p></section>')
        timed = any(kt.timed for kt in rows)
        total = sum(kt.captured_us for kt in rows)
        out = ['<section id="time"><h1>where the time goes</h1>']
        if timed:
            gpus = sorted({kt.gpu.short_name for kt in rows if kt.gpu is not None})
            out.append(f'<p class="note">{_e(fmt_us(total))} of GPU time captured; floors and ceilings of '
                       f'{_e(", ".join(gpus) or "the GPU")}</p>')
        else:
            out.append('<p class="note untimed">the captures hold no timings: <code>tritonlens capture --time -- CMD'
                       '</code> times each launch on the GPU; the ranking, the distance from the floor and the '
                       'measured points follow from it. Shown: the launches counted, the model\'s estimate and the '
                       'physical floor</p>')
        out.append('<table class="ranking"><thead><tr><th>#</th><th>kernel</th><th>launches</th><th>per launch</th>'
                   '<th>captured</th><th>share</th><th>bound</th><th>× floor</th><th>worst finding</th>'
                   '<th>best proven fix</th></tr></thead><tbody>')
        for n, kt in enumerate(rows, 1):
            idx = by_time[id(kt)]
            top = kt.top
            per = kt.per_launch_us
            ratio = kt.floor_ratio
            floor = top.floor_us if top is not None else None
            w = kt.worst
            fix = kt.best_fix
            share = kt.share
            out.append(
                f'<tr class="rank-row" data-kernel="{_e(kt.kernel)}" data-path="{_e(self.rel(kt.path))}" '
                f'data-captured-us="{kt.captured_us:.6g}" data-count="{kt.count}"'
                + (f' data-share="{share:.6g}"' if share is not None else "")
                + (f' data-floor-ratio="{ratio:.6g}"' if ratio is not None else "") +
                f'><td class="num">{n}</td><td><a href="#k{idx}">{_e(kt.display)}</a> <span class="kpath">'
                f'{_e(self.rel(kt.path))}</span></td><td class="num">{kt.count:,}</td>'
                f'<td class="num">{_e(fmt_us(per)) if per is not None else "not timed"}</td>'
                f'<td class="num">{_e(fmt_us(kt.captured_us)) if kt.timed else "–"}</td>'
                f'<td class="num share">' + (f'{share:.1%}<span class="sbar" style="width:{round(60 * share)}px">'
                                            f'</span>' if share is not None else "–") + '</td>'
                f'<td>{_e(kt.bound)}</td><td class="num">'
                + (f"{ratio:.2f}×" + (f' <span class="note">below the floor of {_e(kt.gpu.short_name)}: timed on '
                                      f'another GPU? (--gpu)</span>' if ratio < 0.95 and kt.gpu else "")
                   if ratio is not None else f"≥ {_e(fmt_us(floor))} floor" if floor else "–") + '</td><td>'
                + (f'<span class="sev-{_e(w.severity)}">{_e(w.code)}</span> {_e(w.message.split(" — ")[0][:140])}'
                   if w is not None else "none") + '</td><td>'
                + (f'{_e(fix.change)}: {_e(fmt_us(fix.before_us))} → {_e(fmt_us(fix.after_us))} '
                   f'({fix.speedup:.2f}×{" on " + _e(fix.gpu) if fix.gpu else ""})' if fix is not None else "–")
                + "</td></tr>")
        out.append("</tbody></table></section>")
        return "\n".join(out)

    def counts(self, findings: Iterable[Finding]) -> str:
        c = Counter(f.severity for f in findings)
        return "".join(f'<span class="count sev-{s}">{c[s]} {s}</span>' for s in ("error", "warning", "info", "hint")
                       if c[s])

    def spec_data(self, kr: KernelReport, cs: CompiledSpec, labels: dict[str, str]) -> dict:
        data: dict[str, Any] = {"key": cs.spec.key(), "label": labels.get(cs.spec.key()) or cs.spec.describe(),
                                "describe": cs.spec.describe(), "target": cs.spec.target,
                                "chosen": is_chosen(cs.spec), "cost": {}, "cost_stage": ""}
        if cs.artifacts is not None and cs.artifacts.ok:
            stage, costs = line_costs(view_for(kr, cs, self.settings))
            data["cost_stage"] = stage
            data["cost"] = {str(line): c for line, c in costs.items()}
        return data

    def panes(self, kidx: int, sidx: int, kr: KernelReport, cs: CompiledSpec) -> str:
        hidden = "" if sidx == 0 else " hidden"
        art = cs.artifacts
        if art is None or not art.ok:
            if art is None:
                why = "cancelled"
            else:
                first = split_lines(art.error.message.strip())[:1]
                why = f"{art.error.kind}: {first[0]}" if first else art.error.kind
            return (f'<div class="spec-panes" data-spec="{sidx}"{hidden}><div class="compile-error">did not compile '
                    f'— {_e(why)}</div></div>')
        view = view_for(kr, cs, self.settings)
        backend = "hip" if cs.spec.target.startswith("hip") else "cuda"
        out = [f'<div class="spec-panes" data-spec="{sidx}"{hidden}>']
        for stage in PANE_STAGES[backend]:
            text = view.text(stage)
            if text is None:
                continue
            mod = view.module(stage)
            blob_id = f"ir-{kidx}-{sidx}-{stage}"
            self.ir_bytes += len(text)
            self.blobs.append(f'<script type="application/json" id="{blob_id}">'
                              f'{_json_block({"text": text, "map": line_map_runs(mod.linemap, kr.kernel.path)})}'
                              f'</script>')
            out.append(f'<div class="pane" data-stage="{stage}" data-scope="{_e(self.stage_scopes.get(stage, ""))}" '
                       f'data-blob="{blob_id}"><div class="pane-head"><b>{STAGE_TITLES[stage]}</b> '
                       f'<span class="ir-count">{text.count(chr(10)):,} lines</span> <span class="ir-selected"></span>'
                       f'</div><div class="ir-scroll"><div class="ir-spacer"><div class="ir-window"></div></div></div>'
                       f'</div>')
        out.append("</div>")
        return "".join(out)

    def matrix(self, kr: KernelReport, labels: dict[str, str]) -> str:
        rows = []
        metrics = [cs.metrics for cs in kr.compiled]
        max_shared = max([_count(m.get("shared")) for m in metrics] + [1])
        for i, cs in enumerate(kr.compiled):
            m = cs.metrics
            ok = cs.artifacts is not None and cs.artifacts.ok
            codes = Counter(f.code for f in cs.findings)
            occ = m.get("occupancy") or {}
            regs = _count(m.get("registers"))
            cells = [
                f'<td class="cfg">{_e(labels.get(cs.spec.key()) or cs.spec.describe())}</td>',
                f"<td>{'★ chosen' if is_chosen(cs.spec) else _e(cs.spec.autotune or '')}</td>",
                f'<td class="num">{_e(cs.spec.launches or "")}</td>',
                f'<td class="num">{regs if ok else "–"}<span class="mbar" style="width:{round(40 * regs / 255)}px">'
                f'</span></td>',
                f'<td class="num">{_e(fmt_bytes(m.get("spill_bytes", 0))) if ok else "–"}</td>',
                f'<td class="num">{_e(fmt_bytes(m.get("shared", 0))) if ok else "–"}<span class="mbar shared" '
                f'style="width:{round(40 * _count(m.get("shared")) / max_shared)}px"></span></td>',
                f'<td class="num">{format(_count(occ.get("occupancy")), ".0%") if occ else "–"}</td>',
                f'<td class="num">{_e(m.get("convert_layout", "–")) if ok else "–"}</td>',
                f'<td class="num">{_e(_global_128_share(m)) if ok else "–"}</td>',
                "<td>" + (" ".join(f'<span class="fcode" data-code="{_e(c)}">{_e(c)}×{n}</span>'
                                   for c, n in sorted(codes.items())) if ok or codes else "") +
                ("" if ok else " did not compile") + "</td>",
            ]
            rows.append(f'<tr class="matrix-row{" active" if i == 0 else ""}{" chosen" if is_chosen(cs.spec) else ""}"'
                        f' data-spec="{i}" data-spec-key="{_e(cs.spec.key())}">' + "".join(cells) + "</tr>")
        differ, follows = varying(kr)
        head = ("<tr><th>config</th><th>autotuner</th><th>launches</th><th>registers</th><th>spilled</th><th>shared</th><th>occupancy</th>"
                "<th>conversions</th><th>128-bit global</th><th>findings</th></tr>")
        chosen_note = "" if not kr.kernel.autotune_configs or any(is_chosen(cs.spec) for cs in kr.compiled) else \
            '<p class="note">no capture says which config the autotuner chose</p>'
        vary = ""
        if differ:
            vary = ('<div class="varying"><b>differs across specs:</b> ' +
                    "; ".join(f"{_e(k)} ({_e(', '.join(dict.fromkeys(v)))})" for k, v in differ.items()) + "</div>")
        follow = "".join(f'<div class="follows">{_e(s)}</div>' for s in follows)
        return (f'<div class="matrix"><table><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
                f"{chosen_note}{vary}{follow}</div>")

    # ------------------------------------------------------------ files and page
    def file(self, report) -> str:
        from ..source import read_source

        text, problem = read_source(report.path)
        out = [f'<section class="file" data-path="{_e(self.rel(report.path))}"><h1>{_e(self.rel(report.path))}</h1>']
        for msg in report.problems + ([problem] if problem else []):
            out.append(f'<p class="problem">{_e(msg)}</p>')
        out.extend(self.finding(f) for f in report.findings)
        if not report.kernels and not report.findings:
            out.append('<p class="note">no kernels</p>')
        out.extend(self.kernel(kr, text, report.path) for kr in report.kernels)
        out.append("</section>")
        return "\n".join(out)

    def rules(self) -> str:
        from ..checks import load_rules, rule_doc

        rules = load_rules()
        out = ['<section id="rules"><h1>rules</h1>']
        for code in sorted(self.codes):
            doc = rule_doc(code)
            if doc is None and code in rules:
                doc = f"{code} {rules[code].name}: {rules[code].summary}"
            out.append(f'<details id="rule-{_e(code)}"><summary>{_e(code)}'
                       f'{" " + _e(rules[code].name) if code in rules else ""}</summary><pre>{_e(doc or "")}</pre>'
                       f'</details>')
        out.append("</section>")
        return "\n".join(out)

    def render(self, reports: list, title: str, sections: Sequence[str] = ()) -> str:
        time = self.ranking(reports)
        files = [self.file(r) for r in reports]
        findings = [f for r in reports for f in r.all_findings()]
        toc = "".join(
            f'<li><a href="#k{i}">{_e(name)}</a> {counts}</li>' for i, (name, counts) in enumerate(
                ((f"{self.rel(r.path)}::{kr.kernel.display_name}", self.counts(kr.findings))
                 for r in reports for kr in r.kernels), 1))
        rules = self.rules()
        script = _asset("report.js")
        return "\n".join([
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # Nothing on the page may reach the network (a report is opened from disk, from a CI artefact,
            # offline), and no script runs but the page's own: allowed by its hash, so that markup a checked
            # repository got onto the page (were anything left unescaped) could not run.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            f"script-src '{_script_hash(script)}'; img-src data:; base-uri 'none'; form-action 'none'\">",
            f"<title>{_e(title)}</title>",
            f"<style>{_asset('report.css')}</style></head><body>",
            f'<header><h1>{_e(title)}</h1><p>tritonlens {_e(__version__)} · {self.n_kernels} kernel(s), '
            f'{self.n_specs} spec(s) · {self.counts(findings)} · click a source line to see the IR made from it; '
            f'click an IR line to see its source line</p><ol class="toc">{toc}</ol></header>',
            "<main>", time, *files, *sections, rules, "</main>",
            f'<script type="application/json" id="tl-grammars">{_json_block(self.grammars)}</script>',
            *self.blobs,
            f"<script>{script}</script>",
            "</body></html>",
        ])


def render_report(reports: list, settings: Settings | None = None, *, base: str | None = None,
                  title: str = "tritonlens report", baseline: dict[str, list[str]] | None = None,
                  sections: Sequence[str] = (), root: str | None = None) -> tuple[str, PageStats]:
    """The HTML page for `reports` (pipeline `FileReport`s), and its numbers. `base` is the folder paths are shown
    relative to (the working directory). `baseline`: per `path::kernel`, lines saying what changed since the
    baseline; None leaves that part out. `sections`: HTML made elsewhere (compare/html.py), after the kernels.
    `root`: the workspace whose proven fixes the ranking shows (default: the first report's)."""
    if root is None and reports:
        from ..sidecar import find_workspace_root

        root = find_workspace_root(reports[0].path)
    page = _Page(settings or Settings(), base or os.getcwd(), baseline, root)
    text = page.render(reports, title, sections)
    return text, PageStats(len(text.encode("utf-8")), page.n_kernels, page.n_specs, page.ir_bytes)


def write_report(reports: list, out_path: str, settings: Settings | None = None, **kw) -> PageStats:
    from ..writes import write_file

    text, stats = render_report(reports, settings, **kw)
    write_file(out_path, text)  # never through a link out of the folder named
    return stats


def _evidence(f: Finding) -> str:
    """The finding's details (its full account, spec, cost, the specs it holds in, the verdict's reason), folded
    under its one-line message."""
    if not f.details:
        return ""
    return ('<details class="evidence"><summary>evidence</summary><ul>'
            + "".join(f"<li>{_e(d)}</li>" for d in f.details) + "</ul></details>")
