"""The device of one run, worked out once where the run starts (a `Checker` from the CLI's flags or the editor's
settings, `compare` for each side, `bench` and `doctor`, the `capture` hook in the program it runs): for each target
it compiles for, the target itself (`auto` made concrete), the compiler's view of it, the GPU model every door
answers as for it, and the environment the compile workers' imports see. The stages are handed these; they do not
parse the settings again. This is the one place a target is resolved (`virtual_gpu.compile_target`,
`virtual_gpu.resolve`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Target
from .virtual_gpu import GpuModel, compile_target, resolve, validate


@dataclass(frozen=True)
class RunDevice:
    target: str  # "cuda:90", "hip:gfx942": never "auto"
    arch: Target  # the same target as the compiler takes it (backend, arch, warp size)
    gpu: GpuModel
    env: tuple[tuple[str, str | None], ...] = ()  # None: the checking process's own value
    sms: int | None = None  # the local GPU's SMs as its driver counts them, when the target is that GPU's

    def job(self) -> dict[str, Any]:
        """What a compile job carries of it besides `arch`: the GPU the imports answer as, their environment (and
        the local GPU's SM count, for the analysis, when there is one). JSON data: it is part of the cache key."""
        out: dict[str, Any] = {"gpu": self.gpu.key, "env": dict(self.env)}
        if self.sms:
            out["sms"] = self.sms
        return out


def run_devices(target: str, gpu: str = "", extra_targets: list[str] | tuple[str, ...] = (),
                env: dict[str, str | None] | None = None, local: bool = True,
                strict: bool = False) -> list[RunDevice]:
    """The devices of a run: the main target first (`auto`: the named GPU's arch, else the local GPU's, else
    cuda:90), then each extra target once. `local=False`: a run that must not stand for the local GPU (a capture
    without one), whose targets get the named GPU or their default. `strict`: ValueError when `gpu` is unknown or
    of another arch than `target` (a command's flags; settings were checked when they came)."""
    if strict and gpu and (problem := validate(gpu, target)):
        raise ValueError(problem)
    main = compile_target(target, gpu, local)
    targets = [main] + [t for t in dict.fromkeys(extra_targets) if t != main]
    kept = tuple(sorted((env or {}).items()))
    from .targets import local_gpu_sms, local_gpu_target

    here = local_gpu_target() if local else None
    return [RunDevice(t, Target.parse(t), resolve(t, gpu, local), kept, local_gpu_sms() if here == t else None)
            for t in targets]
