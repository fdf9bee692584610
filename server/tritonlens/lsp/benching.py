""""Time this kernel": a code lens where a GPU and a replayable capture exist, and the command that replays the
kernel's captured launches, times them (`tritonlens bench`), saves the times beside the captures and checks the file
again, so its lens and findings carry them. Cancellable: a second click while one runs cancels it."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .profiling import replayable_captures
from .protocol import allow

if TYPE_CHECKING:
    from ..model import KernelReport
    from .host import Host

BENCH = "tritonlens.benchKernel"
BENCH_TIMEOUT_S = 120.0  # per replayed spec


def bench_lens(uri: str, kr: "KernelReport", captures: list[dict[str, Any]], gpu_ready: bool,
               running: bool = False) -> types.CodeLens | None:
    """The lens, or None when nothing can be timed here (no GPU) or nothing was captured with its launch."""
    if not gpu_ready or not replayable_captures(kr, captures):
        return None
    line = kr.kernel.decorator_line - 1
    rng = types.Range(types.Position(line, 0), types.Position(line, 0))
    title = "Timing on the GPU… (click to cancel)" if running else "Time this kernel (replay its captured launches)"
    return types.CodeLens(range=rng, command=types.Command(title=title, command=BENCH,
                                                           arguments=[{"uri": uri, "kernel": kr.name}]))


_RUNNING: dict[tuple[str, str], asyncio.Task] = {}  # (uri, kernel) -> the bench in flight, for the lens and cancel


def lens_for(ls: "Host", uri: str, kr: "KernelReport") -> types.CodeLens | None:
    from ..frontend.captures import load_captures
    from ..pipeline import find_workspace_root
    from ..device.targets import has_local_gpu

    st = ls.scheduler.state(uri)
    if st is None or not has_local_gpu():
        return None
    caps, _ = load_captures(find_workspace_root(st.path), st.path)
    return bench_lens(uri, kr, caps, True, running=(uri, kr.name) in _RUNNING)


def _bench(path: str, kernel: str, root: str) -> tuple[int, int, str]:
    from ..gpu.bench import run_on_gpu, save, select

    jobs, _ = select([path], kernel, root, None, every=False)
    if not jobs:
        return 0, 0, "no captured launch of this kernel can be replayed"
    results = run_on_gpu(jobs, root, BENCH_TIMEOUT_S)
    save(results, root)
    failed = [r for r in results if r.error]
    return len(results) - len(failed), len(failed), failed[0].error if failed else ""


def register(server: "Host") -> None:
    allow(server, types.WORKSPACE_EXECUTE_COMMAND, BENCH_TIMEOUT_S * 12 + 60)

    @server.command(BENCH)
    async def bench_kernel(ls, *args: Any) -> "dict[str, Any] | None":  # no type-checking-only hints: see lifecycle
        from ..pipeline import find_workspace_root
        from ..device.targets import has_local_gpu

        target = next((a for a in args if isinstance(a, dict) and "uri" in a and "kernel" in a),
                      next((a for x in args if isinstance(x, list) for a in x
                            if isinstance(a, dict) and "uri" in a and "kernel" in a), None))
        st = ls.scheduler.state(target["uri"]) if target else None
        if st is None:
            ls.log("benchKernel: open and compile the kernel first", types.MessageType.Warning)
            return None
        key = (target["uri"], target["kernel"])
        if key in _RUNNING:  # the lens says "click to cancel"
            _RUNNING.pop(key).cancel()
            ls.log(f"timing {target['kernel']} cancelled")
            return {"cancelled": True}
        if not has_local_gpu():
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning,
                                                           "tritonlens: timing a kernel needs a local GPU"))
            return None
        ls.log(f"timing {target['kernel']}: replaying its captured launches on the GPU…")
        task = asyncio.ensure_future(asyncio.to_thread(_bench, st.path, target["kernel"],
                                                       find_workspace_root(st.path)))
        _RUNNING[key] = task
        try:
            ok, failed, why = await task
        except asyncio.CancelledError:
            return {"cancelled": True}
        finally:
            if _RUNNING.get(key) is task:
                _RUNNING.pop(key)
        ls.log(f"timed {ok} captured spec(s) of {target['kernel']}" + (f"; {failed} failed: {why}" if failed else ""))
        ls.scheduler.schedule(target["uri"], full=True)  # the lens and findings now carry the times
        return {"timed": ok, "failed": failed}
