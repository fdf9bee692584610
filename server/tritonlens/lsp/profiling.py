""""Profile this kernel": a code lens where a GPU, ncu and a replayable capture exist, and the command that runs
Nsight Compute on the captured launch and publishes PROF001 findings on the lines it confirms."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .protocol import allow

if TYPE_CHECKING:
    from ..model import KernelReport
    from .host import Host

PROFILE = "tritonlens.profileKernel"
PROFILE_TIMEOUT_S = 600.0  # ncu on one captured launch; the command answers within this and a minute more


def replayable_captures(kr: "KernelReport", captures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from ..gpu.profile import replay_capture

    names = {kr.kernel.name, kr.kernel.func_name}
    return [c for c in captures if c.get("kernel") in names and replay_capture(c) is None]


def profile_lens(uri: str, kr: "KernelReport", captures: list[dict[str, Any]], gpu_ready: bool) -> types.CodeLens | None:
    """The lens, or None when profiling cannot run here (no GPU/ncu) or nothing can be replayed."""
    if not gpu_ready or not replayable_captures(kr, captures):
        return None
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    return types.CodeLens(range=rng, command=types.Command(
        title="Profile this kernel (ncu)", command=PROFILE, arguments=[{"uri": uri, "kernel": kr.name}]))


def lens_for(ls: "Host", uri: str, kr: "KernelReport") -> types.CodeLens | None:
    from ..frontend.captures import load_captures
    from ..pipeline import find_workspace_root
    from ..gpu.profile import can_profile

    ready, _ = can_profile()
    if not ready:
        return None
    st = ls.scheduler.state(uri)
    if st is None:
        return None
    caps, _ = load_captures(find_workspace_root(st.path), st.path)
    return profile_lens(uri, kr, caps, ready)


def register(server: "Host") -> None:
    allow(server, types.WORKSPACE_EXECUTE_COMMAND, PROFILE_TIMEOUT_S + 60)

    @server.command(PROFILE)
    async def profile_kernel(ls, *args: Any) -> "dict[str, Any] | None":  # no type-checking-only hints: see lifecycle
        from ..pipeline import find_workspace_root
        from ..gpu.profile import can_profile, confirm_findings, profile_kernel as run_profile

        target = next((a for a in _flat(args) if isinstance(a, dict) and "uri" in a and "kernel" in a), None)
        st = ls.scheduler.state(target["uri"]) if target else None
        kr = st.kernel_named(target["kernel"]) if st else None
        if kr is None:
            ls.log("profileKernel: open and compile the kernel first", types.MessageType.Warning)
            return None
        ready, why = can_profile()
        if not ready:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"tritonlens: {why}"))
            return None
        ls.log(f"profiling {kr.name} under ncu (replaying its captured launch)…")
        result = await asyncio.to_thread(run_profile, st.path, kr.name, workspace_root=find_workspace_root(st.path),
                                         timeout=PROFILE_TIMEOUT_S)
        if not result.ok:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Error,
                                                           f"tritonlens: profiling {kr.name} failed: {result.error}"))
            return result.to_json()
        kr.findings = [f for f in kr.findings if f.code != "PROF001"] + confirm_findings(kr, result)
        ls.scheduler.publish(st, st.version)
        return result.to_json()


def _flat(args: Any) -> list[Any]:
    out: list[Any] = []
    for a in args:
        out.extend(_flat(a) if isinstance(a, (list, tuple)) else [a])
    return out
