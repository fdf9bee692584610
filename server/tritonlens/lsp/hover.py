"""Hover: on a kernel's body line, the IR that line became; on its def line, the kernel's metrics per spec; then the
evidence of the findings on the line."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING
from urllib.parse import quote

from lsprotocol import types
from pygls.uris import from_fs_path

from ..units import fmt_bytes
from ..report.irviews import STAGE_TITLES, compiled_specs, summary, view_for
from ..report.markdown import md
from ..report.tuning import tuning_markdown
from ..source import split_lines

if TYPE_CHECKING:
    from ..model import KernelReport
    from .host import Host

SHOW_IR = "tritonlens.showIr"
_LINE_STAGES = ("ttgir", "ptx", "sass", "amdgcn")


# The client renders hover markdown as trusted for our own commands (`command:tritonlens.showIr`): a text that comes
# from the checked files, a capture, a baseline or a worker must never become markup there — a link, a command, an
# image. Every such text goes through `md` (or `code`), which leaves nothing for markdown to interpret.


def code(text: object) -> str:
    """`text` as an inline code span, fenced past any run of backticks it holds (nothing inside is markup)."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def show_ir_link(uri: str, kernel: str, stage: str, line: int | None) -> str:
    """`command:` link our client handles: opens `stage` of `kernel` at 0-based source `line`."""
    args = [{"uri": uri, "kernel": kernel, "stage": stage, "line": line}]
    return f"command:{SHOW_IR}?{quote(json.dumps(args))}"


def line_hover(uri: str, kr: "KernelReport", line: int, settings) -> str | None:
    """Markdown for 1-based source `line` of a kernel: per stage, the count and the commonest ops, with links."""
    specs = compiled_specs(kr)
    if not specs:
        return None
    view = view_for(kr, specs[0], settings)
    parts: list[str] = []
    links: list[str] = []
    for stage in _LINE_STAGES:
        counts = view.counts(stage, line)
        if not counts:
            continue
        unit = "ops" if stage == "ttgir" else "instr"
        parts.append(f"**{STAGE_TITLES[stage]}** {sum(counts.values())} {unit}: {summary(counts)}")
        ir_lines = view.ir_lines(stage, line)
        path = view.path(stage)
        if path:
            links.append(f"[{STAGE_TITLES[stage]} L{ir_lines[0]}]({from_fs_path(path)}#L{ir_lines[0]})")
        links.append(f"[show {STAGE_TITLES[stage]}]({show_ir_link(uri, kr.name, stage, line - 1)})")
    if not parts:
        return None
    head = f"{code(kr.name)} line {line} · {md(short_spec(specs[0].spec, kr.kernel.constexpr_names))}"
    if len(specs) > 1:
        head += f" (spec 1 of {len(specs)}; all specs on the `def` line)"
    return "\n\n".join([head, *parts, " · ".join(links)])


def findings_markdown(findings, line: int) -> str:
    """Markdown for the findings whose range covers 1-based `line`: each one's message, then every line of its
    evidence (the rule's full account, the spec, the cost, the specs it holds in, the verdict's reason) and the
    places it names — what the one-line squiggle leaves out."""
    out = []
    for f in findings:
        if not f.line <= line <= max(f.end_line or f.line, f.line):
            continue
        parts = [f"**{md(f.code)}** ({md(f.severity)}) {md(f.message)}"]
        parts += [f"- {md(d)}" for d in f.details]
        places = [r for r in f.named_lines() if r.path == f.path]
        if places:
            parts.append("- lines: " + "; ".join(md(f"{r.line}: {r.message}") for r in places[:12]))
        out.append("\n".join(parts))
    return "\n\n".join(out)


def short_spec(spec, constexprs: list[str]) -> str:
    """Target, warps and constexpr values: what tells specs apart. The full assumptions (pointer alignment, integer
    divisibility) are on the def-line hover, where they do not push the IR counts out of view."""
    parts = [spec.target]
    if "num_warps" in spec.options:
        parts.append(f"{spec.options['num_warps']} warps")
    consts = [f"{n}={spec.constants[n]!r}" for n in constexprs if n in spec.constants]
    if consts:
        parts.append(", ".join(consts))
    return " · ".join(parts)


def signature_end(text_lines: list[str], def_line: int) -> int:
    """1-based last line of the `def` signature starting at `def_line` (the line whose code ends with `:`)."""
    for i in range(def_line - 1, min(len(text_lines), def_line + 60)):
        code = text_lines[i].split("#", 1)[0].rstrip()
        if code.endswith(":"):
            return i + 1
    return def_line


def metrics_table(uri: str, kr: "KernelReport", settings) -> str:
    """Markdown: one row per compiled spec (target, warps, registers, spills, shared memory, conversions)."""
    rows = ["| spec | target | warps | regs | spill | shared | cvt | time |", "|---|---|---|---|---|---|---|---|"]
    for i, cs in enumerate(kr.compiled, 1):
        label = md(cs.spec.label or f"spec {i}")
        target, warps = md(cs.spec.target), md(cs.spec.options.get("num_warps", "?"))
        art = cs.artifacts
        if art is None or not art.ok:
            why = md(art.error.kind if art is not None and art.error else "not compiled")
            rows.append(f"| {label} | {target} | {warps} | {why} | | | | |")
            continue
        m = cs.metrics
        cvt = m.get("convert_layouts", m.get("conversions"))
        if cvt is None:
            cvt = view_for(kr, cs, settings).conversions()
        rows.append(f"| {label} | {target} | {warps} | {md(m.get('registers', '?'))} | "
                    f"{md(fmt_bytes(m.get('spill_bytes')))} | {md(fmt_bytes(m.get('shared')))} | {md(cvt)} | "
                    f"{md(m.get('compile_time', '?'))} s |")
    out = [f"**{md(kr.name)}**: {len(kr.compiled)} spec(s)", "\n".join(rows)]
    for i, cs in enumerate(kr.compiled, 1):
        out.append(f"{i}. {md(cs.spec.describe())}")
    measured = tuning_markdown(kr.tuning)
    if measured:
        out.append(measured)
    specs = compiled_specs(kr)
    if specs:
        line = kr.kernel.def_line - 1
        out.append(" · ".join(f"[{STAGE_TITLES[s]}]({show_ir_link(uri, kr.name, s, line)})"
                              for s in view_for(kr, specs[0], settings).stages()[:3]))
    return "\n\n".join(out)


def register(server: "Host") -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: "Host", params: types.HoverParams) -> types.Hover | None:
        st = ls.scheduler.state(params.text_document.uri)
        if st is None:
            return None
        line = params.position.line + 1
        kr = st.kernel_at(line)
        if kr is None:
            return None
        try:
            if line <= signature_end(split_lines(st.text), kr.kernel.def_line):
                text = metrics_table(st.uri, kr, ls.settings)
                from ..report.timeshare import file_times, share_line  # its share of the file's captured time

                if share := share_line(file_times(list(st.kernels.values()), ls.settings.gpu).get(kr.name)):
                    text = f"**{md(share)}**\n\n{text}"
                from ..report.timeshare import file_times, share_line  # its share of the file's captured time

                if share := share_line(file_times(list(st.kernels.values()), ls.settings.gpu).get(kr.name)):
                    text = f"**{md(share)}**\n\n{text}"
                changes = getattr(ls, "kernel_changes", None)  # lens.KernelChanges: what the last save changed
                if changes is not None and (since := changes.text(st.uri, st.path, kr)):  # a baseline's words
                    text += "\n\n" + "\n\nvs baseline: ".join(md(part) for part in since.split(" · vs baseline: "))
            else:
                text = line_hover(st.uri, kr, line, ls.settings)
        except Exception as exc:  # noqa: BLE001 — a hover must not cost the server
            ls.log(f"hover failed on {kr.name} line {line}: {type(exc).__name__}: {exc}", types.MessageType.Error)
            return None
        # the IR of the line (or the metrics) first, in view; the findings' evidence below it
        evidence = findings_markdown(kr.findings, line)
        text = "\n\n".join(t for t in (text, evidence) if t)
        if not text:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
