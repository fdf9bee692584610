"""REM001: Triton's own remarks (pipelining failures, MMA v3 not applied, ...) passed through on their line. The
vectorization remarks are left to PTX001/PTX002, which explain them with the access widths."""
from __future__ import annotations

from .registry import rule
from ._common import anchor, finding, in_kernel_file


def _is_vectorization(message: str) -> bool:
    return "vectoriz" in message and ("vec =" in message or "fails" in message)


@rule("REM001", "compiler-remark", "info")
def compiler_remark(ctx):
    """Any other remark or warning Triton printed while compiling, on the line it names."""
    seen: set[tuple[int, int, str]] = set()
    for r in ctx.remarks:
        if r.severity not in ("remark", "warning") or not in_kernel_file(ctx, r):
            continue
        text = r.message.strip()
        if not text or _is_vectorization(text) or text.startswith("Performed "):
            continue
        text = text.removeprefix("Warning: ").strip()
        key = (r.line, r.col, text)
        if key in seen:
            continue
        seen.add(key)
        span, _ = anchor(ctx, r.line, r.col, ("dot", "load", "store", "dot_scaled"))
        yield finding(ctx, span, "REM001", f"Triton {r.severity}: {text}",
                      data={"remark": text, "severity": r.severity, "ir_col": r.col,
                            "merge_key": f"REM001:{text}"})
