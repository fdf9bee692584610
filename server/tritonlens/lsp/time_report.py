"""`tritonlens/timeReport`: the report page of one open file (report/html: where its captured GPU time goes, each
kernel's roofline, then its findings and IR), for the client to show beside the source. Thin: the page is made from
the reports the server already holds."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..pipeline import FileReport, find_workspace_root
from ..report.html import render_report

if TYPE_CHECKING:
    from .host import Host

TIME_REPORT = "tritonlens/timeReport"
SHOW_TIME = "tritonlens.showTimeReport"  # the client's command that asks for it and opens the page


def time_report(ls: "Host", uri: str) -> dict[str, Any] | None:
    st = ls.scheduler.state(uri)
    if st is None or not st.kernels:
        return None
    root = find_workspace_root(st.path)
    kernels = sorted(st.kernels.values(), key=lambda kr: kr.kernel.decorator_line)
    title = f"where the time goes — {os.path.basename(st.path)}"
    text, stats = render_report([FileReport(st.path, kernels, list(st.file_findings))], ls.settings, base=root,
                                title=title, root=root)
    return {"html": text, "title": title, "bytes": stats.bytes}


def register(server: "Host") -> None:
    @server.feature(TIME_REPORT)
    def handle(ls: "Host", params: Any) -> dict[str, Any] | None:
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        if not isinstance(uri, str):
            return None
        try:
            return time_report(ls, uri)
        except Exception as exc:  # noqa: BLE001 — a page that fails to render must not cost the server
            ls.log(f"{TIME_REPORT} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
            return None
