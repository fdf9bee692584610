"""Code lens above each kernel: what the compile gave (target, warps, registers, spills, shared memory,
conversions) and commands that open its TTGIR / PTX / SASS."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lsprotocol import types

from ..report.baseline import SaveHistory, read_baseline, since_baseline
from ..report.cost import spec_cost
from ..report.tuning import tuning_brief
from ..pipeline import find_workspace_root

from .hover import SHOW_IR
from .lifecycle import RECOMPILE
from ..units import fmt_bytes
from ..report.irviews import STAGE_TITLES, compiled_specs, view_for
from .time_report import SHOW_TIME
from ..report.timeshare import file_times, share_line
from .capturing import lens_for as capture_lens_for
from .profiling import lens_for as profile_lens_for
from .benching import lens_for as bench_lens_for
from .compare import lens_for as compare_lens_for
from ..sidecar import BASELINE, sidecar_path

if TYPE_CHECKING:
    from ..model import KernelReport
    from .host import Host


def kernel_summary(kr: "KernelReport", settings, root: str) -> str:
    """The lens text; `root` is the workspace root of the kernel's file (where its measured times are)."""
    specs = compiled_specs(kr)
    if not specs:
        failed = [cs for cs in kr.compiled if cs.artifacts is not None and cs.artifacts.error is not None]
        if failed:
            return f"{kr.name}: compile failed ({failed[0].artifacts.error.kind})"
        return f"{kr.name}: not compiled (no complete spec; see SRC002)"
    cs = specs[0]
    m = cs.metrics
    cvt = m.get("convert_layouts", m.get("conversions"))
    if cvt is None:
        cvt = view_for(kr, cs, settings).conversions()
    text = (f"{cs.spec.target} · {cs.spec.options.get('num_warps', '?')} warps · {m.get('registers', '?')} regs · "
            f"{fmt_bytes(m.get('spill_bytes'))} spill · {fmt_bytes(m.get('shared'))} smem · {cvt} cvt")
    cost = spec_cost(root, cs.spec, brief=True, metrics=m)
    if cost:
        text += f" · {cost}"
    if len(kr.compiled) > 1:
        text += f" · {len(kr.compiled)} specs"
    tuned = tuning_brief(kr.tuning)
    if tuned:
        text += f" · {tuned}"
    c = kr.captures
    if c and c.get("compiled", 0) < c.get("captured", 0):
        missing = c.get("left_out") or []
        left = f", leaves out {', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}" if missing else ""
        text += f" (of {c['captured']} captured{left}; allCaptures for all)"
    return text


def lenses_for(uri: str, kr: "KernelReport", settings, root: str, changes: str = "") -> list[types.CodeLens]:
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    # Clicking the summary recompiles the file: a real command, so clients that run every lens (Neovim) can too.
    out = [types.CodeLens(range=rng, command=types.Command(title=kernel_summary(kr, settings, root), command=RECOMPILE,
                                                           arguments=[uri]))]
    specs = compiled_specs(kr)
    if specs:
        for stage in view_for(kr, specs[0], settings).stages()[:3]:
            args = [{"uri": uri, "kernel": kr.name, "stage": stage, "line": kr.kernel.def_line - 1}]
            out.append(types.CodeLens(range=rng, command=types.Command(
                title=f"Show {STAGE_TITLES[stage]}", command=SHOW_IR, arguments=args)))
    if changes:
        out.append(types.CodeLens(range=rng, command=types.Command(title=changes, command=RECOMPILE, arguments=[uri])))
    return out


def time_lens(uri: str, kr: "KernelReport", share: str) -> types.CodeLens:
    """Opens the file's report on where the time goes, beside the source; says the kernel's share when timed."""
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    title = f"where the time goes: {share.split(':')[0]}" if share else "where the time goes"
    return types.CodeLens(range=rng, command=types.Command(title=title, command=SHOW_TIME, arguments=[uri]))


class KernelChanges:
    """What the last save changed in a kernel, and what changed since the workspace's `.tritonlens/baseline.json`
    (read again when its mtime changes): the text of the lens under the summary and of the def-line hover."""

    def __init__(self) -> None:
        self.history = SaveHistory()
        self._baselines: dict[str, tuple[float, dict | None]] = {}

    def observe(self, st) -> None:  # a scheduler listener: after each publish
        for kr in st.kernels.values():
            self.history.observe(st.uri, kr)

    def text(self, uri: str, path: str, kr: "KernelReport", root: str | None = None) -> str:
        parts = []
        if last := self.history.since_last_save(uri, kr):
            parts.append(f"since last save: {last}")
        root = root or find_workspace_root(path)
        base = self._baseline(sidecar_path(root, BASELINE))
        if base is not None and (then := since_baseline(base, os.path.relpath(path, root).replace(os.sep, "/"), kr)):
            parts.append(f"vs baseline: {then}")
        return " · ".join(parts)

    def _baseline(self, file: str) -> dict | None:
        try:
            mtime = os.stat(file).st_mtime
        except OSError:
            return None
        held = self._baselines.get(file)
        if held is None or held[0] != mtime:
            held = self._baselines[file] = (mtime, read_baseline(file)[0])
        return held[1]


def register(server: "Host") -> None:
    changes = KernelChanges()
    server.kernel_changes = changes  # type: ignore[attr-defined]  — the def-line hover reads it too
    server.scheduler.listeners.append(changes.observe)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: "Host", params: types.CodeLensParams) -> list[types.CodeLens]:
        st = ls.scheduler.state(params.text_document.uri)
        if st is None:
            return []
        out: list[types.CodeLens] = []
        root = find_workspace_root(st.path)  # once per request, not per kernel
        try:
            target = ls.checker.targets()[0]
        except Exception:  # noqa: BLE001 — a bad setting was reported when it came; the default is cuda:90
            target = "cuda:90"
        kernels = sorted(st.kernels.values(), key=lambda k: k.kernel.decorator_line)
        times = file_times(kernels, ls.settings.gpu)  # once per request: the shares are of the whole file
        for kr in kernels:
            try:
                out.extend(lenses_for(st.uri, kr, ls.settings, root, changes.text(st.uri, st.path, kr, root)))
                if kr.name in times:  # captured launches: the page has their time, estimate and floor
                    out.append(time_lens(st.uri, kr, share_line(times[kr.name])))
                if (prof := profile_lens_for(ls, st.uri, kr)) is not None:
                    out.append(prof)
                if (timing := bench_lens_for(ls, st.uri, kr)) is not None:
                    out.append(timing)
                if (capture := capture_lens_for(st.uri, kr, target, ls.settings.gpu)) is not None:
                    out.append(capture)
                if (compared := compare_lens_for(ls, st.uri, kr)) is not None:
                    out.append(compared)
            except Exception as exc:  # noqa: BLE001
                ls.log(f"code lens failed on {kr.name}: {type(exc).__name__}: {exc}", types.MessageType.Error)
        return out
