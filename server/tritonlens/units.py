"""How numbers read: times and sizes, formatted the same way by every stage and presenter."""
from __future__ import annotations

from typing import Any


def fmt_us(us: float | None) -> str:
    """`1.25 ms`, `12.3 µs`, `4.56 µs`, `85.0 ns`; `-` when unknown. Every time a finding, a lens or a table shows
    is formatted with this."""
    if us is None:
        return "-"
    if us <= 0:
        return "0 µs"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    if us >= 10:
        return f"{us:.1f} µs"
    return f"{us:.2f} µs" if us >= 0.1 else f"{us * 1000:.1f} ns"


def fmt_bytes(n: Any) -> str:
    """`512 B`, `1.5 KB`, `2.0 MB`; `?` when the number is unknown. Every presenter formats sizes with this."""
    if not isinstance(n, (int, float)):
        return "?"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_flops(n: float) -> str:
    """`1.10 PFLOP`, `68.7 GFLOP`, `512 FLOP`: an amount of work (not a rate)."""
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} FLOP"
