"""Code lens above each kernel: what the compile gave (target, warps, registers, spills, shared memory,
conversions) and commands that open its TTGIR / PTX / SASS."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .hover import SHOW_IR
from .lifecycle import RECOMPILE
from .irviews import STAGE_TITLES, compiled_specs, fmt_bytes, view_for
from .profiling import lens_for as profile_lens_for

if TYPE_CHECKING:
    from ..model import KernelReport
    from .server import TritonLensServer


def kernel_summary(kr: "KernelReport", settings) -> str:
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
    if len(kr.compiled) > 1:
        text += f" · {len(kr.compiled)} specs"
    return text


def lenses_for(uri: str, kr: "KernelReport", settings) -> list[types.CodeLens]:
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    # Clicking the summary recompiles the file: a real command, so clients that run every lens (Neovim) can too.
    out = [types.CodeLens(range=rng, command=types.Command(title=kernel_summary(kr, settings), command=RECOMPILE,
                                                           arguments=[uri]))]
    specs = compiled_specs(kr)
    if specs:
        for stage in view_for(kr, specs[0], settings).stages()[:3]:
            args = [{"uri": uri, "kernel": kr.name, "stage": stage, "line": kr.kernel.def_line - 1}]
            out.append(types.CodeLens(range=rng, command=types.Command(
                title=f"Show {STAGE_TITLES[stage]}", command=SHOW_IR, arguments=args)))
    return out


def register(server: "TritonLensServer") -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: "TritonLensServer", params: types.CodeLensParams) -> list[types.CodeLens]:
        st = ls.scheduler.state(params.text_document.uri)
        if st is None:
            return []
        out: list[types.CodeLens] = []
        for kr in sorted(st.kernels.values(), key=lambda k: k.kernel.decorator_line):
            try:
                out.extend(lenses_for(st.uri, kr, ls.settings))
                if (prof := profile_lens_for(ls, st.uri, kr)) is not None:
                    out.append(prof)
            except Exception as exc:  # noqa: BLE001
                ls.log(f"code lens failed on {kr.name}: {type(exc).__name__}: {exc}", types.MessageType.Error)
        return out
