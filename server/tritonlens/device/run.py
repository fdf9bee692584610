"""The device of one run, worked out once where the run starts (a `Checker` from the CLI's flags or the editor's
settings): for each target it compiles for, the target itself (`auto` made concrete), the GPU model every door
answers as for it, and the environment the compile workers' imports see. The stages are handed these; they do not
parse the settings again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .virtual_gpu import GpuModel, compile_target, resolve


@dataclass(frozen=True)
class RunDevice:
    target: str  # "cuda:90", "hip:gfx942": never "auto"
    gpu: GpuModel
    env: tuple[tuple[str, str | None], ...] = ()  # None: the checking process's own value
    sms: int | None = None  # the local GPU's SMs as its driver counts them, when the target is that GPU's

    def job(self) -> dict[str, Any]:
        """What a compile job carries of it: the GPU the imports answer as, their environment (and the local GPU's
        SM count, for the analysis, when there is one)."""
        out: dict[str, Any] = {"gpu": self.gpu.key, "env": dict(self.env)}
        if self.sms:
            out["sms"] = self.sms
        return out


def run_devices(target: str, gpu: str = "", extra_targets: list[str] | tuple[str, ...] = (),
                env: dict[str, str | None] | None = None) -> list[RunDevice]:
    """The devices of a run: the main target first (`auto`: the named GPU's arch, else the local GPU's, else
    cuda:90), then each extra target once."""
    main = compile_target(target, gpu)
    targets = [main] + [t for t in dict.fromkeys(extra_targets) if t != main]
    kept = tuple(sorted((env or {}).items()))
    from .targets import local_gpu_sms, local_gpu_target

    local = local_gpu_target()
    return [RunDevice(t, resolve(t, gpu), kept, local_gpu_sms() if local == t else None) for t in targets]
