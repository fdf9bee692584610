"""A comparison as one self-contained HTML page: per changed spec, what got worse and better, the metrics of both
sides, and each compared IR layer side by side (normalised: locations, SSA and register numbers out, so that only
what the compiler did differently shows). Pure but for `write_page`."""
from __future__ import annotations

import difflib
import html
from typing import Any

from ..checks.costmodel import mean_launch_us
from .core import Outcome, SpecPair
from .output import side_names, headline

MAX_LINES = 6000  # per side and layer: a diff of megabytes of PTX would make a page no browser opens
_STAGES = (("ttgir", "TTGIR"), ("ptx", "PTX"), ("amdgcn", "AMDGCN"))
_METRICS = ("registers", "spill_bytes", "stack", "shared", "convert_layout", "local_alloc", "dots", "mma", "wgmma",
            "fma", "bar", "ldl", "stl")

_CSS = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:2em;border-top:1px solid #ccc;padding-top:.8em}
.gated{color:#b00020;font-weight:600} .worse{color:#a15c00} .better{color:#1b7f3b}
table.m{border-collapse:collapse;margin:.5em 0} table.m td,table.m th{border:1px solid #ddd;padding:2px 8px;
text-align:right} table.m th{background:#f4f4f4}
table.diff{font:12px ui-monospace,monospace;border-collapse:collapse;width:100%;table-layout:fixed}
table.diff td{white-space:pre-wrap;word-break:break-all;vertical-align:top;padding:0 4px}
table.diff th{background:#f4f4f4} .diff_add{background:#e6ffec} .diff_chg{background:#fff5b1}
.diff_sub{background:#ffebe9} td.diff_header{color:#888;width:3em;text-align:right} td.diff_next{display:none}
details{margin:.4em 0} summary{cursor:pointer}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _metrics_table(p: SpecPair, na: str, nb: str) -> str:
    ma, mb = (p.a or {}).get("metrics", {}), (p.b or {}).get("metrics", {})
    rows = []
    for name in _METRICS:
        a, b = ma.get(name), mb.get(name)
        if a is None and b is None:
            continue
        cls = "" if a == b else " class='worse'" if (isinstance(a, int) and isinstance(b, int) and b > a
                                                      and name in ("registers", "spill_bytes", "convert_layout",
                                                                   "ldl", "stl")) else ""
        rows.append(f"<tr{cls}><th>{_e(name)}</th><td>{_e(a)}</td><td>{_e(b)}</td></tr>")
    ta, tb = mean_launch_us(ma), mean_launch_us(mb)
    if ta or tb:
        rows.append(f"<tr><th>estimated µs per launch</th><td>{_e(ta and round(ta, 2))}</td>"
                    f"<td>{_e(tb and round(tb, 2))}</td></tr>")
    ia, ib = p.a_extra.get("instructions"), p.b_extra.get("instructions")
    if ia or ib:
        rows.append(f"<tr><th>{_e(p.a_extra.get('isa', ''))} / {_e(p.b_extra.get('isa', ''))} instructions</th>"
                    f"<td>{_e(ia)}</td><td>{_e(ib)}</td></tr>")
    return (f"<table class='m'><tr><th></th><th>{_e(na)}</th><th>{_e(nb)}</th></tr>" + "".join(rows) + "</table>")


def _side_by_side(p: SpecPair, na: str, nb: str) -> str:
    out = []
    ta, tb = p.a_extra.get("ir", {}), p.b_extra.get("ir", {})
    for stage, title in _STAGES:
        a, b = ta.get(stage), tb.get(stage)
        if a is None and b is None:
            continue
        la, lb = (a or "").splitlines(), (b or "").splitlines()
        cut = len(la) > MAX_LINES or len(lb) > MAX_LINES
        table = difflib.HtmlDiff(tabsize=4).make_table(la[:MAX_LINES], lb[:MAX_LINES], f"{na}", f"{nb}",
                                                       context=True, numlines=4)
        same = a == b
        out.append(f"<details{'' if same else ' open'}><summary>{title}: "
                   f"{'the same' if same else f'{len(la)} → {len(lb)} lines'}"
                   f"{f' (first {MAX_LINES} lines shown)' if cut else ''}</summary>"
                   + ("" if same else table) + "</details>")
    return "".join(out)


def section(outcome: Outcome) -> str:
    """The comparison as a `<section>` of its own (its style scoped to it): the whole of `compare --html`'s page, and
    the part `tritonlens report --compare-triton` adds to the report."""
    na, nb = side_names(outcome)
    parts = [f"<section class='tl-compare' id='compare'><style>{_scoped(_CSS)}</style>",
             f"<h1>{_e(na)} → {_e(nb)}</h1><p>{_e(headline(outcome))}</p>"]
    shown = [p for p in outcome.pairs if p.status in ("regressed", "improved", "changed")]
    if not shown:
        parts.append("<p>No spec changed.</p>")
    for p in shown:
        parts.append(f"<h2>{_e(p.path)}:{p.def_line} {_e(p.kernel)} <small>[{_e(p.describe)}] ({_e(p.label)})"
                     f"</small></h2><ul>")
        for r in p.regressions:
            parts.append(f"<li class='{'gated' if r.gated else 'worse'}'>{'✗' if r.gated else '−'} {_e(r.kind)}: "
                         f"{_e(r.text)}</li>")
        for t in p.improvements:
            parts.append(f"<li class='better'>+ {_e(t)}</li>")
        if p.knobs:
            parts.append(f"<li>paired by label; the second side's spec differs: {_e(', '.join(p.knobs))}</li>")
        parts.append("</ul>" + _metrics_table(p, na, nb) + _side_by_side(p, na, nb))
    parts.append("</section>")
    return "".join(parts)


def _scoped(css: str) -> str:
    """Every rule of `css` limited to the section, so that it cannot restyle the page it is put in."""
    out = []
    for rule in css.strip().split("}"):
        if "{" not in rule:
            continue
        selectors, body = rule.split("{", 1)
        scoped = ",".join(f".tl-compare {s.strip()}" if s.strip() != "body" else ".tl-compare"
                          for s in selectors.split(","))
        out.append(f"{scoped}{{{body}}}")
    return "\n".join(out)


def render(outcome: Outcome) -> str:
    na, nb = side_names(outcome)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>tritonlens compare: {_e(na)} → {_e(nb)}"
            f"</title></head><body>{section(outcome)}</body></html>\n")


def section_for(files: list[str], settings, version: str) -> str:
    """`files` compared with Triton `version` (made on demand) for `settings`' target, as a section."""
    from dataclasses import replace

    from ..device.run import run_devices
    from . import core, envs

    release, _ = envs.ensure_release(version)
    target = run_devices(settings.target, settings.gpu)[0].target
    sides = (core.Side(envs.installed(), target), core.Side(release, target))
    return section(core.run(files, sides, replace(settings, extra_targets=[]), core.Thresholds(), with_text=True))


def write_page(outcome: Outcome, path: str) -> None:
    from ..writes import write_file

    write_file(path, render(outcome))
