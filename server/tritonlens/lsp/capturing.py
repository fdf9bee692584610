""""Capture launches": a code lens on a kernel that has no complete spec, which the client (command
`tritonlens.capture`, client/src/capture.ts) turns into `tritonlens capture -- <tritonlens.captureCommand>` in the
workspace; the watched captures file then re-checks the document. Where no GPU is visible the lens offers the
capture without one instead (`tritonlens capture --no-gpu --target T -- ...`: Triton's launch path records each
launch's specialization for target T and runs no kernel), which works for programs whose host code runs on CPU
tensors."""
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


def capture_lens(uri: str, kr: "KernelReport", gpu: str | None, target: str = "cuda:90",
                 virtual_gpu: str = "") -> types.CodeLens | None:
    """The lens, or None when the kernel's specs are complete. `gpu` is the local GPU's target (None: none);
    `target` the one compiled for, which a capture without a GPU records its launches for, answering as
    `virtual_gpu` (tritonlens.gpu; "": the target's default)."""
    if not needs_capture(kr):
        return None
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    arg = {"uri": uri, "kernel": kr.name, "gpu": gpu, "noGpu": None if gpu else target, "doc": GPU_DOC}
    if virtual_gpu and not gpu:
        arg["virtualGpu"] = virtual_gpu
    title = f"Capture launches ({gpu})" if gpu else "Capture launches without a GPU"
    return types.CodeLens(range=rng, command=types.Command(title=title, command=CAPTURE, arguments=[arg]))


def lens_for(uri: str, kr: "KernelReport", target: str, gpu_setting: str = "") -> types.CodeLens | None:
    """The capture lens of a kernel that needs captures; `target` is the run's main target (the `Checker`'s)."""
    if not needs_capture(kr):
        return None
    from ..device.targets import local_gpu_target
    from ..device.virtual_gpu import validate

    virtual = gpu_setting if gpu_setting and validate(gpu_setting, target) is None else ""
    return capture_lens(uri, kr, local_gpu_target(), target, virtual)
