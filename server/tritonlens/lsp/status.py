"""`tritonlens/status`: what the status bar shows (compiling or idle, the target, counts over open documents)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host import Host

STATUS = "tritonlens/status"


def send_status(server: "Host", state: str, message: str = "") -> None:
    findings = [f for st in server.scheduler.docs.values() for f in st.findings()]
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    try:
        target = server.checker.targets()[0]  # the run's main target, `auto` made concrete where the run started
    except Exception:  # noqa: BLE001
        target = server.settings.target
    if not message:
        message = f"{errors} error(s), {warnings} warning(s)"
    try:
        server.protocol.notify(STATUS, {"state": state, "target": target, "errors": errors, "warnings": warnings,
                                        "message": message})
    except Exception:  # noqa: BLE001 — no client attached
        pass
