"""A kernel's time drawn as inline SVG for the report (no script: the page's CSP holds, and the drawing is there
before anything runs): the roofline of its captured launches against the GPU's ceilings, or — for a launch that
does no FLOPs the model counts — its DRAM bandwidth against the peak, and a stacked bar of the cost model's parts of
the launch that carries the most time. Every number drawn is in the table beside it and in the elements' data-
attributes; colours are the page's CSS variables, so light and dark themes both read."""
from __future__ import annotations

import html
import math

from ..units import fmt_bytes, fmt_flops, fmt_us
from .timeshare import PARTS, KernelTime, LaunchTime

W, H = 460, 300  # the roofline's viewBox
L, R, T, B = 70, 12, 14, 40  # its margins: axes' labels on the left and bottom


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _rate(flops_per_s: float) -> str:
    return f"{fmt_flops(flops_per_s)}/s"


def _bw(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e12:.2f} TB/s" if bytes_per_s >= 1e11 else f"{bytes_per_s / 1e9:.1f} GB/s"


def ceilings(kt: KernelTime) -> list[tuple[str, str, float]]:
    """(kind, label, FLOP/s) of the flat ceilings that hold for this kernel: FMA (fp32) always, and the tensor
    cores' peak for each operand type its dots run on."""
    gpu = kt.gpu
    if gpu is None:
        return []
    out = []
    if gpu.peak_flops.get("fp32"):
        out.append(("fma", "FMA fp32", gpu.peak_flops["fp32"]))
    kinds = {k for x in kt.launches for k in x.dot_kinds if not k.endswith(" on FMA")}
    kinds |= {x.floor_kind for x in kt.launches if x.floor_kind}
    for kind in sorted(kinds):
        if gpu.peak_flops.get(kind):
            out.append((f"tensor-{kind}", f"tensor cores {kind}", gpu.peak_flops[kind]))
    return out


def _points(kt: KernelTime) -> list[tuple[str, LaunchTime, float, float, str]]:
    """(kind, launch, intensity, FLOP/s, label) for every launch with FLOPs: measured, the model's estimate, and after
    each proven fix (at the launch that carries the time, whose time `tune` measured)."""
    out = []
    top = kt.top
    for x in kt.launches:
        ai = x.intensity
        if ai is None:
            continue
        where = f"{x.spec}, grid {x.grid}, ×{x.count}"
        if x.measured_us:
            out.append(("measured", x, ai, x.flops / (x.measured_us * 1e-6), f"measured {fmt_us(x.measured_us)} — {where}"))
        if x.est_us:
            out.append(("estimate", x, ai, x.flops / (x.est_us * 1e-6), f"estimated {fmt_us(x.est_us)} — {where}"))
        if x is top:
            for fix in kt.fixes:
                out.append(("fixed", x, ai, x.flops / (fix.after_us * 1e-6),
                            f"after {fix.change}: {fmt_us(fix.after_us)} measured ({fix.speedup:.2f}×)"))
    return out


def roofline_svg(kt: KernelTime, idx: int) -> str:
    """The roofline of a kernel's launches that do FLOPs; empty when none does or the GPU is not known."""
    gpu = kt.gpu
    pts = _points(kt)
    flats = ceilings(kt)
    if gpu is None or not pts or not flats:
        return ""
    bw = gpu.memory_bandwidth
    peak = max(p for _, _, p in flats)
    ridge_hi = peak / bw
    xs = [p[2] for p in pts]
    ys = [p[3] for p in pts]
    x0 = 10 ** math.floor(math.log10(min(xs + [flats[0][2] / bw]) / 2))
    x1 = 10 ** math.ceil(math.log10(max(xs + [ridge_hi]) * 4))
    y0 = 10 ** math.floor(math.log10(min(ys + [bw * x0]) / 2))
    y1 = 10 ** math.ceil(math.log10(peak * 1.5))

    def sx(v: float) -> float:
        return round(L + (W - L - R) * (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)), 1)

    def sy(v: float) -> float:
        return round(H - B - (H - T - B) * (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)), 1)

    title = f"roofline of {kt.display} on {gpu.short_name}"
    desc = (f"Arithmetic intensity (FLOPs per DRAM byte) against achieved FLOP/s, log-log. Ceilings: DRAM "
            f"{_bw(bw)}; " + "; ".join(f"{lab} {_rate(v)}" for _, lab, v in flats) +
            ". No L2 ceiling: the GPU's model has no L2 bandwidth. Points: " +
            "; ".join(f"{lab}: {p[2]:.3g} FLOP/B, {_rate(p[3])}" for p in pts for lab in [p[4]]) + ".")
    out = [f'<svg class="roofline" id="roofline-{idx}" viewBox="0 0 {W} {H}" role="img" '
           f'aria-labelledby="roofline-{idx}-t roofline-{idx}-d" data-gpu="{_e(gpu.key)}">',
           f'<title id="roofline-{idx}-t">{_e(title)}</title><desc id="roofline-{idx}-d">{_e(desc)}</desc>']
    # grid and axes, a line per decade
    for d in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = sx(10.0 ** d)
        anchor = "end" if x > W - R - 20 else "middle"
        out.append(f'<line class="grid" x1="{x}" y1="{T}" x2="{x}" y2="{H - B}"/><text class="tick" x="{x}" '
                   f'y="{H - B + 13}" text-anchor="{anchor}">{10.0 ** d:g}</text>')
    for d in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = sy(10.0 ** d)
        out.append(f'<line class="grid" x1="{L}" y1="{y}" x2="{W - R}" y2="{y}"/><text class="tick" x="{L - 4}" '
                   f'y="{y + 3}" text-anchor="end">{_e(fmt_flops(10.0 ** d))}</text>')
    out.append(f'<text class="axis" x="{(L + W - R) / 2}" y="{H - 6}" text-anchor="middle">arithmetic intensity '
               f'(FLOP per DRAM byte)</text><text class="axis" x="10" y="{(T + H - B) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 10 {(T + H - B) / 2})">FLOP/s</text>')
    # the DRAM slope up to the highest flat, then each flat from where the slope meets it
    xa = max(x0, y0 / bw)
    out.append(f'<line class="ceiling dram" data-ceiling="dram" data-bytes-per-s="{bw:.6g}" x1="{sx(xa)}" '
               f'y1="{sy(bw * xa)}" x2="{sx(ridge_hi)}" y2="{sy(peak)}"><title>DRAM {_e(_bw(bw))}</title></line>'
               f'<text class="clabel" x="{sx(xa) + 4}" y="{sy(bw * xa) - 4}">DRAM {_e(_bw(bw))}</text>')
    for kind, lab, v in flats:
        out.append(f'<line class="ceiling {_e(kind.split("-")[0])}" data-ceiling="{_e(kind)}" '
                   f'data-flops-per-s="{v:.6g}" x1="{sx(v / bw)}" y1="{sy(v)}" x2="{W - R}" y2="{sy(v)}"><title>'
                   f'{_e(lab)} {_e(_rate(v))}</title></line><text class="clabel" x="{W - R - 2}" y="{sy(v) - 3}" '
                   f'text-anchor="end">{_e(lab)} {_e(_rate(v))}</text>')
    for kind, x, ai, rate, lab in pts:
        cx, cy = sx(ai), sy(rate)
        if kind == "estimate":
            cx += 5  # beside the measured point, not on it
        shape = (f'<path d="M{cx} {cy - 6}L{cx + 6} {cy + 5}L{cx - 6} {cy + 5}Z"' if kind == "fixed"
                 else f'<circle cx="{cx}" cy="{cy}" r="5"')
        out.append(f'{shape} class="pt {kind}" data-kind="{kind}" data-intensity="{ai:.6g}" '
                   f'data-flops-per-s="{rate:.6g}" data-grid="{_e(x.grid)}" data-count="{x.count}"><title>{_e(lab)}'
                   f'</title>{"</path>" if kind == "fixed" else "</circle>"}')
    out.append(_LEGEND.format(x=L + 6, y=T + 10))
    out.append("</svg>")
    return "".join(out)


_LEGEND = '<text class="legend" x="{x}" y="{y}">● measured ○ model\'s estimate ▲ after a proven fix</text>'


def bandwidth_svg(kt: KernelTime, idx: int) -> str:
    """The DRAM bandwidth of a kernel's launches that do no FLOPs the model counts: achieved (bytes ÷ measured
    time, filled), estimated (hollow) and after proven fixes, against the DRAM peak."""
    gpu = kt.gpu
    rows = [x for x in kt.launches if x.intensity is None and x.dram_bytes > 0 and (x.measured_us or x.est_us)]
    if gpu is None or not rows:
        return ""
    rows = sorted(rows, key=lambda x: -(x.total_us or x.count * (x.est_us or 0)))[:6]
    bw = gpu.memory_bandwidth
    h = 22 * len(rows) + 34
    x_of = lambda v: round(L + (W - L - R) * min(v / bw, 1.2) / 1.2, 1)  # noqa: E731 — a scale
    title = f"DRAM bandwidth of {kt.display}'s launches on {gpu.short_name}"
    desc = (f"Achieved DRAM bandwidth (bytes the launch's tensors hold ÷ its time) against the {_bw(bw)} peak. " +
            "; ".join(f"grid {x.grid} ×{x.count}: " + ", ".join(
                f"{k} {_bw(x.dram_bytes / (t * 1e-6))}" for k, t in (("measured", x.measured_us),
                                                                    ("estimated", x.est_us)) if t)
                for x in rows) + ".")
    out = [f'<svg class="bandwidth" id="bandwidth-{idx}" viewBox="0 0 {W} {h}" role="img" '
           f'aria-labelledby="bandwidth-{idx}-t bandwidth-{idx}-d" data-gpu="{_e(gpu.key)}">',
           f'<title id="bandwidth-{idx}-t">{_e(title)}</title><desc id="bandwidth-{idx}-d">{_e(desc)}</desc>',
           f'<line class="ceiling dram" data-ceiling="dram" data-bytes-per-s="{bw:.6g}" x1="{x_of(bw)}" y1="8" '
           f'x2="{x_of(bw)}" y2="{h - 22}"><title>DRAM peak {_e(_bw(bw))}</title></line>'
           f'<text class="clabel" x="{x_of(bw)}" y="{h - 8}" text-anchor="middle">DRAM peak {_e(_bw(bw))}</text>',
           _LEGEND.format(x=8, y=h - 8)]
    for i, x in enumerate(rows):
        y = 18 + 22 * i
        out.append(f'<line class="grid" x1="{L}" y1="{y}" x2="{W - R}" y2="{y}"/><text class="tick" x="{L - 4}" '
                   f'y="{y + 3}" text-anchor="end">{_e(fmt_bytes(x.dram_bytes))}</text>')
        marks = [("measured", x.measured_us), ("estimate", x.est_us)]
        if x is kt.top:
            marks += [("fixed", f.after_us) for f in kt.fixes]
        for kind, t in marks:
            if not t:
                continue
            rate = x.dram_bytes / (t * 1e-6)
            cx = x_of(rate)
            out.append(f'<circle class="pt {kind}" data-kind="{kind}" data-bytes-per-s="{rate:.6g}" '
                       f'data-grid="{_e(x.grid)}" data-count="{x.count}" cx="{cx}" cy="{y}" r="5"><title>{kind} '
                       f'{_e(_bw(rate))} ({rate / bw:.0%} of the peak) — grid {_e(x.grid)} ×{x.count}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def parts_svg(kt: KernelTime, idx: int) -> str:
    """The cost model's parts of the launch that carries the most time, stacked, with the estimate, the measured
    time and the floor marked on the same scale. The parts overlap in the model (memory and issue run together), so
    the estimate is not their sum: the bar shows what the model weighed, not a timeline."""
    top = kt.top
    if top is None or not top.parts:
        return ""
    parts = [(key, name, top.parts[key]) for key, name in PARTS if key in top.parts]
    total = sum(v for _, _, v in parts)
    scale = max([total] + [v for v in (top.measured_us, top.est_us, top.floor_us) if v])
    width = W - 2 * 8
    x = 8.0
    title = f"the cost model's parts of {kt.display}'s launch grid {top.grid} ({top.spec})"
    desc = ("Parts (µs, they overlap; the estimate is not their sum): " +
            ", ".join(f"{name} {v:.2f}" for _, name, v in parts) +
            "".join(f"; {k} {v:.2f} µs" for k, v in (("estimate", top.est_us), ("measured", top.measured_us),
                                                     ("floor", top.floor_us)) if v) + ".")
    out = [f'<svg class="parts" id="parts-{idx}" viewBox="0 0 {W} 74" role="img" '
           f'aria-labelledby="parts-{idx}-t parts-{idx}-d">',
           f'<title id="parts-{idx}-t">{_e(title)}</title><desc id="parts-{idx}-d">{_e(desc)}</desc>']
    for i, (key, name, v) in enumerate(parts):
        w = round(width * v / scale, 1)
        out.append(f'<rect class="part p{i}" data-part="{_e(key)}" data-us="{v:.6g}" x="{round(x, 1)}" y="10" '
                   f'width="{w}" height="22"><title>{_e(name)} {v:.2f} µs</title></rect>')
        if w > 46:
            out.append(f'<text class="plabel" x="{round(x + 3, 1)}" y="25">{_e(name)}</text>')
        x += w
    for k, v in (("estimate", top.est_us), ("measured", top.measured_us), ("floor", top.floor_us)):
        if v:
            mx = round(8 + width * v / scale, 1)
            out.append(f'<line class="mark {k}" data-mark="{k}" data-us="{v:.6g}" x1="{mx}" y1="4" x2="{mx}" '
                       f'y2="40"><title>{k} {v:.2f} µs</title></line>')
    out.append(f'<text class="tick" x="8" y="56">0</text><text class="tick" x="{W - 8}" y="56" text-anchor="end">'
               f'{_e(fmt_us(scale))}</text><text class="tick" x="{W / 2}" y="56" text-anchor="middle">'
               f'▮ parts · | estimate · ┃ measured · ╎ floor</text></svg>')
    return "".join(out)


def numbers_table(kt: KernelTime) -> str:
    """The text alternative of the drawings: every launch's numbers."""
    head = ("<tr><th>spec</th><th>grid</th><th>launches</th><th>measured</th><th>estimate</th><th>floor</th>"
            "<th>bound</th><th>FLOPs</th><th>DRAM bytes</th><th>FLOP/B</th><th>achieved</th></tr>")
    rows = []
    for x in sorted(kt.launches, key=lambda x: -x.total_us):
        t = x.measured_us
        achieved = ("–" if not t else f"{_rate(x.flops / (t * 1e-6))}, {_bw(x.dram_bytes / (t * 1e-6))}"
                    if x.flops else _bw(x.dram_bytes / (t * 1e-6)))
        rows.append(f'<tr data-grid="{_e(x.grid)}" data-count="{x.count}"><td>{_e(x.spec)}</td><td>{_e(x.grid)}</td>'
                    f'<td class="num">{x.count:,}</td><td class="num">{_e(fmt_us(t)) if t else "not timed"}</td>'
                    f'<td class="num">{_e(fmt_us(x.est_us)) if x.est_us else "–"}</td>'
                    f'<td class="num">{_e(fmt_us(x.floor_us)) if x.floor_us else "–"}</td><td>{_e(x.bound)}</td>'
                    f'<td class="num">{_e(fmt_flops(x.flops)) if x.flops else "0"}</td>'
                    f'<td class="num">{_e(fmt_bytes(x.dram_bytes))}</td>'
                    f'<td class="num">{f"{x.intensity:.3g}" if x.intensity else "–"}</td><td>{_e(achieved)}</td></tr>')
    return f'<table class="launch-numbers"><caption>the numbers drawn</caption>{head}{"".join(rows)}</table>'
