"""`tritonlens/irDocument`: the text of one IR stage of a kernel, and which of its lines came from a source line.

A client that already holds the text (it sends `have: {"path", "hash"}`, the values of an earlier answer) gets
`unchanged: true` and no `text` while that text is still current: following the cursor through megabytes of PTX
then costs a few hundred bytes per move instead of the whole file."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..report.irviews import LANGUAGE_IDS, compiled_specs, view_for

if TYPE_CHECKING:
    from .host import Host

IR_DOCUMENT = "tritonlens/irDocument"


def _get(params: Any, key: str, default: Any = None) -> Any:
    if isinstance(params, dict):
        return params.get(key, default)
    return getattr(params, key, default)


def ir_document(ls: "Host", params: Any) -> dict[str, Any] | None:
    st = ls.scheduler.state(str(_get(params, "uri", "")))
    if st is None:
        return None
    stage = _get(params, "stage") or "ttgir"
    line0 = _get(params, "line")
    line = int(line0) + 1 if isinstance(line0, int) else None
    name = _get(params, "kernel")
    if name:
        kr = st.kernel_named(name, line)
    else:
        kr = st.kernel_at(line) if line is not None else None
    if kr is None:
        return None
    specs = compiled_specs(kr)
    index = _get(params, "spec")
    cs = specs[index] if isinstance(index, int) and 0 <= index < len(specs) else (specs[0] if specs else None)
    if cs is None:
        return None
    view = view_for(kr, cs, ls.settings)
    text = view.text(stage)
    if text is None:
        return None
    ranges = [{"start": a - 1, "end": b - 1} for a, b in view.ranges(stage, line)] if line is not None else []
    path, digest = view.path(stage), view.text_hash(stage)
    answer: dict[str, Any] = {"languageId": LANGUAGE_IDS.get(stage, stage), "path": path, "hash": digest,
                              "ranges": ranges, "kernel": kr.name, "spec": cs.spec.describe(), "target": cs.spec.target}
    if _holds(_get(params, "have"), path, digest):
        answer["unchanged"] = True
    else:
        answer["text"] = text
    return answer


def _holds(have: Any, path: str | None, digest: str | None) -> bool:
    """Whether the client's `have` names the text we would send: same content hash and same file."""
    if have is None or digest is None:
        return False
    return _get(have, "hash") == digest and _get(have, "path") == path


def register(server: "Host") -> None:
    @server.feature(IR_DOCUMENT)
    def handle(ls: "Host", params: Any) -> dict[str, Any] | None:
        try:
            return ir_document(ls, params)
        except Exception as exc:  # noqa: BLE001
            ls.log(f"{IR_DOCUMENT} failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
            return None
