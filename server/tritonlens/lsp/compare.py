""""Compare with another Triton release": the `tritonlens.compare` command compiles a document's kernels under the
installed Triton and another release (compare/: the release made on demand and cached) and answers the report as
text; afterwards each compared kernel gets a lens with its summary ("vs triton 3.7.1: ✗ spills: spill bytes 296 B →
368 B"). The client's `tritonlens.compareWithRelease` picks the release, sends the command and shows the text."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .host import in_daemon_thread
from .protocol import allow

if TYPE_CHECKING:
    from ..compare.core import Outcome
    from ..model import KernelReport
    from .host import Host

COMPARE = "tritonlens.compare"  # the server's command: {"uri", "release" | "python"} -> {"text", "counts", ...}
CLIENT_COMMAND = "tritonlens.compareWithRelease"  # the client's: picks a release, runs COMPARE, shows the text
COMPARE_TIMEOUT_S = 1800.0  # making the release's environment (a download) and compiling both sides


def run_compare(path: str, settings, target: str, release: str | None, python: str | None) -> tuple["Outcome", str]:
    """The document's kernels compared with `release` (a version) or the interpreter `python`, for `target` (the
    server's main target: its `Checker`'s)."""
    from dataclasses import replace

    from ..compare import core, envs

    other = envs.ensure_release(release)[0] if release else envs.from_python(python or "")
    sides = (core.Side(envs.installed(), target), core.Side(other, target))
    return core.run([path], sides, replace(settings, extra_targets=[]), core.Thresholds()), other.label


def kernel_summary(outcome: "Outcome", kernel: str) -> str:
    """`✗ spills: spill bytes 296 B → 368 B (1 of 2 specs regressed)` for one kernel ("" when not compared)."""
    pairs = [p for p in outcome.pairs if p.kernel == kernel]
    if not pairs:
        return ""
    worst = next((p for p in pairs if p.regressions), None)
    regressed = sum(1 for p in pairs if p.regressions)
    improved = sum(1 for p in pairs if p.status == "improved")
    if worst is None:
        return (f"{improved} of {len(pairs)} spec(s) improved" if improved
                else "no regression" + (f" in {len(pairs)} specs" if len(pairs) > 1 else ""))
    r = worst.regressions[0]
    head = f"{'✗ ' if r.gated else ''}{r.kind}: {r.text.split(';')[0]}"
    return head + (f" ({regressed} of {len(pairs)} specs regressed)" if len(pairs) > 1 else "")


def lens_for(ls: "Host", uri: str, kr: "KernelReport") -> types.CodeLens | None:
    held = getattr(ls, "compared", {}).get(uri)
    if held is None:
        return None
    label, outcome = held
    summary = kernel_summary(outcome, kr.kernel.key)
    if not summary:
        return None
    line = kr.kernel.decorator_line - 1
    release = outcome.sides[1].release
    arg = {"uri": uri, "release": release.triton} if release.origin == "release" else {"uri": uri,
                                                                                        "python": release.python}
    return types.CodeLens(range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                          command=types.Command(title=f"vs {label}: {summary}", command=CLIENT_COMMAND,
                                                arguments=[arg]))


def register(server: "Host") -> None:
    allow(server, types.WORKSPACE_EXECUTE_COMMAND, COMPARE_TIMEOUT_S)
    # uri -> (what it was compared with, the outcome): the last comparison of each document, for its lenses
    server.compared = {}  # type: ignore[attr-defined]

    @server.command(COMPARE)
    async def compare(ls, *args: Any) -> "dict[str, Any] | None":  # no type-checking-only hints: see lifecycle
        from ..compare import envs, output

        flat = [a for x in args for a in (x if isinstance(x, list) else [x])]
        target = next((a for a in flat if isinstance(a, dict) and "uri" in a), None)
        st = ls.scheduler.state(target["uri"]) if target else None
        if st is None or not (target.get("release") or target.get("python")):
            ls.log("compare: open the kernel's file and name a release ({'uri', 'release'} or {'uri', 'python'})",
                   types.MessageType.Warning)
            return None
        what = target.get("release") or target.get("python")
        ls.log(f"comparing {st.path} with {what}: compiling every spec under both releases…")
        try:
            outcome, label = await in_daemon_thread(run_compare, st.path, ls.settings, ls.checker.targets()[0],
                                                    target.get("release"), target.get("python"))
        except (ValueError, envs.ReleaseError) as exc:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"tritonlens compare: {exc}"))
            return {"error": str(exc)}
        except asyncio.CancelledError:
            return {"cancelled": True}
        ls.compared[st.uri] = (label, outcome)
        caps = ls.client_capabilities
        if caps and caps.workspace and caps.workspace.code_lens and caps.workspace.code_lens.refresh_support:
            answer = ls.workspace_code_lens_refresh(None)  # the kernels' lenses now carry the summary
            answer.add_done_callback(lambda f: f.cancelled() or f.exception())
        return {"text": output.to_text(outcome, verbose=True), "headline": output.headline(outcome),
                "counts": outcome.counts(), "gated": len(outcome.gated)}
