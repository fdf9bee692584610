""""Capture launches": a code lens on a kernel that has no complete spec, which the client (command
`tritonlens.capture`, client/src/capture.ts) turns into `tritonlens capture -- <tritonlens.captureCommand>` in the
workspace; the watched captures file then re-checks the document. A capture needs the kernel to really launch, so
where no GPU is visible the lens says so, and its command only explains what to do instead."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from ..model import KernelReport

CAPTURE = "tritonlens.capture"  # implemented by the client, which runs the user's command
GPU_DOC = "https://github.com/tritonlens/tritonlens/blob/main/docs/gpu.md"


def needs_capture(kr: "KernelReport") -> bool:
    """No spec of the kernel was complete (a constexpr without a value anywhere: SRC002)."""
    return any(f.code == "SRC002" for f in kr.findings)


def capture_lens(uri: str, kr: "KernelReport", gpu: str | None) -> types.CodeLens | None:
    """The lens, or None when the kernel's specs are complete. `gpu` is the local GPU's target (None: none)."""
    if not needs_capture(kr):
        return None
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    arg = {"uri": uri, "kernel": kr.name, "gpu": gpu, "doc": GPU_DOC}
    title = f"Capture launches ({gpu})" if gpu else "Capture launches: needs a GPU (how to)"
    return types.CodeLens(range=rng, command=types.Command(title=title, command=CAPTURE, arguments=[arg]))


def lens_for(uri: str, kr: "KernelReport") -> types.CodeLens | None:
    from ..targets import local_gpu_target

    return capture_lens(uri, kr, local_gpu_target() if needs_capture(kr) else None)
